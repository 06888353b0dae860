"""``acceptsim run``: one simulated run, printed as JSON or a readable table."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from acceptsim.commands.common import importable_spec
from acceptsim.config_io import load_params_file, parse_int, parse_number
from acceptsim.models.config import (
    CLIENTS,
    KERNEL_RULE,
    NETWORKS,
    WAKEUPS,
    WARMUP_RULE,
    RunConfig,
    default_text,
)
from acceptsim.models.costs import PARAMETER_SETS
from acceptsim.models.kernel import PROFILES
from acceptsim.models.multicore import LAYOUTS, SOFTIRQ
from acceptsim.models.policies import check_limit
from acceptsim.models.record import help_text as record_help
from acceptsim.models.servers.registry import SERVERS
from acceptsim.models.work import MAX_ATTEMPTS, MAX_SERIES_POINTS, check_work
from acceptsim.models.workloads import WORKLOADS
from acceptsim.sim.errors import ConfigError
from acceptsim.sim.files import check_plot_file
from acceptsim.sim.params import parse_value, split_assignment
from acceptsim.sim.results import flatten, json_safe


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "run", help="simulate one configuration", epilog=record_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    d = default_text  # every default below is RunConfig's own (acceptsim/models/config.py)
    p.add_argument("--server", default=None, help="server architecture: "
                   + ", ".join(SERVERS) + f" (default {d('server')}; `acceptsim servers` "
                   f"describes each), or {SERVER_CLASS}")
    p.add_argument("--accept-limit", default=None, help="accept-limit: an integer >= 1 or inf "
                   f"(default {d('accept_limit')})")
    p.add_argument("--workload", default=None, help="workload: " + ", ".join(WORKLOADS)
                   + f" (default {d('workload')})")
    p.add_argument("--workload-file", default=None, help="session file for --workload wsesslog")
    p.add_argument("--rate", default=None, help="target connection rate per second (httperf's "
                   "open loop; required unless --concurrency)")
    p.add_argument("--concurrency", default=None, metavar="C",
                   help="a closed loop of C users instead of --rate (wrk, ab): each connects "
                   f"again when its last connection ends (default {d('concurrency')}: open loop)")
    p.add_argument("--keepalive", action="store_true",
                   help="with --concurrency: each user keeps its connection for its next "
                   "request")
    p.add_argument("--client", default=None, choices=CLIENTS,
                   help="whose rules the clients follow: httperf, or wrk with --concurrency "
                   "(a request is never given up; --timeout is wrk's, and the record's "
                   f"wrk_latency_ms is wrk's latency report) (default {d('client')})")
    p.add_argument("--wrk-threads", default=None, metavar="T",
                   help="with --client wrk: wrk's --threads, each opening its share of the "
                   f"connections one after another (default {d('wrk_threads')}, wrk's own)")
    p.add_argument("--duration", required=True, help="simulated seconds, warm-up included")
    p.add_argument("--warmup", default=None, help="seconds left out of measurement (default: "
                   f"{WARMUP_RULE})")
    p.add_argument("--seed", default=None,
                   help=f"seed of the run's random streams (default {d('seed')})")
    p.add_argument("--spacing", default=None,
                   help=f"poisson or deterministic (default {d('spacing')})")
    p.add_argument("--timeout", default=None,
                   help=f"httperf --timeout in seconds (default {d('timeout_s')})")
    p.add_argument("--idle-connections", default=None,
                   help=f"idle persistent connections held open (default {d('idle_connections')})")
    p.add_argument("--cpu-quota", default=None, metavar="CPUS",
                   help="CFS bandwidth limit on the server, in CPUs (cgroup quota / period, "
                   f"e.g. 0.1); 0: no limit (default {d('cpu_quota')})")
    p.add_argument("--cpu-period", default=None, metavar="SECONDS",
                   help=f"CFS period of --cpu-quota in seconds (default {d('cpu_period_s')})")
    p.add_argument("--cpu-period-offset", default=None, metavar="SECONDS",
                   help="where the period timer of --cpu-quota fires, in seconds past "
                   "multiples of the period (the scheduler ticks on multiples of its tick; "
                   "`acceptsim measure` records a run's) (default "
                   f"{d('cpu_period_offset_s')})")
    p.add_argument("--cpus", default=None, metavar="N",
                   help=f"processors of the server host (default {d('cpus')})")
    p.add_argument("--cpu-quota-scope", default=None, choices=("server", "worker"),
                   help="whose cgroup --cpu-quota is with several workers: the server's, "
                   "shared by them all, or each worker's own "
                   f"(default {d('cpu_quota_scope')})")
    p.add_argument("--workers", default=None, metavar="W",
                   help="server processes, worker i pinned to CPU i mod --cpus (more workers "
                   f"than CPUs share them) (default {d('workers')})")
    p.add_argument("--listen", default=None, choices=LAYOUTS,
                   help="listening sockets of several workers: one shared accept queue, or one "
                   f"per worker with SO_REUSEPORT (default {d('listen')})")
    p.add_argument("--wakeup", default=None, choices=WAKEUPS,
                   help="which workers a connection on a shared socket wakes: exclusive "
                   "(EPOLLEXCLUSIVE), all (thundering herd), blocking (accept(), FIFO) "
                   f"(default {d('wakeup')})")
    p.add_argument("--softirq", default=None, choices=SOFTIRQ,
                   help="where the kernel's per-packet work runs: on the CPU the flow's hash "
                   f"picks (rss) or all on CPU 0 (default {d('softirq')})")
    p.add_argument("--network", default=None, choices=NETWORKS,
                   help="how the clients reach the server: lan (the server's CPUs receive "
                   "their segments) or loopback (the clients' own CPUs do, as on `lo`) "
                   f"(default {d('network')})")
    p.add_argument("--server-param", action="append", default=[], metavar="NAME=VALUE",
                   help="override one of the server's own parameters (repeatable)")
    p.add_argument("--workload-param", action="append", default=[], metavar="NAME=VALUE",
                   help="override one of the workload's own parameters (repeatable)")
    p.add_argument("--kernel", default=None, help="kernel profile: " + ", ".join(PROFILES)
                   + f" (default {KERNEL_RULE})")
    p.add_argument("--params", default=None, help="parameter set (cluster1, cluster2) or TOML "
                   "file of cost (and [kernel]) parameters")
    add_policy_arguments(p)
    p.add_argument("--rate-profile", default=None, help="time-varying rate, e.g. "
                   "step:10000@0,30000@20, ramp:..., sine:mean=,amplitude=,period=, "
                   "bursty:low=,high=,low_s=,high_s= (overrides --rate)")
    p.add_argument("--timeseries", default=None, metavar="SECONDS",
                   help="also report a time series sampled every SECONDS (reply rate, queues, "
                   "the policy's accept-limit)")
    p.add_argument("--plot", default=None, metavar="PNG",
                   help="plot the time series to this file (implies --timeseries "
                   f"{PLOT_INTERVAL_S:g} unless given)")
    p.add_argument("--format", default="table", choices=("table", "json"))
    add_force_argument(p)
    p.set_defaults(main=main)


#: the time series' interval when ``--plot`` asks for one and ``--timeseries`` is not given
PLOT_INTERVAL_S = 0.5

#: ``--server``'s other form, in every command that takes it
SERVER_CLASS = ("MODULE:CLASS, a server of yours (a Server subclass, or a ServerSpec, "
                "importable from MODULE: docs/howto/add_server.md)")


def add_force_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--force", action="store_true",
                   help=f"run even beyond the work bound ({MAX_ATTEMPTS:.0e} simulated connection "
                   f"attempts or {MAX_SERIES_POINTS:.0e} time-series points per run)")


def add_policy_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--policy", default=None,
                   help="accept policy (see `acceptsim policies`; default: static --accept-limit)")
    p.add_argument("--policy-param", action="append", default=[], metavar="KEY=VALUE",
                   help="a parameter of --policy (repeatable)")


def policy_spec(args: argparse.Namespace) -> str:
    """``--policy NAME --policy-param k=v ...`` as a spec string (validated later)."""
    if args.policy is None:
        if args.policy_param:
            raise ConfigError("--policy-param", args.policy_param[0], "only with --policy NAME")
        return "static"
    values = []
    for item in args.policy_param:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError("--policy-param", item, "KEY=VALUE")
        if "," in value or ":" in key:
            raise ConfigError("--policy-param", item, "one KEY=VALUE per option")
        values.append(f"{key.strip()}={value.strip()}")
    policy = importable_spec("--policy", args.policy) or args.policy
    return policy + (":" + ",".join(values) if values else "")


def config_from_args(args: argparse.Namespace) -> RunConfig:
    if args.concurrency is None and args.rate is None:
        raise ConfigError("--rate", None, "a target rate (httperf's open loop), or "
                          "--concurrency C for a closed loop")
    if args.concurrency is not None and args.rate is not None:
        raise ConfigError("--rate", args.rate, "left out with --concurrency (a closed loop "
                          "has no target rate)")
    if args.keepalive and args.concurrency is None:
        raise ConfigError("--keepalive", True, "only with --concurrency C")
    if args.concurrency is not None and parse_int("--concurrency", args.concurrency) < 1:
        raise ConfigError("--concurrency", args.concurrency, "an integer >= 1 (users of the "
                          "closed loop; leave it out, with --rate, for httperf's open loop)")
    fields: dict[str, Any] = {
        "duration_s": parse_number("duration", args.duration),
        "server_params": parse_assignments("server-param", args.server_param),
        "workload_params": parse_assignments("workload-param", args.workload_param),
        "policy": policy_spec(args),
    }
    # an option left out is not passed: RunConfig's default (or rule) applies, as from Python
    given = {
        "server": (importable_spec("--server", args.server), str),
        "accept_limit": (args.accept_limit, check_limit),
        "workload": (args.workload, str), "workload_file": (args.workload_file, str),
        "warmup_s": (args.warmup, lambda t: parse_number("warmup", t)),
        "seed": (args.seed, lambda t: parse_int("seed", t)), "spacing": (args.spacing, str),
        "timeout_s": (args.timeout, lambda t: parse_number("timeout", t)),
        "idle_connections": (args.idle_connections,
                             lambda t: parse_int("idle-connections", t)),
        "cpu_quota": (args.cpu_quota, lambda t: parse_number("cpu-quota", t)),
        "cpu_period_s": (args.cpu_period, lambda t: parse_number("cpu-period", t)),
        "cpu_period_offset_s": (args.cpu_period_offset,
                                lambda t: parse_number("cpu-period-offset", t)),
        "cpu_quota_scope": (args.cpu_quota_scope, str),
        "rate_profile": (args.rate_profile, str),
        "rate_per_s": (args.rate, lambda t: parse_number("rate", t)),
        "concurrency": (args.concurrency, lambda t: parse_int("concurrency", t)),
        "keepalive": (True if args.keepalive else None, bool),
        "client": (args.client, str),
        "wrk_threads": (args.wrk_threads, lambda t: parse_int("wrk-threads", t)),
        "cpus": (args.cpus, lambda t: parse_int("cpus", t)),
        "workers": (args.workers, lambda t: parse_int("workers", t)),
        "listen": (args.listen, str), "wakeup": (args.wakeup, str),
        "softirq": (args.softirq, str), "network": (args.network, str),
    }  # fmt: skip
    fields.update({name: read(text) for name, (text, read) in given.items() if text is not None})
    if args.timeseries is not None:
        interval = parse_number("timeseries", args.timeseries)
        if interval == 0:  # 0 would silently mean "no time series", which was not asked for
            raise ConfigError("timeseries", args.timeseries, "a sampling interval > 0 s (leave "
                              "--timeseries out for no time series)")
        fields["timeseries_interval_s"] = interval
    elif args.plot:
        fields["timeseries_interval_s"] = PLOT_INTERVAL_S
    if args.kernel is not None:
        fields["kernel"] = args.kernel
    if args.params in PARAMETER_SETS:  # a named parameter set, e.g. cluster2 for Knot
        fields["costs"] = args.params
    elif args.params is not None:
        costs, kernel = load_params_file(args.params)
        fields["costs"] = costs
        if kernel is not None:
            if args.kernel is not None:
                raise ConfigError(
                    "--kernel", args.kernel, "not together with a [kernel] table in --params"
                )
            fields["kernel"] = kernel
    return RunConfig.from_dict(fields)


def parse_assignments(field: str, items: list[str]) -> dict[str, Any]:
    """``NAME=VALUE`` items as a table; values are read as TOML (numbers, true, "text")."""
    table: dict[str, Any] = {}
    for item in items:
        name, text = split_assignment(field, item, "NAME=VALUE")
        table[name] = parse_value(text)
    return table


def main(args: argparse.Namespace) -> int:
    if args.plot:
        check_plot_file("--plot", args.plot)  # before the run: no simulation for nothing
    config = config_from_args(args)
    check_work(config, args.force)  # before anything else: a refusal costs nothing
    note = one_worker_note(config)
    if note:
        print(f"acceptsim run: note: {note}", file=sys.stderr)
    from acceptsim.models.runner import run_point  # scipy's statistics: only when a run is made

    result = run_point(config, timeseries=True, progress=True)
    from acceptsim.models.tcp import link_note

    limited = link_note(result.get("link_utilization") or [])
    if limited:
        print(f"acceptsim run: note: {limited}", file=sys.stderr)
    if args.plot:
        from acceptsim.timeseries import plot_timeseries

        plot_timeseries(result, args.plot)
    if args.format == "json":
        print(json.dumps(json_safe(result), indent=2))
    else:
        print(format_table(result))
    return 0


def one_worker_note(config: RunConfig) -> str:
    """What a run of a server that runs as one worker does with more CPUs (issue 46:
    ``--server tux --cpus 4`` ran one worker beside three CPUs without a word): ``""``
    unless that is the case."""
    if config.cpus <= config.workers or config.server_spec().wakeups:
        return ""
    others = config.cpus - config.workers
    does = ("run only the kernel's per-packet work of the flows RSS gives them"
            if config.softirq == "rss" else "stay idle (softirq=cpu0)")
    return (f"server {config.server!r} runs as one worker, on CPU 0; the other {others} of "
            f"the {config.cpus} CPUs {does}")


def format_table(result: dict[str, Any]) -> str:
    result = dict(result)
    series = result.pop("timeseries", None)
    workers = result.pop("per_worker", None)
    rows = flatten(json_safe(result))
    width = max(len(k) for k in rows)
    lines = []
    for key, value in rows.items():
        if isinstance(value, float):
            value = f"{value:,.6g}" if abs(value) < 1e6 else f"{value:,.0f}"
        lines.append(f"{key:<{width}}  {value}")
    if workers is not None:
        import pandas as pd

        lines.append("\nper worker:")
        lines.append(pd.DataFrame(json_safe(workers)).to_string(index=False,
                                                               float_format="{:,.4g}".format))
    if series is not None:
        import pandas as pd

        lines.append("\ntime series:")
        lines.append(pd.DataFrame(series).to_string(index=False, float_format="{:,.1f}".format))
    return "\n".join(lines)
