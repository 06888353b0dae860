"""``acceptsim compare``: adaptive policies against the best static accept-limit.

Reads a sweep's results (``acceptsim sweep policy-comparison --out OUT``, or
``flash-crowd``) and prints, for each server and load, the best static limit
(highest mean reply rate over replications among the ``static`` runs) and every
other policy's mean reply rate relative to it, in percent.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import pandas as pd

from acceptsim.sim.errors import ConfigError
from acceptsim.sim.results import json_safe
from acceptsim.sim.sweep import read_results


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "compare", help="policies against the best static accept-limit, from a sweep's results"
    )
    p.add_argument("out", help="sweep output directory (or its results.parquet)")
    p.add_argument("--metric", default="reply_rate_per_s")
    p.add_argument("--format", default="table", choices=("table", "json"))
    p.set_defaults(main=main)


def compare(frame: pd.DataFrame, metric: str = "reply_rate_per_s") -> pd.DataFrame:
    """One row per (server, load): the best static limit and each policy relative to it.

    Columns: ``server``, ``load`` (the rate, or the rate profile; prefixed with the
    workload when the sweep has several), ``best_static``
    (the spec), ``best_static_<metric>``, then per adaptive policy its mean and
    ``<policy> %`` = 100 * (policy / best static - 1).
    """
    df = frame.copy()
    if "policy_params.limit" in df.columns:  # a static limit given by accept_limit, not the spec
        df["policy"] = [
            f"static:limit={_plain(limit)}" if str(p).split(":")[0] == "static" else p
            for p, limit in zip(df["policy"], df["policy_params.limit"], strict=True)
        ]
    df["load"] = [
        prof if isinstance(prof, str) and prof else f"{rate:g}"
        for prof, rate in zip(df.get("rate_profile", [""] * len(df)), df["rate_per_s"],
                              strict=True)
    ]  # fmt: skip
    if "workload" in df.columns and df["workload"].nunique() > 1:  # each workload on its own
        df["load"] = [f"{w} {load}" for w, load in zip(df["workload"], df["load"], strict=True)]
    means = df.groupby(["server", "load", "policy"], sort=False)[metric].mean().reset_index()
    static = means[means["policy"].str.startswith("static")]
    rows = []
    for (server, load), group in means.groupby(["server", "load"], sort=False):
        st = static[(static["server"] == server) & (static["load"] == load)]
        if st.empty:
            continue
        best = st.loc[st[metric].idxmax()]
        row: dict[str, Any] = {
            "server": server, "load": load, "best_static": best["policy"],
            f"best_static_{metric}": best[metric],
        }  # fmt: skip
        for _, r in group.iterrows():
            if r["policy"].startswith("static"):
                continue
            row[r["policy"]] = r[metric]
            row[f"{r['policy']} %"] = 100.0 * (r[metric] / best[metric] - 1.0)
        rows.append(row)
    return pd.DataFrame(rows)


def _plain(value: Any) -> str:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return str(value)
    return "inf" if f == float("inf") else f"{f:g}"


def main(args: argparse.Namespace) -> int:
    try:
        frame, _ = read_results(args.out)
    except (OSError, ValueError) as exc:  # missing, unreadable, not Parquet (ArrowInvalid)
        raise ConfigError("out", args.out, f"a sweep's directory or its results.parquet "
                          f"({type(exc).__name__})") from None
    needed = ["server", "rate_per_s", "policy", args.metric]
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise ConfigError("out", args.out, f"a sweep's results with the columns {needed} "
                          f"(missing: {missing})")
    table = compare(frame, args.metric)
    if args.format == "json":
        print(json.dumps(json_safe(table.to_dict(orient="records")), indent=2))
        return 0
    shown = table[["server", "load", "best_static", f"best_static_{args.metric}"]
                  + [c for c in table.columns if c.endswith(" %")]]  # fmt: skip
    print(shown.to_string(index=False, float_format="{:,.1f}".format))
    return 0
