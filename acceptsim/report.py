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
    "reply_rate_per_s": "replies/s",
    "drops_per_s.total": "queue drops/s",
    "response_time_ms.mean": "mean response time (ms)",
    "idle_connections": "idle persistent connections",
    "cpu_share.idle": "CPU idle share",
    "cpu_share.getevents": "CPU share in getevents",
    "response_time_ms.mean.normalised": "foreground response time / unloaded",
    "bg_rate_per_s": "background connections/s",
    "files.dataset_mb": "data set (MB)",
}


def add_normalised(scenario: Scenario, frame: pd.DataFrame) -> pd.DataFrame:
    """``[plot.normalise] metric = M, at = X0``: add column ``M.normalised``, each series'
    ``M`` divided by its value where the x column equals ``X0`` (e.g. the unloaded run)."""
    spec = scenario.plot.get("normalise")
    if not spec:
        return frame
    x = scenario.plot.get("x", "target_rate_per_s")
    series = scenario.plot.get("series", "accept_limit")
    metric = spec["metric"]
    frame = frame.copy()

    def divide(group: pd.DataFrame) -> pd.Series:
        base = group.loc[group[x] == spec["at"], metric]
        return group[metric] / (float(base.iloc[0]) if len(base) else float("nan"))

    parts = [divide(g) for _, g in frame.groupby(series, sort=False)]
    frame[metric + ".normalised"] = pd.concat(parts)
    return frame


def plot(scenario: Scenario, frame: pd.DataFrame, path: Path) -> None:
    spec = scenario.plot
    x = spec.get("x", "target_rate_per_s")
    ys = spec.get("y", ["reply_rate_per_s"])
    series = spec.get("series", "accept_limit")
    fig, axes = plt.subplots(1, len(ys), figsize=(5.5 * len(ys), 4.2), squeeze=False)
    for ax, y in zip(axes[0], ys, strict=True):
        for key, group in frame.groupby(series, sort=False):
            group = group.sort_values(x)
            ax.plot(group[x], group[y], marker="o", ms=3, label=series_label(series, key))
        if y in spec.get("logy", []):
            ax.set_yscale("log")
        ax.set_xlabel(LABELS.get(x, x))
        ax.set_ylabel(LABELS.get(y, y))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(scenario.title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def series_label(series: str | list[str], key: Any, sep: str = " ") -> str:
    """``accept_limit 10``; for several series keys just the values: ``userver-select/1``."""
    if isinstance(series, (list, tuple)):
        keys = key if isinstance(key, tuple) else (key,)
        return "/".join(str(k) for k in keys)
    return f"{series}{sep}{key}"


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
    table.columns = [series_label(series, c, sep="=") for c in table.columns]
    if isinstance(series, (list, tuple)):
        table.columns.name = "/".join(series)
    digits = 0 if table.abs().min().min() >= 100 else 3  # shares, ratios and ms keep decimals
    return table.round(digits).to_string()
