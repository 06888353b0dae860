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

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acceptsim.models.client import ClientParams
from acceptsim.models.config import RunConfig
from acceptsim.models.connection import Connection
from acceptsim.models.host import Host
from acceptsim.models.kernel import LINUX_MODERN
from acceptsim.models.runner import run_point
from acceptsim.sim.errors import ConfigError

#: the measuring host's client clocks: HZ=250 and the 4.8+ wheel
WHEEL = dataclasses.replace(LINUX_MODERN, client_timer_tick_s=0.004, client_timer_wheel_shift=3)


def client(processes: int = 1) -> Host:
    config = RunConfig(server="nginx", kernel=WHEEL, rate_per_s=5000.0,
                       timeout_s=1.0, duration_s=0.01, warmup_s=0.0, network="loopback",
                       client_processes_per_cpu=processes)
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
def test_a_process_gives_up_at_its_deadline_or_at_its_next_turn(k: int) -> None:
    c = client(k).client
    lags = [c.give_up_at(5.0) - 6.0 for _ in range(4000)]
    assert min(lags) >= 0.0 and max(lags) <= (k - 1) * 0.004 + 1e-12
    on_time = sum(lag == 0.0 for lag in lags) / len(lags)
    assert on_time == pytest.approx(1 / k, abs=4 * math.sqrt(1 / k / len(lags)))


def test_one_process_per_cpu_gives_up_at_its_deadline() -> None:
    c = client(1).client
    assert {c.give_up_at(2.0) for _ in range(100)} == {3.0}


def test_a_process_starts_its_due_connections_in_its_own_turn() -> None:
    c = client(4).client
    phase = c._tick_phase[0]
    for at in (0.0105, 0.2, 1.337):
        for process in range(4):
            start = c._turn_start(process, at)
            turn = math.floor((start - phase) / 0.004 + 1e-6)
            assert start >= at and start - at < 4 * 0.004
            assert turn % 4 == process or start == at


def test_turns_need_a_ticking_client_clock() -> None:
    with pytest.raises(ConfigError, match="client_processes_per_cpu"):
        RunConfig(server="nginx", kernel="linux-modern", client_processes_per_cpu=8)
    assert ClientParams().processes_per_cpu == 1 and LINUX_MODERN.client_timer_tick_s == 0.0


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
