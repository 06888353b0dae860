"""Where the server's CPU goes, per reply, in a measured run: perf samples of the
server's CPU during ``acceptsim measure``, sorted by the system call they fell in.

On loopback the receive side of every segment runs on its sender's CPU and is charged to
the sending task (``acceptsim.measure.host_costs``), so the samples of the server's worker
hold its system calls, the softirq work inside them, and its own code.  Divided by the
replies of the same intervals of the run's time series, they give microseconds per reply
by system call: how a cost the model takes as one number is made up, and whether it moves
within a run (the first second against the rest, or the run's slow intervals against its
fast ones).  Linux, root, with ``perf``; one run per call (one rate, one repeat).

    python tools/server_cpu_profile.py record OUT [--cpu C] [--frequency 4000] -- \\
        --server nginx --multi-accept off --rates 6000 --duration 8 --timeout 1 \\
        --server-cpu-quota 0.25 --server-cpu-period 4000
    python tools/server_cpu_profile.py report OUT [--windows 0:1,4:8]

``record`` takes the testbed lock (``/tmp/acceptsim-testbed.lock``), starts ``perf record
-g`` on the server's CPU, runs ``acceptsim measure --repeats 1 --out OUT/run`` with the
arguments after ``--``, and stops perf when it ends.  perf's sampling costs the server's
CPU too (at 4,000 samples a second, a few per cent of it): compare windows of one run,
or runs recorded alike, not a profiled run with an unprofiled one.

``report`` takes the worker with the most samples, starts the run's clock at its first
sample inside ``accept4`` (the load's first connection), and prints, per window of the
run's time series and per third of its intervals sorted by replies per CPU-millisecond,
the microseconds per reply of each system call (``[softirq]``: the part spent in the
receive softirq inside it), of the worker's own code (``user``) and of the rest.  Sorted
by their own ratio, the thirds differ by their intervals' scatter too: compare their
spread with a run's below saturation before reading it as the load's.
"""

from __future__ import annotations

import argparse
import collections
import fcntl
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pandas as pd

from acceptsim.measure import find_runs, load_run
from acceptsim.measure.harness import cpu_split

#: the lock every measurement holds (tests/data/measured/*/record.sh)
TESTBED_LOCK = "/tmp/acceptsim-testbed.lock"
#: the frame a system call's samples all pass through: ``__x64_sys_<name>``
SYSCALL_PREFIX = "__x64_sys_"
#: frames that mark the receive softirq
SOFTIRQ_FRAMES = frozenset({"handle_softirqs", "net_rx_action", "__do_softirq"})
#: the system call that starts a run's clock (its first connection)
FIRST_CALL = "accept4"


def samples(text: str) -> Iterator[tuple[int, float, list[str]]]:
    """Each sample of ``perf script -F comm,tid,time,ip,sym`` (with call chains) as
    (thread, instant in s, frames from the leaf out)."""
    head: tuple[int, float] | None = None
    frames: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            if head is not None:
                yield head[0], head[1], frames
            head, frames = None, []
        elif line[0].isspace():
            parts = line.split(None, 1)
            frames.append(parts[1] if len(parts) > 1 else "[unknown]")
        else:
            fields = line.split()
            head, frames = (int(fields[1]), float(fields[2].rstrip(":"))), []
    if head is not None:
        yield head[0], head[1], frames


def category(frames: Sequence[str]) -> str:
    """The system call a sample fell in (``[softirq]`` added where it was in the receive
    softirq inside it), ``user`` for the task's own code, ``irq`` for an interrupt outside
    a system call, else ``kernel``."""
    softirq = any(f in SOFTIRQ_FRAMES for f in frames)
    for frame in reversed(frames):  # from the outermost in
        if frame.startswith(SYSCALL_PREFIX):
            return frame[len(SYSCALL_PREFIX):] + (" [softirq]" if softirq else "")
    if any(f.startswith(("asm_sysvec", "sysvec_", "asm_common_interrupt")) for f in frames):
        return "irq"
    if any(f.startswith(("entry_SYSCALL", "do_syscall")) for f in frames) or softirq:
        return "kernel"
    return "user"


def worker_samples(text: str) -> tuple[list[tuple[float, str]], float]:
    """The samples of the busiest thread that accepts (the server's worker) as (instant
    past its first ``accept4``, category), and that first instant."""
    all_samples = [(tid, t, category(frames)) for tid, t, frames in samples(text)]
    accepting = {tid for tid, _, c in all_samples if c.split(" ")[0] == FIRST_CALL}
    if not accepting:
        raise SystemExit(f"no sample inside {FIRST_CALL} (was the server's CPU recorded?)")
    busiest = collections.Counter(
        tid for tid, _, _ in all_samples if tid in accepting).most_common(1)[0][0]
    mine = [(t, c) for tid, t, c in all_samples if tid == busiest]
    t0 = min(t for t, c in mine if c.split(" ")[0] == FIRST_CALL)
    return [(t - t0, c) for t, c in mine], t0


def per_reply(picked: list[str], replies: float, sample_s: float) -> dict[str, float]:
    """Microseconds per reply of each category among ``picked`` samples."""
    counts = collections.Counter(picked)
    return {k: n * sample_s * 1e6 / replies for k, n in counts.items()}


def report(out: Path, windows: list[tuple[float, float]], top: int = 14) -> str:
    runs = find_runs(out / "run")
    if len(runs) != 1:
        raise SystemExit(f"{out / 'run'}: {len(runs)} runs, expected one")
    run = load_run(runs[0])
    series = run.timeseries()
    if series is None:
        raise SystemExit(f"{runs[0]}: no time series")
    frequency = float((out / "frequency").read_text())
    text = subprocess.run(["perf", "script", "-i", str(out / "perf.data"), "-F",
                           "comm,tid,time,ip,sym"], capture_output=True, text=True,
                          check=True).stdout
    worker, _ = worker_samples(text)
    series = series.assign(start=series.time_s - series.interval_s,
                           replies=series.reply_rate_per_s * series.interval_s)
    series = series[series.time_s <= run.info.load.duration_s]

    def table(rows: pd.DataFrame) -> tuple[dict[str, float], float, int]:
        picked = [c for t, c in worker
                  if any(a <= t < b for a, b in zip(rows.start, rows.time_s, strict=True))]
        replies = float(rows.replies.sum())
        return per_reply(picked, replies, 1.0 / frequency), replies, len(picked)

    columns: dict[str, dict[str, float]] = {}
    lines = [f"{runs[0]}: {len(worker)} samples of the busiest thread at {frequency:g}/s"]
    for a, b in windows:
        rows = series[(series.start >= a - 1e-9) & (series.time_s <= b + 1e-9)]
        columns[f"{a:g}-{b:g} s"], replies, n = table(rows)
        lines.append(f"  {a:g}-{b:g} s: {replies:.0f} replies, {n} samples")
    later = series[series.start >= windows[0][1]]
    per_ms = later.replies / later.usage_ms
    for name, rows in later.groupby(pd.qcut(per_ms, 3, labels=["slow", "mid", "fast"]),
                                    observed=True):
        columns[f"{name} third"], replies, n = table(rows)
        lines.append(f"  {name} third of the intervals after {windows[0][1]:g} s: "
                     f"{replies / rows.usage_ms.sum():.1f} replies per CPU-ms, {n} samples")
    frame = pd.DataFrame(columns).fillna(0.0)
    frame.loc["total"] = frame.sum()
    order = frame.drop(index="total").max(axis=1).sort_values(ascending=False).index[:top]
    lines.append("us per reply:")
    lines.append(frame.loc[[*order, "total"]].round(2).to_string())
    return "\n".join(lines)


def record(out: Path, cpu: str, frequency: int, measure_args: list[str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "frequency").write_text(f"{frequency}\n")
    with open(TESTBED_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        perf = subprocess.Popen(["perf", "record", "-q", "-C", str(cpu), "-g", "-F",
                                 str(frequency), "-o", str(out / "perf.data")])
        try:
            subprocess.run([sys.executable, "-m", "acceptsim.cli", "measure", *measure_args,
                            "--repeats", "1", "--out", str(out / "run")], check=True)
        finally:
            perf.send_signal(signal.SIGINT)
            perf.wait(60)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="profile the server's CPU during one measured run")
    rec.add_argument("out", type=Path)
    # where acceptsim measure puts the server: the first CPU this process may run on
    server_cpu = cpu_split(sorted(os.sched_getaffinity(0)))[0]
    rec.add_argument("--cpu", default=server_cpu or None,
                     help=f"the server's CPU (default {server_cpu or 'none'}: where "
                          "acceptsim measure pins the server)")
    rec.add_argument("--frequency", type=int, default=4000, help="samples/s (default 4000)")
    rec.add_argument("measure", nargs=argparse.REMAINDER,
                     help="-- then acceptsim measure's arguments (one rate)")
    rep = sub.add_parser("report", help="microseconds per reply by system call")
    rep.add_argument("out", type=Path)
    rep.add_argument("--windows", default="0:1,4:8",
                     help="windows of the run, A:B,... in s (default 0:1,4:8)")
    args = parser.parse_args(argv)
    if args.command == "record":
        if args.cpu is None:
            parser.error("--cpu: acceptsim measure pins the server only with two or more "
                         "CPUs; name the CPU to record")
        measure = args.measure[1:] if args.measure[:1] == ["--"] else args.measure
        record(args.out, args.cpu, args.frequency, measure)
        return 0
    try:
        windows = [(float(a), float(b)) for a, b in
                   (w.split(":") for w in args.windows.split(","))]
    except ValueError:
        parser.error(f"--windows {args.windows!r}: expected A:B,... in seconds")
    if any(not 0 <= a < b for a, b in windows):
        parser.error(f"--windows {args.windows!r}: each window needs 0 <= A < B")
    print(report(args.out, windows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
