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
    p.add_argument("--regret", action="store_true",
                   help="every policy and every single static limit against the best static "
                   "limit of each case, with response times and client timeouts, and per "
                   "policy its worst loss over the cases")
    p.add_argument("--format", default="table", choices=("table", "json"))
    p.set_defaults(main=main)


#: the response-time and timeout columns the regret table reports beside the metric
LATENCY = (
    "response_time_ms.mean", "response_time_ms.p50", "response_time_ms.p99",
    "client_timeouts_per_s",
)  # fmt: skip


#: per cent: differences this small from a threshold count as on it (float rounding)
PCT_TOLERANCE = 1e-9


def cases(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of a sweep's results with a ``load`` column naming each case of a server
    (the rate, or the rate profile; prefixed with the workload when the sweep has
    several) and a static limit's ``policy`` written with its limit."""
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
    return df


def compare(frame: pd.DataFrame, metric: str = "reply_rate_per_s") -> pd.DataFrame:
    """One row per (server, load): the best static limit and each policy relative to it.

    Columns: ``server``, ``load`` (see :func:`cases`), ``best_static``
    (the spec), ``best_static_<metric>``, then per adaptive policy its mean and
    ``<policy> %`` = 100 * (policy / best static - 1).
    """
    df = cases(frame)
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


def regret(
    frame: pd.DataFrame, metric: str = "reply_rate_per_s", near_pct: float = 2.0,
    far_pct: float = 10.0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every policy, static limits included, against the best static limit of each case.

    A case is a (server, load) of :func:`cases`; its best static limit is the static
    policy with the highest mean ``metric`` over replications.  Returns

    * ``rows``: one row per case and policy: ``server``, ``load``, ``policy``,
      ``best_static``, the policy's mean ``metric``, ``pct`` = 100 * (policy / best
      static - 1) and the means of the :data:`LATENCY` columns present;
    * ``summary``: one row per policy over every case it ran: ``cases``,
      ``worst_pct`` (its largest loss), ``mean_pct``, ``within_near`` (cases within
      ``near_pct`` per cent of the best) and ``far_below`` (cases at least ``far_pct``
      per cent below), sorted by the worst loss.  A static limit's row there is what
      choosing that one limit for every case costs.
    """
    df = cases(frame)
    latency = [c for c in LATENCY if c in df.columns]
    for c in latency:  # a sweep writes "no reply" as missing
        df[c] = pd.to_numeric(df[c], errors="coerce")
    keys = ["server", "load", "policy"]
    means = df.groupby(keys, sort=False)[[metric, *latency]].mean().reset_index()
    rows = []
    for _, group in means.groupby(["server", "load"], sort=False):
        static = group[group["policy"].str.startswith("static")]
        if static.empty:
            continue
        best = static.loc[static[metric].idxmax()]
        part = group.copy()
        part.insert(3, "best_static", best["policy"])
        part["pct"] = 100.0 * (part[metric] / best[metric] - 1.0)
        rows.append(part)
    if not rows:
        raise ValueError("no case has a static limit to compare with")
    table = pd.concat(rows, ignore_index=True)
    summary = table.groupby("policy", sort=False)["pct"].agg(
        cases="count", worst_pct="min", mean_pct="mean",
        # (a hair of tolerance: 196 over 200 is -2.0000000000000018 per cent in floats)
        within_near=lambda p: int((p >= -near_pct - PCT_TOLERANCE).sum()),
        far_below=lambda p: int((p <= -far_pct + PCT_TOLERANCE).sum()),
    ).reset_index().sort_values("worst_pct", ascending=False, kind="stable")
    return table, summary.reset_index(drop=True)


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
    if args.regret:
        return _print_regret(frame, args.metric, args.format)
    table = compare(frame, args.metric)
    if args.format == "json":
        print(json.dumps(json_safe(table.to_dict(orient="records")), indent=2))
        return 0
    shown = table[["server", "load", "best_static", f"best_static_{args.metric}"]
                  + [c for c in table.columns if c.endswith(" %")]]  # fmt: skip
    print(shown.to_string(index=False, float_format="{:,.1f}".format))
    return 0


def _print_regret(frame: pd.DataFrame, metric: str, fmt: str) -> int:
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
