"""``acceptsim bench``: simulator speed, in simulated connection attempts per CPU-second.

For every server registered in :data:`~acceptsim.models.servers.registry.SERVERS`, one run of
the one-packet workload at 24,000 requests/s (the paper's overload region), and the
cases of :data:`CASES` (nginx on a 4-CPU host at four times the rate);
prints JSON ``{"<server>": {"conns_per_cpu_s": ..., ...}, ...}``.  CPU time is
the simulating process's own (``time.process_time``) over the run's event
loop, so the figure depends little on other load on the machine (repeat and
take the best: ``--repeat``).  The default accept-limit is :class:`RunConfig`'s
(1); ``--accept-limit`` sets another.

Absolute speeds on shared machines vary from day to day, so each server's
figure is also given as ``heap_loop_ratio``: its connection attempts per
CPU-second over the customers per CPU-second of a bare pure-Python heapq
M/M/1 loop (:func:`heap_loop_speed`) timed in the same run, the ceiling of
pure Python for the simplest simulation.  ``hot_path`` says whether the
compiled hot path or its Python sources ran (:mod:`acceptsim.sim.native`).

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
}


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("bench", help="simulated connection attempts per CPU-second")
    p.add_argument("--duration", default="10", help="simulated seconds per run (default 10)")
    p.add_argument("--rate", default=str(BENCH_RATE_PER_S), help="target rate (default 24000)")
    p.add_argument("--accept-limit", default=None, help="accept-limit (default: RunConfig's)")
    p.add_argument("--repeat", default="1", help="runs per server; the fastest counts (default 1)")
    p.add_argument("--servers", default=None, help="comma-separated subset of the servers and "
                   "cases (" + ", ".join(CASES) + ") (default: all)")
    p.add_argument(
        "--profile", default="0", metavar="N",
        help="also profile one run per server; its N top functions (own time) to stderr",
    )  # fmt: skip
    p.set_defaults(main=main)


#: customers per timing of the heap loop, and timings (the fastest counts)
HEAP_LOOP_CUSTOMERS = 200_000
HEAP_LOOP_REPEAT = 3


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
    """Customers per CPU-second of :func:`heap_loop` (the fastest of ``repeat`` timings)."""
    best = 0.0
    for _ in range(repeat):
        start = time.process_time()
        served = heap_loop(customers)
        best = max(best, served / max(time.process_time() - start, 1e-9))
    return best


def bench(
    servers: list[str] | None = None,
    duration_s: float = 10.0,
    rate_per_s: float = BENCH_RATE_PER_S,
    accept_limit: Any = None,
    repeat: int = 1,
    profile: int = 0,
    profile_out: TextIO | None = None,
) -> dict[str, dict[str, Any]]:
    """Speed of each server's model: ``conns_per_cpu_s`` (best of ``repeat`` runs).

    ``profile`` > 0: also profile one more run per server and write its
    ``profile`` top functions by own time to ``profile_out`` (stderr).
    """
    out: dict[str, dict[str, Any]] = {}
    heap_speed = heap_loop_speed()
    for server in servers if servers is not None else [*SERVERS, *CASES]:
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
        config = RunConfig.from_dict(fields)
        best: dict[str, float] | None = None
        for _ in range(max(1, repeat)):
            record = run_point(config, checked=False)
            speed = record["sim_conns_per_cpu_s"] or 0.0
            cpu = record["sim_cpu_time_s"]
            if best is None or speed > best["conns_per_cpu_s"]:
                best = {
                    "conns_per_cpu_s": round(speed, 1),
                    "cpu_time_s": round(cpu, 3),
                    "conns_attempted": round(speed * cpu),
                    "simulated_s": duration_s,
                    "heap_loop_ratio": round(speed / heap_speed, 3),
                    "heap_loop_customers_per_cpu_s": round(heap_speed, 1),
                    "hot_path": native.path_in_use(),
                }
        assert best is not None
        out[server] = best
        if profile > 0:
            write_profile(config, profile, profile_out or sys.stderr)
    return out


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


#: the most runs per server ``--repeat`` asks for
MAX_REPEAT = 100


def main(args: argparse.Namespace) -> int:
    servers = [s.strip() for s in args.servers.split(",")] if args.servers is not None else None
    repeat = parse_int("repeat", args.repeat)
    if not 1 <= repeat <= MAX_REPEAT:
        raise ConfigError("repeat", args.repeat, f"an integer from 1 to {MAX_REPEAT}")
    profile = parse_int("profile", args.profile)
    if not 0 <= profile <= 10_000:
        raise ConfigError("profile", args.profile, "an integer from 0 (off) to 10000 functions")
    result = bench(
        servers,
        duration_s=parse_number("duration", args.duration),
        rate_per_s=parse_number("rate", args.rate),
        accept_limit=check_limit(args.accept_limit) if args.accept_limit is not None else None,
        repeat=repeat,
        profile=profile,
    )
    print(json.dumps(result, indent=2))
    return 0
