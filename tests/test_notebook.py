"""Every notebook runs (at a small scale)."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

# notebooks with a test of their own (which sets their scale convention, "small") are
# executed there: tests/test_notebook_sweep.py, tests/test_notebook_policy.py
OWN_TEST = {"sweep.ipynb", "prototype_policy.ipynb"}
NOTEBOOKS = sorted(
    p for p in (Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb")
    if p.name not in OWN_TEST
)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_executes(path, monkeypatch):
    monkeypatch.setenv("ACCEPTSIM_NOTEBOOK_SCALE", "0.1")
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute(env=dict(os.environ))
