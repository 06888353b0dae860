"""``acceptsim oracle``: how much any accept policy could gain over the best static limit.

Runs every accept-limit of a ladder on one scenario (the same seed: common
random numbers) with a time series, and picks the best limit *separately in
every interval*, with no cost for switching.  No policy that only switches
between these limits can beat that per-interval best (the oracle), so its
gain over the best single static limit is the headroom for adaptation on the
scenario.  With ``--p99-ms B`` the objective is throughput subject to a
response-time bound: in each interval the oracle takes the best limit among
those whose replies' 99th percentile of response time is within B ms, and
the best static limit is the best among those whose whole run is.

    acceptsim oracle --server tux --rate 30000 --rate-profile step:10000@0,30000@10 \\
        --duration 30 --interval 2 [--p99-ms 100]
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Mapping
from typing import Any

from acceptsim.commands.common import add_point_arguments, base_point
from acceptsim.config_io import parse_int, parse_number
from acceptsim.models.config import RunConfig
from acceptsim.models.policies import check_limit
from acceptsim.models.work import check_work
from acceptsim.sim.errors import ConfigError
from acceptsim.sim.results import json_safe


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "oracle", help="per-interval best static accept-limit: the headroom for adaptation"
    )
    add_point_arguments(p, duration_s=30)
    p.add_argument("--interval", default="2", help="seconds per interval (default 2)")
    p.add_argument("--p99-ms", default=None, metavar="MS",
                   help="bound on the 99th percentile of response time: the best limit is the "
                   "best among those within it")
    p.add_argument("--format", default="table", choices=("table", "json"))
    p.add_argument("--force", action="store_true", help="run even beyond the work bound")
    p.set_defaults(main=main)


def run_with_series(point: Mapping[str, Any]) -> dict[str, Any]:
    """One run's record, with its time series (a sweep's runner drops it)."""
    from acceptsim.models.runner import run_point

    return run_point(point, timeseries=True)


def _label(limit: float) -> str:
    return "inf" if math.isinf(limit) else f"{limit:g}"


def main(args: argparse.Namespace) -> int:
    point = base_point(args)
    interval = parse_number("interval", args.interval)
    if not interval > 0:
        raise ConfigError("interval", args.interval, "seconds > 0")
    if interval > point["duration_s"] - point["warmup_s"]:
        raise ConfigError("interval", args.interval, "at most the measured time (duration - "
                          f"warmup = {point['duration_s'] - point['warmup_s']:g} s)")
    bound = parse_number("p99-ms", args.p99_ms) if args.p99_ms is not None else None
    if bound is not None and not bound > 0:
        raise ConfigError("p99-ms", args.p99_ms, "milliseconds > 0")
    candidates = [check_limit(c, "candidates") for c in args.candidates.split(",") if c]
    if not candidates:
        raise ConfigError("candidates", args.candidates, "at least one accept-limit")
    labels = [_label(c) for c in candidates]
    if len(set(labels)) != len(labels):
        raise ConfigError("candidates", args.candidates, "each accept-limit once")
    jobs = parse_int("jobs", args.jobs) if args.jobs is not None else None
    points = [{**point, "accept_limit": c, "timeseries_interval_s": interval}
              for c in candidates]  # fmt: skip
    for p in points:  # every run valid and within the work bound before any runs
        check_work(RunConfig.from_dict(p), args.force)
    import pandas as pd

    from acceptsim.analysis import oracle
    from acceptsim.sim.sweep import run_many

    records = run_many(run_with_series, points, jobs)
    series = {label: pd.DataFrame(r["timeseries"]) for label, r in zip(labels, records,
                                                                        strict=True)}
    run_p99 = {label: r["response_time_ms"]["p99"] for label, r in zip(labels, records,
                                                                        strict=True)}
    out = oracle(series, run_p99, bound, after_s=point["warmup_s"])
    out["run"] = {**point, "interval_s": interval}
    if args.format == "json":
        print(json.dumps(json_safe(out), indent=2))
    else:
        print(format_text(out))
    return 0


def _num(value: Any, spec: str = "{:,.0f}") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return spec.format(value)


def format_text(out: dict[str, Any]) -> str:
    bound = out["p99_bound_ms"]
    lines = []
    if bound is not None:
        lines.append(f"objective: most replies with the p99 response time within {bound:g} ms")
    if out["best_static"] is None:
        lines.append("best static limit: none meets the bound over the whole run")
    else:
        lines.append(
            f"best static limit: {out['best_static']}, "
            f"{_num(out['best_static_reply_rate_per_s'])} replies/s, "
            f"p99 {_num(out['best_static_p99_ms'], '{:,.1f}')} ms"
        )
    lines.append(f"oracle (best limit per interval, free switching): "
                 f"{_num(out['oracle_reply_rate_per_s'])} replies/s")
    if out["headroom_pct"] is not None:
        lines.append(f"headroom for any policy over the best static limit: "
                     f"{out['headroom_pct']:+.2f}%")
    if out["intervals_without_eligible"]:
        lines.append(f"intervals where no limit meets the bound: "
                     f"{out['intervals_without_eligible']}")
    import pandas as pd

    table = pd.DataFrame(out["intervals"])
    lines.append("")
    lines.append(table.to_string(index=False, float_format="{:,.1f}".format, na_rep="-"))
    return "\n".join(lines)
