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
