"""HAProxy 2.6's tune.maxaccept measured and predicted
(tests/data/measured/haproxy-loopback-quotas; its README section gives the tables).

Two CFS quotas (0.05 CPU per 20 ms, 0.1 CPU per 10 ms), limits 1, 2, 4, 8, 16, 64 and
unlimited alternated within each of 3 repeats, 10-s httperf runs.  Each set's costs are
the host's (``acceptsim measure-costs --server haproxy``: the system calls, and the cost
of a turn of HAProxy's loop from its own count of turns) with ``request_s`` fitted to
its limit-4 runs alone: every other limit is a prediction.

What holds: the reply rate within a MAPE of 10% over all limits and rates; the predicted
best limit the measured best or within 2 standard errors of it at every rate; the sign
of limit 1 minus unlimited wherever its measured difference exceeds 2 standard errors;
client timeouts within a factor of 2 where they exceed 50/s; and the limit `acceptsim
search` recommends serving, on the measured runs, within 2 standard errors of the
measured best.  Every run was recorded on a quiet machine (``MeasuredRun.host_limits``;
the first set was not, and is gone: tests/data/measured/README.md says what it showed).
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

from acceptsim.config_io import load_params_file
from acceptsim.measure import find_runs, load_run
from acceptsim.measure.calibrate import config_for, validate
from acceptsim.models import RunConfig
from acceptsim.models.runner import run_point
from acceptsim.sim.search import best_of

DATA = Path(__file__).resolve().parent / "data" / "measured" / "haproxy-loopback-quotas"
#: each set: its CFS quota (CPUs) and period (s)
SETS = {"quota-0.05-period-20ms": (0.05, 0.02), "quota-0.1-period-10ms": (0.1, 0.01)}
LIMITS = [1, 2, 4, 8, 16, 64, math.inf]


@pytest.fixture(scope="module", params=list(SETS))
def report(request: pytest.FixtureRequest) -> dict:
    name = request.param
    runs = [load_run(d) for d in find_runs(DATA / name)]
    costs = load_params_file(DATA / f"{name}.params.toml")[0]
    return {"name": name, **validate(runs, costs, jobs=2)}


def test_every_limit_is_predicted_from_the_limit_4_fit(report: dict) -> None:
    assert report["runs_in_mape"] >= 55
    assert report["mape_reply_rate"] <= 10.0
    assert set(report["mape_reply_rate_by_accept_limit"]) == {"1", "2", "4", "8", "16", "64",
                                                              "inf"}


def test_the_best_limit_and_the_sign_of_one_minus_unlimited(report: dict) -> None:
    limits = report["limits"]
    assert len(limits["rates"]) == 3 and limits["best_wrong"] == 0
    signs = [p["one_minus_inf"]["sign_right"] for p in limits["rates"] if "one_minus_inf" in p]
    assert False not in signs  # None: the measured difference is within its noise
    if report["name"] == "quota-0.05-period-20ms":  # at 800/s unlimited serves most
        assert signs[0] is True  # (past saturation its runs are client-limited but one)
    # past saturation limit 1 serves least of the finite limits, below HAProxy's default
    # and 64, measured and predicted (a turn of the loop per connection)
    for point in limits["rates"][1:]:
        by = {c["accept_limit"]: c for c in point["limits"]}
        for key in ("measured_mean", "predicted"):
            assert by[1][key] < min(by[4][key], by[64][key])


def timeouts(report: dict) -> dict[tuple[float, float], tuple[float, float]]:
    """(rate, limit) -> mean measured and predicted client timeouts/s (runs not excluded)."""
    grouped: dict[tuple[float, float], list[tuple[float, float]]] = {}
    for row in report["runs"]:
        if not row["excluded_because"]:
            pair = (row["measured"]["client_timeouts_per_s"],
                    row["predicted"]["client_timeouts_per_s"])
            grouped.setdefault((row["target_rate_per_s"], row["accept_limit"]), []).append(pair)
    return {k: (sum(m for m, _ in v) / len(v), sum(p for _, p in v) / len(v))
            for k, v in grouped.items()}


def test_client_timeouts_within_a_factor_of_two(report: dict) -> None:
    checked = 0
    for (rate, limit), (measured, predicted) in timeouts(report).items():
        if measured <= 50:
            continue
        checked += 1
        assert 0.5 <= predicted / measured <= 2.0, (rate, limit, measured, predicted)
    assert checked >= 13


def test_unlimited_at_the_edge_has_a_collapsed_state_the_finite_limits_do_not() -> None:
    """Unlimited at the edge of saturation is metastable, in the model as on the real
    server: after 2 s at 3,000/s the unlimited HAProxy stays collapsed at 800/s (every
    connection it accepts waits behind a turn's whole batch past its client's timeout),
    while limits 1 and 4 serve as they do at a constant 800/s.  On a quiet machine at a
    constant 800/s neither falls in (3 of 3 measured repeats serve every connection); the
    first set, recorded beside another busy process, had one repeat that did."""
    name = "quota-0.05-period-20ms"
    costs = load_params_file(DATA / f"{name}.params.toml")[0]
    runs = {load_run(d).info.server.accept_limit: load_run(d) for d in find_runs(DATA / name)
            if "-rate-000800-rep-1" in d.name}

    def replies(limit: float, profile: str) -> float:
        config = dataclasses.replace(config_for(runs[limit], costs), rate_profile=profile,
                                     duration_s=10.0, warmup_s=6.0)
        return run_point(config, checked=False)["reply_rate_per_s"]

    kick = "step:3000@0,800@2"
    assert replies(math.inf, kick) < 0.2 * 800
    for limit in (1, 4):
        assert replies(limit, kick) == pytest.approx(replies(limit, ""), rel=0.1)


def search_point(name: str, rate: float) -> dict:
    """The testbed of a set as `acceptsim search` takes it (docs/howto/haproxy.md)."""
    quota, period = SETS[name]
    costs = load_params_file(DATA / f"{name}.params.toml")[0]
    return {"server": "haproxy", "rate_per_s": rate, "duration_s": 10.0, "warmup_s": 0.0,
            "timeout_s": 1.0, "kernel": "linux-modern", "network": "loopback",
            "cpu_quota": quota, "cpu_period_s": period, "costs": costs,
            "server_params": {"backlog": 128}}


def measured_at(name: str, rate: float) -> dict[float, tuple[float, float]]:
    runs = [load_run(d) for d in find_runs(DATA / name)]
    costs = load_params_file(DATA / f"{name}.params.toml")[0]
    point = next(p for p in validate([r for r in runs if r.info.load.target_rate_per_s == rate],
                                     costs)["limits"]["rates"])
    return {c["accept_limit"]: (c["measured_mean"], c["measured_stderr"]) for c in point["limits"]}


SATURATED = [("quota-0.05-period-20ms", 800.0), ("quota-0.05-period-20ms", 2000.0),
             ("quota-0.05-period-20ms", 3000.0), ("quota-0.1-period-10ms", 3000.0),
             ("quota-0.1-period-10ms", 4500.0)]


@pytest.mark.parametrize(("name", "rate"), [
    pytest.param(*point, marks=() if point == SATURATED[3] else pytest.mark.slow)
    for point in SATURATED])
def test_the_recommended_limit_serves_within_noise_of_the_best(name: str, rate: float) -> None:
    recommended = best_of(search_point(name, rate), "accept_limit", LIMITS, replications=3,
                          jobs=2).best.value
    measured = measured_at(name, rate)
    best = max(measured, key=lambda k: measured[k][0])
    gap = measured[best][0] - measured[recommended][0]
    se = math.sqrt(measured[best][1] ** 2 + measured[recommended][1] ** 2)
    assert gap <= 2 * se or recommended == best


@pytest.mark.slow
@pytest.mark.parametrize(("name", "rate"), SATURATED)
def test_the_best_limit_does_not_depend_on_where_the_period_timer_fires(
        name: str, rate: float) -> None:
    """The sets were recorded before runs carried their cgroup's period-timer place, and
    are simulated at 0 (``RunConfig.cpu_period_offset_s``).  At every place from 0 to
    three quarters of the period (two seeds each) the model's best limit at each
    saturated point is the one it is at 0, and unlimited serves less than a quarter of it
    past saturation (0.20 at most, 2026-12-07); no finite limit's rate moves by more than
    8% (6.0% at most).
    (At 9,000/s under the default costs the collapse itself depends on the place:
    tests/test_haproxy.py.)"""
    period = SETS[name][1]

    def rates(place: float) -> dict[float, float]:
        return {limit: float(np.mean([run_point(RunConfig.from_dict({
            **search_point(name, rate), "accept_limit": limit,
            "cpu_period_offset_s": place * period, "seed": seed}),
            checked=False)["reply_rate_per_s"] for seed in (1, 2)])) for limit in LIMITS}

    at_zero = rates(0.0)
    best = max(at_zero, key=at_zero.__getitem__)
    for place in (0.1, 0.25, 0.5, 0.75):
        placed = rates(place)
        assert max(placed, key=placed.__getitem__) == best, (place, placed)
        for limit in LIMITS[:-1]:
            assert placed[limit] == pytest.approx(at_zero[limit], rel=0.08), (place, limit)
        if rate > 800.0:
            assert placed[math.inf] < 0.25 * placed[best]
