"""One run: a host (CPU, kernel listen path, server) under an httperf load.

:class:`RunConfig` is the whole configuration of a run as frozen, validated
data; :func:`simulate` builds the model from it, runs it and returns the
run's result record (the JSON contract of ``acceptsim run``).  Everything a
sweep varies is a field of :class:`RunConfig`.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from typing import Any

from acceptsim.models import arrivals, policies
from acceptsim.models.client import Client, ClientParams
from acceptsim.models.costs import CLUSTER1, PARAMETER_SETS, HostCosts
from acceptsim.models.kernel import LINUX_24, PROFILES, KernelProfile, ListenSocket
from acceptsim.models.servers.base import ServerHost
from acceptsim.models.servers.registry import SERVERS
from acceptsim.models.workloads import WORKLOADS, parse_wsesslog
from acceptsim.sim.cpu import KERNEL, Cpu
from acceptsim.sim.engine import Environment
from acceptsim.sim.errors import ConfigError
from acceptsim.sim.params import Params, param
from acceptsim.sim.results import differences, ratio, summary_ms
from acceptsim.sim.streams import Streams

#: the shortest time a duration, warm-up, timeout or sampling interval may be (1 us: the
#: CPU costs are of that order; a denormal 1e-320 s has no physical sense)
MIN_TIME_S = 1e-6
#: the largest finite accept-limit (beyond any queue; inf means no limit)
MAX_ACCEPT_LIMIT = 10**9
#: idle connections are held in memory, one record each
MAX_IDLE_CONNECTIONS = 10**6
#: bounds on the expected work of one run (see :func:`estimate_work`), beyond which
#: :func:`simulate` (and ``acceptsim run``/``sweep``) refuse it unless forced: about
#: ten minutes of one core at ~190,000 simulated connection attempts per CPU-second
MAX_ATTEMPTS = 1e8
#: time-series rows (``timeseries_interval_s``) plus reply-series values
#: (``series_interval_s``) of one run, each kept in memory
MAX_SERIES_POINTS = 1e6
#: a server's threads and processes (Knot's threads, Flash's helpers, ...), each simulated
MAX_PROCESSES = 100_000


@dataclass(frozen=True)
class RunConfig(Params):
    """Everything that defines one run.  Defaults reproduce the paper's setup.

    Magnitudes must make physical sense: a rate of at least 1 connection/s;
    durations, warm-ups, timeouts and sampling intervals of at least 1 us
    (:data:`MIN_TIME_S`; warm-up and intervals may be 0).  The expected work
    (:func:`estimate_work`) is checked by :func:`check_work`, not here, so a
    big configuration can still be built, described and swept with ``force``.
    """

    server: str = param("userver", unit="", choices=tuple(SERVERS), doc="server architecture")
    accept_limit: int = param(
        1, unit="connections", ge=1, le=MAX_ACCEPT_LIMIT, allow_inf=True,
        doc="accept-limit per accept phase (1..1e9, or inf: no limit)",
    )
    workload: str = param("one-packet", unit="", choices=tuple(WORKLOADS), doc="workload")
    rate_per_s: float = param(
        20000.0, unit="connections/s", ge=1.0, doc="httperf target rate of new connections"
    )
    spacing: str = param(
        "poisson", unit="", choices=("poisson", "deterministic"), doc="spacing of connection starts"
    )
    timeout_s: float = param(
        10.0, unit="s", ge=MIN_TIME_S, doc="httperf --timeout, per step"
    )
    duration_s: float = param(20.0, unit="s", ge=MIN_TIME_S, doc="simulated time of the run")
    warmup_s: float = param(
        5.0, unit="s", ge=0.0, min_nonzero=MIN_TIME_S,
        doc="initial time left out of every measurement",
    )
    seed: int = param(1, unit="", ge=0, doc="seed of the run's random streams")
    series_interval_s: float = param(
        0.0, unit="s", ge=0.0, min_nonzero=MIN_TIME_S,
        doc="if > 0, also report replies per interval of this length "
        "over the whole run (`replies_per_interval`, for warm-up detection); 0: off",
    )
    workload_file: str = param(
        "", unit="", doc="session file of the wsesslog workload (httperf --wsesslog)"
    )
    policy: str = param(
        "static", unit="", doc="accept policy (models.policies): NAME or NAME:key=value,...; "
        "static uses accept_limit unless given limit=",
    )
    rate_profile: str = param(
        "", unit="", doc="time-varying target rate (models.arrivals), e.g. step:10000@0,30000@20; "
        "overrides rate_per_s; empty: constant rate_per_s",
    )
    timeseries_interval_s: float = param(
        0.0, unit="s", ge=0.0, min_nonzero=MIN_TIME_S,
        doc="if > 0, also report a time series (`timeseries`: reply "
        "rate, queue lengths, the policy's accept-limit, ...) sampled at this interval; 0: off",
    )
    cpu_quota: float = param(
        0.0, unit="CPUs", ge=0.0, le=1.0, min_nonzero=1e-3,
        doc="CFS bandwidth limit on the server task, as a cgroup quota over its period "
        "(cpu.max; acceptsim measure --server-cpu-quota): processor seconds it may use per "
        "second; it is throttled for the rest of a period once it has used "
        "cpu_quota x cpu_period_s.  Kernel work is not limited (sim.cpu); 0: no limit",
    )
    cpu_period_s: float = param(
        0.1, unit="s", ge=1e-3, le=1.0,
        doc="CFS period of cpu_quota (cgroup cpu.max period; Linux default 100 ms)",
    )
    idle_connections: int = param(
        0, unit="connections", ge=0, le=MAX_IDLE_CONNECTIONS,
        doc="idle persistent connections the clients open before "
        "the run and the server holds in its interest set (Chandra and Mosberger: 252 or 6,000)",
    )
    #: overrides of the server's own parameters (a table name = value, checked against the
    #: server's parameter class, e.g. ``DispatchParams``); kept as sorted pairs
    server_params: tuple[tuple[str, Any], ...] = ()
    #: overrides of the workload's own parameters, likewise
    workload_params: tuple[tuple[str, Any], ...] = ()
    costs: HostCosts = CLUSTER1
    kernel: KernelProfile = LINUX_24

    def __post_init__(self) -> None:
        # parameter sets may be named: RunConfig(costs="cluster1", kernel="linux-modern")
        if isinstance(self.costs, str):
            object.__setattr__(self, "costs", resolve_costs(self.costs))
        if isinstance(self.kernel, str):
            object.__setattr__(self, "kernel", resolve_kernel(self.kernel))
        super().__post_init__()
        for name in ("server_params", "workload_params"):
            object.__setattr__(self, name, _table(name, getattr(self, name)))
        self.build_server_params()
        self.build_workload_params()
        if self.idle_connections and not SERVERS[self.server].idle_connections:
            raise ConfigError("idle_connections", self.idle_connections,
                              f"0 for server {self.server!r} (it cannot hold idle connections)")
        if self.warmup_s >= self.duration_s:
            raise ConfigError(
                "warmup_s", self.warmup_s, f"less than duration_s ({self.duration_s:g} s)"
            )
        if not isinstance(self.costs, HostCosts):
            raise ConfigError("costs", self.costs, "a HostCosts parameter set")
        if not isinstance(self.kernel, KernelProfile):
            raise ConfigError("kernel", self.kernel, "a KernelProfile")
        policies.policy_params(self.policy, self.accept_limit)  # unknown name/parameter: error
        arrivals.parse(self.rate_profile)
        if self.workload == "wsesslog":
            if not self.workload_file:
                raise ConfigError("workload_file", "", "a session file for the wsesslog workload")
            parse_wsesslog(self.workload_file)  # report a bad file before any run

    @classmethod
    def from_dict(cls, data: Any, base: Any = None) -> RunConfig:
        """As :meth:`Params.from_dict`, also taking ``costs``/``kernel`` by name or as tables."""
        data = dict(data)
        start = base if base is not None else cls()
        if "costs" in data:
            data["costs"] = resolve_costs(data["costs"], start.costs)
        if "kernel" in data:
            data["kernel"] = resolve_kernel(data["kernel"], start.kernel)
        names = {f.name for f in dataclasses.fields(cls)}
        for key in data:
            if key not in names:
                allowed = "unknown key; allowed: " + ", ".join(sorted(names))
                raise ConfigError(key, data[key], allowed)
        return dataclasses.replace(start, **data)

    def build_server_params(self) -> Params:
        """The server's parameter set: its defaults updated by ``server_params``."""
        return SERVERS[self.server].params.from_dict(dict(self.server_params))

    def build_workload_params(self) -> Params:
        """The workload's parameter set: its defaults updated by ``workload_params``."""
        params = WORKLOADS[self.workload][1].from_dict(dict(self.workload_params))
        if self.workload_file:
            params = params.replace(path=self.workload_file)
        return params

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["server_params"] = dict(self.server_params)
        out["workload_params"] = dict(self.workload_params)
        out["costs"] = self.costs.to_dict()
        out["kernel"] = self.kernel.to_dict()
        return out


@dataclass(frozen=True)
class Work:
    """The expected work of one run, known before it starts."""

    #: simulated connection attempts: the target rate (a profile's peak) plus a
    #: server's own background stream, times the duration (retransmissions not
    #: counted), plus the idle connections opened before the run
    attempts: float
    #: time-series rows and reply-series values the run keeps
    series_points: float
    #: the server's threads and processes (its parameters in those units), each simulated
    processes: float = 0.0
    #: the server parameters counted in ``processes``
    process_fields: tuple[str, ...] = ()


def estimate_work(config: RunConfig) -> Work:
    """What ``config`` will cost: an upper estimate computed from its fields alone."""
    profile = arrivals.parse(config.rate_profile)
    server_params = config.build_server_params()
    rate = config.rate_per_s if profile is None else profile.peak
    rate += float(getattr(server_params, "bg_rate_per_s", 0.0))
    points = 0.0
    for interval in (config.timeseries_interval_s, config.series_interval_s):
        if interval > 0:
            points += config.duration_s / interval
    attempts = rate * config.duration_s + config.idle_connections
    fields = tuple(
        row["name"] for row in server_params.describe() if row["unit"] in ("threads", "processes")
    )
    processes = float(sum(getattr(server_params, name) for name in fields))
    return Work(attempts, points, processes, fields)


#: how a user lifts the bounds of :func:`check_work`
FORCE_HINT = "--force (force=True from Python) runs it anyway"


def check_work(config: RunConfig, force: bool = False) -> Work:
    """The run's :class:`Work`; beyond :data:`MAX_ATTEMPTS`, :data:`MAX_SERIES_POINTS` or
    :data:`MAX_PROCESSES` a :class:`ConfigError` with the estimate and how to lift the
    bound, unless ``force``."""
    work = estimate_work(config)
    if force:
        return work
    if not work.attempts <= MAX_ATTEMPTS:
        seconds = work.attempts / SPEED_ATTEMPTS_PER_S
        cost = (
            "it would never end" if math.isinf(seconds) else
            f"about {_duration_text(seconds)} of CPU at ~{SPEED_ATTEMPTS_PER_S:,.0f} attempts/s"
        )  # fmt: skip
        raise ConfigError(
            "rate_per_s x duration_s", work.attempts,
            f"at most {MAX_ATTEMPTS:.0e} simulated connection attempts per run (this one: "
            f"{cost}); check the rate and duration, or {FORCE_HINT}",
        )  # fmt: skip
    if not work.series_points <= MAX_SERIES_POINTS:
        raise ConfigError(
            "duration_s / sampling interval", work.series_points,
            f"at most {MAX_SERIES_POINTS:.0e} time-series points per run; use a longer "
            f"timeseries_interval_s (--timeseries) or series_interval_s, or {FORCE_HINT}",
        )  # fmt: skip
    if not work.processes <= MAX_PROCESSES:
        raise ConfigError(
            "server_params " + " + ".join(work.process_fields), work.processes,
            f"at most {MAX_PROCESSES:,.0f} simulated threads and processes per run, or "
            f"{FORCE_HINT}",
        )  # fmt: skip
    return work


#: the simulator's typical speed, for the time estimates in messages only
SPEED_ATTEMPTS_PER_S = 190_000.0


def _duration_text(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400 * 365:
        return f"{seconds / 3600:,.0f} h"
    return f"{seconds / (86400 * 365):,.3g} years"


def _table(name: str, value: Any) -> tuple[tuple[str, Any], ...]:
    """A table of overrides as a sorted tuple of pairs (hashable, immutable)."""
    if isinstance(value, dict):
        return tuple(sorted(value.items()))
    if isinstance(value, tuple) and all(isinstance(p, tuple) and len(p) == 2 for p in value):
        return tuple(sorted(value))
    raise ConfigError(name, value, "a table of name = value")


def _resolve(value: Any, base: Any, named: dict[str, Any], field: str, name_key: str) -> Any:
    """A parameter set given as an object, a name, or a table of changes (a table may
    start from a named set with ``name_key = "..."``)."""
    cls = type(base)
    if isinstance(value, cls):
        return value
    if isinstance(value, str):
        if value not in named:
            raise ConfigError(field, value, "one of " + ", ".join(named))
        return named[value]
    if isinstance(value, dict):
        value = dict(value)
        start = value.pop(name_key, None)
        start_set = _resolve(start, base, named, field, name_key) if start is not None else base
        return cls.from_dict(value, base=start_set)
    raise ConfigError(field, value, f"a name ({', '.join(named)}) or a table of settings")


def resolve_costs(value: Any, base: HostCosts = CLUSTER1) -> HostCosts:
    """Costs by name (``cluster1``), or a table of costs (``base = "cluster1"`` optional)."""
    return _resolve(value, base, PARAMETER_SETS, "costs", "base")


def resolve_kernel(value: Any, base: KernelProfile = LINUX_24) -> KernelProfile:
    """A kernel profile by name, or a table of settings (``name = "linux-2.4"`` optional)."""
    return _resolve(value, base, PROFILES, "kernel", "name")


class Host:
    """The model of one run, built from a :class:`RunConfig` and not yet run."""

    def __init__(self, config: RunConfig, policy: Any = None) -> None:
        """``policy``: a policy object, or a zero-argument factory called here, used
        instead of ``config.policy`` (see :mod:`models.policies`)."""
        self.config = config
        self.env = env = Environment()
        self.streams = streams = Streams(config.seed)
        spec = SERVERS[config.server]
        self.cpu = Cpu(env, spec.categories)
        if config.cpu_quota:
            self.cpu.limit(config.cpu_quota * config.cpu_period_s, config.cpu_period_s)
        workload_cls, workload_params_cls = WORKLOADS[config.workload]
        self.workload = workload_cls(config.build_workload_params(), streams)
        client_params = ClientParams(
            rate_per_s=config.rate_per_s, spacing=config.spacing, timeout_s=config.timeout_s,
            rate_profile=config.rate_profile,
        )
        self.client = Client(
            env, client_params, config.kernel, self.workload, streams, config.costs
        )
        server_params = config.build_server_params()
        self.listen = ListenSocket(
            env, self.cpu, config.costs, config.kernel, server_params.backlog, self.client
        )
        self.client.connect(self.listen)
        self.custom_policy = policy
        if policy is None:
            policy = policies.build(config.policy, config.accept_limit)
        elif isinstance(policy, type) or (
            callable(policy) and not hasattr(policy, "accept_limit")
        ):
            policy = policy()  # a class or factory: a fresh policy for this run
        self.policy = policy
        host = ServerHost(env, self.cpu, self.listen, self.client, config.costs)
        self.server = spec.cls(host, server_params, policy)
        # what the server calls: the policy it bound to a live view of itself when built
        self.bound = self.server.policy
        if config.idle_connections:
            self.server.adopt_idle(config.idle_connections)
        self.client.window_start = config.warmup_s
        self.client.window_end = config.duration_s
        if config.series_interval_s > 0:
            self.client.record_series(config.series_interval_s, config.duration_s)
        self._start: dict[str, Any] = {}
        self.timeseries: dict[str, list[float]] | None = None
        if config.timeseries_interval_s > 0:
            self.timeseries = {k: [] for k in TIMESERIES_COLUMNS}
            self._ts_last = (0, 0, 0, 0)
            #: the client's response times and timeouts counted at the last sample
            self._ts_client_last = (0, 0)
            self._ts_call = env.call_in(config.timeseries_interval_s, self._sample)

    def _sample(self, _: object) -> None:
        """One row of the time series: rates over the interval just ended, queue
        lengths and the policy's last decisions now."""
        config = self.config
        interval = config.timeseries_interval_s
        env = self.env
        view = self.bound.view
        now = env.now
        replies, drops, accepts, phases = (
            view.replies, view.drops, view.accepts, view.accept_phases
        )
        last = self._ts_last
        self._ts_last = (replies, drops, accepts, phases)
        # the replies' response times and the client timeouts of the interval (both
        # counted in the measurement window only)
        client = self.client
        times, timeouts = client.response_times, client.timeouts
        first, timeouts_before = self._ts_client_last
        self._ts_client_last = (len(times), timeouts)
        latency = summary_ms(times[first:])
        profile = client.rate_profile
        target = config.rate_per_s if profile is None else profile.rate_at(now - interval / 2)
        row = (
            now, target, (replies - last[0]) / interval, (drops - last[1]) / interval,
            (accepts - last[2]) / interval, (phases - last[3]) / interval,
            view.accept_queue_len, view.syn_queue_len, view.work_queue_len,
            view.open_connections, _finite_or_none(self.bound.last_limit),
            _finite_or_none(self.bound.last_budget_s), latency["p50"], latency["p99"],
            (timeouts - timeouts_before) / interval,
        )  # fmt: skip
        ts = self.timeseries
        assert ts is not None
        for key, value in zip(TIMESERIES_COLUMNS, row, strict=True):
            ts[key].append(value)
        if now + interval <= config.duration_s + 1e-9:
            env.schedule_call(self._ts_call, interval)

    def _snapshot(self) -> dict[str, Any]:
        listen = self.listen
        return {
            "cpu": self.cpu.usage(),
            "server": self.server.counters(),
            "drops": listen.drop_counts(),
            "cookies_sent": listen.cookies_sent,
            "cfs": self.cpu.bandwidth.counters() if self.cpu.bandwidth else {},
        }

    def run(self, progress: bool = False, slices: int | None = None) -> dict[str, Any]:
        """Run to ``duration_s`` and return the record.

        ``progress``: show simulated time, attempts per second and an ETA on stderr
        when it is a terminal (tqdm; nothing otherwise).  The run then advances in
        slices of simulated time, which gives the very same result as one stretch
        (``slices`` forces a number of slices, for tests).
        """
        config = self.config
        env = self.env
        self.client.start()
        env.call_at(config.warmup_s, lambda _: self._start.update(self._snapshot()))
        cpu_started = time.process_time()
        self._advance(progress, slices)
        self.client.finish()
        cpu_time = time.process_time() - cpu_started
        return self._result(self._snapshot(), cpu_time)

    def _advance(self, progress: bool, slices: int | None) -> None:
        end = self.config.duration_s
        bar = _progress_bar(end) if progress else None
        if bar is None and not slices:
            self.env.run(until=end)  # no terminal: one stretch, no overhead
            return
        if not slices:  # about SLICE_ATTEMPTS attempts (a fraction of a second) per slice
            attempts = estimate_work(self.config).attempts
            slices = int(min(MAX_SLICES, max(1, math.ceil(attempts / SLICE_ATTEMPTS))))
        started = time.perf_counter()
        try:
            for i in range(1, slices + 1):
                until = end if i == slices else end * i / slices
                self.env.run(until=until)
                if bar is not None:
                    wall = time.perf_counter() - started
                    rate = self.client._next_id / wall if wall > 0 else 0.0
                    bar.set_postfix_str(f"{rate:,.0f} attempts/s", refresh=False)
                    bar.update(until - bar.n)
        finally:
            if bar is not None:
                bar.close()

    def _result(self, end: dict[str, Any], cpu_time: float) -> dict[str, Any]:
        config = self.config
        start = self._start
        window = config.duration_s - config.warmup_s
        client = self.client
        server = end["server"].since(start["server"])
        drops = differences(end["drops"], start["drops"])
        drops["total"] = sum(drops.values())
        cookies = end["cookies_sent"] - start["cookies_sent"]
        used = differences(end["cpu"], start["cpu"])
        shares = {KERNEL: used.pop(KERNEL) / window}
        shares.update({k: v / window for k, v in used.items()})
        idle = 1.0 - sum(shares.values())
        shares["idle"] = 0.0 if abs(idle) < 1e-9 else idle  # float noise of summed costs
        has_select = self.server.has_select
        bound = self.bound
        static = isinstance(self.policy, policies.StaticLimit)
        profile = client.rate_profile  # with one, the target is its mean over the window
        target = (
            config.rate_per_s if profile is None
            else profile.mean_rate(config.warmup_s, config.duration_s)
        )  # fmt: skip
        result: dict[str, Any] = {
            "server": config.server,
            "accept_limit": self.policy.limit if static else config.accept_limit,
            # the policy as configured (a spec), or a custom policy's name
            "policy": config.policy if self.custom_policy is None else bound.name,
            "policy_name": bound.name,
            "policy_params": _policy_params(self.policy),
            "rate_profile": config.rate_profile,
            "workload": config.workload,
            "target_rate_per_s": target,
            "target_request_rate_per_s": target * self.workload.mean_requests_per_connection(),
            "duration_s": config.duration_s,
            "warmup_s": config.warmup_s,
            "seed": config.seed,
            "idle_connections": config.idle_connections,
            "reply_rate_per_s": client.replies / window,
            "connection_rate_per_s": client.attempted / window,
            "accept_rate_per_s": server.accepts / window,
            "accept_phases_per_s": server.accept_phases / window,
            "accepts_per_phase": ratio(server.accepts, server.accept_phases),
            "accept_phases_skipped": server.accept_skips,
            "drops_per_s": {k: v / window for k, v in drops.items()},
            "select_calls_per_s": server.select_calls / window if has_select else None,
            "conns_per_work_phase": ratio(server.conns_worked, server.work_phases),
            "response_time_ms": summary_ms(client.response_times),
            "open_connections_mean": server.open_area / window,
            "client_timeouts_per_s": client.timeouts / window,
            "wasted_replies_per_s": client.wasted_replies / window,
            # httperf's event-loop reaction delay (0 when the testbed's client loop is off)
            "client_reaction_ms_mean": 1e3 * ratio(client.reaction_delays, client.reactions)
            if client.reactions else 0.0,
            "cpu_share": shares,
            "connections": {
                "attempted": client.attempted,
                "completed": client.completed,
                "timed_out": client.timed_out,
                "in_flight_at_end": client.in_flight_at_end,
            },
            # SYN drops per connection of the window, by outcome (None: no such connection);
            # the paper's 20,000/s pair is about three per failed connection, none otherwise
            "syn_drops_per_completed": ratio(client.completed_syn_drops, client.completed),
            "syn_drops_per_timed_out": ratio(client.timed_out_syn_drops, client.timed_out),
            "httperf": client.httperf_summary(),
            # the same drops under the names `nstat` gives them on a modern kernel
            "nstat_per_s": {
                "TcpExtListenOverflows": (drops["accept_q_full"] + drops["listen_overflow"])
                / window,
                "TcpExtListenDrops": drops["total"] / window,
                "TcpExtTCPReqQFullDrop": drops["syn_q_full"] / window,
                "TcpExtTCPReqQFullDoCookies": cookies / window,
                "TcpExtSyncookiesSent": cookies / window,
            },
            "queues": {
                "accept_queue_max": self.listen.max_accept_len,
                "accept_queue_capacity": self.listen.backlog + 1,
                "syn_queue_max": self.listen.max_syn_len,
                "syn_queue_capacity": self.listen.syn_capacity,
            },
            "sim_cpu_time_s": cpu_time,
            "sim_conns_per_cpu_s": ratio(client._next_id, cpu_time),
        }
        if client.series is not None:
            result["replies_per_interval"] = list(client.series)
        if self.timeseries is not None:
            result["timeseries"] = self.timeseries
        if self.cpu.bandwidth is not None:  # as the cgroup's cpu.stat reports it
            cfs = differences(end["cfs"], start["cfs"])
            result["cfs"] = {
                "quota_cpus": config.cpu_quota,
                "period_s": config.cpu_period_s,
                "periods": cfs["periods"],
                "throttled_periods": cfs["throttled_periods"],
                "throttled_share": cfs["throttled_s"] / window,
            }
        if "busy_area" in server.own:
            result["threads_busy_mean"] = server.own["busy_area"] / window
        result.update(self.server.result_extras(server, window))  # a server's own measures
        return result


#: columns of a run's time series (``timeseries_interval_s > 0``)
TIMESERIES_COLUMNS = (
    "time_s", "target_rate_per_s", "reply_rate_per_s", "drops_per_s", "accept_rate_per_s",
    "accept_phases_per_s", "accept_queue_len", "syn_queue_len", "work_queue_len",
    "open_connections", "accept_limit", "work_budget_s",
    # the response times of the interval's replies (None: no reply) and its client timeouts
    "response_time_p50_ms", "response_time_p99_ms", "client_timeouts_per_s",
)  # fmt: skip


#: simulated connection attempts per slice of a run shown with progress (~0.3 s of wall time)
SLICE_ATTEMPTS = 50_000
MAX_SLICES = 10_000


def _progress_bar(total_s: float) -> Any:
    """A tqdm bar over simulated seconds, or None when stderr is not a terminal."""
    from tqdm import tqdm

    bar = tqdm(
        total=total_s, disable=None, leave=False, dynamic_ncols=True, unit="s",
        bar_format="simulated {n:,.2f} of {total:,.2f} s |{bar}| {postfix} "
        "[{elapsed} elapsed, ETA {remaining}]",
    )  # fmt: skip
    if bar.disable:
        bar.close()
        return None
    return bar


def _finite_or_none(value: float) -> float | None:
    """Time-series cells: no decision yet (nan) or inf (no bound) -> None."""
    return value if value == value and value != math.inf else None


def _policy_params(policy: Any) -> dict[str, Any]:
    """A built-in policy's parameters (empty for a custom policy without ``p``)."""
    if isinstance(policy, policies.StaticLimit):
        return {"limit": policy.limit}
    params = getattr(policy, "p", None)
    return params.to_dict() if hasattr(params, "to_dict") else {}


def simulate(
    config: RunConfig | None = None,
    policy: Any = None,
    *,
    force: bool = False,
    progress: bool = False,
    **overrides: Any,
) -> dict[str, Any]:
    """Run one configuration and return its result record.

    ``policy``: a built-in policy spec (a string, as ``RunConfig.policy``), or
    any policy object (or zero-argument class/factory), which then replaces
    ``config.policy`` for this run (:mod:`models.policies` states the contract).
    A run whose expected work exceeds :data:`MAX_ATTEMPTS` or
    :data:`MAX_SERIES_POINTS` raises :class:`ConfigError` before it starts,
    unless ``force``.  ``progress``: a progress bar on stderr if it is a terminal.
    """
    if isinstance(policy, str):
        overrides["policy"] = policy
        policy = None
    if config is None:
        config = RunConfig.from_dict(overrides)
    elif overrides:
        config = RunConfig.from_dict(overrides, base=config)
    check_work(config, force)
    return Host(config, policy).run(progress=progress)
