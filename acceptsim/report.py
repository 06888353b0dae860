"""Figures, tables and the markdown report of ``acceptsim reproduce``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from sim.scenario import Scenario  # noqa: E402

LABELS = {
    "target_rate_per_s": "target rate (requests/s)",
    "target_request_rate_per_s": "target request rate (requests/s)",
    "reply_rate_per_s": "replies/s",
    "drops_per_s.total": "queue drops/s",
    "response_time_ms.mean": "mean response time (ms)",
}


def plot(scenario: Scenario, frame: pd.DataFrame, path: Path) -> None:
    spec = scenario.plot
    x = spec.get("x", "target_rate_per_s")
    ys = spec.get("y", ["reply_rate_per_s"])
    series = spec.get("series", "accept_limit")
    fig, axes = plt.subplots(1, len(ys), figsize=(5.5 * len(ys), 4.2), squeeze=False)
    for ax, y in zip(axes[0], ys, strict=True):
        for key, group in frame.groupby(series, sort=False):
            group = group.sort_values(x)
            ax.plot(group[x], group[y], marker="o", ms=3, label=_label(series, key))
        ax.set_xlabel(LABELS.get(x, x))
        ax.set_ylabel(LABELS.get(y, y))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(scenario.title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _label(series: Any, key: Any) -> str:
    """Legend text: ``accept_limit 10``, or ``server tux, accept_limit 1`` for several."""
    if isinstance(series, list):
        keys = key if isinstance(key, tuple) else (key,)
        return ", ".join(f"{s} {k}" for s, k in zip(series, keys, strict=False))
    return f"{series} {key}"


def _selector(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in ("what", "metric", "paper", "note")}


def expectation_rows(scenario: Scenario, frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Each published number of the scenario beside the simulator's."""
    rows = []
    for exp in scenario.expect:
        sel = frame
        for key, value in _selector(exp).items():
            sel = sel[sel[key].astype(str) == str(value)]
        kind, _, metric = exp["metric"].rpartition(":")
        if sel.empty:
            sim_value = None
        elif kind == "peak":
            sim_value = float(sel[metric].max())
        else:
            sim_value = float(sel[metric].iloc[0])
        paper = exp.get("paper")
        rows.append(
            {
                "what": exp.get("what", metric),
                "paper": paper,
                "simulated": sim_value,
                "error_pct": None
                if sim_value is None or not paper
                else 100.0 * (sim_value - paper) / paper,
            }
        )
    return rows


def markdown_table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return ""
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = []
        for c in cols:
            v = r[c]
            cells.append(f"{v:,.1f}" if isinstance(v, float) else str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def pivot_text(scenario: Scenario, frame: pd.DataFrame, metric: str = "reply_rate_per_s") -> str:
    x = scenario.plot.get("x", "target_rate_per_s")
    series = scenario.plot.get("series", "accept_limit")
    table = frame.pivot_table(index=x, columns=series, values=metric, sort=False)
    if isinstance(series, list):
        table.columns = [_label(series, c) for c in table.columns]
    else:
        table.columns = [f"{series}={c}" for c in table.columns]
    return table.round(0).to_string()


#: the load at which the report's Equation 1 table is taken
EQUATION1_RATE_PER_S = 24000.0


def equation1_rows(
    frames: list[pd.DataFrame], rate_per_s: float = EQUATION1_RATE_PER_S
) -> list[dict[str, Any]]:
    """The paper's Equation 1 factors for TUX and the userver at each accept-limit.

    accept_rate = accept phases per second * mean accepts per phase, taken from
    every one-packet run at ``rate_per_s`` among the scenarios that were run.
    """
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for frame in frames:
        need = {"server", "workload", "accept_limit", "target_rate_per_s", "accept_rate_per_s"}
        if not need <= set(frame.columns):
            continue
        sel = frame[
            frame["server"].isin(["userver", "tux"])
            & (frame["workload"] == "one-packet")
            & (frame["target_rate_per_s"].astype(float) == rate_per_s)
        ]
        for _, r in sel.iterrows():
            key = (str(r["server"]), str(r["accept_limit"]))
            rows.setdefault(
                key,
                {
                    "server": key[0],
                    "accept_limit": key[1],
                    "accept_phases_per_s": float(r["accept_phases_per_s"]),
                    "accepts_per_phase": float(r["accepts_per_phase"]),
                    "accept_rate_per_s": float(r["accept_rate_per_s"]),
                    "reply_rate_per_s": float(r["reply_rate_per_s"]),
                },
            )

    def order(key: tuple[str, str]) -> tuple[str, float]:
        return key[0], float(key[1])

    return [rows[k] for k in sorted(rows, key=order)]


def equation1_section(frames: list[pd.DataFrame], rate_per_s: float = EQUATION1_RATE_PER_S) -> str:
    rows = equation1_rows(frames, rate_per_s)
    if not rows:
        return ""
    text = (
        f"## Equation 1 at {rate_per_s:,.0f} target connections/s (one-packet)\n\n"
        "accept_rate = accept phases/s x accepts per phase.  The paper: lowering the limit "
        "raises TUX's accept rate (many more phases) and lowers the userver's (every extra "
        "accept phase costs a select() call).\n\n" + markdown_table(rows) + "\n\n"
    )
    for server in ("tux", "userver"):
        mine = [r for r in rows if r["server"] == server]
        if len(mine) >= 2:
            low, high = mine[0], mine[-1]
            went = "raises" if low["accept_rate_per_s"] > high["accept_rate_per_s"] else "lowers"
            text += (
                f"- {server}: accept-limit {low['accept_limit']} -> {went} the accept rate "
                f"against {high['accept_limit']} ({low['accept_rate_per_s']:,.0f} vs "
                f"{high['accept_rate_per_s']:,.0f}/s)\n"
            )
    return text + "\n"
