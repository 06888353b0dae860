"""How a CFS-limited server's runs end, and how a closed-loop client's requests follow its
connects, from the kernel's trace (Linux, root: tracefs).

Under a quota the kernel notices a used-up runtime at the first accounting point after it
runs out: a scheduler tick while the task runs on, or the task's own sleep and wake-up
(it is throttled when it is made runnable again), or its preemption by another task.
Which of them ends each run decides how long the server runs before each throttle, and
so the latency of the requests that wait the throttle out (docs/design_log.md, "wrk's
event loop and where each throttle falls").

    sudo python tools/throttle_windows.py record OUT.trace [--comm nginx] [--client wrk] \\
        -- acceptsim measure --client wrk ...
    python tools/throttle_windows.py summary OUT.trace [--comm nginx] [--client wrk] \\
        [--interval 0.25]

``record`` traces, while the command runs, the ``sched_switch`` events that switch the
server's task (``--comm``) in or out, and with ``--client`` the ``connect``, ``write``,
``accept4`` and ``recvfrom`` system calls of the client and the server, into a tracefs
instance of its own read after the command.  ``summary`` prints, as JSON:

- the server's *windows* (its runs from one throttle to the next): their runtime's
  quantiles and a histogram in half-millisecond bins, its sleeps per window, how each
  throttle was noticed (``at_wake``: the run that ends in it lasts a few microseconds
  and began when the server woke from a sleep; ``running``: at a tick or a preemption),
  and the tasks that preempted it;
- with system calls traced: the client's delay from each ``connect`` to the ``write``
  of its request on that socket, and for each connection the server accepted, its delay
  to the ``recvfrom`` that read the request and whether the server slept in between;
- with ``--interval S`` too: per S seconds, the median of the server's CPU for one
  connection (its *cycle*, :func:`cycles`) and the windows that began then and ran on to
  a tick (docs/design_log.md, "nginx's speed moves within a run").
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import json
import math
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from acceptsim.measure.switch_trace import TRACEFS

#: a trace line: task name, time and the event's text
_LINE = re.compile(r"^\s*(.+?)-\d+\s+\[\d+\]\s+\S+\s+(\d+\.\d+): (.*)$")
#: a ``sched_switch`` event: the task switched out (its name and state), the task in
_SWITCH = re.compile(r"sched_switch: prev_comm=(.*?) prev_pid=\d+ prev_prio=\d+ "
                     r"prev_state=(\S+) ==> next_comm=(.*?) next_pid=\d+")
#: the idle task's name on CPU n begins so
IDLE = "swapper/"
#: a run this short, right after the server woke, is the kernel throttling it at the wake
AT_WAKE_S = 50e-6
#: runtime histogram's bin (s)
BIN_S = 0.5e-3
#: the system calls ``record --client`` traces (entry and exit)
SYSCALLS = ("connect", "write", "accept4", "recvfrom")
#: ring buffer per CPU (KiB): a few seconds of a few thousand connections a second
BUFFER_KB = 32768
QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)


#: a server switched out runnable and not run again for this long was throttled, whatever
#: task the CPU went to: at a throttle the CPU goes to a task woken meanwhile if there is
#: one (ksoftirqd, most often, when the throttle comes at a tick), and a preemption gives
#: the CPU back within tens of microseconds
THROTTLED_GAP_S = 0.5e-3


@dataclass(frozen=True)
class Run:
    """The server ran from ``start_s`` to ``end_s`` and was switched out in ``state``
    (``S``: it slept; ``R``: runnable, preempted or throttled) for task ``next_comm``;
    it ran again ``resumed_after_s`` later (inf: not within the trace)."""

    start_s: float
    end_s: float
    state: str
    next_comm: str
    resumed_after_s: float = math.inf

    @property
    def throttled(self) -> bool:
        """Switched out runnable for the idle task, or for any task and not run again for
        :data:`THROTTLED_GAP_S`: its cgroup was throttled."""
        return self.state.startswith("R") and (
            self.next_comm.startswith(IDLE) or self.resumed_after_s >= THROTTLED_GAP_S)

    @property
    def slept(self) -> bool:
        return self.state.startswith("S")


def events(text: str) -> list[tuple[str, float, str]]:
    """``(task, time, event text)`` of every event line of a tracefs ``trace`` file."""
    return [(m[1], float(m[2]), m[3]) for m in map(_LINE.match, text.splitlines()) if m]


def runs_of(text: str, comm: str) -> list[Run]:
    """The runs of the task named ``comm``."""
    runs: list[Run] = []
    began: float | None = None
    for _, t, event in events(text):
        m = _SWITCH.match(event)
        if not m:
            continue
        prev, state, nxt = m[1], m[2], m[3]
        if prev == comm and began is not None:
            runs.append(Run(began, t, state, nxt))
            began = None
        if nxt == comm:
            began = t
    return [dataclasses.replace(run, resumed_after_s=after.start_s - run.end_s)
            for run, after in zip(runs, runs[1:], strict=False)] + runs[-1:]


def windows_of(runs: Sequence[Run]) -> list[list[Run]]:
    """The runs grouped into windows, each ending in a throttle (a last, unfinished
    window is left out)."""
    windows: list[list[Run]] = []
    current: list[Run] = []
    for run in runs:
        current.append(run)
        if run.throttled:
            windows.append(current)
            current = []
    return windows


def noticed_at_wake(window: Sequence[Run]) -> bool:
    """The throttle that ends ``window`` came when the server was made runnable after a
    sleep: its last run lasts a few microseconds and the run before it ended in a sleep."""
    last = window[-1]
    return (len(window) > 1 and last.end_s - last.start_s < AT_WAKE_S
            and window[-2].slept)


def quantiles(values: Sequence[float], scale: float = 1e6) -> dict[str, float]:
    """The values' quantiles (:data:`QUANTILES`), times ``scale`` (1e6: microseconds)."""
    ordered = sorted(values)
    return {f"p{round(q * 100)}": round(ordered[min(len(ordered) - 1, int(q * len(ordered)))]
                                        * scale, 3) for q in QUANTILES}


def window_summary(text: str, comm: str) -> dict[str, object]:
    """The server's windows (see the module's docstring)."""
    windows = windows_of(runs_of(text, comm))
    if not windows:
        return {"windows": 0}
    runtimes = [sum(r.end_s - r.start_s for r in w) for w in windows]
    bins = collections.Counter(f"{int(r / BIN_S) * BIN_S * 1e3:.1f}" for r in runtimes)
    sleeps = collections.Counter(sum(r.slept for r in w) for w in windows)
    preempted = collections.Counter(
        r.next_comm for w in windows for r in w if r.state.startswith("R") and not r.throttled)
    at_wake = sum(noticed_at_wake(w) for w in windows)
    return {
        "windows": len(windows),
        "span_s": round(windows[-1][-1].end_s - windows[0][0].start_s, 3),
        "runtime_ms": quantiles(runtimes, 1e3),
        "runtime_histogram_ms": dict(sorted(bins.items(), key=lambda kv: float(kv[0]))),
        "sleeps_per_window": dict(sorted(sleeps.items())),
        "throttle_noticed": {"at_wake": at_wake, "running": len(windows) - at_wake},
        "preempted_by": dict(preempted.most_common(8)),
    }


_CALL = re.compile(r"sys_(\w+)\(fd: (\w+)")
_RETURN = re.compile(r"sys_(\w+) -> 0x(\w+)")
#: a return value this large is a negative errno
_ERROR = 1 << 63


def server_return(task: str, event: str, comm: str) -> tuple[str, int]:
    """``(system call, returned value)`` if ``event`` is a successful return of one of
    the server's (``comm``'s) traced calls, else ``("", 0)`` (a failed call returns a
    negative errno, :data:`_ERROR` or more)."""
    ret = _RETURN.match(event)
    if not ret or task != comm or int(ret[2], 16) >= _ERROR:
        return "", 0
    return ret[1], int(ret[2], 16)


def connection_summary(text: str, comm: str, client: str) -> dict[str, object]:
    """The client's delays from ``connect`` to its request's ``write``, and the server's
    from ``accept4`` to the ``recvfrom`` that read the request (see the module's
    docstring)."""
    connected: dict[int, float] = {}
    to_write: list[float] = []
    accepted: dict[int, list] = {}  # the server's socket -> [accepted at, slept since]
    to_read: list[float] = []
    slept_between = 0
    reading = -1
    for task, t, event in events(text):
        sw = _SWITCH.match(event)
        if sw:
            if sw[1] == comm and sw[2].startswith("S"):
                for waiting in accepted.values():
                    waiting[1] = True
            continue
        call = _CALL.match(event)
        if call:
            name, fd = call[1], int(call[2], 16)
            if task == client and name == "connect":
                connected[fd] = t
            elif task == client and name == "write" and fd in connected:
                to_write.append(t - connected.pop(fd))
            elif task == comm and name == "recvfrom":
                reading = fd
            continue
        name, value = server_return(task, event, comm)
        if name == "accept4":
            accepted[value] = [t, False]
        elif name == "recvfrom" and reading in accepted and value > 0:
            at, slept = accepted.pop(reading)
            to_read.append(t - at)
            slept_between += slept
    out: dict[str, object] = {}
    if to_write:
        out["client_connect_to_write_us"] = {"n": len(to_write), **quantiles(to_write)}
    if to_read:
        out["server_accept_to_read_us"] = {"n": len(to_read), **quantiles(to_read),
                                           "slept_between": slept_between}
    return out


def cycles(text: str, comm: str) -> list[tuple[float, float]]:
    """``(time, length)`` of each of the server's *cycles*: from one ``accept4`` that
    returned a connection to the next, with exactly one ``recvfrom`` that read a request
    in between and the server not switched out (nginx with ``multi_accept off`` serving
    from its accept queue: one accept and one earlier connection's request a pass).  A
    cycle's length is the server's CPU for one connection, measured at the same place
    wherever it falls in a window."""
    out: list[tuple[float, float]] = []
    last: float | None = None
    reads = 0
    switched = False
    for task, t, event in events(text):
        sw = _SWITCH.match(event)
        if sw:
            switched = switched or sw[1] == comm
            continue
        name, value = server_return(task, event, comm)
        if name == "accept4":
            if last is not None and reads == 1 and not switched:
                out.append((t, t - last))
            last, reads, switched = t, 0, False
        elif name == "recvfrom" and value > 0:
            reads += 1
    return out


def cycle_series(text: str, comm: str, interval_s: float) -> list[dict[str, float]]:
    """Per ``interval_s`` from the trace's first window: the server's cycles
    (:func:`cycles`) there, their median (us), and the windows that began there and ran
    on to a tick (their throttle not noticed at a wake-up: the server never ran dry, and
    its overrun is a debt that throttles it through the next periods): whether the
    server's speed holds through a run, and whether those windows come with its slow
    stretches."""
    windows = windows_of(runs_of(text, comm))
    found = cycles(text, comm)
    if not windows or not found:
        return []
    start = windows[0][0].start_s
    lengths: dict[int, list[float]] = collections.defaultdict(list)
    for t, length in found:
        if t >= start:
            lengths[int((t - start) / interval_s)].append(length)
    to_tick = collections.Counter(
        int((w[0].start_s - start) / interval_s) for w in windows if not noticed_at_wake(w))
    return [{"start_s": round(k * interval_s, 6), "cycles": len(lengths[k]),
             "cycle_p50_us": round(sorted(lengths[k])[len(lengths[k]) // 2] * 1e6, 1),
             "windows_to_tick": to_tick[k]}
            for k in sorted(lengths)]


@contextlib.contextmanager
def traced(out: Path, comm: str, client: str, root: Path = TRACEFS):  # noqa: ANN201
    """Trace (see the module's docstring) while the body runs; write the trace to ``out``."""
    instance = root / "instances" / f"throttle-windows-{os.getpid()}"
    instance.mkdir()
    enabled: list[Path] = []

    def enable(event: str, condition: str) -> None:
        (instance / "events" / event / "filter").write_text(condition)
        (instance / "events" / event / "enable").write_text("1")
        enabled.append(instance / "events" / event / "enable")

    try:
        (instance / "buffer_size_kb").write_text(str(BUFFER_KB))
        enable("sched/sched_switch", f'prev_comm == "{comm}" || next_comm == "{comm}"')
        if client:
            for call in SYSCALLS:
                for side in ("enter", "exit"):
                    enable(f"syscalls/sys_{side}_{call}",
                           f'comm == "{comm}" || comm == "{client}"')
        (instance / "tracing_on").write_text("1")
        yield
        (instance / "tracing_on").write_text("0")
        out.write_text((instance / "trace").read_text(errors="replace"))
    finally:
        for path in enabled:
            with contextlib.suppress(OSError):
                path.write_text("0")
        with contextlib.suppress(OSError):
            instance.rmdir()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    for name, text in (("record", "trace while COMMAND (after --) runs"),
                       ("summary", "the windows and connections of a recorded trace")):
        p = sub.add_parser(name, help=text)
        p.add_argument("trace", type=Path)
        p.add_argument("--comm", default="nginx", help="the server's task name (nginx)")
        p.add_argument("--client", default="", help="the client's task name (wrk): also "
                       "trace (summarise) its connects and writes")
        if name == "summary":
            p.add_argument("--interval", type=float, default=0.0, metavar="S",
                           help="also the server's cycle and its windows that ran on to "
                           "a tick, per S seconds (cycle_series; needs a trace recorded "
                           "with --client)")
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[argv.index("--") + 1:] if "--" in argv else []
    args = parser.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    if args.what == "summary":
        text = args.trace.read_text(errors="replace")
        out = window_summary(text, args.comm)
        if args.client:
            out.update(connection_summary(text, args.comm, args.client))
        if args.interval > 0:
            out["cycle_series"] = cycle_series(text, args.comm, args.interval)
        print(json.dumps(out, indent=2))
        return 0
    if not command:
        parser.error("record: give the command to run after --")
    try:
        with traced(args.trace, args.comm, args.client):
            code = subprocess.run(command, check=False).returncode
    except OSError as exc:
        print(f"throttle_windows: tracefs: {exc}", file=sys.stderr)
        return 2
    return code


if __name__ == "__main__":
    sys.exit(main())
