"""Every notebook runs from top to bottom at small scale (``ACCEPTSIM_NOTEBOOK_SCALE=small``).

A notebook with a test of its own (``tests/test_notebook_<name>.py``, which
also checks what it prints) is run there instead.
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
# a notebook with a test of its own (tests/test_notebook_<name>.py, or listed here) is
# executed there, where what it prints is also checked
OWN_TEST = {"prototype_policy.ipynb"}  # tests/test_notebook_policy.py
NOTEBOOKS = [
    p
    for p in sorted((ROOT / "notebooks").glob("*.ipynb"))
    if p.name not in OWN_TEST and not (ROOT / "tests" / f"test_notebook_{p.stem}.py").exists()
]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_executes(path, monkeypatch):
    monkeypatch.setenv("ACCEPTSIM_NOTEBOOK_SCALE", "small")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute(env=dict(os.environ))
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error"]
    assert not errors
