"""notebooks/prototype_policy.ipynb runs from top to bottom (at small scale)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "prototype_policy.ipynb"


def test_the_policy_notebook_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("ACCEPTSIM_NOTEBOOK_SCALE", "small")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": NOTEBOOK.parent}}
    )
    client.execute(env=dict(os.environ))
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(
        str(o.get("data", {}).get("text/plain", "")) + str(o.get("text", "")) for o in outputs
    )
    assert "policy_vs_static rows: 3" in text
    assert "share-of-queues" in text
