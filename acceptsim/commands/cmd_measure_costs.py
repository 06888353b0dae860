"""``acceptsim measure-costs``: microbenchmarks of the operations the model charges, on
this host, written as a parameter file whose every value carries its measurement
(see :mod:`acceptsim.measure.host_costs`)."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from acceptsim.config_io import parse_int
from acceptsim.measure import host_costs as mc
from acceptsim.measure.harness import (
    DEFAULT_FILE_SIZE_BYTES,
    DEFAULT_PORT,
    DEFAULT_SPACING,
    DEFAULT_TIMEOUT_S,
    HAPROXY_DEFAULT_MAXACCEPT,
    SERVERS,
    HarnessError,
    Plan,
)
from acceptsim.measure.parse_errors import ParseError
from acceptsim.sim.errors import ConfigError
from acceptsim.sim.files import atomic_path, check_output_file


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "measure-costs",
        help="measure this host's per-operation costs (accept, epoll, close, send, "
        "nginx per reply) and write a parameter file",
        description="Microbenchmarks of the operations the model charges, each run in a "
        "thread pinned to the server's CPU, its CPU time read exactly "
        "(CLOCK_THREAD_CPUTIME_ID) and the interpreter's loop subtracted; then nginx's CPU "
        "per reply below saturation.  Run on an otherwise idle machine.",
    )
    p.add_argument("--out", required=True, help="parameter file to write (TOML)")
    p.add_argument("--server-cpu", default="0", help="CPU of the measured side (default 0)")
    p.add_argument("--client-cpu", default="1", help="CPU of the peers (default 1)")
    p.add_argument("--operations", default=str(mc.DEFAULT_OPERATIONS),
                   help=f"operations per repeat (default {mc.DEFAULT_OPERATIONS})")
    p.add_argument("--repeats", default=str(mc.DEFAULT_REPEATS),
                   help=f"repeats of each benchmark, interleaved (default {mc.DEFAULT_REPEATS})")
    p.add_argument("--server", default="nginx",
                   help="whose CPU per reply below saturation to measure: nginx or haproxy "
                   f"(HAProxy at its default tune.maxaccept {HAPROXY_DEFAULT_MAXACCEPT}; "
                   "default nginx)")
    p.add_argument("--no-nginx", action="store_true",
                   help="leave out the server's CPU per reply (needs the server, httperf and "
                   "taskset)")
    p.set_defaults(main=main)


def nginx_plan(server: str = "nginx") -> Plan:
    """The server benchmark's load: one rate, one httperf process, nginx with multi_accept
    on or HAProxy with its default maxaccept, no quota, with ``acceptsim measure``'s
    defaults for the rest (its one-packet file)."""
    return Plan(
        server=server, multi_accept=server == "nginx",
        accept_limits=(HAPROXY_DEFAULT_MAXACCEPT,) if server == "haproxy" else (),
        rates_per_s=(mc.NGINX_RATE_PER_S,),
        duration_s=mc.NGINX_DURATION_S, repeats=1, timeout_s=DEFAULT_TIMEOUT_S,
        file_size_bytes=DEFAULT_FILE_SIZE_BYTES, port=DEFAULT_PORT, spacing=DEFAULT_SPACING,
        processes=1, pause_s=0.0,
    )


def main(args: argparse.Namespace) -> int:
    operations = parse_int("--operations", args.operations)
    if not 100 <= operations <= 10_000_000:
        raise ConfigError("--operations", args.operations, "an integer from 100 to 10000000")
    repeats = parse_int("--repeats", args.repeats)
    if not 2 <= repeats <= 100:
        raise ConfigError("--repeats", args.repeats, "an integer from 2 to 100 (a spread "
                          "needs two)")
    server_cpu = parse_int("--server-cpu", args.server_cpu)
    client_cpu = parse_int("--client-cpu", args.client_cpu)
    if server_cpu == client_cpu:
        raise ConfigError("--client-cpu", args.client_cpu, "another CPU than --server-cpu")
    out = check_output_file("--out", args.out)  # before anything runs
    if args.server not in SERVERS:
        raise ConfigError("--server", args.server, " or ".join(SERVERS))
    plan = None if args.no_nginx else nginx_plan(args.server)
    try:
        report = mc.measure_costs(
            server_cpu, client_cpu, operations, repeats, nginx_plan=plan,
            progress=lambda s: print(f"measure-costs: {s}", file=sys.stderr, flush=True),
        )
    except (HarnessError, ParseError, OSError) as exc:
        sys.stderr.write(f"acceptsim measure-costs: error: {exc}\n")
        return 2
    command = "acceptsim measure-costs " + shlex.join(sys.argv[2:])
    with atomic_path(out) as tmp:
        Path(tmp).write_text(mc.to_toml(report, command))
    print(mc.table(report))
    for note in report.notes:
        print(f"note: {note}")
    print(f"wrote {out}")
    return 0
