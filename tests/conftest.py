"""Shared fixtures: small, fast configurations and runs."""

from __future__ import annotations

import os
from types import ModuleType

import pytest
from tool_module import load_tool

from acceptsim.models.experiment import RunConfig, simulate

# Sweeps cache finished runs in the user's cache directory by default; the tests (and
# the notebooks and processes they start) run every run they ask for, and write nothing
# outside their temporary directories: tests of the cache give it a directory of theirs.
os.environ["ACCEPTSIM_CACHE"] = "off"


@pytest.fixture
def short_config() -> RunConfig:
    """A one-second run at moderate load: fast enough for every test."""
    return RunConfig(rate_per_s=8000.0, duration_s=1.5, warmup_s=0.5, seed=7)


@pytest.fixture(scope="session")
def small_run():
    """``small_run(**fields)``: a short simulated run, cached for the session."""
    cache: dict = {}

    def run(**fields):
        key = tuple(sorted(fields.items()))
        if key not in cache:
            base = {"duration_s": 2.0, "warmup_s": 0.5, "rate_per_s": 5000.0}
            base.update(fields)
            cache[key] = simulate(RunConfig.from_dict(base))
        return cache[key]

    return run


@pytest.fixture(scope="session")
def reference_tool() -> ModuleType:
    """``tools/reference.py`` (the reference set and its record comparison), loaded from
    its file: ``tools/`` is not a package."""
    return load_tool("reference")
