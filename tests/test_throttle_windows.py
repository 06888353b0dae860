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
