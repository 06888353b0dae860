"""nginx under wrk, measured and predicted (tests/data/measured/nginx-wrk; its README
section gives the tables).

nginx 1.22, one worker and two (each in a cgroup of 0.25 CPU per 4 ms, both on one CPU),
wrk 4.1 with one thread on the other CPU, 1 to 256 connections, keep-alive off (every
request says Connection: close) and on, 2 repeats of 10 s.  The costs: the host's, measured
(``acceptsim measure-costs``, with the client's connect as ``client_connect_s``), with
nginx's per-request work, its keep-alive wait and its per-connection work fitted to
httperf runs at the same quota and the one-worker wrk runs of 64 connections alone: every
other wrk run is a prediction.  wrk's own CPU per request is each run's (its CPU time over
its requests: ``config_for``), part of every request's cycle at a few connections.

What holds: keep-alive's gain (the reply rate with keep-alive over the rate without) within
15% of the measured wherever wrk holds 16 connections or more; no accept-queue overflow
with keep-alive (wrk opens its connections one connect after another) and overflows
without it at 256 connections.  What does not yet,
strict xfails naming the mechanism each lacks: the issue's throughput MAPE of 10% over
every run, its p50 within 20% and its p99 within a factor of 1.5, and keep-alive's gain at
4 connections on one worker.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from acceptsim.config_io import load_params_file
from acceptsim.measure import find_runs, load_run
from acceptsim.measure.calibrate import config_for, validate
from acceptsim.models.runner import run_point
from acceptsim.sim.results import flatten

pytestmark = pytest.mark.slow

DATA = Path(__file__).resolve().parent / "data" / "measured" / "nginx-wrk"


def wrk_report(data: Path) -> dict:
    """``acceptsim validate`` of a wrk set's runs (beside them, its httperf runs are what
    the costs were fitted to) with the set's ``wrk.params.toml``."""
    runs = [load_run(d) for d in find_runs(data) if d.parent.name != "httperf"]
    costs = load_params_file(data / "wrk.params.toml")[0]
    return validate(runs, costs, jobs=2)


@pytest.fixture(scope="module")
def report() -> dict:
    return wrk_report(DATA)


def rows(report: dict, workers: int | None = None, least: int = 1) -> list[dict]:
    return [r for r in report["runs"] if r["client"] == "wrk" and r["concurrency"] >= least
            and (workers is None or r["worker_processes"] == workers)]


def test_every_wrk_run_is_compared_and_none_measured_the_client(report: dict) -> None:
    assert len(rows(report)) == 40 and report["excluded"] == []
    assert report["closed_loop"]["runs"] == 40


def test_keepalives_gain_follows_from_the_keepalive_and_connection_costs(report: dict) -> None:
    gains = {(g["worker_processes"], g["concurrency"]): g
             for g in report["closed_loop"]["keepalive_gain"]}
    checked = [(1, c) for c in (16, 64, 256)] + [(2, c) for c in (16, 64, 256)]
    for key in checked:
        g = gains[key]
        assert g["measured"] > 1.5 and g["predicted"] > 1.5, (key, g)
        assert g["predicted"] == pytest.approx(g["measured"], rel=0.15), (key, g)


@pytest.mark.xfail(strict=True, reason="1.76 predicted against 2.28 measured (2.07 before "
                   "wrk's woken thread ran a wake-up's latency after the reply that woke "
                   "it).  With keep-alive the measured nginx slept 0.027 times a reply, the "
                   "model's 0.25: this set's wake-up latency, 92 us measured after an idle "
                   "of 1 ms on a noisy host, delays wrk's next request past nginx's three "
                   "other replies; on the quiet host a wake after 30-200 us idle took 17-25 "
                   "us, after 1 ms 27-30 (2026-12-07), and the latency's growth with the "
                   "idle time is not modelled.  On six repeats of the point "
                   "(tests/test_measured_wrk_repeats.py) the gain is 1.92 measured, 1.75 "
                   "predicted; nginx-wrk's two runs without keep-alive lie below all six")
def test_keepalives_gain_at_4_connections_on_one_worker(report: dict) -> None:
    """At 4 kept connections on one worker the next request on a connection reaches nginx
    while it serves the other three, so it never sleeps and overruns its CFS quota
    (a probe on the testbed: 1,255 of 1,258 periods throttled, never idle); without
    keep-alive it sleeps between connections."""
    gains = {(g["worker_processes"], g["concurrency"]): g
             for g in report["closed_loop"]["keepalive_gain"]}
    g = gains[(1, 4)]
    assert g["predicted"] == pytest.approx(g["measured"], rel=0.15), g


def test_wrks_connect_loop_keeps_the_accept_queue_from_overflowing(report: dict) -> None:
    for r in rows(report):
        measured = r["measured"]["listen_overflows_per_s"]
        predicted = r["predicted"]["listen_overflows_per_s"]
        if r["keepalive"]:  # every connection made once, one connect after another
            assert measured == 0 and predicted == 0, r["run"]
        elif r["concurrency"] == 256:  # 256 connections on a backlog of 128
            assert measured > 100 and predicted > 30, r["run"]


def test_one_worker_throughput_from_4_connections_up(report: dict) -> None:
    errors = [abs(r["reply_rate_error_pct"]) for r in rows(report, workers=1, least=4)]
    assert len(errors) == 16 and np.mean(errors) <= 10.0


@pytest.mark.xfail(strict=True, reason="18.8% over all 40 runs: 9.7% over the 32 from 4 "
                   "connections up (10.8% before a reply's sender paid for waking wrk's "
                   "sleeping thread), 56% over the 8 of one connection (89% before).  One "
                   "connection measures nginx's sleep and wake-up per request (0.95-1 sleeps "
                   "per reply, 120-395 us of CPU per reply, the repeats 1.1-3.4x apart; six "
                   "repeats of it lie 22-25% from their own mean: "
                   "tests/test_measured_wrk_repeats.py): 2.5-5 times the model's cycle of "
                   "nginx's wake-up, its CPU and wrk's.  Recorded again on a quiet machine "
                   "(nginx-wrk-quiet, tests/test_measured_wrk_quiet.py) one connection cost "
                   "nginx 38-63 us a reply, and the model is within 10% over every run "
                   "there.  Two workers on one CPU with 4 kept connections (0.44-0.56 shares "
                   "measured) miss by 3-15%: nginx's keepalive_requests moves them with "
                   "every 1,000th reply")
def test_throughput_mape_within_10_percent_over_every_run(report: dict) -> None:
    assert report["closed_loop"]["mape_reply_rate"] <= 10.0


def test_latency_at_256_connections(report: dict) -> None:
    """At 256 connections the tail is wrk's start, and where the start falls on the
    kernel's timer grid (drawn from the seed) decides it.  With keep-alive nginx accepts
    every connection before their requests pile up unless its CFS period holds it off
    then (multi_accept off then takes one connection a loop): p99 58-63 ms measured on
    one worker, 37-39 on two; the model's median over seeds is within a factor of 1.5,
    where a start at time 0, on every grid line at once, gave one worker 0.59 s.  The
    median waits in the accept queue at every start: p50 within 20%."""
    for r in rows(report, least=256):
        m, p = r["measured"], r["predicted"]
        assert p["wrk_latency_ms.p50"] == pytest.approx(m["wrk_latency_ms.p50"], rel=0.2)
    run = load_run(DATA / "workers-1" / "nginx-multi_accept-off-wrk-c-00256-keepalive-on-rep-1")
    costs = load_params_file(DATA / "wrk.params.toml")[0]
    p99 = [flatten(run_point(config_for(run, costs, seed), checked=False))["wrk_latency_ms.p99"]
           for seed in range(1, 9)]
    measured = run.record()["wrk_latency_ms.p99"]
    assert 1 / 1.5 <= np.median(p99) / measured <= 1.5, (p99, measured)
    assert max(p99) > 200.0  # and some starts meet the period that holds nginx off


@pytest.mark.xfail(strict=True, reason="the median and the tail under a 4-ms CFS period, set "
                   "by which requests wait out a throttled period.  At 4 connections the "
                   "measured p99 is 7.4-10.4 ms; with keep-alive on one worker the model's "
                   "nginx sleeps 0.25 times a reply (the measured 0.027: the gain's xfail "
                   "above) and is throttled a period at a time, p99 2.8 ms (12.2 before "
                   "wrk's woken thread waited its wake-up latency), its p50 0.18 ms against "
                   "0.24-0.25; without keep-alive its p99 is 2.9-3.2 ms; and at 256 without "
                   "keep-alive the start's tail: the SYNs dropped at the start are let in at "
                   "their first retransmission in both measured repeats on one worker (p99 "
                   "0.82-1.09 s; 0.32-0.75 s on two workers), while the model's p99 on one "
                   "worker is above 200 ms at 9 of 20 seeds (742 ms at most) and 45 ms at "
                   "the others")
def test_latency_p50_within_20_percent_and_p99_within_1_5x(report: dict) -> None:
    for r in rows(report, least=4):
        m, p = r["measured"], r["predicted"]
        assert p["wrk_latency_ms.p50"] == pytest.approx(m["wrk_latency_ms.p50"], rel=0.2)
        assert 1 / 1.5 <= p["wrk_latency_ms.p99"] / m["wrk_latency_ms.p99"] <= 1.5
