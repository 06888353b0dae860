"""Where a run's CFS period timer fires against the scheduler's ticks, traced with perf.

A cgroup's quota is refilled by its period timer (``sched_cfs_period_timer``), and a
server that runs on past its quota is throttled at the first scheduler tick after the
quota ran out (:class:`acceptsim.sim.cpu.Bandwidth`).  How long it runs in a period is
therefore set by how far the tick falls past the period's start.  The ticks of this
kernel fall on multiples of the tick on the monotonic clock, while each cgroup's period
timer has a place of its own (perf, six fresh cgroups of 1 ms per 4 ms on one host: 0.24
to 2.84 ms past a tick), which it keeps while the cgroup lives (the timer is forwarded
by whole periods, idle or not: the runs of one cgroup within 20 us): a run's is
measured, not assumed.

:func:`trace_busy_group` keeps the cgroup busy after a run, so that its period timer
runs, and records the hrtimer expiries of its CPUs meanwhile (:class:`PeriodTrace`,
``perf record -e timer:hrtimer_expire_entry``); :func:`period_offset_s` turns them into
the period timer's place past the tick grid (``RunConfig.cpu_period_offset_s``).  Traced
during a run instead, perf's own work showed on the server's CPU (nginx at 64
connections without keep-alive, 5 s, 1 ms per 4 ms, 2026-12-07: 0.38 of nginx's CPU time
more on its CPU outside nginx and softirqs, ``MeasuredRun.other_tasks_share``).
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

#: the scheduler tick's hrtimer callback (tick_nohz_handler on this testbed's Linux 6.18,
#: tick_sched_timer on older kernels)
TICK_TIMERS = ("tick_nohz_handler", "tick_sched_timer")
#: the CFS bandwidth period timer's callback (kernel/sched/fair.c)
PERIOD_TIMER = "sched_cfs_period_timer"
#: how long a trace runs (s): a hundred periods at 4 ms, five at 100 ms
TRACE_S = 0.5
#: how long the busy group runs before the trace starts (s): its process's start
SPIN_START_S = 0.05
#: the most the period timer's expiries may scatter about their place (circular standard
#: deviation, in ticks) for the place to be taken: a wider scatter means timers of more
#: than one cgroup with a quota, or a clock that is not the tick's
MAX_SCATTER_TICKS = 0.1

_EXPIRY = re.compile(r"\[(\d+)\].*function=(\w+)\s+now=(\d+)")


def expiries(text: str) -> tuple[dict[int, list[float]], list[tuple[int, float]]]:
    """From ``perf script -F cpu,trace`` of ``timer:hrtimer_expire_entry`` events: each
    CPU's tick instants, and the period timer's (CPU, instant), in seconds of the monotonic
    clock."""
    ticks: dict[int, list[float]] = {}
    periods: list[tuple[int, float]] = []
    for line in text.splitlines():
        match = _EXPIRY.search(line)
        if match is None:
            continue
        cpu, function, now = int(match.group(1)), match.group(2), int(match.group(3)) / 1e9
        if function in TICK_TIMERS:
            ticks.setdefault(cpu, []).append(now)
        elif function == PERIOD_TIMER:
            periods.append((cpu, now))
    return ticks, periods


def period_offset_s(text: str, period_s: float, tick_s: float) -> tuple[float | None, str]:
    """The period timer's place: how long past multiples of ``period_s`` it fires, with the
    ticks of its CPU on multiples of ``tick_s`` (both as the handlers ran, so the interrupt's
    latency, common to both, cancels); and why not, as (None, reason)."""
    from scipy import stats  # (not at the CLI's start-up)

    if tick_s <= 0.0 or period_s <= 0.0:
        return None, "no scheduler tick or period known"
    ratio = period_s / tick_s
    if abs(ratio - round(ratio)) > 1e-6:
        return None, f"the period ({period_s * 1e3:g} ms) is not a multiple of the tick"
    ticks, periods = expiries(text)
    places = []
    for cpu, now in periods:
        if len(ticks.get(cpu, ())) < 2:
            continue
        origin = stats.circmean([t % tick_s for t in ticks[cpu]], high=tick_s)
        places.append((now - origin) % period_s)
    if len(places) < 2:
        return None, "the trace holds too few period timer expiries beside ticks"
    scatter = stats.circstd(places, high=period_s)
    if scatter > MAX_SCATTER_TICKS * tick_s:
        return None, (f"the period timer's expiries scatter by {scatter * 1e3:.3f} ms (more "
                      "than one cgroup with a quota?)")
    offset = float(stats.circmean(places, high=period_s)) % period_s
    return (0.0 if math.isclose(offset, period_s) else offset), ""


class PeriodTrace:
    """``with PeriodTrace(seconds, cpus) as trace:`` records the hrtimer expiries of the
    CPUs ``cpus`` (a CPU list, as taskset's; "": every CPU) for ``seconds`` (at most
    :data:`TRACE_S`) from its start, in the background; afterwards ``trace.text`` holds
    them (``perf script -F cpu,trace``), or ``trace.failed`` says why there are none (perf
    missing or refused).  perf reads no process table (``--synth=no``).  However it ends,
    no perf is left running."""

    def __init__(self, seconds: float, cpus: str = "") -> None:
        self.seconds = min(seconds, TRACE_S)
        self.cpus = cpus
        self.text = ""
        self.failed = ""
        self._perf = shutil.which("perf")
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> PeriodTrace:
        if self._perf is None:
            self.failed = "perf not found (Debian package linux-perf)"
            return self
        self._dir = tempfile.TemporaryDirectory(prefix="acceptsim-perf-")
        data = Path(self._dir.name) / "perf.data"
        self._proc = subprocess.Popen(
            [self._perf, "record", "-q", "--synth=no",
             *(["-C", self.cpus] if self.cpus else ["-a"]),
             "-e", "timer:hrtimer_expire_entry", "-o", str(data), "--", "sleep",
             f"{self.seconds:g}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._proc is None or self._dir is None:
            return
        try:
            try:
                _, err = self._proc.communicate(timeout=self.seconds + 30.0)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.communicate()
                self.failed = "perf record did not finish"
                return
            if kind is not None:
                return
            if self._proc.returncode != 0:
                self.failed = f"perf record failed: {err.decode(errors='replace').strip()}"
                return
            data = Path(self._dir.name) / "perf.data"
            done = subprocess.run([str(self._perf), "script", "-i", str(data), "-F",
                                   "cpu,trace"], capture_output=True, timeout=60.0)
            if done.returncode != 0:
                self.failed = f"perf script failed: {done.stderr.decode(errors='replace')}"
                return
            self.text = done.stdout.decode(errors="replace")
        finally:
            if self._proc.returncode is None:
                with contextlib.suppress(OSError):
                    self._proc.kill()
            self._dir.cleanup()


def trace_busy_group(join: Callable[[], None], cpus: Sequence[int]) -> PeriodTrace:
    """Keep a cgroup busy and trace every CPU meanwhile (:class:`PeriodTrace`; the period
    timer runs on the CPU where it was started, which need not be the server's): a
    process that spins, pinned to ``cpus`` (none: not pinned) and moved into the group by
    ``join`` (both in the child before it runs), runs from :data:`SPIN_START_S` before the
    trace to its end, and is killed then."""

    def enter() -> None:  # on the server's CPUs first: the timer is pinned where it starts
        if cpus:
            os.sched_setaffinity(0, cpus)
        join()

    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=enter,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    try:
        time.sleep(SPIN_START_S)
        with PeriodTrace(TRACE_S) as trace:
            pass  # perf records for TRACE_S, and the exit waits for it
    finally:
        spinner.kill()
        spinner.wait(timeout=10)
    return trace
