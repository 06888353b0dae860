"""The closed-loop client (``concurrency``, ``keepalive``): C users, each starting its
next connection (or request) when the last one ends, checked against mean value
analysis of the closed network it makes, and against the response time law."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from acceptsim.models.config import RunConfig
from acceptsim.models.costs import HostCosts
from acceptsim.models.host import Host
from acceptsim.models.runner import run_point
from acceptsim.sim.errors import ConfigError

ZERO = {row["name"]: 0.0 for row in HostCosts.describe() if row["unit"].startswith("s")}
RTT_S = 1e-4
MU = 1000.0


def mva(users: int, mu: float, think_s: float) -> tuple[float, float]:
    """Exact mean value analysis of C users between a delay station (mean ``think_s``,
    any distribution) and one exponential server of rate ``mu``: throughput and the mean
    time at the server (BCMP: the product form holds for any delay distribution)."""
    queue = 0.0
    throughput = residence = 0.0
    for n in range(1, users + 1):
        residence = (1.0 + queue) / mu
        throughput = n / (think_s + residence)
        queue = throughput * residence
    return throughput, residence


def closed_run(server: str, users: int, keepalive: bool, seed: int) -> tuple[float, float]:
    config = RunConfig.from_dict({
        "server": server, "concurrency": users, "keepalive": keepalive, "duration_s": 5.0,
        "warmup_s": 1.0, "seed": seed, "kernel": "linux-modern",
        "costs": {**ZERO, "request_s": 1.0 / MU},
        "server_params": {"request_cost": "exponential", "backlog": 4096},
    })
    host = Host(config)
    record = host.run()
    return record["reply_rate_per_s"], float(np.mean(host.client.response_times))


@pytest.mark.parametrize(("server", "keepalive", "think_s"), [
    # a new connection per request: the reply's way back, the handshake, the request's way
    ("prefork", False, 2 * RTT_S),
    # one connection kept: the reply's way back and the next request's way there
    ("userver", True, RTT_S),
])
@pytest.mark.parametrize("users", [1, 4, 16])
def test_a_closed_loop_matches_mean_value_analysis(
    server: str, keepalive: bool, think_s: float, users: int
) -> None:
    runs = [closed_run(server, users, keepalive, seed) for seed in range(1, 7)]
    x = np.array([r[0] for r in runs])
    response = np.array([r[1] for r in runs])
    expected_x, at_server = mva(users, MU, think_s)
    t = stats.t.ppf(0.995, len(runs) - 1)
    half_x = t * x.std(ddof=1) / math.sqrt(len(runs))
    # replies are counted in whole numbers over a finite window: allow one per run
    assert abs(x.mean() - expected_x) <= half_x + 1.0, (x.mean(), expected_x, half_x)
    half_r = t * response.std(ddof=1) / math.sqrt(len(runs))
    assert abs(response.mean() - (at_server + RTT_S)) <= half_r + 1e-6, (
        response.mean(), at_server + RTT_S)


def test_the_users_are_the_concurrency_and_the_rate_follows_the_server() -> None:
    """The response time law: C = X (R + Z).  A closed loop slows down with its server
    instead of overflowing its queues: fewer users than the accept queue holds never
    overflow it."""
    x, response = closed_run("prefork", 8, False, 3)
    assert 8 == pytest.approx(x * (response + RTT_S), rel=0.02)
    record = run_point(RunConfig.from_dict({
        "server": "userver", "concurrency": 100, "duration_s": 2.0, "warmup_s": 0.5}))
    assert record["drops_per_s"]["total"] == 0
    assert record["target_rate_per_s"] is None and record["concurrency"] == 100
    assert record["connections"]["timed_out"] == 0


def test_a_user_gives_up_at_its_timeout_and_connects_again() -> None:
    """A server that never answers in time: each user times out once per timeout and
    starts a new connection; nothing is resolved twice, and no SYN outlives its user."""
    config = RunConfig.from_dict({
        "server": "prefork", "concurrency": 3, "duration_s": 3.0, "warmup_s": 0.0,
        "timeout_s": 0.5, "costs": {"request_s": 2.0},  # 2 s a request: every step times out
    })
    host = Host(config)
    record = host.run()
    # per user: 0.5 s per try over 3 s (the first request taken is served, too late)
    assert record["connections"]["timed_out"] >= 3 * 5
    assert record["connections"]["completed"] == 0


@pytest.mark.parametrize(("fields", "field"), [
    ({"keepalive": True}, "keepalive"),
    ({"concurrency": 4, "rate_profile": "step:100@0,200@1"}, "rate_profile"),
    ({"concurrency": -1}, "concurrency"),
])
def test_bad_closed_loop_settings_name_the_field(fields: dict, field: str) -> None:
    with pytest.raises(ConfigError) as err:
        RunConfig.from_dict(fields)
    assert err.value.field == field


def test_the_command_line_takes_a_concurrency_instead_of_a_rate() -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "acceptsim", "run", *args],
                              capture_output=True, text=True)

    ok = run("--concurrency", "20", "--keepalive", "--duration", "0.5", "--format", "json")
    assert ok.returncode == 0 and '"concurrency": 20' in ok.stdout
    both = run("--concurrency", "20", "--rate", "100", "--duration", "0.5")
    assert both.returncode != 0 and "--rate" in both.stderr and "Traceback" not in both.stderr
    neither = run("--duration", "0.5")
    assert neither.returncode != 0 and "--concurrency" in neither.stderr


def test_a_closed_loop_starts_at_a_random_instant_of_the_kernels_timer_cycle() -> None:
    """All users connect at once, and where that instant falls on the kernel's timer grid
    decides the first connections' fate, so it is drawn from the seed, uniformly over the
    grid's longest cycle: the wheel's first level above a tick (8 ticks of 4 ms on the modern
    kernel), or a longer CFS period.  The same seed gives the same start; the window, the
    series and the run's end count from it.  An open loop starts at 0 unless it runs on a
    CPU quota (whose first period holds a whole quota wherever the start falls in it)."""
    base = {"server": "userver", "concurrency": 8, "duration_s": 0.3, "warmup_s": 0.0,
            "kernel": "linux-modern"}
    starts = np.array([Host(RunConfig.from_dict({**base, "seed": s})).origin
                       for s in range(1, 61)])
    cycle = 0.004 * 2**3
    assert ((starts >= 0.0) & (starts < cycle)).all()
    assert stats.kstest(starts / cycle, "uniform").pvalue > 1e-3
    assert Host(RunConfig.from_dict({**base, "seed": 1})).origin == starts[0]
    period = 0.1  # a CFS period longer than the wheel's bucket: the start spans it
    quota = np.array([Host(RunConfig.from_dict({**base, "seed": s, "cpu_quota": 0.5,
                                                "cpu_period_s": period})).origin
                      for s in range(1, 61)])
    assert quota.max() < period and quota.max() > cycle
    assert Host(RunConfig.from_dict({**base, "concurrency": 0, "rate_per_s": 100.0})).origin == 0

    host = Host(RunConfig.from_dict({**base, "seed": 7, "timeseries_interval_s": 0.1,
                                     "series_interval_s": 0.1}))
    record = host.run()
    start = record["client_start_s"]
    assert start == host.origin > 0.0
    assert host.env.now == pytest.approx(start + 0.3)  # the run ends a duration after it
    series = record["timeseries"]
    assert series["time_s"] == pytest.approx([0.1, 0.2, 0.3])
    # every reply of the window is in one of the series' intervals, and the first
    # interval has replies: it begins at the start, not at time 0
    assert sum(record["replies_per_interval"]) == record["httperf"]["replies"]
    assert record["replies_per_interval"][0] > 0
    open_loop = run_point(RunConfig.from_dict({**base, "concurrency": 0, "rate_per_s": 100.0}))
    assert "client_start_s" not in open_loop
    on_quota = {**base, "concurrency": 0, "rate_per_s": 100.0, "cpu_quota": 0.5,
                "cpu_period_s": period}
    opens = np.array([Host(RunConfig.from_dict({**on_quota, "seed": s})).origin
                      for s in range(1, 61)])
    assert ((opens >= 0.0) & (opens < period)).all()
    assert stats.kstest(opens / period, "uniform").pvalue > 1e-3
    assert run_point(RunConfig.from_dict({**on_quota, "seed": 3}))["client_start_s"] == opens[2]


def test_nginx_closes_a_kept_connection_after_keepalive_requests() -> None:
    """nginx serves ``keepalive_requests`` requests on a kept connection, closes it with
    the last reply, and its user connects anew (nginx 1.22 under wrk, 4 kept
    connections: 78 passive opens for 75,340 requests, tests/data/measured/nginx-wrk).  A
    server without such a limit keeps each user's connection for the whole run."""
    base = {"server": "nginx", "client": "wrk", "wrk_threads": 1, "concurrency": 4,
            "keepalive": True, "duration_s": 1.0, "warmup_s": 0.0, "kernel": "linux-modern"}
    for limit in (100, 1000):  # 1000: nginx's default
        record = run_point(RunConfig.from_dict(
            {**base, "server_params": {"keepalive_requests": limit}}))
        replies = record["httperf"]["replies"]
        assert replies > 2 * limit
        # a new connection after every limit-th reply, less those the run's end cut short
        assert abs(record["connections"]["attempted"] - (4 + replies / limit)) <= 4
    userver = run_point(RunConfig.from_dict({**base, "server": "userver"}))
    assert userver["httperf"]["replies"] > 2000 and userver["connections"]["attempted"] == 4


def test_a_request_that_says_close_is_closed_with_its_reply() -> None:
    """wrk without keep-alive asks ``Connection: close``: nginx closes the socket as soon
    as the reply is written (``ngx_http_finalize_connection``), so at one connection it
    sleeps once a reply, for the next connection, as the measured nginx does (1.0 a reply
    in tests/data/measured/nginx-wrk-quiet), not twice, the second time until the client's
    FIN; and it never holds more than the one connection."""
    config = RunConfig.from_dict({
        "server": "nginx", "client": "wrk", "wrk_threads": 1, "concurrency": 1,
        "keepalive": False, "network": "loopback", "duration_s": 1.0, "warmup_s": 0.2,
        "kernel": "linux-modern"})
    # wrk's own CPU per reply and per new connection (nginx-wrk-quiet: about 70 us)
    record = run_point(config.replace(costs=config.costs.replace(
        client_request_s=50e-6, client_connection_s=20e-6)))
    assert record["reply_rate_per_s"] > 1000
    assert record["epoll_sleeps_per_s"] / record["reply_rate_per_s"] == pytest.approx(1.0, abs=0.02)
    assert record["open_connections_mean"] <= 1.0


# -- a reply that wakes wrk's thread (HostCosts.wake_reader_s) ---------------------------
WAKE_S = 10e-6


def wrk_run(concurrency: int, request_cpu_s: float, wake_s: float, **fields: object) -> dict:
    config = RunConfig.from_dict({
        "server": "nginx", "client": "wrk", "wrk_threads": 1, "concurrency": concurrency,
        "keepalive": True, "network": "loopback", "duration_s": 0.5, "warmup_s": 0.1,
        "kernel": "linux-modern", **fields})  # type: ignore[arg-type]
    return run_point(config.replace(costs=config.costs.replace(
        client_request_s=request_cpu_s, wake_reader_s=wake_s)), checked=False)


@pytest.mark.parametrize(("server", "keepalive"), [
    *((s, True) for s in ("nginx", "haproxy", "userver", "knot", "tux", "prefork",
                          "flash-sped", "flash-mp")),
    # the servers that close a Connection: close request's socket themselves after the
    # reply (the others wait for the client's FIN, whose time the wake-up's burst moves)
    *((s, False) for s in ("nginx", "userver", "prefork")),
])
def test_every_reply_to_wrks_sleeping_thread_costs_its_sender_the_wake_up(
        server: str, keepalive: bool) -> None:
    """One connection, kept or not: wrk's thread sleeps in epoll_wait whenever its one
    request is at the server, so each reply wakes it, and the server pays ``wake_reader_s``
    beyond its send (a loopback segment is received inside its sender's send).  The server
    is idle while wrk works, so the reply rate is the same; its CPU grows by the wake-ups
    alone (without keep-alive: not by a second close, which the client's FIN queued when
    the wake-up's burst came between the reply and the close)."""
    without = wrk_run(1, 20e-6, 0.0, server=server, keepalive=keepalive)
    woken = wrk_run(1, 20e-6, WAKE_S, server=server, keepalive=keepalive)
    assert woken["reply_rate_per_s"] == without["reply_rate_per_s"] > 1000
    grown = woken["cpu_share"]["work"] - without["cpu_share"]["work"]
    assert grown == pytest.approx(woken["reply_rate_per_s"] * WAKE_S, rel=0.01)
    assert woken["client_thread_wakes_per_reply"] == pytest.approx(1.0, abs=0.01)


def test_a_wrk_thread_that_is_never_idle_is_never_woken() -> None:
    """16 kept connections and wrk slower per request than nginx: its thread always has a
    reply to read, never sleeps, and the server pays no wake-up (nginx sleeps instead)."""
    without = wrk_run(16, 60e-6, 0.0)
    woken = wrk_run(16, 60e-6, WAKE_S)
    assert woken["epoll_sleeps_per_s"] > 0.9 * woken["reply_rate_per_s"]
    assert woken["cpu_share"] == pytest.approx(without["cpu_share"], abs=1e-12)
    assert woken["client_thread_wakes_per_reply"] == 0.0


def test_a_woken_wrk_thread_runs_a_wake_up_latency_later_and_replies_meanwhile_find_it_woken(
) -> None:
    """wrk's woken thread runs ``wakeup_latency_s`` after the reply that woke it, as the
    server's CPU does after the request that wakes nginx: at one connection each request's
    cycle is two latencies longer; at four, replies that come while wrk's thread is waking
    cost the server nothing more."""
    fast = wrk_run(1, 20e-6, WAKE_S)
    slow = wrk_run(1, 20e-6, WAKE_S, costs={"wakeup_latency_s": 50e-6})
    cycle = 1 / slow["reply_rate_per_s"] - 1 / fast["reply_rate_per_s"]
    assert cycle == pytest.approx(2 * 50e-6, rel=0.05)
    four = wrk_run(4, 20e-6, WAKE_S, costs={"wakeup_latency_s": 50e-6})
    four_free = wrk_run(4, 20e-6, 0.0, costs={"wakeup_latency_s": 50e-6})
    wakes = (four["cpu_share"]["work"] - four_free["cpu_share"]["work"]) / WAKE_S
    assert 0.0 < wakes < 0.5 * four["reply_rate_per_s"]
    assert wakes / four["reply_rate_per_s"] == pytest.approx(
        four["client_thread_wakes_per_reply"], rel=0.05)


def test_httperf_busy_polls_so_no_reply_wakes_it() -> None:
    """An open loop's httperf never sleeps: with any wake_reader_s, the same seed gives the
    same run."""
    config = RunConfig.from_dict({"server": "nginx", "rate_per_s": 5000.0, "duration_s": 0.5,
                                  "warmup_s": 0.1, "network": "loopback",
                                  "kernel": "linux-modern"})
    plain = run_point(config, checked=False)
    woken = run_point(config.replace(costs=config.costs.replace(wake_reader_s=WAKE_S)),
                      checked=False)
    for record in (plain, woken):
        record.pop("sim_cpu_time_s")
        record.pop("sim_conns_per_cpu_s")
    assert woken == plain


def test_the_wake_up_latency_grows_with_the_idle_time_before_it() -> None:
    """``wakeup_latency_s`` after no idle time, and ``wakeup_latency_cold_s`` more the
    longer the idle: one kept connection whose wrk thread works 1 ms between requests
    leaves nginx's CPU idle about 1 ms each time, so each cycle is longer by the growth
    at that idle, on both sides (nginx's CPU and wrk's thread each idle about that long);
    with no growth (cold 0) the cycle is the flat latency's."""
    base = {"wakeup_latency_s": 10e-6}
    flat = wrk_run(1, 1e-3, 0.0, costs=base)
    grown = wrk_run(1, 1e-3, 0.0, costs={**base, "wakeup_latency_cold_s": 100e-6,
                                          "wakeup_latency_tau_s": 1e-3})
    cycle = 1 / grown["reply_rate_per_s"] - 1 / flat["reply_rate_per_s"]
    # nginx's CPU idles about wrk's 1 ms of work (1 - e^-1 of the growth), wrk's thread
    # about nginx's few tens of microseconds (a few per cent of it)
    assert 100e-6 * (1 - math.exp(-1.0)) < cycle < 100e-6 * (1 - math.exp(-1.2)) + 10e-6
    zero = wrk_run(1, 1e-3, 0.0, costs={**base, "wakeup_latency_cold_s": 0.0,
                                         "wakeup_latency_tau_s": 1e-3})
    assert zero["reply_rate_per_s"] == flat["reply_rate_per_s"]
