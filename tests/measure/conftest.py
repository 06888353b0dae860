"""Fixtures for the measured-run tests: the run directories recorded by the harness."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fake_cgroupfs import FakeCgroupfs
from measure_samples import RUN_DIRS, RUN_SETS


@pytest.fixture(params=list(RUN_SETS.values()), ids=list(RUN_SETS))
def run_set(request: pytest.FixtureRequest) -> list[Path]:
    """The folders of one recorded set of nginx runs (``measure_samples.replay`` checks
    each, and names every one that fails)."""
    return request.param


@pytest.fixture
def run_copy(tmp_path: Path) -> Path:
    """A writable copy of one recorded run directory."""
    target = tmp_path / "run"
    shutil.copytree(RUN_DIRS[0], target)
    return target


@pytest.fixture
def cgroupfs(monkeypatch: pytest.MonkeyPatch) -> object:
    """Make fake hierarchies behave as cgroupfs: ``cgroupfs(root)``."""

    def install(root: Path) -> FakeCgroupfs:
        fake = FakeCgroupfs(root)
        for name, function in fake.patches().items():
            monkeypatch.setattr(Path, name, function)
        return fake

    return install
