"""A client's response times in bounded memory.

The compiled client appends every reply's response time to a plain list
(``Client.response_times`` of :mod:`acceptsim.models.client`: nothing more on the
per-reply path).  A list grows with simulated time (about 32 bytes a reply: 4 GB for the 1e8
connection attempts a run may make), so :class:`ResponseTimes` *folds* it into a
fixed-size histogram once it holds more than :data:`FOLD_THRESHOLD` values, and empties
it.  It folds from a timer every :data:`FOLD_EVERY_S` of simulated time, or, when the
run keeps a time series, from the series' sampler right after it has read the interval's
response times (:mod:`acceptsim.models.run_series`), so the series' per-interval percentiles
stay exact.  The list therefore never holds more than the threshold plus one fold
interval's replies.

The histogram has log-spaced bins from :data:`LOWEST_S` to :data:`HIGHEST_S`, each
:data:`BIN_RATIO` times as wide as the one before, and keeps the exact count, sum, minimum
and maximum beside them.  A summary (:meth:`ResponseTimes.summary_ms`) is then

* exact, the very numbers ``acceptsim.sim.results.summary_ms`` gives, while nothing
  has been folded (every run with at most :data:`FOLD_THRESHOLD` replies in its window);
* after a fold: the count and maximum exact, the mean exact up to the rounding of the sum,
  and each percentile within :data:`RELATIVE_PRECISION` (0.1%) of numpy's linear
  percentile of the very same values (each order statistic is read as its bin's geometric
  middle, clamped to the exact minimum and maximum; values outside the bins' range count
  in the first or last bin).
"""

from __future__ import annotations

import math
from typing import Any, Final

import numpy as np

from acceptsim.sim.results import summary_ms

#: response times kept as they are before they are folded into the histogram (~32 MB)
FOLD_THRESHOLD = 1_000_000
#: simulated seconds between two checks of the list's length (runs without a time series)
FOLD_EVERY_S: Final = 1.0
#: the bins' range, in seconds: from a nanosecond ...
LOWEST_S: Final = 1e-9
#: ... to about 11.6 simulated days
HIGHEST_S: Final = 1e6
#: each bin's upper edge over its lower one
BIN_RATIO: Final = 1.002
#: a folded percentile's largest error relative to the exact one: half a bin, in ratio
#: (sqrt(1.002) - 1 = 0.09995%)
RELATIVE_PRECISION: Final = 1e-3
_LOG_LOWEST: Final = math.log(LOWEST_S)
_LOG_RATIO: Final = math.log(BIN_RATIO)
#: how many bins (17,287: 138 kB of counts)
BINS: Final = math.ceil((math.log(HIGHEST_S) - _LOG_LOWEST) / _LOG_RATIO)
#: each bin's geometric middle, the value its members are read as
_MIDDLES = np.exp(_LOG_LOWEST + (np.arange(BINS) + 0.5) * _LOG_RATIO)


def _bin_counts(values: Any) -> np.ndarray:
    """How many of ``values`` (seconds) fall in each bin."""
    arr = np.asarray(values, dtype=float)
    with np.errstate(divide="ignore"):  # a zero: -inf, clipped into the first bin
        index = np.floor((np.log(arr) - _LOG_LOWEST) / _LOG_RATIO)
    index = np.clip(index, 0, BINS - 1).astype(np.int64)
    return np.bincount(index, minlength=BINS).astype(np.int64)


class ResponseTimes:
    """The response times of one :class:`~acceptsim.models.client.Client`'s window: its
    list, folded into a histogram past ``threshold`` values (None: :data:`FOLD_THRESHOLD`,
    read when it is made, so a test may lower it; or lower ``threshold``)."""

    def __init__(self, client: Any, threshold: int | None = None) -> None:
        self.client = client
        self.threshold = FOLD_THRESHOLD if threshold is None else threshold
        #: replies per bin folded so far (None: nothing folded yet), and their exact
        #: count, sum (seconds), minimum and maximum
        self.counts: np.ndarray | None = None
        self.folded = 0
        self.folded_sum = 0.0
        self.folded_min = math.inf
        self.folded_max = -math.inf
        #: folds made, and the most values the list held at a fold (for tests)
        self.folds = 0
        self.largest_list = 0

    def start_timer(self, env: Any, every_s: float = FOLD_EVERY_S) -> None:
        """Check the list every ``every_s`` of simulated time (a run without a time
        series; with one, its sampler calls :meth:`fold`)."""
        env.call_recurring(every_s, lambda: every_s, self._tick)

    def _tick(self, _: object) -> None:
        self.fold()

    def fold(self) -> bool:
        """Fold the client's list into the histogram and empty it, if it holds more than
        the threshold; whether it did."""
        times = self.client.response_times
        n = len(times)
        if n <= self.threshold:
            return False
        arr = np.fromiter(times, float, n)
        counts = _bin_counts(arr)
        self.counts = counts if self.counts is None else self.counts + counts
        self.folded += n
        self.folded_sum += float(arr.sum())
        self.folded_min = min(self.folded_min, float(arr.min()))
        self.folded_max = max(self.folded_max, float(arr.max()))
        self.folds += 1
        self.largest_list = max(self.largest_list, n)
        times.clear()  # the same list: the client keeps appending to it
        return True

    @property
    def count(self) -> int:
        """Response times recorded, folded or not."""
        return self.folded + len(self.client.response_times)

    def summary_ms(self) -> dict[str, float | None]:
        """``acceptsim.sim.results.summary_ms`` of every response time recorded: exact
        while nothing is folded, else within :data:`RELATIVE_PRECISION` (module doc)."""
        times = self.client.response_times
        if self.counts is None:
            return summary_ms(times)
        rest = np.fromiter(times, float, len(times))
        counts = self.counts + _bin_counts(rest) if len(rest) else self.counts
        n = self.folded + len(rest)
        total = self.folded_sum + float(rest.sum())
        low = min(self.folded_min, float(rest.min())) if len(rest) else self.folded_min
        high = max(self.folded_max, float(rest.max())) if len(rest) else self.folded_max
        cumulative = np.cumsum(counts)
        p50, p99, p999 = (_percentile(cumulative, n, q, low, high) for q in (50, 99, 99.9))
        return {"mean": total / n * 1e3, "p50": p50 * 1e3, "p99": p99 * 1e3,
                "p999": p999 * 1e3, "max": high * 1e3}  # fmt: skip

    def values_and_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """Every response time recorded, as distinct values (seconds) and how often each
        was seen: the list's times once each, and after a fold each non-empty bin's middle
        with its count (within :data:`RELATIVE_PRECISION` of its members)."""
        rest = np.asarray(self.client.response_times, dtype=float)
        if self.counts is None:
            return rest, np.ones(len(rest), dtype=np.int64)
        full = np.flatnonzero(self.counts)
        return (np.concatenate([_MIDDLES[full], rest]),
                np.concatenate([self.counts[full], np.ones(len(rest), dtype=np.int64)]))


def _percentile(cumulative: np.ndarray, n: int, q: float, low: float, high: float) -> float:
    """numpy's linear percentile ``q`` of ``n`` values binned with these cumulative counts,
    each order statistic read as its bin's middle (clamped to ``low`` and ``high``)."""
    h = (n - 1) * q / 100
    below = math.floor(h)
    ranks = np.array([below, min(below + 1, n - 1)])
    bins = np.searchsorted(cumulative, ranks, side="right")
    x0, x1 = np.clip(_MIDDLES[bins], low, high)
    return float(x0 + (h - below) * (x1 - x0))
