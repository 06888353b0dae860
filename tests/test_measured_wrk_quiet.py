"""nginx under wrk on a quiet machine, measured and predicted
(tests/data/measured/nginx-wrk-quiet; its README section gives the tables).

nginx-wrk's protocol for one worker (a cgroup of 0.25 CPU per 4 ms on CPU 0, wrk 4.1 with
one thread on CPU 1, 1 to 64 connections, keep-alive off and on, 2 repeats of 10 s), with
the host's costs measured right after the runs and nginx's per-request, keep-alive and
per-connection work fitted to the httperf runs and the wrk runs of 64 connections alone:
every other wrk run is a prediction.  The issue's criteria for a wrk set, checked here:
keep-alive's gain right in sign and size holds; the throughput MAPE of at most 10% holds
from 4 connections up, not at one, where every reply costs nginx a sleep that costs it
more than the model charges; the latency's median and tail do not.  What misses is a
strict xfail with its numbers.

nginx-wrk-quiet-2 is the whole protocol (1 and 2 workers, 1 to 256 connections) recorded
right after, with its own costs: one worker from 4 connections up within 10%, one
connection and two workers without keep-alive not.

At one connection nginx sleeps and wakes for every request.  On this quiet machine that
costs it 38-63 us of CPU a reply (20-35 at 64 connections, where it never sleeps); in
nginx-wrk, recorded when the host's wake-up latency measured 255 +/- 376 us, 120-395 us.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_measured_wrk import rows, wrk_report

from acceptsim.config_io import load_params_file

pytestmark = pytest.mark.slow

DATA = Path(__file__).resolve().parent / "data" / "measured" / "nginx-wrk-quiet"


@pytest.fixture(scope="module")
def report() -> dict:
    return wrk_report(DATA)


def wrk_rows(report: dict) -> list[dict]:
    return rows(report)


def test_every_run_is_compared_and_neither_client_nor_host_shaped_one(report: dict) -> None:
    assert len(wrk_rows(report)) == 16 and report["excluded"] == []
    assert report["closed_loop"]["runs"] == 16


@pytest.mark.xfail(strict=True, reason="11.1% over the 16 runs: one connection without "
                   "keep-alive 37-39% above (every other run within 15%).  nginx closes a "
                   "Connection: close request's socket after its reply and sleeps once a "
                   "reply there (1.0 measured and simulated; the model slept twice, woken "
                   "by the client's FIN, until 2026-12-07, and was 10-12% above).  Each of "
                   "those sleeps costs the measured nginx about 29 us of CPU (62.6 us a reply "
                   "against 34 at 64 connections, where it never sleeps), the model's 10.6 "
                   "us and a cold cost under 1 us after 0.1 ms idle.  What a sleep costs "
                   "nginx itself is the lead: nginx-loopback-idle-gaps fits nginx's own "
                   "cold part at 177 +/- 41 us (the probe's: 58-124), still only 4 us "
                   "after 0.1 ms idle")
def test_throughput_mape_within_10_percent_over_every_run(report: dict) -> None:
    """The issue's criterion."""
    assert report["closed_loop"]["mape_reply_rate"] <= 10.0


def test_throughput_within_15_percent_wherever_nginx_rarely_sleeps(report: dict) -> None:
    """From 4 connections up (at one, each reply costs nginx a sleep: 37-39% above
    without keep-alive, 20-22% with it): every run within 15% (at most 14.6%, 4
    connections without keep-alive), 5.1% on average."""
    errors = [abs(r["reply_rate_error_pct"]) for r in wrk_rows(report) if r["concurrency"] > 1]
    assert len(errors) == 12 and max(errors) <= 15.0 and np.mean(errors) <= 10.0, errors


def test_keepalives_gain_at_every_concurrency(report: dict) -> None:
    """The issue's criterion: the sign and size of keep-alive's gain (replies/s with it
    over without) within 15% at 1, 4, 16 and 64 connections: 1.64, 1.96, 1.72, 1.68
    measured against 1.44, 1.82, 1.69, 1.68.  At 4 it follows from the loopback's round
    trip: with the LAN's 100 us the model gave 1.66, the next request on a kept
    connection a round trip late."""
    gains = report["closed_loop"]["keepalive_gain"]
    assert sorted(g["concurrency"] for g in gains) == [1, 4, 16, 64]
    for g in gains:
        assert g["measured"] > 1.0 and g["predicted"] > 1.0, g
        assert g["predicted"] == pytest.approx(g["measured"], rel=0.15), g


def test_the_tail_at_4_kept_connections_is_the_quotas_debt(report: dict) -> None:
    """With 4 kept connections nginx never sleeps, overruns its 1 ms per 4 ms and pays
    the debt over the next periods: p99 9.1-9.2 ms measured, 12.1 predicted (2.3 with
    the LAN's round trip, where nginx slept between requests and was throttled for one
    period at a time)."""
    for r in wrk_rows(report):
        if r["keepalive"] and r["concurrency"] == 4:
            ratio = r["predicted"]["wrk_latency_ms.p99"] / r["measured"]["wrk_latency_ms.p99"]
            assert 1 / 1.5 <= ratio <= 1.5, r["run"]


@pytest.mark.xfail(strict=True, reason="p50 within 20% in 4 of the 16 runs, p99 within a "
                   "factor of 1.5 in 9.  The median within a CFS period is set by where a "
                   "request falls against nginx's runtime: from 4 connections up the "
                   "measured p50 is 0.09-8.4 ms, the model's 0.07-12.9 (without keep-alive "
                   "at 16 connections 0.43 against 2.3, at 64 12.9 against 8.2; with it at "
                   "64 1.3 against 6.9).  The tail at one connection: 2.3-2.7 ms measured "
                   "(a request that meets the end of nginx's runtime waits out the "
                   "period), 1.0-1.6 predicted")
def test_latency_p50_within_20_percent_and_p99_within_1_5x(report: dict) -> None:
    misses = []
    for r in wrk_rows(report):
        m, p = r["measured"], r["predicted"]
        if not (abs(p["wrk_latency_ms.p50"] / m["wrk_latency_ms.p50"] - 1) <= 0.2
                and 1 / 1.5 <= p["wrk_latency_ms.p99"] / m["wrk_latency_ms.p99"] <= 1.5):
            misses.append(r["run"])
    assert not misses, misses


def test_the_fit_is_inside_its_bounds() -> None:
    """A fitted value on its bound is a missing mechanism: none here, each cost well
    inside (on nginx-wrk's runs the same fit puts connection_s on its lower bound of
    0.01 us).  request_s's bound is nginx's measured CPU per reply less its measured
    system calls (59.6 us)."""
    costs = load_params_file(DATA / "wrk.params.toml")[0]
    assert 1e-6 < costs.request_s < 59.6e-6
    assert costs.keepalive_s > 1e-6 and costs.connection_s > 1e-6


# -- nginx-wrk-quiet-2: the whole protocol again, right after ---------------------------

DATA2 = DATA.parent / "nginx-wrk-quiet-2"


@pytest.fixture(scope="module")
def report2() -> dict:
    return wrk_report(DATA2)


def test_the_whole_protocol_again_every_run_compared(report2: dict) -> None:
    assert len(wrk_rows(report2)) == 40 and report2["excluded"] == []


def test_one_worker_throughput_from_4_connections_up_within_10_percent(report2: dict) -> None:
    """One worker, 4 to 256 connections, keep-alive off and on: MAPE 5.7% over the 16
    runs (one connection: above)."""
    errors = [abs(r["reply_rate_error_pct"]) for r in wrk_rows(report2)
              if r["worker_processes"] == 1 and r["concurrency"] >= 4]
    assert len(errors) == 16 and np.mean(errors) <= 10.0


def test_one_workers_keepalive_gain_from_4_connections_up(report2: dict) -> None:
    """1.49, 1.39, 1.40 and 1.45 measured at 4, 16, 64 and 256 connections against 1.51,
    1.42, 1.40 and 1.40."""
    for g in report2["closed_loop"]["keepalive_gain"]:
        if g["worker_processes"] == 1 and g["concurrency"] >= 4:
            assert g["predicted"] == pytest.approx(g["measured"], rel=0.15), g


@pytest.mark.xfail(strict=True, reason="15.4% over the 40 runs: one worker 10.7%, two 20.1%.  "
                   "One connection: 19-25% above without keep-alive, 37-42% with it, each "
                   "reply costing nginx a sleep (49-63 us a reply, 38-39 twelve minutes "
                   "before; the model charges the 9.9 us measured after the runs).  Two "
                   "workers without keep-alive 11-45% above from 4 connections up, each "
                   "using its quota and paying 14-27% more CPU a reply than one worker (the "
                   "kernel's tick samples read 8-24% of their CPU as other work, but they "
                   "miss a throttled group's runtime when the period is one tick: the cause "
                   "is open)")
def test_throughput_mape_within_10_percent_over_every_run_of_the_whole_protocol(
        report2: dict) -> None:
    assert report2["closed_loop"]["mape_reply_rate"] <= 10.0
