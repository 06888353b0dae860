"""Output analysis over replications: confidence intervals, MSER-5, a stopping rule.

* :func:`mean_ci`: the mean of independent replications with a Student t
  confidence interval (95 % by default);
* :func:`summarise`: the same for every configuration of a tidy sweep table;
* :func:`mser5`: MSER-5 warm-up detection on one run's time series (White,
  1997; White, Cobb and Spratt, 2000): batch the series in non-overlapping
  batches of 5, and delete the first ``d`` batches where ``d`` minimises the
  marginal standard error ``sum((Z_i - mean_d)^2) / (n - d)^2`` over
  ``d <= n / 2``;
* :class:`StoppingRule`: how many replications a configuration needs for the
  relative half-width of its confidence interval to fall under a target.

Nothing here knows what the numbers mean.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from acceptsim.sim.errors import ConfigError

if TYPE_CHECKING:
    import pandas

#: confidence level of every interval unless a caller asks for another
CONFIDENCE = 0.95
#: MSER-5's batch size
MSER_BATCH = 5


@dataclass(frozen=True)
class Interval:
    """A sample mean with a two-sided Student t confidence interval."""

    mean: float
    half_width: float
    n: int
    confidence: float = CONFIDENCE

    @property
    def low(self) -> float:
        return self.mean - self.half_width

    @property
    def high(self) -> float:
        return self.mean + self.half_width

    @property
    def relative_half_width(self) -> float:
        """``half_width / |mean|`` (0 when both are 0, inf when only the mean is)."""
        if self.half_width == 0:
            return 0.0
        return self.half_width / abs(self.mean) if self.mean != 0 else math.inf

    def covers(self, value: float) -> bool:
        return self.low <= value <= self.high


def mean_ci(values: Sequence[float] | np.ndarray, confidence: float = CONFIDENCE) -> Interval:
    """Mean and Student t interval of independent observations (e.g. one per replication).

    With fewer than two observations the half-width is ``nan`` (no spread to
    estimate); NaN observations are left out.
    """
    if not 0 < confidence < 1:
        raise ConfigError("confidence", confidence, "a level strictly between 0 and 1")
    arr = np.asarray(values, dtype=float)
    arr = arr[~np.isnan(arr)]
    n = int(arr.size)
    if n == 0:
        return Interval(math.nan, math.nan, 0, confidence)
    mean = float(arr.mean())
    if n == 1:
        return Interval(mean, math.nan, 1, confidence)
    sd = float(arr.std(ddof=1))
    from scipy import stats  # on demand: a run that asks for no interval starts fast

    t = float(stats.t.ppf(0.5 + confidence / 2, n - 1))
    return Interval(mean, t * sd / math.sqrt(n), n, confidence)


def summarise(
    frame: pandas.DataFrame,
    by: Sequence[str],
    metrics: Sequence[str],
    confidence: float = CONFIDENCE,
) -> pandas.DataFrame:
    """One row per group of ``by`` (a configuration): for each metric its mean,
    CI half-width and bounds over the group's rows (its replications).

    Columns: ``by...``, ``replications``, then ``<metric>.mean``,
    ``<metric>.ci_half_width``, ``<metric>.ci_low``, ``<metric>.ci_high``.
    Groups keep the order in which they first appear in ``frame``.
    """
    import pandas as pd  # its caller holds a frame, so it is loaded already

    rows = []
    groups = frame.groupby(list(by), sort=False, dropna=False) if by else [((), frame)]
    for key, group in groups:
        key = key if isinstance(key, tuple) else (key,)
        row: dict[str, object] = dict(zip(by, key, strict=True))
        row["replications"] = len(group)
        for metric in metrics:
            values = pd.to_numeric(group[metric], errors="coerce").to_numpy(dtype=float)
            ci = mean_ci(values, confidence)
            row[f"{metric}.mean"] = ci.mean
            row[f"{metric}.ci_half_width"] = ci.half_width
            row[f"{metric}.ci_low"] = ci.low
            row[f"{metric}.ci_high"] = ci.high
        rows.append(row)
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class Truncation:
    """Where MSER puts the end of the warm-up of one series."""

    observations: int  # observations to delete from the start (a multiple of the batch size)
    mean: float  # mean of the observations kept (whole batches only)
    batches: int  # batches in the series
    reliable: bool  # False when the minimum fell at n/2: the run may be too short

    def seconds(self, interval_s: float) -> float:
        """The deleted warm-up as a duration, for a series of one value per ``interval_s``."""
        return self.observations * interval_s


def mser(series: Sequence[float] | np.ndarray, batch: int = MSER_BATCH) -> Truncation:
    """MSER-``batch`` truncation point of ``series`` (MSER-5 with the default batch)."""
    if batch < 1:
        raise ConfigError("batch", batch, "an integer >= 1")
    arr = np.asarray(series, dtype=float)
    n = arr.size // batch
    if n < 2:
        raise ConfigError("series", f"{arr.size} values", f"at least {2 * batch} values")
    z = arr[: n * batch].reshape(n, batch).mean(axis=1)
    # suffix sums: kept batches d..n-1 for every d
    s1 = np.cumsum(z[::-1])[::-1]
    s2 = np.cumsum((z * z)[::-1])[::-1]
    kept = n - np.arange(n)
    d_max = n // 2
    ss = s2[: d_max + 1] - s1[: d_max + 1] ** 2 / kept[: d_max + 1]
    stat = np.maximum(ss, 0.0) / kept[: d_max + 1] ** 2
    d = int(np.argmin(stat))
    return Truncation(
        observations=d * batch,
        mean=float(z[d:].mean()),
        batches=n,
        reliable=d < d_max or n < 4,
    )


def mser5(series: Sequence[float] | np.ndarray) -> Truncation:
    """MSER-5: :func:`mser` with batches of 5 observations."""
    return mser(series, MSER_BATCH)


@dataclass(frozen=True)
class StoppingRule:
    """Add replications until ``metric``'s relative CI half-width is at most ``rel_half_width``.

    Each configuration is judged on its own; one that is not yet precise
    enough is given the number of replications the usual estimate
    ``n * (h / target)^2`` asks for (at least one more), never more than
    ``max_replications``.
    """

    metric: str
    rel_half_width: float
    max_replications: int = 30
    min_replications: int = 2
    confidence: float = CONFIDENCE

    def __post_init__(self) -> None:
        if not self.rel_half_width > 0:
            raise ConfigError("rel_half_width", self.rel_half_width, "a positive fraction")
        if self.min_replications < 2:
            raise ConfigError("min_replications", self.min_replications, "at least 2")
        if self.max_replications < self.min_replications:
            raise ConfigError(
                "max_replications",
                self.max_replications,
                f"at least min_replications ({self.min_replications})",
            )

    def replications_needed(self, values: Sequence[float] | np.ndarray) -> int:
        """How many replications the configuration with these observations should have."""
        n = len(values)
        if n < self.min_replications:
            return self.min_replications
        rel = mean_ci(values, self.confidence).relative_half_width
        if math.isnan(rel):  # all observations NaN: nothing more to learn
            return n
        if rel <= self.rel_half_width or n >= self.max_replications:
            return n
        wanted = math.ceil(n * (rel / self.rel_half_width) ** 2) if math.isfinite(rel) else n + 1
        return min(self.max_replications, max(n + 1, wanted))
