"""Shared fixtures: small, fast configurations."""

from __future__ import annotations

import pytest

from models import RunConfig
from models.experiment import simulate


@pytest.fixture
def short_config() -> RunConfig:
    """A one-second run at moderate load: fast enough for every test."""
    return RunConfig(rate_per_s=8000.0, duration_s=1.5, warmup_s=0.5, seed=7)


@pytest.fixture(scope="session")
def small_run():
    cache: dict = {}

    def run(**fields):
        key = tuple(sorted(fields.items()))
        if key not in cache:
            base = {"duration_s": 2.0, "warmup_s": 0.5, "rate_per_s": 5000.0}
            base.update(fields)
            cache[key] = simulate(RunConfig.from_dict(base))
        return cache[key]

    return run
