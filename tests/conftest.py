"""Shared fixtures: small, fast runs."""

from __future__ import annotations

import pytest

from models.experiment import RunConfig, simulate


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
