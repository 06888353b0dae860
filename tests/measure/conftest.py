"""Fixtures for the measured-run tests: the run directories recorded by the harness."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from measure_samples import RUN_DIRS


@pytest.fixture(params=RUN_DIRS, ids=[f"{p.parent.name}/{p.name}" for p in RUN_DIRS])
def run_dir(request: pytest.FixtureRequest) -> Path:
    return request.param


@pytest.fixture
def run_copy(tmp_path: Path) -> Path:
    """A writable copy of one recorded run directory."""
    target = tmp_path / "run"
    shutil.copytree(RUN_DIRS[0], target)
    return target
