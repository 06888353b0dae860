"""The client's two clocks (issue 47): the kernel's SYN retransmission timer on Linux
4.8's timer wheel against httperf's timeout, checked by processes taking turns on a CPU.

Measured on this project's host (tests/data/measured/README.md, "The client's two
clocks"): a dropped SYN is retransmitted 1.000-1.032 s after it was sent (HZ=250, level 1
of the wheel: 8-tick buckets), and httperf's processes busy-poll, so k of them on one CPU
take turns of one scheduler tick and a process notices its timeouts only in its turns.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tool_module import load_tool

from acceptsim.config_io import load_params_file
from acceptsim.measure import find_runs, load_run
from acceptsim.measure.calibrate import config_for
from acceptsim.measure.timeseries_check import mean_table, nominal_interval_s, simulated_series
from acceptsim.measure.turn_order import FractionPoint, retransmitted_fractions, rms_error
from acceptsim.models.client import ClientParams
from acceptsim.models.config import RunConfig
from acceptsim.models.connection import Connection
from acceptsim.models.host import Host
from acceptsim.models.kernel import LINUX_MODERN
from acceptsim.models.runner import run_point
from acceptsim.sim.engine import Calls
from acceptsim.sim.errors import ConfigError

#: the measuring host's client clocks, the modern profile's: HZ=250 and the 4.8+ wheel
WHEEL = LINUX_MODERN
#: measured runs of one worker past saturation (tests/data/measured)
SCOPES = Path(__file__).resolve().parent / "data" / "measured" / "nginx-loopback-cgroup-scopes"



def client(processes: int = 1, turn_order_s: float = 0.0, turn_delays: str = "") -> Host:
    config = RunConfig(server="nginx", kernel=WHEEL, rate_per_s=5000.0,
                       timeout_s=1.0, duration_s=0.01, warmup_s=0.0, network="loopback",
                       client_processes_per_cpu=processes, client_turn_order_s=turn_order_s,
                       client_turn_delays=turn_delays)
    return Host(config)


@given(st.floats(0.0, 100.0))
def test_a_one_second_syn_timer_fires_within_its_level_one_bucket(armed: float) -> None:
    """1 s = 250 ticks lands in level 1 (63 <= 250 < 504), whose buckets are 8 ticks
    (32 ms): the timer fires after 1 s and at most a bucket and a tick later, on a tick."""
    c = client().client
    conn = Connection(0, 0.0, 1.0)
    fires = c.timer_fires(conn, armed, 1.0)
    assert 1.0 < fires - armed <= 1.032 + 0.004 + 1e-9
    ticks = (fires - c._tick_phase[0]) / 0.004
    assert ticks == pytest.approx(round(ticks), abs=1e-6) and round(ticks) % 8 == 0


def test_a_short_timer_stays_in_level_zero() -> None:
    """200 ms = 50 ticks < 63: level 0, one tick late at most beyond its own tick."""
    c = client().client
    conn = Connection(0, 0.0, 1.0)
    for armed in (0.0001, 0.5, 3.3333):
        assert 0.2 < c.timer_fires(conn, armed, 0.2) - armed <= 0.2 + 2 * 0.004 + 1e-9


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 12))
def test_a_process_gives_up_at_its_deadline_or_on_a_tick_of_its_next_turn(k: int) -> None:
    """With no order kept, a deadline's place in its process's round is uniform: the
    step gives up at the deadline (its process is running) with probability 1/k, else at
    the start of its next turn, on the n-th tick after the deadline's, n in 1..k-1, each
    alike."""
    c = client(k).client
    phase = c._tick_phase[0]
    conn = Connection(0, 0.0, 10.0)
    deadline = 6.0021  # mid-tick
    tick = math.floor((deadline - phase) / 0.004)
    lags = []
    for _ in range(4000):
        at = c.give_up_at(conn, deadline - 1.0)
        if at == pytest.approx(deadline, abs=1e-12):
            lags.append(0)
            continue
        n = (at - phase) / 0.004 - tick
        assert n == pytest.approx(round(n), abs=1e-6), at  # on a tick
        lags.append(round(n))
    assert set(lags) <= set(range(k))
    counts = np.bincount(lags, minlength=k) / len(lags)
    assert counts == pytest.approx([1 / k] * k, abs=4 * math.sqrt(1 / k / len(lags)))


def test_one_process_per_cpu_gives_up_at_its_deadline() -> None:
    c = client(1).client
    conn = Connection(0, 0.0, 10.0)
    assert {c.give_up_at(conn, 2.0) for _ in range(100)} == {3.0}


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 12), st.floats(0.0, 50.0), st.integers(0, 11))
def test_a_kept_order_finds_the_process_where_its_round_puts_it(
    k: int, since: float, process: int
) -> None:
    """With the order of the turns kept for good, a step gives up when its own process
    next runs at or after the deadline in the round that started it (``_turn_start``):
    at the deadline in its own turn, else at its next turn's tick."""
    c = client(k, turn_order_s=1e9).client
    conn = Connection(0, 0.0, 10.0)
    conn.process = process % k
    assert c.give_up_at(conn, since) == c._turn_start(conn.process, since + 1.0)


def test_the_order_lasts_a_timeout_with_probability_exp_minus_timeout_over_its_mean() -> None:
    """Kept with probability exp(-1 s / 1.44 s) = 0.50: a step begun in its process's
    turn, whose deadline 250 ticks later falls 2 ticks into the next round of 8 (250 mod
    8 = 2), gives up at that process's next turn, 6 ticks after the deadline's, whenever
    the order held, and at a uniform place otherwise (there too 1 time in 8)."""
    c = client(8, turn_order_s=1.44).client
    phase = c._tick_phase[0]
    conn = Connection(0, 0.0, 10.0)
    conn.process = 0
    since = phase + 0.0001  # in process 0's turn (tick 0)
    expected = c._turn_start(0, since + 1.0)
    assert expected - (since + 1.0) > 0.004  # not its turn then
    draws = 8000
    kept = sum(c.give_up_at(conn, since) == expected for _ in range(draws)) / draws
    # the uniform places land there too, 1 in 8 of them
    share = math.exp(-1.0 / 1.44)
    p = share + (1 - share) / 8
    assert kept == pytest.approx(p, abs=4 * math.sqrt(p * (1 - p) / draws))


def test_a_kept_order_needs_processes_taking_turns() -> None:
    with pytest.raises(ConfigError, match="client_turn_order_s"):
        RunConfig(server="nginx", kernel=WHEEL, client_turn_order_s=1.0)


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(0, 20), min_size=2, max_size=12).filter(lambda w: sum(w) > 0),
       st.floats(0.0, 50.0))
def test_measured_places_give_up_on_the_ticks_they_name_as_often_as_they_say(
    weights: list[int], since: float
) -> None:
    """``client_turn_delays`` p0..pn: a step gives up at its deadline with probability
    p0, else on the d-th tick after the deadline's with probability pd, whatever the
    process (in place of the kept or uniform place)."""
    total = sum(weights)
    text = ",".join(f"{w / total:.6f}" for w in weights)
    c = client(8, turn_delays=text).client
    phase = c._tick_phase[0]
    conn = Connection(0, 0.0, 10.0)
    deadline = since + 1.0
    tick = math.floor((deadline - phase) / 0.004 + 1e-9)
    draws = 3000
    counts = [0] * len(weights)
    for _ in range(draws):
        at = c.give_up_at(conn, since)
        if at == deadline:
            counts[0] += 1
            continue
        d = (at - phase) / 0.004 - tick
        assert d == pytest.approx(round(d), abs=1e-6) and round(d) >= 1, at  # on a tick
        counts[round(d)] += 1
    for w, n in zip(weights, counts, strict=True):
        p = w / total
        assert n / draws == pytest.approx(p, abs=4 * math.sqrt(p * (1 - p) / draws) + 1e-9)


@pytest.mark.parametrize("config, allowed", [
    ({"client_processes_per_cpu": 1, "client_turn_delays": "0.5,0.5"}, "unless"),
    ({"client_turn_order_s": 1.0, "client_turn_delays": "0.5,0.5"}, "one or the other"),
    ({"client_turn_delays": "0.5,x"}, "numbers"),
    ({"client_turn_delays": "0.5,-0.1,0.6"}, "0 or more"),
    ({"client_turn_delays": "0.5,0.4"}, "summing to 1"),
    ({"client_turn_delays": ",".join(["0.01"] * 100)}, "at most 64"),
])
def test_bad_measured_places_are_refused_naming_the_field(config: dict, allowed: str) -> None:
    with pytest.raises(ConfigError) as err:
        RunConfig(server="nginx", kernel=WHEEL, **{"client_processes_per_cpu": 8, **config})
    assert err.value.field == "client_turn_delays" and allowed in err.value.allowed


def test_a_process_starts_its_due_connections_in_its_own_turn() -> None:
    c = client(4).client
    phase = c._tick_phase[0]
    for at in (0.0105, 0.2, 1.337):
        for process in range(4):
            start = c._turn_start(process, at)
            turn = math.floor((start - phase) / 0.004 + 1e-6)
            assert start >= at and start - at < 4 * 0.004
            assert turn % 4 == process or start == at


def test_a_process_reads_its_replies_in_its_own_turn() -> None:
    """A reply received while its connection's process waits for the CPU is read at the
    start of that process's next turn; one received in its turn (or with a CPU per
    process) at once."""
    c = client(4).client
    phase = c._tick_phase[0]
    conn = Connection(0, 0.0, 10.0)
    for process in range(4):
        conn.process = process
        for received in (0.0105, 0.2, 1.337, 2.0021):
            read = received + c._turn_wait(conn, received)
            turn = math.floor((read - phase) / 0.004 + 1e-6)
            assert received <= read < received + 4 * 0.004 and turn % 4 == process
            mine = math.floor((received - phase) / 0.004 + 1e-6) % 4 == process
            assert (read == received) is mine
    assert client(1).client._turn_wait(conn, 0.0105) == 0.0


def test_httperfs_fin_leaves_in_its_process_turn() -> None:
    """Past saturation replies come back while other processes hold the client CPU: each
    connection's close (its FIN, received on loopback as it is sent) leaves in its own
    process's turn, so the server hears the FINs of one process at a time, and holds
    every connection until then."""
    config = RunConfig(
        server="nginx", kernel=WHEEL, rate_per_s=5000.0, timeout_s=1.0, duration_s=1.0,
        warmup_s=0.0, network="loopback", cpu_quota=0.1, cpu_period_s=0.01,
        client_processes_per_cpu=4, seed=2)
    # httperf's loop costs nothing here: a FIN leaves as its process reads the reply
    config = config.replace(costs=dataclasses.replace(
        config.costs, client_loop_base_s=0.0, client_poll_per_socket_s=0.0))
    host = Host(config)
    c = host.client
    fins: list[tuple[float, int]] = []
    kernel_fin = c._kernel_fin

    def fin(conn: Connection) -> None:
        fins.append((host.env.now - c.owd, conn.process))
        kernel_fin(conn)

    c._kernel_fin = Calls(fin)
    host.run()
    phase = c._tick_phase[0]
    turns = [math.floor((t - phase) / 0.004 + 1e-6) % 4 for t, _ in fins]
    assert len(fins) > 500
    assert all(turn == process for turn, (_, process) in zip(turns, fins, strict=True))


@pytest.mark.parametrize("rate", [5000.0, 6000.0])
def test_past_saturation_httperfs_response_time_includes_its_turn(rate: float) -> None:
    """httperf times a reply when its process reads it, in its turn: past saturation
    (`nginx-loopback-cgroup-scopes`, one worker at 0.1 CPU, httperf's 8 and 9 processes on
    one CPU) the reply comes back while another process runs, and waits for its own.  The
    measured mean response time is 77-82 ms; the model's is within 10% of the repeats'
    mean (63-64 ms, 17-22% short, while the reply was timed as it was received)."""
    runs = [load_run(d) for d in find_runs(SCOPES / "workers-1")
            if load_run(d).info.load.target_rate_per_s == rate
            and not load_run(d).info.server.multi_accept]
    measured = np.mean([r.record()["response_time_ms.mean"] for r in runs])
    costs = load_params_file(SCOPES.parent / "nginx-loopback-cgroup-scopes.params.toml")[0]
    simulated = run_point(config_for(runs[0], costs), checked=False)["response_time_ms"]["mean"]
    assert simulated == pytest.approx(measured, rel=0.10), (measured, simulated)


def test_on_loopback_a_segment_reaches_its_socket_after_the_receive_path() -> None:
    """On loopback a segment is received in its sender's softirq as it is sent: the
    clients' round trip is twice the receive path's CPU (costs.rx_segment_s), not the
    LAN's 100 us.  One user's kept connection, the server asleep between requests:
    its response time grows by twice what the receive path grows by."""
    def response_ms(rx_segment_s: float) -> float:
        config = RunConfig(server="nginx", kernel=WHEEL, concurrency=1, keepalive=True,
                           duration_s=0.5, warmup_s=0.1, network="loopback", seed=1)
        config = config.replace(costs=dataclasses.replace(config.costs,
                                                          rx_segment_s=rx_segment_s))
        assert Host(config).client.rtt == 2 * rx_segment_s
        return run_point(config, checked=False)["response_time_ms"]["mean"]

    assert response_ms(20e-6) - response_ms(2e-6) == pytest.approx(2 * 0.018, abs=1e-3)
    lan = RunConfig(server="nginx", kernel=WHEEL, concurrency=1, network="lan")
    assert Host(lan).client.rtt == ClientParams().rtt_s == 100e-6


def test_turns_need_a_ticking_client_clock() -> None:
    exact = dataclasses.replace(LINUX_MODERN, client_timer_tick_s=0.0)
    with pytest.raises(ConfigError, match="client_processes_per_cpu"):
        RunConfig(server="nginx", kernel=exact, client_processes_per_cpu=8)
    assert ClientParams().processes_per_cpu == 1


def _overloaded(network: str, processes: int = 1, timeout_s: float = 0.5) -> dict:
    return run_point(RunConfig(
        server="nginx", kernel=WHEEL, rate_per_s=5000.0, timeout_s=timeout_s, duration_s=2.0,
        warmup_s=0.5, network=network, cpu_quota=0.1, cpu_period_s=0.01,
        server_params={"backlog": 128}, client_processes_per_cpu=processes, seed=3),
        checked=False)


def test_on_loopback_a_connect_that_finds_room_completes_its_handshake() -> None:
    """Over loopback connect() runs the whole handshake: a first SYN that passes the
    accept queue's check has its child queued before anything else arrives, so no final
    ACK overflows (nor does the listener answer with cookies) while every SYN is a first
    one (the client gives up before its SYN timer fires).  Over a LAN the ACKs come a
    round trip later, after other SYNs took the room, and many overflow."""
    loopback, lan = _overloaded("loopback"), _overloaded("lan")
    assert loopback["drops_per_s"]["accept_q_full"] > 1000  # saturated: SYNs dropped
    assert loopback["drops_per_s"]["listen_overflow"] == 0.0
    assert loopback["nstat_per_s"]["TcpExtSyncookiesSent"] == 0.0
    assert lan["drops_per_s"]["listen_overflow"] > 20.0


@pytest.mark.parametrize("rate", [pytest.param(3500.0, marks=pytest.mark.slow), 5000.0,
                                  pytest.param(6000.0, marks=pytest.mark.slow)])
def test_each_process_starts_its_own_share_in_bursts_as_httperf_measured(rate: float) -> None:
    """httperf prints the most connections one of its processes started in one turn
    ("Maximum connect burst length"); the model's processes each make a Poisson share of
    the rate and start what fell due in their turn's burst.  The simulated largest burst
    lies within 25% of the measured runs' mean (16-46 at 2,000-6,000/s).  Dealing every
    arrival to the next process to start, as the model did before, gave bursts of 140-156
    at 5,000/s."""
    runs = [load_run(d) for d in find_runs(SCOPES / "workers-1")
            if load_run(d).info.load.target_rate_per_s == rate]
    measured = np.mean([r.record()["max_connect_burst"] for r in runs])
    costs = load_params_file(SCOPES.parent / "nginx-loopback-cgroup-scopes.params.toml")[0]
    simulated = run_point(config_for(runs[0], costs), checked=False)["httperf"]["max_connect_burst"]
    assert simulated == pytest.approx(measured, rel=0.25), (measured, simulated)


def test_retransmitted_syns_that_win_the_race_leave_handshakes_unused() -> None:
    """Past saturation (nginx at 0.1 CPU, 5,000/s, httperf's 8 processes on one CPU):
    with the turns, the kernel retransmits SYNs whose step's process has not yet given
    up, and the handshakes it completes reach nginx without a request (accepts beyond
    replies); with one process per CPU it never does."""
    def unused(processes: int) -> float:
        rec = run_point(RunConfig(
            server="nginx", kernel=WHEEL, rate_per_s=5000.0, timeout_s=1.0, duration_s=4.0,
            warmup_s=1.5, network="loopback", cpu_quota=0.1, cpu_period_s=0.01,
            server_params={"backlog": 128}, client_processes_per_cpu=processes, seed=3),
            checked=False)
        return rec["accept_rate_per_s"] - rec["reply_rate_per_s"]
    assert unused(1) < 20.0
    assert unused(8) > 100.0


#: the one run the issue cites (0.00 simulated SYN retransmissions/s against 44.95 measured)
DEMO = "timeseries-demo"
#: the time-series sets and the costs each is predicted with (tests/data/measured/README.md)
TIMESERIES_SETS = {
    DEMO: "nginx-loopback-workers.params.toml",
    "nginx-loopback-timeseries/quota-0.2-period-100000us": "nginx-loopback-timeseries.params.toml",
    "nginx-loopback-timeseries/quota-0.25-period-4000us": "nginx-loopback-timeseries.params.toml",
    # its 4-ms half again, each run with its period timer's place (2026-12-07)
    "nginx-loopback-timeseries-2/quota-0.25-period-4000us":
        "nginx-loopback-timeseries-2/params.toml",
}


#: the model's seeds whose mean is compared with the repeats' mean
RETRANS_SEEDS = (1, 2, 3, 4)
#: points whose simulated mean misses, with the numbers (checked to miss still: a strict
#: xfail of its own)
RETRANS_MISSES: dict = {}


@pytest.mark.slow
@pytest.mark.parametrize("folder", sorted(TIMESERIES_SETS))
def test_syn_retransmissions_within_a_factor_of_2_on_the_time_series_sets(folder: str) -> None:
    """The issue's criterion, as ``acceptsim validate --timeseries`` compares them:
    wherever the measured SYN and SYN-ACK retransmissions (``syn_retrans_per_s``, the mean
    over a run's intervals, and over the repeats of its point) exceed 50/s, the simulated
    series' mean (over :data:`RETRANS_SEEDS`, as the measured is over the repeats) lies
    within a factor of 2; and on the demo run the issue cites, whose 45/s the model met
    with none before the clocks.  Near saturation one run says little: at 4-ms periods,
    5,000/s, multi_accept on, the six repeats measured 63-376/s and seeds of the model
    give 93-209/s.  The points of :data:`RETRANS_MISSES` miss, as their reasons say."""
    measured_root = SCOPES.parent
    costs = load_params_file(measured_root / TIMESERIES_SETS[folder])[0]
    points: dict[tuple[bool, float], list] = {}
    for d in find_runs(measured_root / folder):
        run = load_run(d)
        key = (run.info.server.multi_accept, run.info.load.target_rate_per_s)
        points.setdefault(key, []).append(run)
    checked = 0
    missed = set()
    for key, runs in sorted(points.items()):
        first = runs[0].timeseries()
        interval = nominal_interval_s(runs[0], first)
        simulated = simulated_series(runs[0], costs, interval, RETRANS_SEEDS[0])
        means = [mean_table(r.timeseries(), simulated).set_index("column").loc[
            "syn_retrans_per_s"] for r in runs]
        measured = float(np.mean([m["measured_mean"] for m in means]))
        if not (measured > 50.0 or folder == DEMO):
            continue
        model = [means[0]["simulated_mean"]] + [
            mean_table(first, simulated_series(runs[0], costs, interval, seed))
            .set_index("column").loc["syn_retrans_per_s", "simulated_mean"]
            for seed in RETRANS_SEEDS[1:]]
        ratio = float(np.mean(model)) / measured
        if not 0.5 <= ratio <= 2.0:
            missed.add(((folder, *key), round(measured), round(ratio, 2)))
        checked += 1
    assert checked >= 1
    known = {k for k in RETRANS_MISSES if k[0] == folder}
    assert {m[0] for m in missed} == known, (missed, known)


def _unsampled_sets() -> list:
    """The one-worker sets recorded without a time series (no sampler beside httperf on
    its CPU) and their costs: those ``tools/fit_turn_order.py`` fits to."""
    tool = load_tool("fit_turn_order")
    return tool.sets(tool.UNSAMPLED)


@pytest.mark.slow
def test_the_retransmitted_fraction_follows_the_order_of_httperfs_turns() -> None:
    """How many of the dropped SYNs the kernel retransmits before httperf gives their
    steps up depends on where each deadline finds its process in the round of turns.
    Where nothing else runs on httperf's CPU the round keeps its order for a while, so
    the fraction follows 250 ticks mod k: measured 0.10-0.15 at k = 5 (the deadline falls
    in its process's own turn), 0.45-0.60 at k = 8, 0.28-0.38 at k = 9, 0.22-0.31 at
    k = 10, at 29 points of three sets.  With the order kept for
    :data:`~acceptsim.measure.testbed.CLIENT_TURN_ORDER_S` (1.44 s) in the mean the model
    is within 0.074 at every point and 0.034 in the root mean square; with every place
    uniform it misses by up to 0.26 (0.14 in the root mean square)."""
    kept = retransmitted_fractions(_unsampled_sets())
    assert len(kept) >= 25
    assert max(abs(p.simulated - p.measured) for p in kept) <= 0.1, kept
    assert rms_error(kept) <= 0.06
    assert rms_error(retransmitted_fractions(_unsampled_sets(), turn_order_s=0.0)) > 0.1


#: a set recorded to test the order of the turns out of sample (2026-12-07 19:34-19:39 UTC,
#: a new machine of the same kind): each repeat with the time series' sampler on the
#: client CPU and without it, nginx at 0.1 CPU per 10 ms, multi_accept off
TURNS = SCOPES.parent / "nginx-loopback-turns"


def _turns_fractions(part: str) -> dict[int, FractionPoint]:
    """The retransmitted fraction at each point of ``TURNS / part``, by httperf's
    processes per CPU; simulated with cgroup-scopes' costs (the same host's kind; the
    fraction, not the reply rate, is the question)."""
    costs = load_params_file(SCOPES.parent / "nginx-loopback-cgroup-scopes.params.toml")[0]
    return {p.processes_per_cpu: p for p in retransmitted_fractions([(TURNS / part, costs)])}


#: nginx-loopback-turns' protocol again, each run with its client CPU's switches traced
TRACED = TURNS.parent / "nginx-loopback-turns-traced"


@pytest.mark.slow
@pytest.mark.parametrize("part", ["no-sampler", "sampler", "quota-0.25-period-4000us"])
def test_with_its_turns_traced_every_point_within_0_08(part: str) -> None:
    """Given where its own trace found the deadlines in their processes' rounds
    (``MeasuredRun.turns``, ``client_turn_delays``), each run's simulation retransmits
    the fraction of the dropped SYNs the kernel did: every point (the mean of its
    repeats) within 0.08, at 5-10 processes per CPU, 0.1 CPU per 10 ms with the sampler
    and without, and 0.25 CPU per 4 ms without, multi_accept on and off; the set's own
    costs (its host-costs.toml, request_s fitted to the 4-ms runs' replies).  The
    testbed's one mean for every run misses by 0.24 at 10 processes on this machine (the
    strict xfail above).  Recorded after the mechanism was written, nothing fitted to
    it."""
    costs = load_params_file(TRACED / "params.toml")[0]
    points = retransmitted_fractions([(TRACED / part, costs)])
    assert sorted(p.processes_per_cpu for p in points) == EXPECTED_K[part]
    assert all(abs(p.simulated - p.measured) <= 0.08 for p in points), points


#: httperf's processes per CPU at the traced sets' points that retransmitted enough
EXPECTED_K = {"no-sampler": [5, 8, 9, 10], "sampler": [5, 8, 9, 10],
              "quota-0.25-period-4000us": [8, 8, 8, 8, 9, 9]}


@pytest.mark.slow
def test_out_of_sample_the_sampler_raises_the_fraction_where_the_kept_order_lowers_it() -> None:
    """At k = 5 httperf processes a deadline falls in its own process's turn if the round
    kept its order (250 mod 5 = 0), so a kept order retransmits fewer of the dropped
    SYNs.  Recorded after the order was modelled, on another machine: 0.12-0.15 of them
    without the sampler, 0.20-0.24 with it (the repeats alternating the two), and the
    model, given each run's turn order (1.44 s, 0.097 s with the sampler), 0.12 and
    0.21."""
    without, sampled = _turns_fractions("no-sampler"), _turns_fractions("sampler")
    assert sampled[5].measured - without[5].measured > 0.05
    assert sampled[5].simulated - without[5].simulated > 0.05
    for point in (without[5], sampled[5]):
        assert abs(point.simulated - point.measured) <= 0.05, point


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason=(
    "at k = 10 (7,000/s) without the sampler the kernel retransmitted 0.45-0.50 of the "
    "dropped SYNs, as a uniform place gives (0.48), where the testbed's kept order gives "
    "0.24 (the older machine's quota set: 0.22-0.31 at the same k and rate); k = 8 and 9 "
    "measured 0.48 and 0.41, between the kept order's 0.54 and 0.33 and the uniform "
    "0.39 and 0.44.  How long the order lasts is not one number for the host: on this "
    "machine, near the rate where httperf's CPU tops out, ksoftirqd between the turns "
    "reorders it (traced in nginx-loopback-turns-traced, where each run given the order "
    "its trace measured passes: the test below)"))
def test_out_of_sample_every_point_within_0_1_of_the_kept_order() -> None:
    """Every point of the out-of-sample set, with the sampler and without, within 0.1 of
    the fraction the model gives with the testbed's turn order."""
    points = [*_turns_fractions("no-sampler").values(), *_turns_fractions("sampler").values()]
    assert len(points) == 8
    assert all(abs(p.simulated - p.measured) <= 0.1 for p in points), points


#: the one-worker measured sets and the costs each is predicted with
ONE_WORKER_SETS = {
    "nginx-loopback": "nginx-loopback.params.toml",
    "nginx-loopback-quota": "nginx-loopback-quota.params.toml",
    "nginx-loopback-quotas": "nginx-loopback-quotas.params.toml",
    "nginx-loopback-workers/workers-1": "nginx-loopback-workers.params.toml",
    "nginx-loopback-timeseries": "nginx-loopback-timeseries.params.toml",
    "nginx-loopback-cgroup-scopes/workers-1": "nginx-loopback-cgroup-scopes.params.toml",
    DEMO: "nginx-loopback-workers.params.toml",
}


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason=(
    "43 of the 49 points are within a factor of 2 (the mean of seeds 1-4; 35 before "
    "httperf gave up on a tick, after the tick's timers, and kept the order of its turns "
    "for a while, 2026-12-07).  Outside: the old nginx-loopback set at 8,000-12,000/s "
    "(none simulated at three points where 64-371/s were measured, 3.1 times at 12,000/s "
    "off), and nginx-loopback-quota's 5,000 and 5,500/s off (2.1 and 2.5 times).  The old "
    "set's costs were fitted with the model of its day and never again; the quota set's "
    "machine is gone and its costs were never measured"))
def test_handshakes_without_a_request_within_a_factor_of_2_at_every_one_worker_point() -> None:
    """The issue's criterion: wherever the kernel completed more than 50 handshakes a
    second that never brought nginx a request (TcpPassiveOpens minus the replies, the mean
    over a point's repeats, client-limited runs left out), the model's accepts beyond its
    replies (the mean over :data:`RETRANS_SEEDS`, as the measured is over the repeats) lie
    within a factor of 2."""
    measured_root = SCOPES.parent
    ratios = {}
    for folder, params in ONE_WORKER_SETS.items():
        costs = load_params_file(measured_root / params)[0]
        points: dict[tuple[str, bool, float], list] = {}
        for d in find_runs(measured_root / folder):
            run = load_run(d)
            if (run.info.server.worker_processes != 1 or run.client_limited
                    or "TcpPassiveOpens" not in run.counter_deltas):
                continue
            key = (str(d.parent.relative_to(measured_root)), run.info.server.multi_accept,
                   run.info.load.target_rate_per_s)
            points.setdefault(key, []).append(run)
        for key, runs in points.items():
            measured = float(np.mean([
                (r.counter_deltas["TcpPassiveOpens"] - r.record()["replies_2xx"])
                / r.info.load.duration_s for r in runs]))
            if measured <= 50.0:
                continue
            unused = [(r["accept_rate_per_s"] - r["reply_rate_per_s"]) for r in (
                run_point(config_for(runs[0], costs, seed), checked=False)
                for seed in RETRANS_SEEDS)]
            ratios[key] = float(np.mean(unused)) / measured
    assert len(ratios) >= 40
    outside = {k: round(v, 2) for k, v in ratios.items() if not 0.5 <= v <= 2.0}
    assert not outside, (len(ratios) - len(outside), len(ratios), outside)
