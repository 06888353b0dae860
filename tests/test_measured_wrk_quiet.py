"""nginx under wrk on a quiet machine, measured and predicted
(tests/data/measured/nginx-wrk-quiet; its README section gives the tables).

nginx-wrk's protocol for one worker (a cgroup of 0.25 CPU per 4 ms on CPU 0, wrk 4.1 with
one thread on CPU 1, 1 to 64 connections, keep-alive off and on, 2 repeats of 10 s), with
the host's costs measured right after the runs and nginx's per-request, keep-alive and
per-connection work fitted to the httperf runs and the wrk runs of 64 connections alone:
every other wrk run is a prediction.  The issue's criteria for a wrk set, checked here:
throughput MAPE at most 10% and keep-alive's gain right in sign and size; what does not
hold yet (the latency's median and tail) is a strict xfail with its numbers.

nginx-wrk-quiet-2 is the whole protocol (1 and 2 workers, 1 to 256 connections) recorded
right after, with its own costs: one worker within 10%, two without keep-alive not (a
strict xfail with the numbers).

At one connection nginx sleeps and wakes for every request.  On this quiet machine that
costs it 35 us of CPU a request (a probe: 7,193 replies/s against its quota of 0.25 CPU);
in nginx-wrk, recorded when the host's wake-up latency measured 255 +/- 376 us, it cost
120-395 us, and the model (which charges the wake-up as measured) missed those runs by
1.2-2.7 times.
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


def test_throughput_mape_within_10_percent_over_every_run(report: dict) -> None:
    """The issue's criterion: 7.6% over the 16 runs (one connection 10-22%, the others
    within 13%).  With a LAN's 100-us round trip on loopback the model was 6.5% here
    (costs fitted with the new one), but with keep-alive's gain wrong (below)."""
    assert report["closed_loop"]["mape_reply_rate"] <= 10.0
    errors = {(r["keepalive"], r["concurrency"]): abs(r["reply_rate_error_pct"])
              for r in wrk_rows(report)}
    assert max(errors.values()) <= 25.0, errors


def test_keepalives_gain_at_every_concurrency(report: dict) -> None:
    """The issue's criterion: the sign and size of keep-alive's gain (replies/s with it
    over without) within 15% at 1, 4, 16 and 64 connections: 1.64, 1.96, 1.72, 1.68
    measured against 1.78, 1.85, 1.69, 1.68.  At 1 and 4 it follows from the loopback's
    round trip: with the LAN's 100 us the model gave 1.23 and 1.66, the next request on a
    kept connection a round trip late."""
    gains = report["closed_loop"]["keepalive_gain"]
    assert sorted(g["concurrency"] for g in gains) == [1, 4, 16, 64]
    for g in gains:
        assert g["measured"] > 1.5 and g["predicted"] > 1.5, g
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


def test_one_worker_throughput_within_10_percent(report2: dict) -> None:
    """One worker, 1 to 256 connections, keep-alive off and on: MAPE 8.6% over the 20
    runs."""
    errors = [abs(r["reply_rate_error_pct"]) for r in wrk_rows(report2)
              if r["worker_processes"] == 1]
    assert len(errors) == 20 and np.mean(errors) <= 10.0


def test_one_workers_keepalive_gain_from_4_connections_up(report2: dict) -> None:
    """1.49, 1.39, 1.40 and 1.45 measured at 4, 16, 64 and 256 connections against 1.52,
    1.42, 1.40 and 1.40."""
    for g in report2["closed_loop"]["keepalive_gain"]:
        if g["worker_processes"] == 1 and g["concurrency"] >= 4:
            assert g["predicted"] == pytest.approx(g["measured"], rel=0.15), g


@pytest.mark.xfail(strict=True, reason="13.1% over the 40 runs: one worker 8.6%, two 17.6%.  "
                   "Two workers without keep-alive are predicted 11-44% above the measured "
                   "from 4 connections up, each using its quota (the kernel's tick samples "
                   "read 8-24% of their CPU as other work, but they miss a throttled "
                   "group's runtime when the period is one tick: the cause is open).  And "
                   "one kept "
                   "connection: 37-42% above, nginx paying 49-51 us a reply there, 38 us in "
                   "nginx-wrk-quiet twelve minutes before (the price of a sleep moves on this "
                   "virtual machine; the model charges the 9.9 us measured after the runs)")
def test_throughput_mape_within_10_percent_over_every_run_of_the_whole_protocol(
        report2: dict) -> None:
    assert report2["closed_loop"]["mape_reply_rate"] <= 10.0
