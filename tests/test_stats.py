"""sim.stats: confidence intervals, MSER-5 and the stopping rule."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from acceptsim.sim.errors import ConfigError
from acceptsim.sim.stats import StoppingRule, mean_ci, mser, mser5, summarise


def test_mean_ci_matches_the_student_t_formula() -> None:
    ci = mean_ci([1.0, 2.0, 3.0])
    t = scipy_stats.t.ppf(0.975, 2)
    assert ci.mean == pytest.approx(2.0)
    assert ci.half_width == pytest.approx(t * 1.0 / math.sqrt(3))
    assert ci.n == 3
    assert ci.low < 2.0 < ci.high


def test_mean_ci_of_one_observation_has_no_width() -> None:
    ci = mean_ci([5.0])
    assert ci.mean == 5.0 and math.isnan(ci.half_width)


def test_mean_ci_rejects_a_confidence_outside_0_1() -> None:
    with pytest.raises(ConfigError):
        mean_ci([1.0, 2.0], confidence=1.5)


def test_95_percent_intervals_cover_the_true_mean_about_95_percent_of_the_time() -> None:
    rng = np.random.default_rng(20041)
    trials = 2000
    covered = sum(mean_ci(rng.exponential(3.0, 30)).covers(3.0) for _ in range(trials))
    # exponential samples of 30 make t intervals slightly liberal; binomial sd is ~0.005
    assert 0.92 <= covered / trials <= 0.97


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6), min_size=2, max_size=50))
def test_an_interval_is_centred_on_the_mean_and_never_negative(values: list[float]) -> None:
    ci = mean_ci(values)
    assert ci.half_width >= 0
    assert ci.low <= ci.mean <= ci.high
    assert ci.mean == pytest.approx(float(np.mean(values)), abs=1e-6)


def test_mser5_finds_an_initial_transient() -> None:
    rng = np.random.default_rng(7)
    steady = 100 + rng.normal(0, 2, 400)
    transient = np.linspace(0, 100, 60, endpoint=False)  # a ramp up, as from an empty system
    series = np.concatenate([transient, steady])
    cut = mser5(series)
    assert 50 <= cut.observations <= 80
    assert cut.observations % 5 == 0
    assert cut.mean == pytest.approx(100, abs=1)
    assert cut.reliable


def test_mser5_deletes_little_from_a_stationary_series() -> None:
    rng = np.random.default_rng(8)
    cut = mser5(rng.normal(10, 1, 500))
    assert cut.observations <= 50


def test_mser5_of_a_constant_series_deletes_nothing() -> None:
    assert mser5([3.0] * 50).observations == 0


def test_mser_flags_a_series_still_in_its_transient() -> None:
    cut = mser5(np.arange(100, dtype=float))  # still climbing at the end
    assert not cut.reliable


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0, 1e5), min_size=10, max_size=300))
def test_mser_never_deletes_more_than_half_the_batches(values: list[float]) -> None:
    cut = mser(values, batch=5)
    assert 0 <= cut.observations <= 5 * (cut.batches // 2)


def test_mser_needs_two_batches() -> None:
    with pytest.raises(ConfigError):
        mser5([1.0] * 9)


def test_stopping_rule_asks_for_more_replications_only_when_imprecise() -> None:
    rule = StoppingRule("x", rel_half_width=0.01, max_replications=50)
    assert rule.replications_needed([100.0, 100.1, 99.9]) == 3
    noisy = [90.0, 110.0, 100.0]
    wanted = rule.replications_needed(noisy)
    assert 3 < wanted <= 50
    assert rule.replications_needed(noisy * 20) == 60  # at the cap already: stop
    assert rule.replications_needed([1.0]) == 2


def test_stopping_rule_validates_its_settings() -> None:
    with pytest.raises(ConfigError):
        StoppingRule("x", rel_half_width=0)
    with pytest.raises(ConfigError):
        StoppingRule("x", rel_half_width=0.1, max_replications=1)


def test_summarise_gives_one_row_per_configuration() -> None:
    frame = pd.DataFrame(
        {"limit": [1, 1, 1, 10, 10, 10], "y": [1.0, 2.0, 3.0, 10.0, 10.0, 10.0]}
    )
    table = summarise(frame, by=["limit"], metrics=["y"])
    assert list(table["limit"]) == [1, 10]
    assert list(table["replications"]) == [3, 3]
    assert table["y.mean"].tolist() == pytest.approx([2.0, 10.0])
    assert table["y.ci_half_width"].iloc[1] == 0.0
    assert (table["y.ci_low"] <= table["y.mean"]).all()
