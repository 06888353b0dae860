"""``make notebooks`` (issue 46): the Makefile's runner executes a notebook headless, shows
its cells as they finish, writes nothing back, and fails with one line naming the error.
Marked docs (a kernel starts: seconds), as the documentation build's notebooks are."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.docs

MAKEFILE = Path(__file__).resolve().parents[1] / "Makefile"


def runner() -> str:
    text = MAKEFILE.read_text()
    body = re.search(r"^define RUN_NOTEBOOKS\n(.*?)^endef$", text, re.S | re.M)
    assert body is not None and re.search(r"^notebooks: ", text, re.M)
    return body.group(1).replace("$$", "$")


def test_the_runner_executes_and_writes_nothing_back(tmp_path) -> None:
    good = tmp_path / "good.ipynb"
    bad = tmp_path / "bad.ipynb"
    for path, source in ((good, "x = 6 * 7\nprint(x)"), (bad, "raise ValueError('nope')")):
        notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
        nbformat.write(notebook, path)
    before = good.read_bytes()
    out = subprocess.run([sys.executable, "-c", runner(), str(good)], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "[1/1] good.ipynb: 1 cells" in out.stdout
    assert good.read_bytes() == before  # nothing written back
    failed = subprocess.run([sys.executable, "-c", runner(), str(bad)], capture_output=True,
                            text=True, timeout=300)
    assert failed.returncode == 1
    assert "bad.ipynb: failed: ValueError: nope" in failed.stderr
