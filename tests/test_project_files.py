"""The project's own metadata agrees with itself: one version, one licence."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import version
from pathlib import Path

import acceptsim

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_the_version_comes_from_the_installed_metadata() -> None:
    assert acceptsim.__version__ == version("acceptsim") == PYPROJECT["version"]


def test_citation_and_changelog_name_the_current_version() -> None:
    citation = (ROOT / "CITATION.cff").read_text()
    assert re.search(rf'^version: "{re.escape(PYPROJECT["version"])}"$', citation, re.M)
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"## [{PYPROJECT['version']}]" in changelog


def test_the_licence_file_is_the_licence_declared() -> None:
    declared = PYPROJECT["license"]  # an SPDX expression
    assert PYPROJECT["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().startswith(f"{declared} License")
    assert f"license: {declared}" in (ROOT / "CITATION.cff").read_text()


def test_make_notebook_installs_the_notebooks_extra_and_opens_the_notebooks() -> None:
    """The README's way to open the notebooks: `make notebook` installs the `notebooks`
    extra (JupyterLab, and widgets for the progress bars) and starts JupyterLab on them."""
    import subprocess

    extras = PYPROJECT["optional-dependencies"]["notebooks"]
    names = {re.split(r"[<>=\[ ]", req)[0] for req in extras}
    assert {"jupyterlab", "ipywidgets"} <= names
    plan = subprocess.run(["make", "-n", "notebook"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout
    assert ".[dev,notebooks]" in plan and "jupyter lab docs/notebooks" in plan
    assert "make notebook" in (ROOT / "README.md").read_text()


def test_every_notebook_cell_has_an_id() -> None:
    """nbformat 4.5 cells carry ids (without, nbformat warns, and will refuse)."""
    import json

    for path in sorted((ROOT / "docs" / "notebooks").glob("*.ipynb")):
        notebook = json.loads(path.read_text())
        assert (notebook["nbformat"], notebook["nbformat_minor"]) >= (4, 5), path.name
        missing = [i for i, cell in enumerate(notebook["cells"]) if "id" not in cell]
        assert missing == [], f"{path.name}: cells {missing} have no id"


def test_the_full_scale_notebooks_are_not_stale() -> None:
    """The documentation shows every notebook at full scale beside its small run; a
    notebook edited since its full-scale copy was made fails here (regenerate it with
    ``python tools/full_scale.py run NAME``)."""
    from tool_module import load_tool

    assert load_tool("full_scale").stale() == []
