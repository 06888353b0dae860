"""Every notebook runs from top to bottom at small scale (``ACCEPTSIM_NOTEBOOK_SCALE=small``).

Each notebook is executed as a user would run it; no cell may raise, and
where a notebook prints a conclusion, the test checks it is there.
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

#: text each notebook must print (its conclusion), beyond running without error
EXPECTED = {
    "architectures.ipynb": ["'select_cpu_grows_with_idle': True"],
    "prototype_policy.ipynb": ["policy_vs_static rows: 3", "share-of-queues"],
    "sweep.ipynb": ["gain_10_vs_1"],
    "validate.ipynb": ["off_mape_within_15pct: True", "direction right at",
                       "every_quota_mape_within_10pct: True"],
}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_and_prints_its_conclusion(path, monkeypatch):
    monkeypatch.setenv("ACCEPTSIM_NOTEBOOK_SCALE", "small")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute(env=dict(os.environ))
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(
        str(o.get("data", {}).get("text/plain", "")) + str(o.get("text", "")) for o in outputs
    )
    for expected in EXPECTED.get(path.name, []):
        assert expected in text, f"{path.name} did not print {expected!r}"
