"""A measured run's time series against the simulator's for the same run (``acceptsim
validate --timeseries RUN``): both sampled at the run's own interval, their means per
column over the times both cover, and a figure of the two.

The series' columns and file are :mod:`acceptsim.measure.timeseries_csv`'s; the simulation of a
measured run is :func:`acceptsim.measure.calibrate.config_for`'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acceptsim.measure.calibrate import config_for
from acceptsim.measure.run import MeasuredRun
from acceptsim.measure.timeseries_csv import SHARED, TIMESERIES_FILE

if TYPE_CHECKING:
    import pandas as pd

    from acceptsim.models.costs import HostCosts


# -- measured against simulated ------------------------------------------------------------
#: the panels of :func:`plot_comparison`: (title, y label, columns)
PANELS = (
    ("replies", "replies/s", ("reply_rate_per_s",)),
    ("accept queue", "connections", ("accept_queue_len",)),
    ("CFS throttling", "ms throttled per interval", ("throttled_ms",)),
    ("listen overflows", "per second", ("listen_overflows_per_s", "syn_retrans_per_s")),
)


@dataclass(frozen=True)
class Comparison:
    """A measured run's time series and the simulator's for the same configuration."""

    run: str
    #: the measured series (:func:`read_timeseries`)
    measured: pd.DataFrame
    #: the simulated one (:data:`acceptsim.models.run_series.COLUMNS`)
    simulated: pd.DataFrame
    #: the sampling interval both used (s)
    interval_s: float
    #: per column: the mean measured and simulated over the times both cover
    means: pd.DataFrame


def nominal_interval_s(run: MeasuredRun, measured: pd.DataFrame) -> float:
    """The run's sampling interval: run.toml's ``timeseries.interval_s``, else the median
    of the measured intervals (a hand-made run without it)."""
    if run.info.timeseries.interval_s > 0:
        return run.info.timeseries.interval_s
    return float(measured["interval_s"].median())


def simulated_series(
    run: MeasuredRun, costs: HostCosts, interval_s: float, seed: int = 1
) -> pd.DataFrame:
    """The simulator's time series of ``run`` (:func:`acceptsim.measure.calibrate.config_for`)
    sampled every ``interval_s``."""
    import pandas as pd

    from acceptsim.models.runner import run_point

    config = config_for(run, costs, seed).replace(timeseries_interval_s=interval_s)
    record = run_point(config, timeseries=True, checked=False)
    return pd.DataFrame(record["timeseries"])


def mean_table(measured: pd.DataFrame, simulated: pd.DataFrame) -> pd.DataFrame:
    """Per column the two series share: the measured and the simulated mean over the
    intervals both cover (measured rows up to the simulation's end), and how many
    measured intervals had a value (NaN means: not measured, or does not apply)."""
    import pandas as pd

    end = float(simulated["time_s"].max()) if len(simulated) else 0.0
    part = measured[measured["time_s"] <= end + 1e-9]
    rows = []
    for name in SHARED:
        m = pd.to_numeric(part[name], errors="coerce") if name in part else None
        s = pd.to_numeric(simulated[name], errors="coerce") if name in simulated else None
        rows.append({
            "column": name,
            "measured_mean": float(m.mean()) if m is not None and m.notna().any() else math.nan,
            "simulated_mean": float(s.mean()) if s is not None and s.notna().any() else math.nan,
            "measured_intervals": int(m.notna().sum()) if m is not None else 0,
        })  # fmt: skip
    return pd.DataFrame(rows)


def compare(run: MeasuredRun, costs: HostCosts, seed: int = 1) -> Comparison:
    """``run``'s measured time series against the simulator's under ``costs``, sampled at
    the run's own interval; ConfigError if the run has no ``timeseries.csv``."""
    from acceptsim.sim.errors import ConfigError

    measured = run.timeseries()
    if measured is None:
        raise ConfigError("--timeseries", str(run.path), f"a run directory with a "
                          f"{TIMESERIES_FILE} (acceptsim measure --sample-interval > 0)")
    interval = nominal_interval_s(run, measured)
    simulated = simulated_series(run, costs, interval, seed)
    return Comparison(run.path.name, measured, simulated, interval,
                      mean_table(measured, simulated))


def plot_comparison(comparison: Comparison, path: str | Path | None = None) -> Any:
    """Measured (solid) and simulated (dashed) in four panels over time: replies/s, the
    accept queue, ms throttled per interval, listen overflows/s (and the measured SYN
    retransmissions/s, which the simulator does not count).  Writes ``path`` (PNG) if
    given; returns the figure."""
    import matplotlib

    if path is not None:
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(PANELS), 1, figsize=(8, 9), sharex=True)
    m, s = comparison.measured, comparison.simulated
    for ax, (title, ylabel, columns) in zip(axes, PANELS, strict=True):
        for k, name in enumerate(columns):
            color = f"C{k}"
            if name in m and m[name].notna().any():
                ax.plot(m["time_s"], m[name], color=color, label=f"measured {name}")
            if name in s and s[name].notna().any():
                ax.plot(s["time_s"], s[name], color=color, linestyle="--",
                        label=f"simulated {name}")
        ax.set_title(title, fontsize="medium")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend(loc="best", fontsize="x-small")
    axes[-1].set_xlabel("time from the load's start (s)")
    fig.suptitle(f"{comparison.run}: measured (solid) and simulated (dashed), "
                 f"{comparison.interval_s:g} s intervals", fontsize="medium")
    fig.tight_layout()
    if path is not None:
        from acceptsim.plots import save_figure

        save_figure(fig, path, dpi=100)
        plt.close(fig)
    return fig


def _cells(frame: pd.DataFrame) -> dict[str, list[Any]]:
    """A frame's columns as lists, NaN as None (JSON has no NaN)."""
    out: dict[str, list[Any]] = {}
    for name in frame.columns:
        out[str(name)] = [
            None if v is None or (isinstance(v, float) and math.isnan(v)) else v
            for v in frame[name].tolist()
        ]
    return out


def comparison_record(comparison: Comparison) -> dict[str, Any]:
    """A :class:`Comparison` as JSON-ready data: the run, the interval, the means per column
    (``column``, ``measured_mean``, ``simulated_mean``, ``measured_intervals``; None: not
    measured or not simulated) and both series, a list per column."""
    return {
        "run": comparison.run,
        "interval_s": comparison.interval_s,
        "means": [
            {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
            for row in comparison.means.to_dict("records")
        ],
        "measured": _cells(comparison.measured),
        "simulated": _cells(comparison.simulated),
    }
