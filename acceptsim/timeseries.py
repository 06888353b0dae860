"""Time series of one run (``timeseries_interval_s > 0``): a table and a plot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd


def frame(result: dict[str, Any]) -> pd.DataFrame:
    """The run's time series as a DataFrame, one row per sample."""
    if "timeseries" not in result:
        raise ValueError("the run has no time series: set timeseries_interval_s > 0")
    return pd.DataFrame(result["timeseries"])


def plot_timeseries(result: dict[str, Any], path: str | Path | None = None, ax: Any = None) -> Any:
    """Reply and target rate, queue lengths and the policy's accept-limit over time.

    Writes ``path`` (PNG) if given; returns the matplotlib figure.
    """
    import matplotlib

    if path is not None and ax is None:
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    ts = frame(result)
    fig, axes = plt.subplots(3, 1, figsize=(8, 8), sharex=True)
    top, mid, low = axes
    top.plot(ts["time_s"], ts["target_rate_per_s"], "k--", label="target rate")
    top.plot(ts["time_s"], ts["reply_rate_per_s"], label="reply rate")
    top.plot(ts["time_s"], ts["drops_per_s"], label="drops", alpha=0.6)
    top.set_ylabel("per second")
    top.legend(loc="best", fontsize="small")
    mid.plot(ts["time_s"], ts["accept_queue_len"], label="accept queue")
    mid.plot(ts["time_s"], ts["syn_queue_len"], label="SYN queue")
    mid.plot(ts["time_s"], ts["work_queue_len"], label="work queue")
    mid.set_ylabel("length (sampled)")
    mid.legend(loc="best", fontsize="small")
    low.step(ts["time_s"], ts["accept_limit"], where="post", label="policy's accept-limit")
    low.set_yscale("symlog", linthresh=1)
    low.set_ylabel("accept-limit")
    low.set_xlabel("time (s)")
    title = f"{result.get('server')}, policy {result.get('policy')}"
    if result.get("rate_profile"):
        title += f", {result['rate_profile']}"
    top.set_title(title)
    fig.tight_layout()
    if path is not None:
        from acceptsim.plots import save_figure

        save_figure(fig, path, dpi=100)
        plt.close(fig)
    return fig
