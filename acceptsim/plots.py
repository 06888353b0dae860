"""Figures of a stored sweep: curves with confidence bands, a heat map over two varied
fields, and one policy's paired differences against every static limit.

Each function draws on a matplotlib axes (a new figure's when none is given) and returns
it, so a notebook shows it as it is; :func:`plot_sweep` writes them all as PNG files
(``acceptsim plot OUT``).  A sweep's description (stored with its results) says which
fields it varied; the replications of one configuration give its mean and 95%
interval (:func:`acceptsim.sim.sweep.summary`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from acceptsim.analysis import check_metric, check_results, compare_policy
from acceptsim.models.config import RunConfig
from acceptsim.models.record import METRICS
from acceptsim.sim.files import atomic_path
from acceptsim.sim.stats import summarise
from acceptsim.sim.sweep import read_results

#: the x axis of the curves when the sweep varied it
RATE = "rate_per_s"


def load(out: str | Path) -> tuple[pd.DataFrame, list[str]]:
    """A stored sweep's results and the fields it varied (``out``: its directory or its
    results file); a ValueError when the file has no sweep description."""
    frame, description = read_results(out)
    if "varied" not in description:
        raise ValueError(f"{out}: no sweep description in the results (not written by a sweep)")
    check_results(frame, str(out), description["varied"])
    frame.attrs["sweep"] = description
    return frame, [str(c) for c in description["varied"]]


def label(name: str) -> str:
    """An axis label: a metric's or a configuration field's name with its unit, from the
    run record's declaration or the configuration's parameter table."""
    base = name.split(".")[0]
    units = {m.name: m.unit for m in METRICS}
    units.update({row["name"]: row["unit"] for row in RunConfig().describe()})
    unit = units.get(base, "")
    return f"{name} ({unit})" if unit else name


def _value_text(value: Any) -> str:
    if isinstance(value, float):
        return "inf" if math.isinf(value) else f"{value:g}"
    return str(value)


def _x_field(frame: pd.DataFrame, varied: Sequence[str]) -> str:
    numeric = [c for c in varied if pd.api.types.is_numeric_dtype(frame[c])]
    if RATE in varied:
        return RATE
    if not numeric:
        raise ValueError("the sweep varied no numeric field to put on an x axis")
    return numeric[0]


def curves(
    frame: pd.DataFrame, varied: Sequence[str], metric: str = "reply_rate_per_s",
    ax: Any = None,
) -> Any:  # fmt: skip
    """The metric's mean against the x field (the target rate when varied), one line per
    combination of the other varied fields, each with its 95% interval as a band."""
    import matplotlib.pyplot as plt

    x = _x_field(frame, varied)
    others = [c for c in varied if c != x]
    table = summarise(frame, list(varied), [metric])
    if ax is None:
        ax = plt.subplots(figsize=(7, 4))[1]
    groups = table.groupby(others, sort=False, dropna=False) if others else [((), table)]
    for key, group in groups:
        key = key if isinstance(key, tuple) else (key,)
        group = group.sort_values(x)
        name = ", ".join(f"{c}={_value_text(v)}" for c, v in zip(others, key, strict=True))
        (line,) = ax.plot(group[x], group[f"{metric}.mean"], marker="o", label=name or metric)
        ax.fill_between(group[x], group[f"{metric}.ci_low"], group[f"{metric}.ci_high"],
                        color=line.get_color(), alpha=0.2)  # fmt: skip
    ax.set_xlabel(label(x))
    ax.set_ylabel(label(metric) + ", mean and 95% interval")
    ax.grid(alpha=0.3)
    if others:
        ax.legend(fontsize=8, loc="best")
    return ax


def heatmap(
    frame: pd.DataFrame, rows: str, cols: str, metric: str = "reply_rate_per_s",
    ax: Any = None,
) -> Any:  # fmt: skip
    """The metric's mean over replications for every (``rows``, ``cols``) pair, e.g.
    accept-limit against target rate, each cell written with its value."""
    import matplotlib.pyplot as plt

    grid = frame.pivot_table(index=rows, columns=cols, values=metric, aggfunc="mean")
    grid = grid.sort_index().sort_index(axis=1)
    values = grid.to_numpy(dtype=float)
    if ax is None:
        ax = plt.subplots(figsize=(1.5 + 0.8 * grid.shape[1], 1.2 + 0.45 * grid.shape[0]))[1]
    image = ax.imshow(values, aspect="auto", cmap="viridis")
    ax.set_xticks(range(grid.shape[1]), [_value_text(v) for v in grid.columns])
    ax.set_yticks(range(grid.shape[0]), [_value_text(v) for v in grid.index])
    ax.set_xlabel(label(cols))
    ax.set_ylabel(label(rows))
    for (i, j), value in np.ndenumerate(values):
        if np.isfinite(value):
            ax.text(j, i, f"{value:,.0f}", ha="center", va="center", fontsize=7,
                    color=text_colour(image.cmap(image.norm(value))))  # fmt: skip
    ax.figure.colorbar(image, ax=ax, label=label(metric) + ", mean")
    return ax


def text_colour(rgba: Sequence[float]) -> str:
    """Black or white, whichever reads better on a cell of this colour: black on a cell
    whose relative luminance (WCAG 2's, from sRGB) is above the level where both contrast
    alike, white below it."""
    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(float(c)) for c in rgba[:3])
    luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return "black" if luminance > 0.179 else "white"  # (L + 0.05)/0.05 = 1.05/(L + 0.05)


def paired(
    frame: pd.DataFrame, policy: Any, metric: str = "reply_rate_per_s", ax: Any = None
) -> Any:
    """One policy minus each static limit, per case: the paired mean difference with its
    95% interval (:func:`acceptsim.analysis.compare_policy`); the best static limit of
    each case drawn darker."""
    import matplotlib.pyplot as plt

    table = compare_policy(frame, policy, metric)
    names = [f"{s} | {load} | {st.removeprefix('static:')}"
             for s, load, st in zip(table["server"], table["load"], table["static"],
                                    strict=True)]  # fmt: skip
    if ax is None:
        ax = plt.subplots(figsize=(7, 0.9 + 0.3 * len(table)))[1]
    err = np.vstack([table["diff"] - table["diff_low"], table["diff_high"] - table["diff"]])
    colors = ["tab:blue" if best else "tab:gray" for best in table["best_static"]]
    ax.barh(range(len(table)), table["diff"], xerr=np.nan_to_num(err), color=colors,
            capsize=2)  # fmt: skip
    ax.set_yticks(range(len(table)), names, fontsize=7)
    ax.axvline(0.0, color="black", linewidth=0.8)
    ax.invert_yaxis()
    ax.set_xlabel(f"{label(metric)}: policy minus static limit, paired mean and 95% interval")
    ax.set_title(f"{policy if isinstance(policy, str) else policy.__name__} "
                 "against each static limit (server | load | limit; darker: the best)",
                 fontsize=9)  # fmt: skip
    return ax


def save_figure(fig: Any, path: str | Path, dpi: int = 110, **savefig: Any) -> Path:
    """Write a figure atomically (:func:`acceptsim.sim.files.atomic_path`): a reader never
    sees a half-written file, and a failure leaves the old one whole."""
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=dpi, **savefig)
    return Path(path)


def _save(fig: Any, path: Path) -> Path:
    return save_figure(fig, path, bbox_inches="tight")


def plot_sweep(
    out: str | Path, to: str | Path | None = None, metric: str = "reply_rate_per_s",
    policy: str | None = None,
) -> list[Path]:  # fmt: skip
    """Every figure of a stored sweep as PNG files in ``to`` (default ``OUT/plots``):
    ``curves.png``, ``heatmap.png`` when the sweep varied exactly two fields, and
    ``paired.png`` for ``policy``.  Returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frame, varied = load(out)
    check_metric(frame, metric)
    target = Path(to) if to is not None else Path(out) / "plots"
    target.mkdir(parents=True, exist_ok=True)
    written = []
    ax = curves(frame, varied, metric)
    written.append(_save(ax.figure, target / "curves.png"))
    plt.close(ax.figure)
    if len(varied) == 2:
        x = _x_field(frame, varied)
        other = next(c for c in varied if c != x)
        ax = heatmap(frame, other, x, metric)
        written.append(_save(ax.figure, target / "heatmap.png"))
        plt.close(ax.figure)
    if policy is not None:
        ax = paired(frame, policy, metric)
        written.append(_save(ax.figure, target / "paired.png"))
        plt.close(ax.figure)
    return written
