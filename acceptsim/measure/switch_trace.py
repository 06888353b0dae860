"""The load generator's turns on its CPUs, traced: which task the kernel switched to, when.

httperf's processes busy-poll, so the processes that share a CPU take turns of a
scheduler tick, in a round (``RunConfig.client_processes_per_cpu``).  Whether a step's
deadline, one timeout after its connection began, finds its process where the round of
that moment put it decides whether the kernel's SYN retransmission or httperf's give-up
comes first (``RunConfig.client_turn_order_s``, ``models.client.Client.give_up_at``).
How long the round keeps its order depends on what else runs on the CPU: a trace of the
client CPU (2026-12-07, 0.1 CPU of nginx, no sampler) found ksoftirqd between turns
126-135 times a second at 3,000 and at 7,000 connections/s, its runs 27 us long in the
median at 3,000/s and 61 us at 7,000/s, and the round broken 6.5 against 64 times a
second: the rounds kept 0.44 of their order over a second at one rate and 0.13 at the
other.  So a run's order is measured, not assumed.

:class:`SwitchTrace` records the kernel's ``sched_switch`` events of the client CPUs
during the load, into a ring buffer of a tracefs instance of its own that nothing reads
until the load has ended (no process of the trace runs beside the clients);
:func:`turns_rows` keeps the switches (``client-turns.csv``, :data:`TURNS_FILE`), and
:func:`kept_share` reads the order from them: over instants t of the steady load, how
often the process running one timeout later is the one a round that kept its order puts
there (the one running at t plus the timeout modulo a round of k ticks), beyond the 1/k
any place gives, and where the deadline finds the process of t: running, or next running
d ticks after the deadline's tick (:attr:`KeptShare.delays`).  The run's simulation draws
its give-ups' ticks from those places (``RunConfig.client_turn_delays``,
``acceptsim.measure.calibrate.turn_settings``).
"""

from __future__ import annotations

import bisect
import contextlib
import csv
import io
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from acceptsim.measure.parse_errors import ParseError
from acceptsim.models.client import MAX_TURN_DELAYS

#: where the kernel's tracing file system is mounted
TRACEFS = Path("/sys/kernel/tracing")
#: a run's traced switches on its client CPUs (present only if the run was traced)
TURNS_FILE = "client-turns.csv"
TURNS_HEADER = ("time_s", "cpu", "pid", "comm")
#: the ring buffer per CPU (KiB): a switch takes about 64 bytes, and a busy-polling client
#: CPU switches a few hundred times a second (400/s in the trace above): 4 MiB holds
#: minutes
BUFFER_KB = 4096
#: how long after the last process began the load is taken as steady (s): its processes'
#: start and their first steps' timeouts
SETTLE_S = 1.0
#: instants sampled over a CPU's steady load for :func:`kept_share`
SAMPLES = 20_000
#: the ticks after a deadline :func:`kept_share` tells apart (a later turn counts in the
#: last): ``acceptsim.models.client.MAX_TURN_DELAYS``
MAX_DELAY_TICKS = MAX_TURN_DELAYS

_SWITCH = re.compile(r"\[(\d+)\][^:]*?\s(\d+\.\d+): sched_switch: .*==> next_comm=(.*) "
                     r"next_pid=(\d+) next_prio=")


def cpumask(cpus: Sequence[int]) -> str:
    """tracefs's ``tracing_cpumask`` for ``cpus``: hexadecimal words of 32 CPUs, the
    highest first, separated by commas."""
    mask = sum(1 << c for c in set(cpus))
    words = []
    while True:
        words.append(f"{mask & 0xFFFFFFFF:08x}")
        mask >>= 32
        if not mask:
            break
    return ",".join(reversed(words))


class SwitchTrace:
    """``with SwitchTrace(cpus) as trace:`` records the ``sched_switch`` events of the
    CPUs ``cpus`` while its body runs, in a tracefs instance of its own
    (``instances/acceptsim-turns-<pid>``, removed afterwards); ``trace.text`` holds them
    then, or ``trace.failed`` says why there are none (no tracefs, not writable)."""

    def __init__(self, cpus: Sequence[int], root: Path = TRACEFS) -> None:
        self.cpus = list(cpus)
        self.text = ""
        self.failed = ""
        self._dir = root / "instances" / f"acceptsim-turns-{os.getpid()}"

    def _write(self, name: str, value: str) -> None:
        (self._dir / name).write_text(value)

    def __enter__(self) -> SwitchTrace:
        try:
            self._dir.mkdir()
        except OSError as exc:
            self.failed = (f"no tracefs instance at {self._dir} "
                           f"({exc.strerror or type(exc).__name__})")
            return self
        try:
            self._write("tracing_on", "0")
            self._write("tracing_cpumask", cpumask(self.cpus))
            self._write("buffer_size_kb", str(BUFFER_KB))
            self._write("events/sched/sched_switch/enable", "1")
            self._write("tracing_on", "1")
        except OSError as exc:
            self.failed = f"tracefs refused ({exc.strerror or type(exc).__name__})"
            self._remove()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.failed or not self._dir.exists():
            return
        try:
            self._write("tracing_on", "0")
            if kind is None:
                self.text = (self._dir / "trace").read_text(errors="replace")
        except OSError as err:
            self.failed = f"tracefs unreadable ({err.strerror or type(err).__name__})"
        finally:
            self._remove()

    def _remove(self) -> None:
        with contextlib.suppress(OSError):
            self._write("events/sched/sched_switch/enable", "0")
        with contextlib.suppress(OSError):
            self._dir.rmdir()


@dataclass(frozen=True)
class Switch:
    """The kernel switched CPU ``cpu`` to task ``pid`` (named ``comm``) at ``time_s``."""

    time_s: float
    cpu: int
    pid: int
    comm: str


def parse_switches(text: str) -> list[Switch]:
    """The switches of a tracefs ``trace`` file's ``sched_switch`` lines, times from the
    first (other lines, such as its header, are skipped)."""
    found = [(int(m[1]), float(m[2]), m[3], int(m[4]))
             for m in map(_SWITCH.search, text.splitlines()) if m]
    if not found:
        return []
    start = min(t for _, t, _, _ in found)
    return sorted((Switch(round(t - start, 6), cpu, pid, comm) for cpu, t, comm, pid in found),
                  key=lambda s: s.time_s)


def turns_rows(switches: Sequence[Switch]) -> str:
    """``client-turns.csv``'s text: one row per switch."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(TURNS_HEADER)
    for s in switches:
        writer.writerow((f"{s.time_s:.6f}", s.cpu, s.pid, s.comm))
    return out.getvalue()


def read_turns(path: Path) -> list[Switch]:
    """A run's ``client-turns.csv`` (ParseError naming the file and line if it is bad)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ParseError(path, 0, f"unreadable ({exc})") from None
    rows = csv.reader(io.StringIO(text))
    header = next(rows, None)
    if tuple(header or ()) != TURNS_HEADER:
        raise ParseError(path, 1, f"header {header!r}, expected {','.join(TURNS_HEADER)}")
    switches: list[Switch] = []
    for line, row in enumerate(rows, start=2):
        try:
            time_s, cpu, pid, comm = row
            s = Switch(float(time_s), int(cpu), int(pid), comm)
        except ValueError:
            raise ParseError(path, line, f"{row!r} is not time_s,cpu,pid,comm") from None
        if not (math.isfinite(s.time_s) and s.time_s >= 0 and s.cpu >= 0 and s.pid >= 0):
            raise ParseError(path, line, f"{row!r}: a time, CPU or pid below zero")
        if switches and s.time_s < switches[-1].time_s:
            raise ParseError(path, line, f"time {s.time_s:g} s before the row above")
        switches.append(s)
    return switches


@dataclass(frozen=True)
class KeptShare:
    """What :func:`kept_share` read from a run's switches."""

    #: of the instants, the share beyond chance (1/k) at which the process running one
    #: lag later is the one a round that kept its order puts there (0: none kept; 1: all)
    share: float
    #: the instants compared (0: no CPU with two processes or more and a steady load)
    samples: int
    #: the load generator's processes on each traced CPU
    processes: dict[int, int]
    #: where a deadline one lag after an instant of a process's turn finds that process:
    #: the share of the instants at which it is running then (first), or next runs on
    #: the d-th tick after the deadline's (d-th), pooled over the CPUs (empty: no
    #: instants); ``RunConfig.client_turn_delays`` as :meth:`delays_text` writes it
    delays: tuple[float, ...] = ()

    def delays_text(self) -> str:
        """:attr:`delays` as ``RunConfig.client_turn_delays`` takes them."""
        return ",".join(f"{p:.4f}" for p in self.delays)


def kept_share(switches: Sequence[Switch], comm: str, tick_s: float, lag_s: float,
               settle_s: float = SETTLE_S, samples: int = SAMPLES) -> KeptShare:
    """How much of the order of the turns of the processes named ``comm`` lasted
    ``lag_s``: on each CPU with k >= 2 of them, at ``samples`` instants t evenly spread
    over the steady load (from ``settle_s`` after the last of them first ran to ``lag_s``
    before the first of them last did), whether the process whose turn it is at t + lag
    (the last of them to run, whatever else runs between turns) is the one whose turn it
    is at t + (lag modulo k ticks of ``tick_s``), where a round that kept its order puts
    it; the share P of such instants is e + (1 - e) / k for a share e of kept
    rounds and uniform places otherwise, so e = (P - 1/k) / (1 - 1/k), pooled over the
    CPUs by their instants.  And, at the same instants, where the deadline t + lag finds
    the process whose turn it is at t: running (0), or next running on the d-th tick
    after the deadline's (:attr:`KeptShare.delays`): a round's order broken by a swap of
    two neighbours still puts the process a tick from its kept place, which the share e
    counts as lost."""
    delays = [0] * MAX_DELAY_TICKS
    by_cpu: dict[int, list[Switch]] = {}
    for s in switches:
        by_cpu.setdefault(s.cpu, []).append(s)
    matched = weighted = 0.0
    total = 0
    processes = {}
    for cpu, rows in sorted(by_cpu.items()):
        first: dict[int, float] = {}
        last: dict[int, float] = {}
        for s in rows:
            if s.comm == comm:
                first.setdefault(s.pid, s.time_s)
                last[s.pid] = s.time_s
        k = len(first)
        processes[cpu] = k
        if k < 2:
            continue
        start, end = max(first.values()) + settle_s, min(last.values()) - lag_s
        if end <= start:
            continue
        turns = [s for s in rows if s.comm == comm]  # whose turn: the last of them to run
        times = [s.time_s for s in turns]

        def running(t: float, turns: list[Switch] = turns, times: list[float] = times) -> int:
            return turns[bisect.bisect_right(times, t) - 1].pid

        ticks = round(lag_s / tick_s)  # the lag in whole ticks, and the rest
        place = (ticks % k) * tick_s + (lag_s - ticks * tick_s)
        own: dict[int, list[float]] = {}  # each process's turns' starts
        for s in turns:
            own.setdefault(s.pid, []).append(s.time_s)
        hits = n = 0
        for j in range(samples):
            t = start + (end - start) * (j + 0.5) / samples
            n += 1
            deadline = t + lag_s
            whose = running(deadline)
            hits += whose == running(t + place)
            process = running(t)
            if whose == process:
                delays[0] += 1
                continue
            starts = own[process]
            i = bisect.bisect_right(starts, deadline)
            if i < len(starts):  # its next turn, d ticks after the deadline's
                d = min(int((starts[i] - deadline) / tick_s) + 1, len(delays) - 1)
                delays[d] += 1
        if n:
            share = (hits / n - 1.0 / k) / (1.0 - 1.0 / k)
            matched += n * share
            weighted += n
            total += n
    share = min(1.0, max(0.0, matched / weighted)) if weighted else 0.0
    counted = sum(delays)
    while delays and not delays[-1]:
        delays.pop()
    return KeptShare(share, total, processes,
                     tuple(d / counted for d in delays) if counted else ())
