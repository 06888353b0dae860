"""``acceptsim measure``: drive real httperf against a real nginx on 127.0.0.1 and
write measured-run directories (see ``acceptsim.measure``)."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from acceptsim.config_io import parse_int, parse_number
from acceptsim.measure.harness import (
    CLIENTS,
    DEFAULT_CPU_PERIOD_US,
    DEFAULT_FILE_SIZE_BYTES,
    DEFAULT_PORT,
    DEFAULT_SPACING,
    DEFAULT_TIMEOUT_S,
    HAPROXY_DEFAULT_MAXACCEPT,
    TRACE_TURNS,
    HarnessError,
    Plan,
    measure,
)
from acceptsim.measure.parse_errors import ParseError
from acceptsim.sim.errors import ConfigError

#: the Plan's defaults for the options left out (one declaration: the Plan's fields)
PLAN_DEFAULTS = {f.name: f.default for f in dataclasses.fields(Plan)}

def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "measure", help="measure a real nginx or HAProxy under httperf on the loopback address"
    )
    p.add_argument("--server", default="nginx", help="server to measure: nginx or haproxy "
                   "(default nginx)")
    p.add_argument("--multi-accept", default=None, help="nginx multi_accept: on or off "
                   "(required with nginx)")
    p.add_argument("--accept-limit", default=None,
                   help="haproxy: tune.maxaccept per run, L1,L2,... (integers >= 1, or inf "
                   "for HAProxy's -1, no limit); every repeat runs each rate at every limit, "
                   f"their order rotated repeat by repeat (default {HAPROXY_DEFAULT_MAXACCEPT}, "
                   "HAProxy's own)")
    p.add_argument("--rates", default=None, help="target rates R1,R2,... (connections/s; "
                   "httperf's open loop, required unless --client wrk)")
    p.add_argument("--client", default=PLAN_DEFAULTS["client"], choices=CLIENTS,
                   help="load generator: httperf (open loop at --rates) or wrk (closed loop "
                   f"of --concurrency connections) (default {PLAN_DEFAULTS['client']})")
    p.add_argument("--concurrency", default=None, metavar="C1,C2,...",
                   help="wrk: connections per run, C1,C2,... (required with --client wrk)")
    p.add_argument("--keepalive", action="store_true",
                   help="wrk: keep each connection for the next request (default: every "
                   "request says Connection: close, and wrk connects anew)")
    p.add_argument("--threads", default=None, help="wrk --threads (default "
                   f"{PLAN_DEFAULTS['wrk_threads']}, wrk's own)")
    p.add_argument("--duration", default="10", help="seconds of load per run (default 10)")
    p.add_argument("--repeats", default="2", help="runs per rate (default 2)")
    p.add_argument("--first-repeat", default="1",
                   help="number of the first repeat, to add repeats to a sweep (default 1)")
    p.add_argument("--timeout", default=f"{DEFAULT_TIMEOUT_S:g}",
                   help=f"httperf --timeout in seconds (default {DEFAULT_TIMEOUT_S:g})")
    p.add_argument("--file-size", default=str(DEFAULT_FILE_SIZE_BYTES),
                   help="bytes of the static file (default 1024: reply fits one packet)")
    p.add_argument("--port", default=str(DEFAULT_PORT),
                   help=f"port on 127.0.0.1 (default {DEFAULT_PORT})")
    p.add_argument("--spacing", default=DEFAULT_SPACING,
                   help=f"poisson or deterministic (default {DEFAULT_SPACING})")
    p.add_argument("--processes", default=None,
                   help="httperf processes per run (default: enough for the 1024-fd limit)")
    p.add_argument("--pause", default="2", help="seconds of rest between runs (default 2)")
    p.add_argument("--server-cpu-quota", default=None,
                   help="limit nginx (master and workers; each worker with "
                   "--server-cpu-quota-scope worker) to this many CPUs with a cgroup CFS "
                   "quota, e.g. 0.3 = 30%% of one CPU; cgroup v2 and v1 are both supported, "
                   "chosen automatically: v2 (cpu.max) where the unified hierarchy at "
                   "/sys/fs/cgroup offers the cpu controller, else v1 (cpu.cfs_quota_us) at "
                   "/sys/fs/cgroup/cpu; needs root or a delegated, writable hierarchy "
                   "(default: no limit)")
    p.add_argument("--server-cpu-quota-scope", default=None,
                   help="whose cgroup that quota is: server (one group for nginx's master "
                   "and workers, sharing the quota) or worker (a group per worker, each with "
                   "the quota, at most 1 CPU: N slow cores emulated on the CPU nginx is "
                   "pinned to; the master in a group without limit; each run's "
                   "worker-cgroups.csv has every worker's throttling and CPU time) "
                   f"(default {PLAN_DEFAULTS['server_cpu_quota_scope']})")
    p.add_argument("--server-cpu-period", default=None,
                   help="CFS period of that quota in microseconds, 1000-1000000 (default: "
                   f"{DEFAULT_CPU_PERIOD_US}, or longer if needed for the kernel's 1 ms minimum "
                   "quota; short, so throttling stalls last ms, not 100 ms)")
    p.add_argument("--workers", default=None,
                   help=f"nginx worker_processes, haproxy nbthread (default "
                   f"{PLAN_DEFAULTS['workers']}); with several nginx workers, each request's "
                   "worker is counted from the access log (workers.csv in each run)")
    p.add_argument("--accept-mutex", default=None,
                   help="nginx accept_mutex with several workers: on or off (default "
                   f"{'on' if PLAN_DEFAULTS['accept_mutex'] else 'off'})")
    p.add_argument("--reuseport", action="store_true",
                   help="listen ... reuseport: a listening socket per worker")
    p.add_argument("--sample-interval", default=None,
                   help="seconds between the samples of each run's time series "
                   f"(timeseries.csv: replies, accept queue, CFS throttling, kernel counters, "
                   f"the server CPU's time; default {PLAN_DEFAULTS['sample_interval_s']:g}; "
                   "0: none)")
    p.add_argument("--trace-turns", choices=TRACE_TURNS, default=None,
                   help="trace the kernel's task switches on the client CPUs during each "
                   "httperf run (client-turns.csv: how long httperf's processes keep the "
                   "order of their turns, which the run's simulation takes): auto (where "
                   "tracefs allows), on or off (default "
                   f"{PLAN_DEFAULTS['trace_turns']})")
    p.add_argument("--out", required=True, help="directory for the run directories")
    p.set_defaults(main=main)


def on_off(option: str, text: str) -> bool:
    """An on/off option's value."""
    if text not in ("on", "off"):
        raise ConfigError(option, text, "on or off")
    return text == "on"


def plan_from_args(args: argparse.Namespace) -> Plan:
    if args.server == "nginx" and args.multi_accept is None:
        raise ConfigError("--multi-accept", None, "on or off (required with --server nginx)")
    multi_accept = args.multi_accept is not None and on_off("--multi-accept", args.multi_accept)
    rates = tuple(parse_number("--rates", r) for r in (args.rates or "").split(",")
                  if r.strip())
    concurrencies = tuple(parse_int("--concurrency", c)
                          for c in (args.concurrency or "").split(",") if c.strip())
    limits: tuple[float, ...] = ()
    if args.accept_limit is not None:
        limits = tuple(parse_number("--accept-limit", v) for v in args.accept_limit.split(",")
                       if v.strip())
    elif args.server == "haproxy":
        limits = (HAPROXY_DEFAULT_MAXACCEPT,)
    return Plan(
        server=args.server,
        multi_accept=multi_accept,
        accept_limits=limits,
        rates_per_s=rates,
        client=args.client,
        concurrencies=concurrencies,
        keepalive=args.keepalive,
        wrk_threads=(parse_int("--threads", args.threads) if args.threads is not None
                     else PLAN_DEFAULTS["wrk_threads"]),
        duration_s=parse_number("--duration", args.duration),
        repeats=parse_int("--repeats", args.repeats),
        first_repeat=parse_int("--first-repeat", args.first_repeat),
        timeout_s=parse_number("--timeout", args.timeout),
        file_size_bytes=parse_int("--file-size", args.file_size),
        port=parse_int("--port", args.port),
        spacing=args.spacing,
        processes=parse_int("--processes", args.processes) if args.processes else None,
        pause_s=parse_number("--pause", args.pause),
        server_cpu_quota=(
            parse_number("--server-cpu-quota", args.server_cpu_quota)
            if args.server_cpu_quota is not None
            else None
        ),
        # left out: the Plan's own default (declared once, in the harness)
        workers=(parse_int("--workers", args.workers) if args.workers is not None
                 else PLAN_DEFAULTS["workers"]),
        accept_mutex=(on_off("--accept-mutex", args.accept_mutex)
                      if args.accept_mutex is not None else PLAN_DEFAULTS["accept_mutex"]),
        reuseport=args.reuseport,
        sample_interval_s=(parse_number("--sample-interval", args.sample_interval)
                           if args.sample_interval is not None
                           else PLAN_DEFAULTS["sample_interval_s"]),
        server_cpu_quota_scope=(args.server_cpu_quota_scope
                                if args.server_cpu_quota_scope is not None
                                else PLAN_DEFAULTS["server_cpu_quota_scope"]),
        trace_turns=(args.trace_turns if args.trace_turns is not None
                     else PLAN_DEFAULTS["trace_turns"]),
        server_cpu_period_us=(
            parse_int("--server-cpu-period", args.server_cpu_period)
            if args.server_cpu_period is not None
            else None
        ),
    )


def main(args: argparse.Namespace) -> int:
    plan = plan_from_args(args)
    try:
        runs = measure(plan, Path(args.out))
    except (HarnessError, ParseError) as exc:
        sys.stderr.write(f"acceptsim measure: error: {exc}\n")
        return 2
    print(f"wrote {len(runs)} run directories under {args.out}")
    return 0
