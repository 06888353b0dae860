"""nginx under wrk on a quiet machine, measured and predicted
(tests/data/measured/nginx-wrk-quiet; its README section gives the tables).

nginx-wrk's protocol for one worker (a cgroup of 0.25 CPU per 4 ms on CPU 0, wrk 4.1 with
one thread on CPU 1, 1 to 64 connections, keep-alive off and on, 2 repeats of 10 s), with
the host's costs measured right after the runs and nginx's per-request, keep-alive and
per-connection work fitted to the httperf runs and the wrk runs of 64 connections alone:
every other wrk run is a prediction.  The issue's criteria for a wrk set, checked here:
the throughput MAPE of at most 10% over every run holds since a reply's sender pays for
waking wrk's thread asleep in epoll_wait (``wake_reader_s``; at one connection every reply
does), and keep-alive's gain right in sign and size from 4 connections up (at one, 16%
low); the latency's median and tail do not.  What misses is a strict xfail with its
numbers.

nginx-wrk-quiet-2 is the whole protocol (1 and 2 workers, 1 to 256 connections) recorded
right after, with its own costs: one worker within 10% (6.3%), two workers not.
nginx-wrk-quiet-6 is that protocol with each point's one-worker and two-worker runs taken
one right after the other: two workers without keep-alive from 4 connections up within
10% (6.4%), where quiet-2's were 11-45% above (docs/design_log.md, "nginx's speed moves
within a run").

At one connection nginx sleeps and wakes for every request, and its reply wakes wrk's
thread for every request.  On this quiet machine that costs it 38-63 us of CPU a reply
(20-35 at 64 connections, where neither sleeps); in nginx-wrk, recorded when the host's
wake-up latency measured 255 +/- 376 us, 120-395 us.  Waking the reader is the larger
part: one kept connection from httperf, which busy-polls and is never woken, cost nginx
25-29 us a reply, from wrk 41-54 us (three alternated pairs, 2026-12-07 06:45 UTC;
tests/data/measured/README.md), and a loopback send that wakes a sleeping reader costs its
sender 8.5 +/- 2.0 us more (``acceptsim measure-costs``' ``wake_reader_s``).
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


def latency_misses(report: dict) -> list[str]:
    """The wrk runs whose predicted p50 is not within 20% of the measured or whose p99 is
    not within a factor of 1.5 (the issue's criterion)."""
    misses = []
    for r in wrk_rows(report):
        m, p = r["measured"], r["predicted"]
        if not (abs(p["wrk_latency_ms.p50"] / m["wrk_latency_ms.p50"] - 1) <= 0.2
                and 1 / 1.5 <= p["wrk_latency_ms.p99"] / m["wrk_latency_ms.p99"] <= 1.5):
            misses.append(r["run"])
    return misses


def test_every_run_is_compared_and_neither_client_nor_host_shaped_one(report: dict) -> None:
    assert len(wrk_rows(report)) == 16 and report["excluded"] == []
    assert report["closed_loop"]["runs"] == 16


def test_throughput_mape_within_10_percent_over_every_run(report: dict) -> None:
    """The issue's criterion: 5.9% over the 16 runs, one connection 15-17% above without
    keep-alive and 2-4% below with it.  It was 11.1%, one connection without keep-alive
    37-39% above, before a reply's sender paid for waking wrk's sleeping thread
    (``wake_reader_s``, 8.5 us) and wrk's woken thread ran a wake-up's latency later:
    each reply at one connection costs the measured nginx 18-29 us beyond 64
    connections', its own sleep and the reader's wake-up (the model: 19)."""
    assert report["closed_loop"]["mape_reply_rate"] <= 10.0


def test_throughput_within_15_percent_wherever_nginx_rarely_sleeps(report: dict) -> None:
    """From 4 connections up every run within 15% (at most 12.9%, 4 connections without
    keep-alive), 4.7% on average."""
    errors = [abs(r["reply_rate_error_pct"]) for r in wrk_rows(report) if r["concurrency"] > 1]
    assert len(errors) == 12 and max(errors) <= 15.0 and np.mean(errors) <= 10.0, errors


def test_keepalives_gain_from_4_connections_up(report: dict) -> None:
    """The issue's criterion: the sign and size of keep-alive's gain (replies/s with it
    over without) within 15% at 4, 16 and 64 connections: 1.96, 1.72, 1.68 measured
    against 1.81, 1.68, 1.67.  At 4 it follows from the loopback's round trip: with the
    LAN's 100 us the model gave 1.66, the next request on a kept connection a round trip
    late."""
    gains = report["closed_loop"]["keepalive_gain"]
    assert sorted(g["concurrency"] for g in gains) == [1, 4, 16, 64]
    for g in gains:
        assert g["measured"] > 1.0 and g["predicted"] > 1.0, g
        if g["concurrency"] >= 4:
            assert g["predicted"] == pytest.approx(g["measured"], rel=0.15), g


@pytest.mark.xfail(strict=True, reason="1.37 predicted against 1.64 measured (1.44 before a "
                   "reply's sender paid for waking wrk's thread, 1.78 while the model's "
                   "nginx slept twice a reply without keep-alive): one connection without "
                   "keep-alive is 15-17% above the measured, with it 2-4% below.  The "
                   "measured nginx pays 29 us a reply beyond 64 connections' without "
                   "keep-alive and 18 with it; the model 19 and 19 (its sleep and the "
                   "reader's wake-up).  What else a connection costs nginx when it sleeps "
                   "for each is open; in nginx-wrk-quiet-3, recorded four hours later, "
                   "the gain there is 1.46 measured, 1.59 predicted")
def test_keepalives_gain_at_one_connection(report: dict) -> None:
    g = next(g for g in report["closed_loop"]["keepalive_gain"] if g["concurrency"] == 1)
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


@pytest.mark.xfail(strict=True, reason="p50 within 20% in 3 of the 16 runs, p99 within a "
                   "factor of 1.5 in 9.  The median within a CFS period is set by where a "
                   "request falls against nginx's runtime: from 4 connections up the "
                   "measured p50 is 0.09-8.4 ms, the model's 0.07-12.8 (without keep-alive "
                   "at 16 connections 0.42-0.43 against 2.3, at 64 12.5-12.8 against 8.2-8.4; "
                   "with it at 64 1.3 against 6.8-6.9).  The tail at one connection: "
                   "2.3-2.7 ms measured (a request that meets the end of nginx's runtime "
                   "waits out the period), 0.6-0.7 predicted")
def test_latency_p50_within_20_percent_and_p99_within_1_5x(report: dict) -> None:
    assert not latency_misses(report), latency_misses(report)


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
    runs (6.3% over the 20 with one connection's)."""
    errors = [abs(r["reply_rate_error_pct"]) for r in wrk_rows(report2)
              if r["worker_processes"] == 1 and r["concurrency"] >= 4]
    assert len(errors) == 16 and np.mean(errors) <= 10.0


def test_one_workers_keepalive_gain_from_4_connections_up(report2: dict) -> None:
    """1.49, 1.39, 1.40 and 1.45 measured at 4, 16, 64 and 256 connections against 1.54,
    1.43, 1.40 and 1.42."""
    for g in report2["closed_loop"]["keepalive_gain"]:
        if g["worker_processes"] == 1 and g["concurrency"] >= 4:
            assert g["predicted"] == pytest.approx(g["measured"], rel=0.15), g


@pytest.mark.xfail(strict=True, reason="13.8% over the 40 runs: one worker 6.3%, two 21.3%.  "
                   "One connection: 0-5% above without keep-alive, 13-17% with it (15.4% in "
                   "all, one connection 19-25% and 37-42% above, before a reply's sender "
                   "paid for waking wrk's thread): keep-alive's gain there measured 1.13, "
                   "1.64 twelve minutes before, and the model's is 1.26.  Two "
                   "workers without keep-alive 10-44% above from 4 connections up, each "
                   "using its quota and paying 14-27% more CPU a reply than one worker: "
                   "the set ran all its one-worker runs before its two-worker runs, and "
                   "nginx's CPU a reply moves by a third within minutes on this machine; "
                   "alternated (nginx-wrk-quiet-6) two workers cost what one does and "
                   "those runs are within 6.4%.  With keep-alive at 4 connections 30-46% "
                   "below (6-18% before the reader's wake-up), where the measured pair "
                   "slept 0.30 times a reply")
def test_throughput_mape_within_10_percent_over_every_run_of_the_whole_protocol(
        report2: dict) -> None:
    assert report2["closed_loop"]["mape_reply_rate"] <= 10.0


# -- nginx-wrk-quiet-3: nginx-wrk-quiet's protocol four hours later ---------------------

DATA3 = DATA.parent / "nginx-wrk-quiet-3"


@pytest.fixture(scope="module")
def report3() -> dict:
    return wrk_report(DATA3)


def test_four_hours_later_every_run_is_compared(report3: dict) -> None:
    assert len(wrk_rows(report3)) == 16 and report3["excluded"] == []


def test_four_hours_later_the_throughput_mape_is_within_10_percent(report3: dict) -> None:
    """The issue's criterion on a set recorded after the reader's wake-up was modelled,
    its cost (``wake_reader_s``, 6.9 +/- 0.5 us) measured right after the runs with the
    others: 9.7% over the 16 runs.  One connection is 8-15% above without keep-alive and
    20-23% with it; from 4 connections up 7.5% (4 kept connections 16-18% above)."""
    assert report3["closed_loop"]["mape_reply_rate"] <= 10.0


def test_four_hours_later_keepalives_gain_at_every_concurrency(report3: dict) -> None:
    """1.46, 1.95, 2.06, 2.06 measured at 1, 4, 16 and 64 connections against 1.59, 2.22,
    2.09, 2.06: within 15% everywhere."""
    gains = report3["closed_loop"]["keepalive_gain"]
    assert sorted(g["concurrency"] for g in gains) == [1, 4, 16, 64]
    for g in gains:
        assert g["predicted"] == pytest.approx(g["measured"], rel=0.15), g


@pytest.mark.xfail(strict=True, reason="p50 within 20% in 2 of the 16 runs, p99 within a "
                   "factor of 1.5 in 10, as in nginx-wrk-quiet: the median within a CFS "
                   "period, and one connection's tail (2.5-2.6 ms measured, 0.5-1.1 "
                   "predicted)")
def test_four_hours_later_latency_p50_within_20_percent_and_p99_within_1_5x(
        report3: dict) -> None:
    assert not latency_misses(report3), latency_misses(report3)


# -- nginx-wrk-quiet-4: the protocol again, wrk's sleeps recorded ----------------------

DATA4 = DATA.parent / "nginx-wrk-quiet-4"


@pytest.fixture(scope="module")
def report4() -> dict:
    return wrk_report(DATA4)


def test_with_wrks_sleeps_recorded_the_throughput_mape_is_within_10_percent(
        report4: dict) -> None:
    """The issue's criterion on the set recorded at 07:48 UTC (its costs measured right
    after, ``wake_reader_s`` among them, and the wake-up latency's growth with the idle
    time ten minutes later): 5.8% over the 16 runs (5.5% with a flat latency), one
    connection 3-7% above, every run within 18% (4 and 16 kept connections, whose
    repeats differ by 24-25%)."""
    assert len(wrk_rows(report4)) == 16 and report4["excluded"] == []
    assert report4["closed_loop"]["mape_reply_rate"] <= 10.0


def test_with_wrks_sleeps_recorded_keepalives_gain_at_every_concurrency(
        report4: dict) -> None:
    """1.47, 1.75, 1.63, 1.73 measured at 1, 4, 16 and 64 connections against 1.45, 1.84,
    1.75, 1.73."""
    gains = report4["closed_loop"]["keepalive_gain"]
    assert sorted(g["concurrency"] for g in gains) == [1, 4, 16, 64]
    for g in gains:
        assert g["predicted"] == pytest.approx(g["measured"], rel=0.15), g


def test_at_one_connection_wrk_sleeps_once_a_request_measured_and_simulated(
        report4: dict) -> None:
    """wrk's voluntary context switches per request, measured, and the model's wrk thread
    wake-ups per reply: 1.00-1.01 against 1.00 at one connection, kept or not (each reply
    wakes it, and nginx pays ``wake_reader_s`` for each)."""
    for r in wrk_rows(report4):
        if r["concurrency"] == 1:
            assert r["measured"]["client_sleeps_per_reply"] == pytest.approx(1.0, abs=0.01)
            assert r["predicted"]["client_sleeps_per_reply"] == pytest.approx(1.0, abs=0.01)


@pytest.mark.xfail(strict=True, reason="with keep-alive from 4 connections up wrk slept "
                   "0.36-0.70 times a request, the model's thread is woken 0.19-0.34 times "
                   "a reply (0.15-0.25 with the latency measured after 1 ms idle, 27 us): "
                   "after an idle of 30 us the measured latency is 20 us (16-24), and "
                   "replies that come meanwhile keep the thread busy.  With 15 us (costs not "
                   "fitted again) it was woken 0.50 times a reply at 4 kept connections "
                   "(0.70 measured) and 0.33 at 64 (0.41): what a C program woken between "
                   "replies waits is shorter than the probe's Python sleeper")
def test_wrks_sleeps_per_request_within_a_factor_of_1_5(report4: dict) -> None:
    for r in wrk_rows(report4):
        measured = r["measured"]["client_sleeps_per_reply"]
        if measured > 0.1:
            ratio = r["predicted"]["client_sleeps_per_reply"] / measured
            assert 1 / 1.5 <= ratio <= 1.5, (r["run"], measured, ratio)


@pytest.mark.xfail(strict=True, reason="p50 within 20% in 3 of the 16 runs, p99 within a "
                   "factor of 1.5 in 10, as in the sets before it")
def test_with_wrks_sleeps_recorded_latency_p50_within_20_percent_and_p99_within_1_5x(
        report4: dict) -> None:
    assert not latency_misses(report4), latency_misses(report4)


# -- where the period timer fires: six probes, and nginx-wrk-quiet-5 ------------------

PROBES = DATA.parent / "period-timer-probes.toml"


def test_the_period_timers_place_sets_the_median_as_measured() -> None:
    """Six fresh cgroups of 1 ms per 4 ms, nginx under wrk -c64 with keep-alive
    (period-timer-probes.toml): the period timer 0.24-2.84 ms past the ticks, wrk's p50
    1.93-6.30 ms.  The model of nginx-wrk-quiet-4's 64 kept connections at each probe's
    place: p50 1.28, 1.28, 1.28, 5.86, 3.70 and 4.11 ms, within 20% of the measured at the
    three places past 1.7 ms; with the periods on the ticks' grid (the model before), 1.28
    at every place, within 20% of none."""
    import tomllib

    from acceptsim.measure import load_run
    from acceptsim.measure.calibrate import config_for
    from acceptsim.models.experiment import simulate

    probes = tomllib.loads(PROBES.read_text())["probe"]
    costs = load_params_file(DATA4 / "wrk.params.toml")[0]
    run = load_run(DATA4 / "workers-1" / "nginx-multi_accept-off-wrk-c-00064-keepalive-on-rep-1")
    base = config_for(run, costs).replace(duration_s=4.0)

    def p50(offset_s: float) -> float:
        return simulate(base.replace(cpu_period_offset_s=offset_s))["wrk_latency_ms"]["p50"]

    hits = [abs(p50(p["offset_us"] / 1e6) / p["p50_ms"] - 1) <= 0.2 for p in probes]
    assert sum(hits) >= 3, hits
    aligned = p50(0.0)
    assert not any(abs(aligned / p["p50_ms"] - 1) <= 0.2 for p in probes)


DATA5 = DATA.parent / "nginx-wrk-quiet-5"


@pytest.fixture(scope="module")
def report5() -> dict:
    return wrk_report(DATA5)


def test_every_run_records_its_period_timers_place_one_a_cgroup() -> None:
    """Each `acceptsim measure` call's cgroup keeps one place (within 20 us over its runs);
    the calls' places differ (0.28 ms and 0.02 ms past the ticks); each run's simulation
    takes its own."""
    from acceptsim.measure import find_runs, load_run
    from acceptsim.measure.calibrate import config_for

    costs = load_params_file(DATA5 / "wrk.params.toml")[0]
    places: dict[bool, list[float]] = {}
    for d in find_runs(DATA5 / "workers-1"):
        run = load_run(d)
        offset = run.info.server.cpu_period_offset_us
        assert 0.0 <= offset < 4000.0, d.name
        assert config_for(run, costs).cpu_period_offset_s == pytest.approx(offset / 1e6)
        places.setdefault(run.info.load.keepalive, []).append(offset)
    assert sorted(len(v) for v in places.values()) == [8, 8]
    for offsets in places.values():
        assert max(offsets) - min(offsets) < 25.0


def test_with_the_places_recorded_the_throughput_mape_is_within_10_percent(
        report5: dict) -> None:
    """8.1% over the 16 runs, every run used by the fit and the validation."""
    assert len(wrk_rows(report5)) == 16 and report5["excluded"] == []
    assert report5["closed_loop"]["mape_reply_rate"] <= 10.0


@pytest.mark.parametrize("concurrency", [
    1, 4, pytest.param(16, marks=pytest.mark.xfail(
        strict=True, reason="1.91 predicted against 2.27 measured (-16%)")), 64])
def test_with_the_places_recorded_keepalives_gain(report5: dict, concurrency: int) -> None:
    """1.57, 2.20, 2.27, 1.95 measured at 1, 4, 16 and 64 connections against 1.61, 2.07,
    1.91, 1.95."""
    (gain,) = [g for g in report5["closed_loop"]["keepalive_gain"]
               if g["concurrency"] == concurrency]
    assert gain["predicted"] == pytest.approx(gain["measured"], rel=0.15), gain


@pytest.mark.xfail(strict=True, reason="p50 within 20% in 6 of the 16 runs (1 connection "
                   "without keep-alive, 16 with it, 64 without it), p99 within a factor of "
                   "1.5 in 9.  Both calls' places fell near the ticks (0.28 and 0.02 ms), "
                   "where every run is a turn or more; below 16 connections nginx sleeps, "
                   "and the medians of 0.05-0.18 ms are wake-ups, 0.05-0.06 in the model")
def test_with_the_places_recorded_latency_p50_within_20_percent_and_p99_within_1_5x(
        report5: dict) -> None:
    assert not latency_misses(report5), latency_misses(report5)


# -- nginx-wrk-quiet-6: one and two workers alternated point by point -----------------

DATA6 = DATA.parent / "nginx-wrk-quiet-6"


@pytest.fixture(scope="module")
def report6() -> dict:
    return wrk_report(DATA6)


def compared(report: dict, workers: int) -> list[dict]:
    """The runs of ``workers`` workers that ``validate`` compared (not excluded)."""
    excluded = {e["run"] for e in report["excluded"]}
    return [r for r in wrk_rows(report)
            if r["worker_processes"] == workers and r["run"] not in excluded]


def test_alternated_every_run_is_compared_but_one_the_host_shaped(report6: dict) -> None:
    """40 runs; one worker's first run of 16 kept connections is left out by validate's
    quiet-machine rule (other tasks 40% of the load by the tick samples, an artefact of
    them: tests/measure/test_calibrate.py, FLAGGED)."""
    assert len(wrk_rows(report6)) == 40 and report6["closed_loop"]["runs"] == 39
    (excluded,) = report6["excluded"]
    assert "c-00016-keepalive-on-rep-1" in excluded["run"]
    assert "other tasks" in excluded["reason"]


def test_alternated_one_worker_throughput_within_10_percent(report6: dict) -> None:
    """MAPE 9.2% over one worker's 19 runs."""
    errors = [abs(r["reply_rate_error_pct"]) for r in compared(report6, 1)]
    assert len(errors) == 19 and np.mean(errors) <= 10.0


def test_alternated_two_workers_without_keepalive_from_4_connections_within_10_percent(
        report6: dict) -> None:
    """Two workers, each in a cgroup of 0.25 CPU, without keep-alive from 4 connections
    up: 6.4% (every run within 11%), where nginx-wrk-quiet-2, which ran them two minutes
    after its one-worker runs, had them 11-45% above: alternated with one worker's runs,
    two workers cost what one does a reply."""
    errors = [abs(r["reply_rate_error_pct"]) for r in compared(report6, 2)
              if not r["keepalive"] and r["concurrency"] >= 4]
    assert len(errors) == 8 and np.mean(errors) <= 10.0 and max(errors) <= 11.0


@pytest.mark.xfail(strict=True, reason="12.0% over the 39 runs: one worker 9.2%, two "
                   "14.6%.  Two workers at one connection without keep-alive 36-50% "
                   "below (7,977 and 6,250/s measured, 4,001 predicted): the workers take "
                   "blocks of 16 connections in turn (nginx re-adds the listening socket "
                   "every 16 accepts), a block is about a quota's work, and the model's "
                   "blocks end in a throttle every other period where the measured ones "
                   "did in a quarter to a third; with keep-alive at 4 and 16 connections "
                   "8-32% below")
def test_alternated_throughput_mape_within_10_percent_over_every_run(report6: dict) -> None:
    assert report6["closed_loop"]["mape_reply_rate"] <= 10.0


@pytest.mark.xfail(strict=True, reason="p50 within 20% in 17 of the 40 runs, p99 within a "
                   "factor of 1.5 in 21, as in the sets before it")
def test_alternated_latency_p50_within_20_percent_and_p99_within_1_5x(report6: dict) -> None:
    assert not latency_misses(report6), latency_misses(report6)


@pytest.mark.xfail(strict=True, reason="within 15% at 5 of the 10 points: one worker 1.59, "
                   "1.95, 2.02, 1.75, 1.55 measured at 1, 4, 16, 64 and 256 connections "
                   "against 1.41, 1.75, 1.70, 1.71, 1.79; two workers 0.77, 1.71, 1.97, 1.81, "
                   "1.57 against 1.18, 1.18, 1.48, 1.68, 1.74 (at one connection keep-alive "
                   "keeps the connection on one worker's quota, where without it the two "
                   "take turns: measured, it loses; the model, whose turns stall, has it "
                   "gain)")
def test_alternated_keepalives_gain_within_15_percent(report6: dict) -> None:
    for g in report6["closed_loop"]["keepalive_gain"]:
        assert g["predicted"] == pytest.approx(g["measured"], rel=0.15), g
