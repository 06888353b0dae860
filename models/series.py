"""A run's time series (``timeseries_interval_s > 0``): one row per interval of rates over
the interval, queue lengths and the accept policy's last decisions.

The rows are sampled by a call the engine makes every interval; the record keeps them
as one list per column (:data:`COLUMNS`).  ``acceptsim.timeseries`` plots them.
"""

from __future__ import annotations

import math
from typing import Any

from acceptsim.models.client import Client
from acceptsim.sim.engine import Environment
from acceptsim.sim.results import summary_ms

#: columns of a run's time series
COLUMNS = (
    "time_s", "target_rate_per_s", "reply_rate_per_s", "drops_per_s", "accept_rate_per_s",
    "accept_phases_per_s", "accept_queue_len", "syn_queue_len", "work_queue_len",
    "open_connections", "accept_limit", "work_budget_s",
    # the response times of the interval's replies (None: no reply) and its client timeouts
    "response_time_p50_ms", "response_time_p99_ms", "client_timeouts_per_s",
)  # fmt: skip

#: a sample may land this close past the run's end (float noise of summed intervals)
END_TOLERANCE_S = 1e-9


def finite_or_none(value: float) -> float | None:
    """Time-series cells: no decision yet (nan) or inf (no bound) -> None."""
    return value if value == value and value != math.inf else None


class TimeSeries:
    """Samples a run every ``interval_s`` up to ``end_s``; the first sample is scheduled
    when it is made (so the sampler is made where the run is wired, before it starts)."""

    def __init__(
        self, env: Environment, client: Client, bound: Any, rate_per_s: float | None,
        interval_s: float, end_s: float,
    ) -> None:  # fmt: skip
        """``bound``: the policy as the server bound it (its live ``view`` of the server,
        its ``last_limit`` and ``last_budget_s``); ``rate_per_s``: the target rate when
        the client has no rate profile (None: a closed loop, which has none)."""
        self.env = env
        self.client = client
        self.bound = bound
        self.rate_per_s = rate_per_s
        self.interval_s = interval_s
        self.end_s = end_s
        #: the series: one list per column of :data:`COLUMNS`
        self.columns: dict[str, list[Any]] = {k: [] for k in COLUMNS}
        #: the server's replies, drops, accepts and accept phases at the last sample
        self._last = (0, 0, 0, 0)
        #: the client's response times and timeouts counted at the last sample
        self._client_last = (0, 0)
        self._call = env.call_in(interval_s, self._sample)

    def _sample(self, _: object) -> None:
        """One row: rates over the interval just ended, queue lengths and the policy's
        last decisions now."""
        interval = self.interval_s
        env = self.env
        view = self.bound.view
        now = env.now
        replies, drops, accepts, phases = (
            view.replies, view.drops, view.accepts, view.accept_phases
        )
        last = self._last
        self._last = (replies, drops, accepts, phases)
        # the replies' response times and the client timeouts of the interval (both
        # counted in the measurement window only)
        client = self.client
        times, timeouts = client.response_times, client.timeouts
        first, timeouts_before = self._client_last
        self._client_last = (len(times), timeouts)
        latency = summary_ms(times[first:])
        profile = client.rate_profile
        target = self.rate_per_s if profile is None else profile.rate_at(now - interval / 2)
        row = (
            now, target, (replies - last[0]) / interval, (drops - last[1]) / interval,
            (accepts - last[2]) / interval, (phases - last[3]) / interval,
            view.accept_queue_len, view.syn_queue_len, view.work_queue_len,
            view.open_connections, finite_or_none(self.bound.last_limit),
            finite_or_none(self.bound.last_budget_s), latency["p50"], latency["p99"],
            (timeouts - timeouts_before) / interval,
        )  # fmt: skip
        columns = self.columns
        for key, value in zip(COLUMNS, row, strict=True):
            columns[key].append(value)
        if now + interval <= self.end_s + END_TOLERANCE_S:
            env.schedule_call(self._call, interval)
