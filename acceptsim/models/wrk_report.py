"""What wrk 4.1 prints for a run's replies: the arithmetic of its report.

A simulated closed loop measures every reply's response time (request written to reply
read, as wrk times it: from the request's first write after the connection is up, so a
dropped SYN's retransmissions are not in it, but a wait in the accept queue is).  wrk
does not print those times as they are; it reduces them, and its report is what users
have.  So that a simulated run and a measured one are compared on the same numbers, the
simulation's times are reduced here the way wrk 4.1's ``stats.c`` and ``main`` reduce its
own (read from its sources):

* each time is counted in whole microseconds (``gettimeofday`` differences) in a
  histogram that ends at ``--timeout``; a time at or past it is not in the histogram but
  counted as a *timeout* (``Socket errors: ... timeout N``).  wrk does not abandon such a
  request: the reply still counts in ``requests``;
* before it prints, wrk *corrects* the histogram for coordinated omission: with
  ``expected`` the mean time between two requests of one connection
  (``runtime_us / (complete / connections)``, integer arithmetic), every time ``n`` of
  at least ``2 expected`` adds one sample at ``n - expected``, ``n - 2 expected``, ...
  down to above ``expected``, as if the requests its connection could not send meanwhile
  had waited that long;
* a percentile ``p`` is the first value, counting up from the smallest recorded time,
  at which the running count reaches ``round(p / 100 x count + 0.5)``; the mean is the
  histogram's mean over the same walk, divided by the whole (corrected) count.

:func:`wrk_latency_ms` applies this to any response times; the run record's
``wrk_latency_ms`` (present for ``client = "wrk"``) is it applied to the window's replies.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

#: the latency percentiles wrk --latency prints
WRK_PERCENTILES = (50.0, 75.0, 90.0, 99.0)
#: wrk's default --threads (its parse_args): the model's and acceptsim measure's default
WRK_DEFAULT_THREADS = 2
#: a microsecond: wrk's unit of time
_US = 1e-6


def corrected_histogram(hist: np.ndarray, expected: int, high: int) -> np.ndarray:
    """wrk's coordinated-omission correction of a histogram of whole microseconds (index
    = value): each count at ``n >= 2 expected`` (``n <= high``, the largest recorded
    value) is added again at ``n - k expected`` for every ``k >= 1`` that keeps it above
    ``expected``.  A count is added to index ``m`` once for each recorded value
    ``m + k expected`` (``k >= 1``), so the added counts are the suffix sums of the
    histogram taken per residue modulo ``expected``."""
    out = hist.astype(np.int64)
    if expected <= 0 or high < 2 * expected:
        return out
    rows = high // expected + 1
    grid = np.zeros(rows * expected, dtype=np.int64)
    grid[: high + 1] = out[: high + 1]
    grid = grid.reshape(rows, expected)
    # row i gets the sum of rows i+1, i+2, ... (the same residue, a multiple of expected up)
    suffix = np.cumsum(grid[::-1], axis=0)[::-1]
    added = np.zeros_like(grid)
    added[:-1] = suffix[1:]
    added = added.reshape(-1)
    added[: expected + 1] = 0  # only values above expected receive
    out[: high + 1] += added[: high + 1]
    return out


def wrk_latency_ms(values_s: Any, counts: Any, runtime_s: float, connections: int,
                   timeout_s: float) -> dict[str, Any]:
    """wrk 4.1's latency report for response times ``values_s`` (seconds), each seen
    ``counts`` times, over a run of ``runtime_s`` with ``connections`` connections and
    ``--timeout timeout_s``: ``mean``, ``p50``, ``p75``, ``p90``, ``p99`` and ``max`` in
    milliseconds (None when no time is below the timeout), ``timeouts`` (times at or past
    it) and ``requests`` (every reply).  See the module's documentation."""
    values = np.asarray(values_s, dtype=float)
    weights = np.asarray(counts, dtype=np.int64)
    if values.shape != weights.shape:
        raise ValueError(f"{values.shape} values but {weights.shape} counts")
    if connections < 1:
        raise ValueError(f"connections: {connections}, at least 1")
    limit = int(round(timeout_s / _US))
    us = np.floor(np.maximum(values, 0.0) / _US + 1e-6).astype(np.int64)
    recorded = us < limit
    requests = int(weights.sum())
    out: dict[str, Any] = {"requests": requests,
                           "timeouts": int(weights[~recorded].sum())}
    empty = {"mean": None, **{f"p{p:g}": None for p in WRK_PERCENTILES}, "max": None}
    if not recorded.any() or not weights[recorded].any():
        return {**out, **empty}
    us, weights = us[recorded], weights[recorded]
    present = us[weights > 0]
    low, high = int(present.min()), int(present.max())
    hist = np.bincount(us, weights=weights, minlength=high + 1).astype(np.int64)
    per_connection = requests // connections
    if per_connection > 0:
        hist = corrected_histogram(hist, int(runtime_s / _US + 1e-6) // per_connection, high)
    count = int(hist.sum())
    walk = hist[low: high + 1]
    cumulative = np.cumsum(walk)
    index = np.arange(low, high + 1, dtype=np.float64)
    result = {"mean": float((walk * index).sum()) / count * 1e-3}
    for p in WRK_PERCENTILES:
        rank = math.floor(p / 100.0 * count + 0.5 + 0.5)  # C's round(x + 0.5), x >= 0
        at = int(np.searchsorted(cumulative, rank))
        result[f"p{p:g}"] = (low + at) * 1e-3 if at < len(cumulative) else 0.0
    result["max"] = high * 1e-3
    return {**out, **result}
