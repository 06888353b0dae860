"""The configuration of one run: :class:`RunConfig` (frozen, validated data; everything
a sweep varies is one of its fields) and the named parameter sets it takes by name or
as tables of changes (:func:`resolve_costs`, :func:`resolve_kernel`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from acceptsim.models import arrivals, policies
from acceptsim.models.client import parse_turn_delays
from acceptsim.models.costs import CLUSTER1, PARAMETER_SETS, HostCosts
from acceptsim.models.kernel import LINUX_24, PROFILES, KernelProfile
from acceptsim.models.multicore import LAYOUTS, SOFTIRQ
from acceptsim.models.servers.base import WAKE_ALL, WAKE_BLOCKING, WAKE_EXCLUSIVE, WAKE_MUTEX
from acceptsim.models.servers.registry import SERVERS
from acceptsim.models.servers.spec import ServerSpec
from acceptsim.models.workloads import WORKLOADS, parse_wsesslog
from acceptsim.models.wrk_report import WRK_DEFAULT_THREADS
from acceptsim.sim.errors import ConfigError
from acceptsim.sim.params import Params, param, refuse_nan

#: how the clients reach the server (``RunConfig.network``)
NETWORKS = ("lan", "loopback")
#: the load generators whose rules a run's clients can follow (RunConfig.client)
CLIENTS = ("httperf", "wrk")

#: the per-packet costs of the listen path, which run on the CPU that receives a
#: client's segment: the server's on a LAN, the client's own on loopback
CLIENT_SEGMENT_COSTS = ("rx_segment_s", "syn_queue_s", "child_socket_s", "tx_segment_s")

#: the shortest time a duration, warm-up, timeout or sampling interval may be (1 us: the
#: CPU costs are of that order; a denormal 1e-320 s has no physical sense)
MIN_TIME_S = 1e-6
#: the largest finite accept-limit (beyond any queue; inf means no limit)
MAX_ACCEPT_LIMIT = 10**9
#: idle connections are held in memory, one record each
MAX_IDLE_CONNECTIONS = 10**6
#: httperf processes sharing one client CPU: beyond this a turn comes round more rarely
#: than a 1-s timeout (a bound against typos, like acceptsim measure's on its processes)
MAX_CLIENT_PROCESSES = 1024


#: the warm-up of a run that does not set one (the CLI, Python and sweeps alike)
WARMUP_RULE = "a quarter of duration_s, at most 5 s"
#: the longest warm-up the rule gives (s)
WARMUP_MAX_S = 5.0
#: the share of the run the rule leaves out below that
WARMUP_SHARE = 0.25


def default_text(name: str) -> str:
    """A RunConfig field's default as the command-line help shows it (``inf`` as inf, a
    rule as its text): one default per setting, read from its one declaration."""
    row = next(r for r in RunConfig.describe() if r["name"] == name)
    value = row["default"]
    if isinstance(value, float):
        return "inf" if math.isinf(value) else f"{value:g}"
    return str(value) if value != "" else "none"


def _warmup(config: Any) -> float:
    """:data:`WARMUP_RULE`."""
    return min(WARMUP_MAX_S, WARMUP_SHARE * config.duration_s)


#: the most CPUs a host may have (each is a processor of the model, with its worker)
MAX_CPUS = 1024
#: the workers of a run that does not set them
WORKERS_RULE = "one per CPU (1 for a server that runs as one worker)"
#: the wake-up rule of a run that does not set one
WAKEUP_RULE = "the server's own (the first that `acceptsim servers` lists for it)"
#: what a server that runs as one worker only is told of its socket's connections
WAKEUP_ONE_WORKER = WAKE_ALL
#: the wake-up rules (``RunConfig.wakeup``; acceptsim.models.multicore)
WAKEUPS = (WAKE_EXCLUSIVE, WAKE_ALL, WAKE_BLOCKING, WAKE_MUTEX)


#: the accept-limit of a run that does not set one
ACCEPT_LIMIT_RULE = "the server's own (`acceptsim servers NAME`: 1 for the paper's servers)"
#: the kernel profile of a run that does not name one
KERNEL_RULE = ("the server's own (`acceptsim servers NAME`: linux-2.4, the paper's, for the "
               "paper's servers; linux-modern for nginx and haproxy)")


def _accept_limit(config: Any) -> float:
    """:data:`ACCEPT_LIMIT_RULE`."""
    return config.server_spec().accept_limit


def default_kernel(server: Any) -> KernelProfile:
    """:data:`KERNEL_RULE`: the kernel profile of a run of ``server`` (a name, a
    ``MODULE:CLASS`` spec, a Server subclass or a ServerSpec) that names none."""
    return PROFILES[SERVERS.resolve(SERVERS.spec_of(server)).kernel]


def _workers(config: Any) -> int:
    """:data:`WORKERS_RULE`."""
    return int(config.cpus) if config.server_spec().wakeups else 1


def _wakeup(config: Any) -> str:
    """:data:`WAKEUP_RULE`."""
    spec = config.server_spec()
    return spec.wakeups[0] if spec.wakeups else WAKEUP_ONE_WORKER


@dataclass(frozen=True)
class RunConfig(Params):
    """Everything that defines one run.  Defaults reproduce the paper's setup.

    Magnitudes must make physical sense: a rate of at least 1 connection/s;
    durations, warm-ups, timeouts and sampling intervals of at least 1 us
    (:data:`MIN_TIME_S`; warm-up and intervals may be 0).  The expected work
    (:func:`acceptsim.models.work.estimate_work`) is checked by
    :func:`acceptsim.models.work.check_work`, not here, so a
    big configuration can still be built, described and swept with ``force``.
    """

    server: str = param(
        "userver", unit="", doc="server architecture (acceptsim servers): NAME, or a server "
        "of yours, as the class itself (a Server subclass, or a ServerSpec) or MODULE:CLASS "
        "(held as MODULE:CLASS@digest, the digest of its source)",
    )
    accept_limit: int = param(
        1, unit="connections", ge=1, le=MAX_ACCEPT_LIMIT, allow_inf=True,
        rule=(ACCEPT_LIMIT_RULE, _accept_limit),
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
        None, unit="s", ge=0.0, min_nonzero=MIN_TIME_S,
        doc="initial time left out of every measurement", rule=(WARMUP_RULE, _warmup),
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
        "static", unit="", doc="accept policy (acceptsim policies): NAME or NAME:key=value,...; "
        "static uses accept_limit unless given limit=; or a policy class of yours, as the class "
        "itself or MODULE:CLASS[:key=value,...]",
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
        0.0, unit="CPUs", ge=0.0, le=MAX_CPUS, min_nonzero=1e-3,
        doc="CFS bandwidth limit on the server task, as a cgroup quota over its period "
        "(cpu.max; acceptsim measure --server-cpu-quota): processor seconds it may use per "
        "second; once it has used cpu_quota x cpu_period_s, the kernel notices at its "
        "next tick (kernel.sched_tick_s) and throttles it until a period's quota has paid "
        "what it overran.  Kernel work is not limited (sim.cpu); with several "
        "workers, cpu_quota_scope says whose quota it is; 0: no limit",
    )
    cpu_quota_scope: str = param(
        "server", unit="", choices=("server", "worker"),
        doc="with several workers: server (one cgroup holds them all and shares cpu_quota, "
        "a container's CPU limit; up to the workers' number of CPUs) or worker (a cgroup "
        "per worker, each with cpu_quota, at most 1)",
    )
    cpu_period_s: float = param(
        0.1, unit="s", ge=1e-3, le=1.0,
        doc="CFS period of cpu_quota (cgroup cpu.max period; Linux default 100 ms)",
    )
    cpu_period_offset_s: float = param(
        0.0, unit="s", ge=0.0,
        doc="where cpu_quota's period timer fires: this long past multiples of "
        "cpu_period_s (every cgroup of the run), while the scheduler ticks on multiples of "
        "kernel.sched_tick_s; less than cpu_period_s.  A server that runs on past its "
        "quota is throttled at the first tick after the quota ran out, so this sets how "
        "long it runs in each period.  Each cgroup's timer has a place of its own, kept "
        "while it lives (perf, 2026-12-07: six fresh cgroups of 1 ms per 4 ms at 0.24-2.84 "
        "ms past a tick, nginx running 3.76-1.17 ms a period, tests/data/measured/"
        "period-timer-probes.toml; twelve `acceptsim measure` cgroups, four of them within "
        "0.3 ms, the others 1.2-3.3 ms); `acceptsim measure` records each run's, and its "
        "simulation takes it.  0: on the ticks' grid, as the kernel's sources read (what "
        "sets the place was not found); sweep it to see what the place does",
    )
    cpus: int = param(
        1, unit="CPUs", ge=1, le=MAX_CPUS,
        doc="processors of the server host (acceptsim.models.multicore); 1: the paper's "
        "uniprocessor",
    )
    workers: int = param(
        0, unit="processes", ge=1, le=MAX_CPUS, rule=(WORKERS_RULE, _workers),
        doc="server processes, worker i pinned to CPU i mod cpus (more workers than cpus "
        "share CPUs, scheduled as Linux does: sim.cpu.Core); more than one for a server that "
        "`acceptsim servers` lists with wake-up rules",
    )
    listen: str = param(
        "shared", unit="", choices=LAYOUTS,
        doc="listening sockets of several workers: shared (one accept queue every worker "
        "watches) or reuseport (one socket and queue per worker, SO_REUSEPORT)",
    )
    wakeup: str = param(
        "", unit="", choices=WAKEUPS,
        rule=(WAKEUP_RULE, _wakeup),
        doc="which workers a connection on a shared socket wakes: exclusive "
        "(EPOLLEXCLUSIVE: the first asleep in registration order), all (select, or epoll "
        "without EPOLLEXCLUSIVE), blocking (workers blocked in accept(), FIFO), mutex "
        "(nginx's accept_mutex: the holder)",
    )
    softirq: str = param(
        "rss", unit="", choices=SOFTIRQ,
        doc="where the kernel's per-packet work runs on several CPUs: rss (the CPU the "
        "flow's hash picks, RSS/RPS) or cpu0 (all on CPU 0)",
    )
    network: str = param(
        "lan", unit="", choices=NETWORKS,
        doc="how the clients reach the server: lan (their segments arrive from a NIC and "
        "the server host's kernel receives them on its CPUs, as on the paper's testbeds) or "
        "loopback (clients on the same host over lo: a segment's receive side runs on the "
        "CPU that sent it, so the clients' SYNs, ACKs, requests and FINs cost the server's "
        "CPUs nothing, while the receive side of the server's own sends is part of its "
        "system calls' measured costs; `acceptsim measure` runs)",
    )
    concurrency: int = param(
        0, unit="connections", ge=0, le=MAX_IDLE_CONNECTIONS,
        doc="a closed loop of this many users (wrk, ab): each opens its next connection as "
        "its last one ends (its reply, or its timeout); rate_per_s and rate_profile are then "
        "not used; 0: httperf's open loop at rate_per_s",
    )
    keepalive: bool = param(
        False, unit="", doc="with concurrency > 0: each user keeps its connection open and "
        "sends its next request when the reply arrives (wrk's default); a timeout ends it",
    )
    client: str = param(
        "httperf", unit="", choices=CLIENTS,
        doc="whose rules the clients follow: httperf (a step unanswered within timeout_s is "
        "given up: its connection closed, counted as a client timeout) or wrk (wrk 4.1's "
        "closed loop, with concurrency > 0: a request is never given up, its reply counts "
        "whenever it comes, and timeout_s is wrk's --timeout, the response time from which "
        "wrk counts a timeout; the record's wrk_latency_ms is wrk's latency report, "
        "models.wrk_report).  wrk polls with epoll, so httperf's select() loop costs "
        "(client_loop_base_s, client_poll_per_socket_s) do not apply to it",
    )
    wrk_threads: int = param(
        WRK_DEFAULT_THREADS, unit="threads", ge=1, le=MAX_IDLE_CONNECTIONS,
        doc="wrk --threads (its default 2), with client = wrk: the concurrency's connections "
        "are shared among them, and each opens its own one after another "
        "(HostCosts.client_connect_s)",
    )
    client_processes_per_cpu: int = param(
        1, unit="processes", ge=1, le=MAX_CLIENT_PROCESSES,
        doc="httperf processes busy-polling on one client CPU, each checking its timeouts "
        "only in its turns of one scheduler tick (acceptsim measure's loopback runs: "
        "load.processes on load.cpus); 1: each has a CPU of its own (the paper's client "
        "machines).  See models.client.Client.give_up_at",
    )
    client_turn_order_s: float = param(
        0.0, unit="s", ge=0.0,
        doc="with client_processes_per_cpu > 1: how long those processes keep the order of "
        "their turns, in the mean, before something else running on their CPU reorders "
        "them (ClientParams.turn_order_s; acceptsim measure's runs: "
        "acceptsim.measure.calibrate.turn_order_s); 0: no order outlasts a timeout, a "
        "deadline's place in its process's round is uniform",
    )
    client_turn_delays: str = param(
        "", unit="", doc="with client_processes_per_cpu > 1: where a step's deadline finds "
        "its process, as a run measured it, in place of client_turn_order_s: "
        "comma-separated probabilities p0,p1,...,pn that the process is running at the "
        "deadline (p0) or next runs on the d-th tick after the deadline's (pd), summing "
        "to 1 (ClientParams.turn_delays; acceptsim measure's traced runs: "
        "acceptsim.measure.switch_trace.KeptShare.delays); empty: not given",
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
    #: the kernel profile; None (or left out): :data:`KERNEL_RULE`, which follows the
    #: server through :meth:`from_dict` and ``replace`` until a profile is given
    kernel: KernelProfile = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        # parameter sets may be named: RunConfig(costs="cluster1", kernel="linux-modern")
        if isinstance(self.costs, str):
            object.__setattr__(self, "costs", resolve_costs(self.costs))
        if isinstance(self.kernel, str):
            object.__setattr__(self, "kernel", resolve_kernel(self.kernel))
        if not isinstance(self.policy, str) and callable(self.policy):
            # a policy class of the user's: held by its import name (a sweep hashes,
            # stores and resumes it like any field; workers import it by that name)
            object.__setattr__(self, "policy", policies.spec_of(self.policy))
        # a server of the user's likewise (a class or a ServerSpec); a name, or a spec
        # MODULE:CLASS, is resolved here: a bad one is refused before anything runs
        object.__setattr__(self, "server", SERVERS.spec_of(self.server))
        SERVERS.resolve(self.server)
        kernel_ruled = self.kernel is None or (isinstance(self.kernel, float)
                                               and self.kernel != self.kernel)
        if kernel_ruled:  # KERNEL_RULE: the server's own
            object.__setattr__(self, "kernel", default_kernel(self.server))
        super().__post_init__()
        if kernel_ruled:  # it follows the server, as the fields a rule gives do
            object.__setattr__(self, "_ruled", self._ruled | {"kernel"})
        for name in ("server_params", "workload_params"):
            object.__setattr__(self, name, _table(name, getattr(self, name)))
        self.build_server_params()
        self.build_workload_params()
        if self.idle_connections and not self.server_spec().idle_connections:
            raise ConfigError("idle_connections", self.idle_connections,
                              f"0 for server {self.server!r} (it cannot hold idle connections)")
        self._check_workers()
        per_worker = self.cpu_quota_scope == "worker" or self.workers == 1
        limit = 1 if per_worker else min(self.workers, self.cpus)
        if self.cpu_quota > limit:
            raise ConfigError("cpu_quota", self.cpu_quota,
                              f"at most {limit} CPU{'s' if limit > 1 else ''} (the CPUs the "
                              f"{'worker' if per_worker else 'server'}'s cgroup may use)")
        if self.cpu_period_offset_s >= self.cpu_period_s:
            raise ConfigError("cpu_period_offset_s", self.cpu_period_offset_s,
                              f"less than cpu_period_s ({self.cpu_period_s:g} s)")
        if self.client_processes_per_cpu > 1 and not self.kernel.client_timer_tick_s:
            raise ConfigError("client_processes_per_cpu", self.client_processes_per_cpu,
                              "1 unless the kernel's client_timer_tick_s > 0 (the processes' "
                              "turns race the client kernel's ticking SYN timer)")
        if self.client_turn_order_s > 0.0 and self.client_processes_per_cpu == 1:
            raise ConfigError("client_turn_order_s", self.client_turn_order_s,
                              "0 unless client_processes_per_cpu > 1 (it is the order of "
                              "their turns on one CPU)")
        if self.client_turn_delays:
            if self.client_processes_per_cpu == 1:
                raise ConfigError("client_turn_delays", self.client_turn_delays,
                                  "empty unless client_processes_per_cpu > 1 (it is where a "
                                  "deadline falls in their round of turns)")
            if self.client_turn_order_s > 0.0:
                raise ConfigError("client_turn_delays", self.client_turn_delays,
                                  "empty when client_turn_order_s is given (one or the other "
                                  "says where a deadline falls in the round)")
            try:
                parse_turn_delays(self.client_turn_delays)
            except ValueError as exc:
                raise ConfigError("client_turn_delays", self.client_turn_delays,
                                  str(exc)) from None
        if self.client == "wrk" and not self.concurrency:
            raise ConfigError("client", self.client, "httperf without concurrency (wrk runs "
                              "a closed loop: give concurrency > 0)")
        if self.client == "wrk" and self.wrk_threads > self.concurrency:
            raise ConfigError("wrk_threads", self.wrk_threads, f"at most concurrency "
                              f"({self.concurrency}): wrk needs a connection per thread")
        if self.client == "wrk" and self.client_processes_per_cpu > 1:
            raise ConfigError("client_processes_per_cpu", self.client_processes_per_cpu,
                              "1 with client = wrk (its threads poll with epoll; the turns "
                              "are httperf's)")
        if self.keepalive and not self.concurrency:
            raise ConfigError("keepalive", self.keepalive, "false without concurrency (the "
                              "open loop's connections follow the workload)")
        if self.concurrency and self.rate_profile:
            raise ConfigError("rate_profile", self.rate_profile, "empty with concurrency > 0 "
                              "(a closed loop has no target rate)")
        if self.warmup_s >= self.duration_s:
            raise ConfigError(
                "warmup_s", self.warmup_s, f"less than duration_s ({self.duration_s:g} s)"
            )
        if not isinstance(self.costs, HostCosts):
            raise ConfigError("costs", self.costs, "a HostCosts parameter set")
        if not isinstance(self.kernel, KernelProfile):
            raise ConfigError("kernel", self.kernel, "a KernelProfile")
        if self.kernel.tcp_wmem_bytes < self.kernel.mss_bytes:
            raise ConfigError("kernel.tcp_wmem_bytes", self.kernel.tcp_wmem_bytes,
                              f"at least kernel.mss_bytes ({self.kernel.mss_bytes}): a write "
                              "into the send buffer takes whole segments")
        policies.policy_params(self.policy, self.accept_limit)  # unknown name/parameter: error
        arrivals.parse(self.rate_profile)
        if self.workload == "wsesslog":
            if not self.workload_file:
                raise ConfigError("workload_file", "", "a session file for the wsesslog workload")
            parse_wsesslog(self.workload_file)  # report a bad file before any run

    def _check_workers(self) -> None:
        """The multi-core settings against each other and the server."""
        spec = self.server_spec()
        if self.workers > 1:
            if not spec.wakeups:
                several = ", ".join(n for n, s in SERVERS.items() if s.wakeups)
                raise ConfigError("workers", self.workers,
                                  f"1 for server {self.server!r} (it runs as one worker; "
                                  f"servers that run on several: {several})")
            if self.listen == "shared" and self.wakeup not in spec.wakeups:
                raise ConfigError("wakeup", self.wakeup,
                                  f"one of {', '.join(spec.wakeups)} for server "
                                  f"{self.server!r} on a shared socket")
            if self.listen == "reuseport" and self.wakeup == WAKE_MUTEX:
                raise ConfigError("wakeup", self.wakeup, "not mutex with listen = reuseport "
                                  "(each worker has a socket of its own: nginx takes no "
                                  "accept mutex for reuseport sockets)")
            if self.idle_connections:
                raise ConfigError("idle_connections", self.idle_connections,
                                  "0 with several workers (idle connections are modelled "
                                  "for one worker)")

    @classmethod
    def from_dict(cls, data: Any, base: Any = None) -> RunConfig:
        """As :meth:`~acceptsim.sim.params.Params.from_dict`, also taking ``costs`` and
        ``kernel`` by name or as tables."""
        data = dict(data)
        start = base if base is not None else cls()
        if "costs" in data:
            data["costs"] = resolve_costs(data["costs"], start.costs)
        if "kernel" in data and data["kernel"] is not None:
            # a table of changes starts from the run's kernel: the one given before, else
            # the (new) server's own
            given = "kernel" not in getattr(start, "_ruled", ())
            kernel = start.kernel if given else default_kernel(data.get("server", start.server))
            data["kernel"] = resolve_kernel(data["kernel"], kernel)
        names = {f.name for f in dataclasses.fields(cls)}
        for key in data:
            if key not in names:
                allowed = "unknown key; allowed: " + ", ".join(sorted(names))
                raise ConfigError(key, data[key], allowed)
        refuse_nan("", data)
        return dataclasses.replace(start, **start._followed(data))

    def server_spec(self) -> ServerSpec:
        """The server's spec: a built-in server's by name, or a server of the user's
        (``MODULE:CLASS``; :meth:`~acceptsim.models.servers.registry.ServerRegistry.resolve`)."""
        return SERVERS.resolve(self.server)

    def listen_costs(self) -> HostCosts:
        """The costs the listen path charges the server's CPUs: ``costs``, with the
        per-packet costs of the clients' segments at 0 on loopback (``network``), where
        the clients' own CPUs receive them."""
        if self.network == "loopback":
            return dataclasses.replace(self.costs, **dict.fromkeys(CLIENT_SEGMENT_COSTS, 0.0))
        return self.costs

    def loopback_rtt_s(self) -> float:
        """The clients' round trip on loopback (``network``): a segment sent on ``lo`` is
        received in its sender's softirq as it is sent, and reaches its socket once the
        sending CPU has run the receive path (``costs.rx_segment_s``), both ways."""
        return 2.0 * self.costs.rx_segment_s

    def build_server_params(self) -> Params:
        """The server's parameter set: its defaults updated by ``server_params``."""
        return self.server_spec().params.from_dict(dict(self.server_params))

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
