"""``acceptsim bench``: simulator speed, in simulated connection attempts per CPU-second.

For every server registered in :data:`~acceptsim.models.servers.registry.SERVERS`, one run of
the one-packet workload at 24,000 requests/s (the paper's overload region), and the
cases of :data:`CASES` (nginx on a 4-CPU host at four times the rate, the userver on
the SPECweb99-like workload and in a closed loop of 64 users); prints JSON
``{"<server>": {"conns_per_cpu_s": ..., ...}, ...}``.  CPU time is the simulating
process's own (``time.process_time``) over the run's event loop.  The default
accept-limit is :class:`RunConfig`'s (1); ``--accept-limit`` sets another.

Absolute speeds on a shared machine drift (up to 2x within minutes here), so each
server's figure is given as ``heap_loop_ratio``: its connection attempts per CPU-second
over the customers per CPU-second of a bare pure-Python heapq M/M/1 loop
(:func:`heap_loop`), the ceiling of pure Python for the simplest simulation, timed in
the same process *alternately* with the runs: ``--rounds`` rounds (default 3) of
heap loop, server, heap loop, next server, ..., each run's ratio taken against the
mean of the heap-loop timings on either side of it, and the median over the rounds
reported (``heap_loop_ratios``: every round's).  ``hot_path`` says whether the
compiled hot path or its Python sources ran (:mod:`acceptsim.sim.native`).

``--events`` also counts the engine's events per simulated connection attempt (what
fires off the event heap, and each step of a server's task, by kind), in a child
process on the Python sources (the counting wraps the engine's functions, which the
compiled build calls natively; the events are the same either way).

``--profile N`` also runs each server once under :mod:`cProfile` and writes
its N most expensive functions (own time) to standard error.  The profiler
adds a fixed cost per Python call, so it overstates small functions: use it
to find where calls and events go, and the plain figure to judge a change.
cProfile does not see compiled functions, so the profiled run uses the
Python sources (in a child process with ``ACCEPTSIM_PURE_PYTHON=1``) when
the compiled hot path is in use.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import random
import subprocess
import sys
import time
from heapq import heappop, heappush
from itertools import count
from typing import Any, TextIO

from acceptsim.config_io import parse_int, parse_number
from acceptsim.models.config import RunConfig
from acceptsim.models.policies import check_limit
from acceptsim.models.runner import run_point
from acceptsim.models.servers.registry import SERVERS
from acceptsim.sim import native
from acceptsim.sim.errors import ConfigError

#: the benchmark's load: the paper's one-packet workload in overload
BENCH_RATE_PER_S = 24000.0
BENCH_WORKLOAD = "one-packet"
#: cases beside the registered servers: a multi-core host (its rate is the benchmark's
#: times ``rate_scale``, the same overload per CPU)
CASES: dict[str, dict[str, Any]] = {
    "nginx-4cpu": {"server": "nginx", "cpus": 4, "rate_scale": 4.0},
    # the paper's SPECweb99-like load on the userver past its peak (figure 8's x axis is
    # requests/s: 7.2 per connection, so 3,000 connections/s is 21,600 requests/s)
    "userver-specweb99": {"server": "userver", "workload": "specweb99", "rate_scale": 0.125},
    # a closed loop (wrk, ab): 64 users, each connecting anew when its last connection ends
    "userver-closed-64": {"server": "userver", "concurrency": 64},
}


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("bench", help="simulated connection attempts per CPU-second")
    p.add_argument("--duration", default="10", help="simulated seconds per run (default 10)")
    p.add_argument("--rate", default=str(BENCH_RATE_PER_S), help="target rate (default 24000)")
    p.add_argument("--accept-limit", default=None, help="accept-limit (default: RunConfig's)")
    p.add_argument("--rounds", "--repeat", dest="rounds", default=str(BENCH_ROUNDS),
                   help="rounds of runs alternated with the heap loop; the median ratio "
                   f"counts (default {BENCH_ROUNDS}; --repeat: its former name)")
    p.add_argument("--servers", default=None, help="comma-separated subset of the servers and "
                   "cases (" + ", ".join(CASES) + ") (default: all)")
    p.add_argument(
        "--profile", default="0", metavar="N",
        help="also profile one run per server; its N top functions (own time) to stderr",
    )  # fmt: skip
    p.add_argument("--events", action="store_true",
                   help="also count engine events per connection attempt, by kind")
    p.set_defaults(main=main)


#: customers per timing of the heap loop, and timings (the fastest counts)
HEAP_LOOP_CUSTOMERS = 200_000
HEAP_LOOP_REPEAT = 3
#: calls of the heap loop, of a few customers each, before every timing.  CPython 3.11
#: specializes a function's bytecode ("quickens" it) only once the function has been
#: entered eight times; until then its globals are looked up in dictionaries and its
#: calls go the general way.  Unwarmed, the loop's first seven timings in a process ran
#: 0.65-0.75 of its speed from the eighth on, which made every ratio of a bench's
#: first rounds too high and of its later rounds lower (design log, "The yardstick's
#: warm-up").  Later CPythons quicken at once; the calls cost nothing there.
HEAP_LOOP_WARMUP_CALLS = 10
HEAP_LOOP_WARMUP_CUSTOMERS = 10
#: rounds of ``acceptsim bench``: each server's ratio to the heap loop is the median of
#: this many, each timed between two heap-loop timings
BENCH_ROUNDS = 3


def heap_loop(customers: int, seed: int = 1) -> int:
    """A bare M/M/1 queue (load 0.9) on a heapq of ``(time, priority, sequence, kind)``
    entries, as an event loop keeps them; returns the customers served."""
    draw = random.Random(seed).expovariate
    sequence = count()
    heap = [(draw(0.9), 1, next(sequence), 0)]
    busy = False
    waiting = served = 0
    while served < customers:
        now, _, _, kind = heappop(heap)
        if kind == 0:  # an arrival, which draws the next one
            heappush(heap, (now + draw(0.9), 1, next(sequence), 0))
            if busy:
                waiting += 1
            else:
                busy = True
                heappush(heap, (now + draw(1.0), 1, next(sequence), 1))
        else:  # a departure
            served += 1
            if waiting:
                waiting -= 1
                heappush(heap, (now + draw(1.0), 1, next(sequence), 1))
            else:
                busy = False
    return served


def heap_loop_speed(customers: int = HEAP_LOOP_CUSTOMERS, repeat: int = HEAP_LOOP_REPEAT) -> float:
    """Customers per CPU-second of :func:`heap_loop` (the fastest of ``repeat`` timings),
    warmed first (:data:`HEAP_LOOP_WARMUP_CALLS`)."""
    for _ in range(HEAP_LOOP_WARMUP_CALLS):
        heap_loop(HEAP_LOOP_WARMUP_CUSTOMERS)
    best = 0.0
    for _ in range(repeat):
        start = time.process_time()
        served = heap_loop(customers)
        best = max(best, served / max(time.process_time() - start, 1e-9))
    return best


def bench_config(
    server: str, duration_s: float, rate_per_s: float = BENCH_RATE_PER_S,
    accept_limit: Any = None,
) -> RunConfig:
    """The run ``acceptsim bench`` times for ``server`` (a registered server, or a case of
    :data:`CASES`)."""
    case = dict(CASES.get(server, {"server": server}))
    if case["server"] not in SERVERS:
        raise ConfigError("servers", server, "a server (" + ", ".join(SERVERS) + ") or a "
                          "case (" + ", ".join(CASES) + ")")
    fields: dict[str, Any] = {
        "workload": BENCH_WORKLOAD,
        "rate_per_s": rate_per_s * case.pop("rate_scale", 1.0),
        "duration_s": duration_s,
        "warmup_s": min(1.0, duration_s / 4),
        **case,
    }
    if accept_limit is not None:
        fields["accept_limit"] = accept_limit
    return RunConfig.from_dict(fields)


def bench(
    servers: list[str] | None = None,
    duration_s: float = 10.0,
    rate_per_s: float = BENCH_RATE_PER_S,
    accept_limit: Any = None,
    rounds: int = 1,
    profile: int = 0,
    profile_out: TextIO | None = None,
    events: bool = False,
) -> dict[str, dict[str, Any]]:
    """Speed of each server's model: ``conns_per_cpu_s`` and ``heap_loop_ratio``, the
    medians over ``rounds`` rounds, each run timed between two timings of the heap loop.

    ``profile`` > 0: also profile one more run per server and write its
    ``profile`` top functions by own time to ``profile_out`` (stderr).  ``events``: also
    count its engine events per connection attempt (:func:`count_events`).
    """
    names = servers if servers is not None else [*SERVERS, *CASES]
    configs = {name: bench_config(name, duration_s, rate_per_s, accept_limit) for name in names}
    runs: dict[str, list[tuple[float, float, float]]] = {name: [] for name in names}
    heap_before = heap_loop_speed(repeat=1)
    for _ in range(max(1, rounds)):
        for name, config in configs.items():
            record = run_point(config, checked=False)
            heap_after = heap_loop_speed(repeat=1)
            heap_speed = (heap_before + heap_after) / 2
            heap_before = heap_after
            speed = record["sim_conns_per_cpu_s"] or 0.0
            runs[name].append((speed / heap_speed, speed, record["sim_cpu_time_s"]))
    out: dict[str, dict[str, Any]] = {}
    for name, config in configs.items():
        ratio, speed, cpu = sorted(runs[name])[(len(runs[name]) - 1) // 2]  # the median
        out[name] = {
            "conns_per_cpu_s": round(speed, 1),
            "cpu_time_s": round(cpu, 3),
            "conns_attempted": round(speed * cpu),
            "simulated_s": duration_s,
            "heap_loop_ratio": round(ratio, 3),
            "heap_loop_ratios": [round(r, 3) for r, _, _ in runs[name]],
            "heap_loop_customers_per_cpu_s": round(speed / ratio, 1) if ratio else 0.0,
            "hot_path": native.path_in_use(),
        }
        if events:
            out[name]["events_per_attempt"] = count_events(config)
        if profile > 0:
            write_profile(config, profile, profile_out or sys.stderr)
    return out


def count_events(config: RunConfig) -> dict[str, Any]:
    """Engine events per simulated connection attempt of one run of ``config``: in all
    (``total``) and by kind (``by_kind``: a heap entry's callback by name, or a step of
    a task, by the category of the burst that ended), on the Python sources and the
    general event loop (a child process when this one runs the compiled hot path)."""
    if native.is_compiled() or not os.environ.get("ACCEPTSIM_GENERAL_LOOP"):
        code = (
            "import json, sys\n"
            "from acceptsim.commands.cmd_bench import count_events\n"
            "from acceptsim.models.config import RunConfig\n"
            "print(json.dumps(count_events(RunConfig.from_dict(json.loads(sys.argv[1])))))\n"
        )
        child = subprocess.run(
            [sys.executable, "-c", code, json.dumps(config.to_dict())],
            env={**os.environ, native.PURE_ENV: "1", "ACCEPTSIM_GENERAL_LOOP": "1"},
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        result: dict[str, Any] = json.loads(child.stdout)
        return result
    from collections import Counter

    from acceptsim.sim import engine

    counts: Counter[str] = Counter()
    fire, step_task = engine.fire, engine.step_task

    def name(fn: Any) -> str:  # a function's name, or what a handler says it calls
        return str(getattr(fn, "__qualname__", None) or repr(fn))

    def counted_fire(clock: Any, entry: Any) -> None:
        kind = entry.kind
        if kind == engine.LINE:
            counts["line " + name(entry.owner.first().fn)] += 1
        elif kind == engine.ITEMS:
            counts["line " + name(entry.owner.handler)] += 1
        elif kind == engine.LANE:
            counts["lane " + name(entry.owner.heap[0].fn)] += 1
        elif kind == engine.EVENT:
            counts["simpy event"] += 1
        else:
            counts["call " + name(entry.fn)] += 1
        fire(clock, entry)

    def counted_step(cpu: Any, task_end: float) -> None:
        counts[f"task step ({cpu._category})"] += 1
        step_task(cpu, task_end)

    engine.fire, engine.step_task = counted_fire, counted_step  # type: ignore[assignment]
    try:
        record = run_point(config, checked=False)
    finally:
        engine.fire, engine.step_task = fire, step_task  # type: ignore[assignment]
    attempts = max(1, round((record["sim_conns_per_cpu_s"] or 0.0) * record["sim_cpu_time_s"]))
    return {
        "total": round(sum(counts.values()) / attempts, 3),
        "by_kind": {k: round(v / attempts, 3) for k, v in counts.most_common()},
        "attempts": attempts,
    }


def write_profile(config: RunConfig, top: int, stream: TextIO) -> None:
    """Run ``config`` under cProfile; write the ``top`` functions by own time (from a
    child process on the Python sources if this one runs the compiled hot path)."""
    if native.is_compiled():
        code = (
            "import json, sys\n"
            "from acceptsim.commands.cmd_bench import write_profile\n"
            "from acceptsim.models.experiment import RunConfig\n"
            "write_profile(RunConfig.from_dict(json.loads(sys.argv[1])), int(sys.argv[2]), "
            "sys.stdout)\n"
        )
        child = subprocess.run(
            [sys.executable, "-c", code, json.dumps(config.to_dict()), str(top)],
            env={**os.environ, native.PURE_ENV: "1"}, capture_output=True, text=True, check=True,
        )  # fmt: skip
        stream.write(child.stdout)
        return
    profiler = cProfile.Profile()
    profiler.enable()
    run_point(config, checked=False)
    profiler.disable()
    stream.write(
        f"\n== profile: {config.server}, accept-limit {config.accept_limit} "
        f"({native.path_in_use()}) ==\n"
    )
    stats = pstats.Stats(profiler, stream=stream)
    stats.strip_dirs().sort_stats(pstats.SortKey.TIME).print_stats(top)


#: the most rounds ``--rounds`` asks for
MAX_ROUNDS = 100


def main(args: argparse.Namespace) -> int:
    servers = [s.strip() for s in args.servers.split(",")] if args.servers is not None else None
    rounds = parse_int("rounds", args.rounds)
    if not 1 <= rounds <= MAX_ROUNDS:
        raise ConfigError("rounds", args.rounds, f"an integer from 1 to {MAX_ROUNDS}")
    profile = parse_int("profile", args.profile)
    if not 0 <= profile <= 10_000:
        raise ConfigError("profile", args.profile, "an integer from 0 (off) to 10000 functions")
    result = bench(
        servers,
        duration_s=parse_number("duration", args.duration),
        rate_per_s=parse_number("rate", args.rate),
        accept_limit=check_limit(args.accept_limit) if args.accept_limit is not None else None,
        rounds=rounds,
        profile=profile,
        events=args.events,
    )
    print(json.dumps(result, indent=2))
    return 0
