"""Analyses of run records and sweeps: policies against the best static accept-limit.

* :func:`cases`, :func:`compare` and :func:`regret` read a sweep's results (one row
  per run) and put every policy beside the best static limit of each case (``acceptsim
  compare``, ``acceptsim compare --regret``);
* :func:`compare_policy` pairs one policy's runs with each static limit's, replication by
  replication (a sweep's replications share their seeds: common random numbers), and
  gives the paired difference with its confidence interval (``acceptsim compare
  --policy``);
* :func:`oracle` reads the time series of runs at several static limits and takes the
  best limit in every interval: the headroom for any policy that switches between them
  (``acceptsim oracle``).

The commands only parse their options and print; these functions are the analyses,
for notebooks and scripts as well.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from acceptsim.sim.errors import ConfigError, shorten
from acceptsim.sim.stats import mean_ci

#: the time-series columns the oracle reads
COLUMNS = ("time_s", "reply_rate_per_s", "response_time_p99_ms")


#: the response-time and timeout columns the regret table reports beside the metric
LATENCY = (
    "response_time_ms.mean", "response_time_ms.p50", "response_time_ms.p99",
    "client_timeouts_per_s",
)  # fmt: skip


#: per cent: differences this small from a threshold count as on it (float rounding)
PCT_TOLERANCE = 1e-9


def check_metric(frame: pd.DataFrame, metric: str, field: str = "--metric") -> None:
    """Refuse (a one-line :class:`ConfigError`) a metric that is no column of the results,
    holds no number in any run (null in every run: nothing to compare or plot) or holds
    something other than numbers (a name, a list per NIC)."""
    if metric not in frame.columns:
        near = [c for c in frame.columns if c.split(".")[0] == metric.split(".")[0]]
        raise ConfigError(field, metric, "a column of the results" + (
            ": one of " + ", ".join(near[:12]) if near else ", e.g. reply_rate_per_s"))
    values = frame[metric].dropna()
    if values.empty:
        raise ConfigError(field, metric, "a column with a number in some run (it is null in "
                          f"every one of these {len(frame)} runs)")
    try:
        numbers = pd.to_numeric(values, errors="coerce")
    except (TypeError, ValueError):  # lists, tables
        numbers = pd.Series([float("nan")])
    if numbers.isna().any() or pd.api.types.is_bool_dtype(values):
        raise ConfigError(field, metric, "a column of numbers (it holds "
                          f"{shorten(repr(values.iloc[0]), 60)})")


def check_results(frame: pd.DataFrame, out: str, varied: Any = None) -> None:
    """Refuse results with no runs, or whose description's ``varied`` is not a list of
    their columns (a hand-edited or foreign file), before any analysis of them."""
    if frame.empty:
        raise ConfigError("out", out, "a sweep's results with at least one run (this one has "
                          "none)")
    if varied is not None and (
        not isinstance(varied, list)
        or not all(isinstance(c, str) and c in frame.columns for c in varied)
    ):  # fmt: skip
        raise ConfigError(f"{out}: varied", varied,
                          "a list of the results' columns (its description was edited?)")


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


def _within(p99_ms: Any, bound_ms: float | None) -> bool:
    """A response-time percentile meets the bound (no reply at all, None or NaN in a
    frame: nothing exceeds it)."""
    return bound_ms is None or _ms(p99_ms) is None or p99_ms <= bound_ms


def _ms(value: Any) -> float | None:
    """A frame's percentile as a number, or None for no reply (a frame's NaN)."""
    return None if value is None or math.isnan(value) else float(value)


def oracle(
    series: Mapping[str, pd.DataFrame],
    run_p99_ms: Mapping[str, float | None] | None = None,
    p99_bound_ms: float | None = None,
    after_s: float = 0.0,
) -> dict[str, Any]:
    """The per-interval best of several static limits against the best single one.

    ``series`` maps each limit's label to its run's time series (columns
    :data:`COLUMNS`, the same ``time_s`` in every one); only intervals ending
    after ``after_s`` count.  With ``p99_bound_ms`` a limit is eligible in an
    interval if its replies' p99 there is within the bound, and as the best
    static limit if its whole run's p99 (``run_p99_ms``) is.

    Returns ``best_static`` (label or None), ``best_static_reply_rate_per_s``
    and ``oracle_reply_rate_per_s`` (means over the intervals), ``headroom_pct``
    (oracle over best static, in percent), ``intervals`` (per interval: its end,
    the best eligible limit or None, its reply rate and p99, and the best static
    limit's reply rate and p99 there) and ``intervals_without_eligible``.
    """
    if not series:
        raise ValueError("no limits to compare")
    frames = {label: df[df["time_s"] > after_s + 1e-9].reset_index(drop=True)
              for label, df in series.items()}  # fmt: skip
    times = next(iter(frames.values()))["time_s"].tolist()
    for label, df in frames.items():
        if df["time_s"].tolist() != times:
            raise ValueError(f"limit {label}: its intervals differ from the others'")
    if not times:
        raise ValueError("no interval ends after the warm-up")
    means = {label: float(df["reply_rate_per_s"].mean()) for label, df in frames.items()}
    run_p99 = dict(run_p99_ms or {})
    eligible_static = [label for label in frames if _within(run_p99.get(label), p99_bound_ms)]
    best_static = max(eligible_static, key=lambda label: means[label], default=None)
    rows = []
    total = 0.0
    without = 0
    # the best static limit first: in a tie it stays the interval's best (the table then
    # shows a different limit only where switching would gain)
    order = sorted(frames, key=lambda label: label != best_static)
    for i, t in enumerate(times):
        best, best_rate, best_p99 = None, 0.0, None
        for label in order:
            df = frames[label]
            rate = float(df["reply_rate_per_s"].iloc[i])
            p99 = df["response_time_p99_ms"].iloc[i]
            if _within(p99, p99_bound_ms) and (best is None or rate > best_rate):
                best, best_rate, best_p99 = label, rate, p99
        if best is None:
            without += 1
        total += best_rate
        row: dict[str, Any] = {"time_s": t, "best_limit": best, "reply_rate_per_s": best_rate,
                               "response_time_p99_ms": _ms(best_p99)}  # fmt: skip
        if best_static is not None:
            static = frames[best_static]
            row["best_static_reply_rate_per_s"] = float(static["reply_rate_per_s"].iloc[i])
            row["best_static_p99_ms"] = _ms(static["response_time_p99_ms"].iloc[i])
        rows.append(row)
    oracle_rate = total / len(times)
    static_rate = means[best_static] if best_static is not None else None
    return {
        "best_static": best_static,
        "best_static_reply_rate_per_s": static_rate,
        "best_static_p99_ms": run_p99.get(best_static) if best_static is not None else None,
        "oracle_reply_rate_per_s": oracle_rate,
        "headroom_pct": 100.0 * (oracle_rate / static_rate - 1.0) if static_rate else None,
        "p99_bound_ms": p99_bound_ms,
        "mean_reply_rate_per_s": means,
        "intervals": rows,
        "intervals_without_eligible": without,
    }


def _policy_rows(df: pd.DataFrame, policy: Any) -> pd.Series:
    """Which rows ran ``policy``: its spec as the sweep wrote it, a spec without the
    source digest a configuration adds to a class (``"mymod:MyPolicy"``), or the class."""
    if not isinstance(policy, str):
        from acceptsim.models.policies import spec_of

        policy = spec_of(policy)
    specs = df["policy"].astype(str)
    return (specs == policy) | specs.str.startswith(policy + "@")


def compare_policy(
    frame: pd.DataFrame, policy: Any, metric: str = "reply_rate_per_s"
) -> pd.DataFrame:
    """One policy against every static limit of each case, paired by replication.

    ``frame`` is a sweep's results (:func:`acceptsim.sim.sweep.read_results`) in which
    ``policy`` (a spec, or a policy class of the user's) and static limits ran on the
    same cases (:func:`cases`) with the same replications; replication ``r`` of every
    configuration has the same seed, so the differences are paired (common random
    numbers) and their interval is far narrower than the two means' would suggest.

    One row per case and static limit: ``server``, ``load``, ``static``, the mean
    ``metric`` of the policy and of the static limit, ``diff`` (policy minus static,
    mean over the paired replications), ``diff_low``/``diff_high`` (its 95% Student t
    interval; NaN with one replication), ``pairs``, and ``best_static`` (True on the
    static limit with the highest mean in the case).
    """
    df = cases(frame)
    mine = _policy_rows(df, policy)
    if not mine.any():
        raise ValueError(f"no runs of the policy {policy!r} in the results")
    static = df["policy"].astype(str).str.startswith("static")
    if not static.any():
        raise ValueError("no static limit in the results to compare with")
    rows = []
    for (server, load), group in df.groupby(["server", "load"], sort=False):
        ours = group[mine.loc[group.index]].set_index("replication")[metric]
        if ours.empty:
            continue
        limits = group[static.loc[group.index]]
        means = limits.groupby("policy", sort=False)[metric].mean()
        if means.empty:
            continue
        best = means.idxmax()
        for spec, runs in limits.groupby("policy", sort=False):
            theirs = runs.set_index("replication")[metric]
            paired = ours.index.intersection(theirs.index)
            diff = mean_ci((ours[paired] - theirs[paired]).to_numpy(dtype=float))
            rows.append({
                "server": server, "load": load, "static": spec,
                "policy_mean": float(ours.mean()), "static_mean": float(theirs.mean()),
                "diff": diff.mean, "diff_low": diff.low, "diff_high": diff.high,
                "pairs": diff.n, "best_static": spec == best,
            })  # fmt: skip
    return pd.DataFrame(rows)

