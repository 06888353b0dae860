"""How far apart repeats of the same wrk run land on this host, and why
(tests/data/measured/nginx-wrk-repeats; its README section gives the tables).

nginx-wrk's one-worker configuration (a 0.25-CPU quota per 4-ms period, wrk with one thread
on the other CPU) at the concurrencies where nginx sleeps between requests, 1 and 4
connections, keep-alive off and on, 6 repeats of 5 s each; and 1 kept connection under a
quota of a whole CPU (never throttled).  Every quota-bound run used its quota (0.246-0.249
CPU), so its reply rate is the quota over nginx's CPU per reply, and that CPU moved from
repeat to repeat with wrk's own CPU per request: the host's speed for a process that
sleeps and wakes for every request changed between runs seconds apart, for both processes
alike.  What follows for a model: at one connection the repeats themselves lie further
from their mean than the issue's 10% MAPE allows any prediction to; at four they do not.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import numpy as np
import pytest

from acceptsim.config_io import load_params_file
from acceptsim.measure import find_runs, load_run
from acceptsim.measure.calibrate import validate
from acceptsim.measure.run import MeasuredRun

DATA = Path(__file__).resolve().parent / "data" / "measured"
SET = DATA / "nginx-wrk-repeats"
#: the costs the nginx-wrk set is predicted with (fitted to that set's own runs)
COSTS = DATA / "nginx-wrk" / "wrk.params.toml"


def points(part: str) -> dict[tuple[int, bool], list[MeasuredRun]]:
    """The runs of ``part`` by (connections, keep-alive)."""
    out: dict[tuple[int, bool], list[MeasuredRun]] = {}
    for d in find_runs(SET / part):
        run = load_run(d)
        out.setdefault((run.info.load.concurrency, run.info.load.keepalive), []).append(run)
    return out


def spread(rates: list[float]) -> float:
    """The repeats' mean absolute deviation from their mean, as a share of it: the MAPE
    a prediction equal to their mean would have."""
    mean = statistics.fmean(rates)
    return statistics.fmean(abs(r - mean) for r in rates) / mean


def cpu_per_reply_s(run: MeasuredRun) -> float:
    """nginx's CPU per reply over the run: its cgroup's usage over its replies."""
    series = run.timeseries()
    replies = float((series["reply_rate_per_s"] * series["interval_s"]).sum())
    return float(series["usage_ms"].sum()) / 1e3 / replies


def wrk_cpu_per_request_s(run: MeasuredRun) -> float:
    """wrk's CPU per request over the run (what ``config_for`` gives the model)."""
    assert run.wrk is not None
    return run.info.load.client_cpu_s / run.wrk.requests


def predicted_points(connections: int) -> list[list[tuple[MeasuredRun, float]]]:
    """The quota-bound points of ``connections``: each run with the reply rate the model
    predicts for it (``acceptsim validate`` with nginx-wrk's costs)."""
    groups = [g for g in points("quota-0.25").values() if g[0].info.load.concurrency == connections]
    report = validate([r for g in groups for r in g], load_params_file(COSTS)[0], jobs=2)
    rate = {row["run"]: row["predicted"]["reply_rate_per_s"] for row in report["runs"]}
    return [[(run, rate[run.path.name]) for run in g] for g in groups]


def test_every_point_has_six_repeats_and_each_quota_bound_run_used_its_quota() -> None:
    for part, n in (("quota-0.25", 4), ("quota-1", 1)):
        found = points(part)
        assert len(found) == n and all(len(runs) == 6 for runs in found.values())
    for runs in points("quota-0.25").values():
        for run in runs:
            series = run.timeseries()
            used = float(series["usage_ms"].sum()) / 1e3 / float(series["interval_s"].sum())
            assert used == pytest.approx(0.25, abs=0.01), run.path.name


def test_at_one_connection_the_repeats_lie_further_from_their_mean_than_10_percent() -> None:
    """22% and 25% at one connection (keep-alive off, on), 7% and 9% at four: a per-run
    MAPE of 10% is below what the runs at one connection repeat to."""
    found = points("quota-0.25")
    for (connections, keepalive), runs in found.items():
        s = spread([r.record()["reply_rate_per_s"] for r in runs])
        if connections == 1:
            assert s > 0.15, (connections, keepalive, s)
        else:
            assert s < 0.10, (connections, keepalive, s)
    unthrottled = [r.record()["reply_rate_per_s"] for r in points("quota-1")[(1, True)]]
    assert max(unthrottled) / min(unthrottled) > 3.0  # 1,412-6,811/s: two modes


def test_nginx_and_wrk_pay_the_same_host_speed_run_by_run() -> None:
    """Never throttled, one kept connection: nginx's CPU per reply was 300-319 us in two
    repeats and 72-106 us in four, and wrk's CPU per request moved with it (257-275 us
    against 63-85): the host's speed for a process that sleeps for every request, not
    nginx's own work.  Under the quota the same at one connection (the correlation is 0.999
    at each of the three points of one connection; 0.90 and 0.98 at four, whose repeats
    differ less)."""
    for part in ("quota-1", "quota-0.25"):
        for (connections, keepalive), runs in points(part).items():
            if connections != 1:
                continue
            nginx = np.array([cpu_per_reply_s(r) for r in runs])
            wrk = np.array([wrk_cpu_per_request_s(r) for r in runs])
            assert np.corrcoef(nginx, wrk)[0, 1] > 0.9, (part, connections, keepalive)
    runs = points("quota-1")[(1, True)]
    nginx = [cpu_per_reply_s(r) for r in runs]
    assert max(nginx) / min(nginx) > 3.0


@pytest.mark.slow
def test_at_four_connections_each_prediction_lies_within_its_points_repeats() -> None:
    """The model (nginx-wrk's costs, each run's own wrk CPU) at four connections: every
    run's prediction within the range of its point's six repeats (2,645-3,316/s without
    keep-alive, predicted 3,006-3,074; 4,761-6,670 with it, predicted 5,166-6,063)."""
    for group in predicted_points(4):
        rates = [run.record()["reply_rate_per_s"] for run, _ in group]
        for run, predicted in group:
            assert min(rates) <= predicted <= max(rates), (run.path.name, rates, predicted)


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="at one connection under the quota the model "
                   "predicts 2,089-2,222/s without keep-alive and 2,305-3,099 with it "
                   "(2,444-2,467 and 2,942-3,861 before a reply's sender paid for waking "
                   "wrk's sleeping thread), against repeats' means of 1,543 and 2,006 "
                   "(22-25% spread): 42% and 39% above.  nginx's CPU per reply there was "
                   "92-242 us, moving from run to run with wrk's own "
                   "(test_nginx_and_wrk_pay_the_same_host_speed_run_by_run)")
def test_at_one_connection_the_mean_prediction_is_within_10_percent_of_the_repeats_mean() -> None:
    for group in predicted_points(1):
        measured = statistics.fmean(run.record()["reply_rate_per_s"] for run, _ in group)
        predicted = statistics.fmean(rate for _, rate in group)
        assert predicted == pytest.approx(measured, rel=0.10), (measured, predicted)


@pytest.mark.slow
def test_keepalives_gain_at_4_connections_on_the_repeats_means_is_the_models() -> None:
    """Keep-alive's gain at 4 connections on one worker, on the means of six repeats:
    1.92 measured (5,894/s over 3,074), 1.75 predicted, within the 15% the gain is held to
    from 16 connections up.  nginx-wrk's two repeats gave 2.28, its runs without
    keep-alive (2,691 and 2,134/s) both below the six here (2,645-3,316), and the model's
    1.76 misses it: the strict xfail there keeps its numbers."""
    means = {}
    for group in predicted_points(4):
        keepalive = group[0][0].info.load.keepalive
        means[keepalive] = (statistics.fmean(run.record()["reply_rate_per_s"] for run, _ in group),
                            statistics.fmean(rate for _, rate in group))
    measured = means[True][0] / means[False][0]
    predicted = means[True][1] / means[False][1]
    assert measured > 1.5 and predicted == pytest.approx(measured, rel=0.15), (measured, predicted)
