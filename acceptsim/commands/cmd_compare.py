"""``acceptsim compare``: adaptive policies against the best static accept-limit.

Reads a sweep's results (``acceptsim sweep policy-comparison --out OUT``, or
``flash-crowd``) and prints, for each server and load, the best static limit
(highest mean reply rate over replications among the ``static`` runs) and every
other policy's mean reply rate relative to it, in percent.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from acceptsim.sim.errors import ConfigError
from acceptsim.sim.results import json_safe

if TYPE_CHECKING:
    import pandas as pd


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "compare", help="policies against the best static accept-limit, from a sweep's results"
    )
    p.add_argument("out", help="sweep output directory (or its results.parquet)")
    p.add_argument("--metric", default="reply_rate_per_s")
    p.add_argument("--regret", action="store_true",
                   help="every policy and every single static limit against the best static "
                   "limit of each case, with response times and client timeouts, and per "
                   "policy its worst loss over the cases")
    p.add_argument("--policy", default=None, metavar="SPEC",
                   help="one policy (its spec as the sweep ran it, or MODULE:CLASS) against "
                   "each static limit of each case: the paired difference per replication, "
                   "with its 95%% interval")
    p.add_argument("--format", default="table", choices=("table", "json"))
    p.set_defaults(main=main)


def main(args: argparse.Namespace) -> int:
    # pandas and scipy, imported when the command runs (not for --help)
    from acceptsim.analysis import check_metric, check_results, compare
    from acceptsim.sim.sweep import read_results

    try:
        frame, description = read_results(args.out)
    except (OSError, ValueError) as exc:  # missing, unreadable, not Parquet (ArrowInvalid)
        raise ConfigError("out", args.out, f"a sweep's directory or its results.parquet "
                          f"({type(exc).__name__})") from None
    check_results(frame, args.out, description.get("varied"))
    needed = ["server", "rate_per_s", "policy"]
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise ConfigError("out", args.out, f"a sweep's results with the columns {needed} "
                          f"(missing: {missing})")
    check_metric(frame, args.metric)
    if args.regret:
        return _print_regret(frame, args.metric, args.format)
    if args.policy is not None:
        return _print_policy(frame, args.policy, args.metric, args.format)
    table = compare(frame, args.metric)
    if args.format == "json":
        print(json.dumps(json_safe(table.to_dict(orient="records")), indent=2))
        return 0
    shown = table[["server", "load", "best_static", f"best_static_{args.metric}"]
                  + [c for c in table.columns if c.endswith(" %")]]  # fmt: skip
    print(shown.to_string(index=False, float_format="{:,.1f}".format))
    return 0


def _print_regret(frame: pd.DataFrame, metric: str, fmt: str) -> int:
    from acceptsim.analysis import regret

    try:
        table, summary = regret(frame, metric)
    except ValueError as exc:
        raise ConfigError("out", "results", f"a sweep with static limits ({exc})") from None
    if fmt == "json":
        print(json.dumps(json_safe({"rows": table.to_dict(orient="records"),
                                    "summary": summary.to_dict(orient="records")}), indent=2))
        return 0
    wide = table.pivot_table(index="policy", columns=["server", "load"], values="pct",
                             sort=False)  # fmt: skip
    wide.columns = [f"{server} {load}" for server, load in wide.columns]
    wide = wide.join(summary.set_index("policy")[["worst_pct", "within_near", "far_below"]])
    print(f"{metric} relative to the best static limit of each case, in per cent")
    print(wide.sort_values("worst_pct", ascending=False, kind="stable").to_string(
        float_format="{:,.1f}".format, na_rep="-"))
    print()
    print(table.to_string(index=False, float_format="{:,.1f}".format, na_rep="-"))
    return 0


def _print_policy(frame: pd.DataFrame, policy: str, metric: str, fmt: str) -> int:
    from acceptsim.analysis import compare_policy

    try:
        table = compare_policy(frame, policy.strip(), metric)
    except ValueError as exc:
        raise ConfigError("--policy", policy, f"a policy the sweep ran ({exc})") from None
    if fmt == "json":
        print(json.dumps(json_safe(table.to_dict(orient="records")), indent=2))
        return 0
    print(f"{policy}: {metric} minus each static limit's, paired by replication "
          "(mean and 95% interval; * the best static limit of the case)")
    shown = table.assign(static=[f"{s} *" if b else s for s, b in
                                 zip(table["static"], table["best_static"], strict=True)])
    print(shown.drop(columns="best_static").to_string(
        index=False, float_format="{:,.1f}".format, na_rep="-"))
    return 0

