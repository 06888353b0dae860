"""Shared fixtures: small, fast configurations."""

from __future__ import annotations

import pytest

from models import RunConfig


@pytest.fixture
def short_config() -> RunConfig:
    """A one-second run at moderate load: fast enough for every test."""
    return RunConfig(rate_per_s=8000.0, duration_s=1.5, warmup_s=0.5, seed=7)
