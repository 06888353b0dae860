"""A run's time series (``timeseries_interval_s > 0``): one row per interval of rates over
the interval, queue lengths and the accept policy's last decisions.

The rows are sampled by a call the engine makes every interval; the record keeps them
as one list per column (:data:`COLUMNS`).  ``acceptsim.timeseries`` plots them.

Some columns have the names of a measured run's time series
(``acceptsim.measure.timeseries_csv``, ``timeseries.csv``) because they mean the same:
``reply_rate_per_s``, ``accept_queue_len``, the CFS counters ``throttled_periods``,
``throttled_ms`` and ``usage_ms`` (per interval, as ``cpu.stat`` counts them; None
without a CPU quota), the kernel's ``listen_overflows_per_s`` and
``listen_drops_per_s`` (``TcpExtListenOverflows`` and ``TcpExtListenDrops``, as the
record's ``nstat_per_s`` names them) and ``server_cpu_busy_ms``.
"""

from __future__ import annotations

import math
from typing import Any

from acceptsim.models.client import Client
from acceptsim.models.latency import ResponseTimes
from acceptsim.sim.cpu import Cpu
from acceptsim.sim.engine import Environment
from acceptsim.sim.results import summary_ms

#: columns of a run's time series
COLUMNS = (
    "time_s", "target_rate_per_s", "reply_rate_per_s", "drops_per_s", "accept_rate_per_s",
    "accept_phases_per_s", "accept_queue_len", "syn_queue_len", "work_queue_len",
    "open_connections", "accept_limit", "work_budget_s",
    # the response times of the interval's replies (None: no reply) and its client timeouts
    "response_time_p50_ms", "response_time_p99_ms", "client_timeouts_per_s",
    # the server's CFS bandwidth limit over the interval (None: no CPU quota): periods in
    # which it was throttled, ms throttled, ms of CPU its tasks used (cpu.stat's counters;
    # with a cgroup per worker, added up)
    "throttled_periods", "throttled_ms", "usage_ms",
    # the kernel's counters as nstat names them (TcpExtListenOverflows, TcpExtListenDrops;
    # every listening socket) and the ms the server's CPUs were busy (tasks and kernel)
    "listen_overflows_per_s", "listen_drops_per_s", "server_cpu_busy_ms",
    # retransmitted SYNs that reached the server and SYN-ACKs it retransmitted
    # (TcpExtTCPSynRetrans as a host whose clients are local counts them)
    "syn_retrans_per_s",
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
        interval_s: float, end_s: float, latency: ResponseTimes | None = None,
        start_s: float = 0.0,
    ) -> None:  # fmt: skip
        """``bound``: the policy as the server bound it (its live ``view`` of the server,
        its ``last_limit`` and ``last_budget_s``); ``rate_per_s``: the target rate when
        the client has no rate profile (None: a closed loop, which has none);
        ``latency``: the client's response times, which each sample folds once it has
        read its interval's (:meth:`~acceptsim.models.latency.ResponseTimes.fold`);
        ``start_s``: the series' time 0, the clients' start (its first sample is due an
        interval later, and each row's ``time_s`` counts from it)."""
        self.latency = latency
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
        #: when the series started, and the samples taken: sample k is due at start +
        #: k x interval (not at a sum of intervals, whose rounding could push the last one
        #: past the run's end)
        self._start = start_s
        self._taken = 0
        #: the CFS limits (one per worker's cgroup, or one shared: each once) and the CPUs
        #: whose tasks they limit; none without a CPU quota
        cpus: list[Cpu] = list(env.cpus)
        self._cpus = cpus
        self._limited = [cpu for cpu in cpus if cpu.bandwidth is not None]
        limits: dict[int, Any] = {}
        for cpu in self._limited:
            limits.setdefault(id(cpu.bandwidth), cpu.bandwidth)
        self._limits = list(limits.values())
        #: the listening sockets (each once), found at the first sample, when every worker
        #: is built
        self._listens: list[Any] | None = None
        #: CFS counters, kernel counters and CPU seconds at the last sample
        self._kernel_last = self._kernel_counters()
        #: the sample due at the run's end, taken by :meth:`finish` once every event of
        #: that instant has run (the run's whole counters include them)
        self._final_due = False
        self._call: Any = None
        self._schedule_next(env.now)

    def _schedule_next(self, now: float) -> None:
        """The next sample: at its instant, or at the run's end by :meth:`finish`."""
        due = self._start + (self._taken + 1) * self.interval_s
        if due >= self.end_s - END_TOLERANCE_S:
            self._final_due = due <= self.end_s + END_TOLERANCE_S
        elif self._call is None:
            self._call = self.env.call_in(due - now, self._sample)
        else:
            self.env.schedule_call(self._call, due - now)

    def finish(self) -> None:
        """The run has ended: the sample due at its end, if any."""
        if self._final_due:
            self._final_due = False
            self._sample(None)

    def _kernel_counters(self) -> tuple[float, ...]:
        """Cumulative: throttled periods, seconds throttled, seconds the limited tasks
        used, ListenOverflows, ListenDrops, seconds the CPUs were busy, and SYNs and
        SYN-ACKs retransmitted."""
        periods, throttled = 0, 0.0
        for limit in self._limits:
            counts = limit.counters()
            periods += int(counts["throttled_periods"])
            throttled += counts["throttled_s"]
        used = sum(cpu.task_seconds() for cpu in self._limited)
        busy = sum(sum(cpu.usage().values()) for cpu in self._cpus)
        overflows = drops = retransmits = 0
        for listen in self._listens or ():
            counts = listen.drop_counts()
            overflows += counts["accept_q_full"] + counts["listen_overflow"]
            drops += sum(counts.values())
            retransmits += listen.syn_retransmits + listen.synack_retransmits
        return periods, throttled, used, overflows, drops, busy, retransmits

    def _find_listens(self) -> list[Any]:
        """Every worker's listening socket, each once (one shared socket, or one each with
        reuseport); read from the workers' views (a view's socket is its ``_listen``)."""
        found: dict[int, Any] = {}
        for view in self.bound.view.workers:
            found.setdefault(id(view._listen), view._listen)
        return list(found.values())

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
        latency = summary_ms(times[first:])
        # the interval's times read: the list may be folded now (it then starts empty)
        if self.latency is not None:
            self.latency.fold()
        self._client_last = (len(times), timeouts)
        profile = client.rate_profile
        target = self.rate_per_s if profile is None else profile.rate_at(now - interval / 2)
        if self._listens is None:  # the first sample: the kernel counters so far are all new
            self._listens = self._find_listens()
        before = self._kernel_last
        after = self._kernel_counters()
        self._kernel_last = after
        if self._limits:
            periods: Any = after[0] - before[0]
            throttled_ms: Any = 1e3 * (after[1] - before[1])
            usage_ms: Any = 1e3 * (after[2] - before[2])
        else:  # no CPU quota: these do not apply
            periods = throttled_ms = usage_ms = None
        row = (
            now - self._start, target, (replies - last[0]) / interval,
            (drops - last[1]) / interval,
            (accepts - last[2]) / interval, (phases - last[3]) / interval,
            view.accept_queue_len, view.syn_queue_len, view.work_queue_len,
            view.open_connections, finite_or_none(self.bound.last_limit),
            finite_or_none(self.bound.last_budget_s), latency["p50"], latency["p99"],
            (timeouts - timeouts_before) / interval, periods, throttled_ms, usage_ms,
            (after[3] - before[3]) / interval, (after[4] - before[4]) / interval,
            1e3 * (after[5] - before[5]), (after[6] - before[6]) / interval,
        )  # fmt: skip
        columns = self.columns
        for key, value in zip(COLUMNS, row, strict=True):
            columns[key].append(value)
        self._taken += 1
        self._schedule_next(now)
