"""tools/throttle_windows.py: a CFS-limited server's runs between throttles, how each
throttle was noticed, and a closed-loop client's connect-to-write delays, from a tracefs
trace (the measurements in docs/design_log.md, "wrk's event loop and where each throttle
falls")."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from tool_module import load_tool

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tool() -> ModuleType:
    return load_tool("throttle_windows")


def switch(t: float, prev: str, state: str, nxt: str, cpu: int = 0) -> str:
    task = prev if not prev.startswith("swapper") else "<idle>"
    return (f"  {task}-10 [{cpu:03d}] d..2. {t:.6f}: sched_switch: prev_comm={prev} prev_pid=10 "
            f"prev_prio=120 prev_state={state} ==> next_comm={nxt} next_pid=11 next_prio=120")


def call(t: float, task: str, text: str, cpu: int = 1) -> str:
    return f"  {task}-20 [{cpu:03d}] ..... {t:.6f}: {text}"


#: two windows of nginx: the first runs 1 ms, sleeps, wakes and is throttled 4 us later
#: (noticed at the wake); the second runs 3 ms without a break and is throttled (at a
#: tick), after ksoftirqd preempted it once
TRACE = "\n".join([
    "# tracer: nop",
    switch(10.000000, "swapper/0", "R", "nginx"),
    switch(10.001000, "nginx", "S", "swapper/0"),
    switch(10.001200, "swapper/0", "R", "nginx"),
    switch(10.001204, "nginx", "R", "swapper/0"),
    switch(10.004000, "swapper/0", "R", "nginx"),
    switch(10.005000, "nginx", "R+", "ksoftirqd/0"),
    switch(10.005050, "ksoftirqd/0", "S", "nginx"),
    switch(10.007000, "nginx", "R", "swapper/0"),
    switch(10.008000, "swapper/0", "R", "nginx"),  # a window that has not ended
]) + "\n"


def test_windows_end_in_throttles_and_say_how_each_was_noticed(tool: ModuleType) -> None:
    out = tool.window_summary(TRACE, "nginx")
    assert out["windows"] == 2
    assert out["throttle_noticed"] == {"at_wake": 1, "running": 1}
    assert out["sleeps_per_window"] == {0: 1, 1: 1}
    assert out["preempted_by"] == {"ksoftirqd/0": 1}
    # runtimes 1.004 ms and 2.95 ms: the histogram's half-millisecond bins
    assert out["runtime_histogram_ms"] == {"1.0": 1, "2.5": 1}


def test_a_trace_without_the_server_has_no_windows(tool: ModuleType) -> None:
    assert tool.window_summary(TRACE, "haproxy") == {"windows": 0}


def test_a_connects_request_and_an_accepts_read_are_timed(tool: ModuleType) -> None:
    trace = "\n".join([
        call(20.000000, "wrk", "sys_connect(fd: 5, uservaddr: 0x1, addrlen: 0x10)"),
        call(20.000010, "wrk", "sys_connect -> 0x0"),
        call(20.000020, "nginx", "sys_accept4(fd: 6, upeer_sockaddr: 0x1)", cpu=0),
        call(20.000025, "nginx", "sys_accept4 -> 0x3", cpu=0),
        switch(20.000030, "nginx", "S", "swapper/0"),
        call(20.000100, "wrk", "sys_write(fd: 5, buf: 0x1, count: 0x50)"),
        call(20.000120, "nginx", "sys_recvfrom(fd: 3, ubuf: 0x1, size: 0x400)", cpu=0),
        call(20.000125, "nginx", "sys_recvfrom -> 0x50", cpu=0),
        # an accept that fails (EAGAIN) times nothing
        call(20.000130, "nginx", "sys_accept4 -> 0xfffffffffffffff5", cpu=0),
    ]) + "\n"
    out = tool.connection_summary(trace, "nginx", "wrk")
    assert out["client_connect_to_write_us"]["n"] == 1
    assert out["client_connect_to_write_us"]["p50"] == pytest.approx(100.0)
    assert out["server_accept_to_read_us"]["n"] == 1
    assert out["server_accept_to_read_us"]["p50"] == pytest.approx(100.0)
    assert out["server_accept_to_read_us"]["slept_between"] == 1


def test_record_needs_a_command(tool: ModuleType, tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        tool.main(["record", str(tmp_path / "t.trace")])


def cycle(t: float, fd: int, read: bool = True) -> list[str]:
    """nginx accepts a connection at ``t`` and reads another's request 5 us later."""
    lines = [call(t, "nginx", f"sys_accept4 -> {fd:#x}", cpu=0)]
    if read:
        lines.append(call(t + 5e-6, "nginx", "sys_recvfrom -> 0x46", cpu=0))
    return lines


def test_the_servers_cycle_is_timed_per_interval_with_the_windows_run_to_a_tick(
        tool: ModuleType) -> None:
    """Cycles of 30 us in a window throttled at a wake-up after a sleep, and of 45 us in one
    that ran on to a tick a quarter second later; a cycle broken by a switch, one with no
    request read and one with two are not cycles (each accept's pass reads the request of
    the connection accepted before)."""
    trace = "\n".join([
        switch(10.000000, "swapper/0", "R", "nginx"),
        *cycle(10.000100, 3), *cycle(10.000130, 4), *cycle(10.000160, 5),
        switch(10.000170, "nginx", "S", "swapper/0"),  # the next cycle is broken
        switch(10.000180, "swapper/0", "R", "nginx"),
        *cycle(10.000200, 3), *cycle(10.000230, 4, read=False),  # a cycle, then none
        *cycle(10.000260, 5),
        switch(10.000990, "nginx", "S", "swapper/0"),  # ran dry: throttled when woken
        switch(10.000996, "swapper/0", "R", "nginx"),
        switch(10.001000, "nginx", "R", "swapper/0"),
        switch(10.300000, "swapper/0", "R", "nginx"),
        *cycle(10.300100, 3), *cycle(10.300145, 4), *cycle(10.300190, 5),
        call(10.300200, "nginx", "sys_recvfrom -> 0x46", cpu=0),  # a second read
        *cycle(10.300235, 3), *cycle(10.300280, 4),
        switch(10.303500, "nginx", "R", "swapper/0"),  # throttled at a tick
    ]) + "\n"
    assert [round(length * 1e6) for _, length in tool.cycles(trace, "nginx")] == [
        30, 30, 30, 45, 45, 45]
    series = tool.cycle_series(trace, "nginx", 0.25)
    assert series == [
        {"start_s": 0.0, "cycles": 3, "cycle_p50_us": 30.0, "windows_to_tick": 0},
        {"start_s": 0.25, "cycles": 3, "cycle_p50_us": 45.0, "windows_to_tick": 1},
    ]


def test_a_throttle_that_hands_the_cpu_to_ksoftirqd_ends_a_window(tool: ModuleType) -> None:
    """Throttled at a tick while ksoftirqd was runnable, the server is switched out for
    ksoftirqd, not the idle task, and runs again only in a later period: a throttle.  A
    preemption by ksoftirqd gives the CPU back within microseconds: not one."""
    trace = "\n".join([
        switch(30.000000, "swapper/0", "R", "nginx"),
        switch(30.000500, "nginx", "R+", "ksoftirqd/0"),  # preempted for 20 us
        switch(30.000520, "ksoftirqd/0", "S", "nginx"),
        switch(30.002160, "nginx", "R+", "ksoftirqd/0"),  # throttled at the tick
        switch(30.002200, "ksoftirqd/0", "S", "swapper/0"),
        switch(30.008000, "swapper/0", "R", "nginx"),  # two periods later (the debt)
        switch(30.010170, "nginx", "R", "swapper/0"),  # throttled
        switch(30.016000, "swapper/0", "R", "nginx"),
    ]) + "\n"
    windows = tool.windows_of(tool.runs_of(trace, "nginx"))
    assert [round(sum(r.end_s - r.start_s for r in w) * 1e3, 2) for w in windows] == [
        2.14, 2.17]
    out = tool.window_summary(trace, "nginx")
    assert out["windows"] == 2 and out["preempted_by"] == {"ksoftirqd/0": 1}
    assert out["throttle_noticed"] == {"at_wake": 0, "running": 2}
