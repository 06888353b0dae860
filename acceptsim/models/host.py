"""The model of one run, wired from its configuration: the CPU, the kernel's listen
socket, the clients, the workload and the server with its accept policy.

:class:`Host` builds the model and runs it; what it measured is read by
:mod:`acceptsim.models.record`, and its time series by :mod:`acceptsim.models.run_series`.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from acceptsim.models import multicore, policies, record
from acceptsim.models.client import Client, ClientParams
from acceptsim.models.config import RunConfig
from acceptsim.models.latency import ResponseTimes
from acceptsim.models.multicore import Workers, sum_dicts
from acceptsim.models.progress import advance
from acceptsim.models.run_series import TimeSeries
from acceptsim.models.servers.registry import SERVERS
from acceptsim.models.tcp import SendPath
from acceptsim.models.work import estimate_work
from acceptsim.models.workloads import WORKLOADS
from acceptsim.sim.cpu import Bandwidth, Cpu
from acceptsim.sim.engine import Environment
from acceptsim.sim.streams import Streams


def start_phase(config: RunConfig, streams: Streams) -> float:
    """When a run's clients start (s after time 0, where the kernel's clocks start).

    Where the start falls on the host kernel's timer grid matters wherever something
    carries state across it:

    * a closed loop's users all connect at once, so which scheduler tick and CFS period
      the burst meets, and on which tick the SYNs it loses are retransmitted (the
      wheel's first level above a tick gathers them, ``client_timer_tick_s`` x 2 **
      ``client_timer_wheel_shift``), set the fate of those first connections;
    * a CPU quota's period runs on its own grid (multiples of the period on the
      monotonic clock: ``start_cfs_bandwidth`` forwards the period timer on it), and a
      server idle before the load holds a whole period's quota when the load starts (the
      period timer refills the pool before it stops for an idle group), so the first
      period gives the server its quota within what is left of that period, however
      short, and the first second holds up to one period's quota more than the seconds
      after it.

    A real client starts at an arbitrary instant of that grid, so the start is drawn
    uniformly over its longest cycle (that bucket, the scheduler tick, the CFS period)
    from the run's seed (stream ``"client_start"``); at 0, on every grid line at once,
    the model met one particular alignment in every run (for a quota: a period's start,
    the least quota the first second can hold).  An open loop without a quota starts at
    0: nothing then carries state across its start, and its connections' instants are
    drawn already (a shift would change no distribution, only the draws).
    """
    if not config.concurrency and not config.cpu_quota:
        return 0.0
    kernel = config.kernel
    cycle = max(kernel.client_timer_tick_s * float(2**kernel.client_timer_wheel_shift),
                kernel.sched_tick_s, config.cpu_period_s if config.cpu_quota else 0.0)
    if cycle <= 0.0:
        return 0.0
    return float(streams.generator("client_start").uniform(0.0, cycle))


class Host:
    """The model of one run, built from a :class:`~acceptsim.models.config.RunConfig` and
    not yet run."""

    def __init__(self, config: RunConfig, policy: Any = None) -> None:
        """``policy``: a policy object, or a zero-argument factory called here, used
        instead of ``config.policy`` (see :mod:`acceptsim.models.policies`)."""
        self.config = config
        self.env = env = Environment()
        self.streams = streams = Streams(config.seed)
        spec = SERVERS.resolve(config.server)
        #: what each worker runs on (worker i on ``cpus[i]``): its CPU, or with more
        #: workers than CPUs its Context on CPU i mod cpus (the first ``config.cpus`` are
        #: the processors' first Contexts, which their kernel work is charged to);
        #: ``cpu`` is the first
        self.cpus: list[Cpu] = multicore.processors(env, spec.categories, config)
        for cpu in self.cpus:
            cpu.wake_latency_s = config.costs.wakeup_latency_s
            cpu.wake_latency_cold_s = config.costs.wakeup_latency_cold_s
            cpu.wake_latency_tau_s = config.costs.wakeup_latency_tau_s
            cpu.cold_s = config.costs.wakeup_cold_s
            cpu.cold_tau_s = config.costs.wakeup_cold_tau_s
        self.cpu = self.cpus[0]
        #: the CFS limits: one per worker's cgroup, or one the workers share
        self.limits: list[Any] = []
        if config.cpu_quota:
            quota_s = config.cpu_quota * config.cpu_period_s
            # the kernel notices a used-up quota at its scheduler tick (sim.cpu.Bandwidth)
            tick_s = config.kernel.sched_tick_s
            # one cgroup for the server's workers, or one per worker
            workers = self.cpus[: config.workers]
            groups = [workers] if config.cpu_quota_scope == "server" else [[c] for c in workers]
            # (each period timer at the run's place against the ticks)
            self.limits = [Bandwidth(group, quota_s, config.cpu_period_s, tick_s,
                                     config.cpu_period_offset_s)
                           for group in groups]
        workload_cls, _ = WORKLOADS[config.workload]
        self.workload = workload_cls(config.build_workload_params(), streams)
        # wrk never gives a request up (its timeout only names the slow ones in its report,
        # models.wrk_report): a step's deadline past the run's end is none, and wrk's epoll
        # loop does not pay httperf's select() scans
        wrk = config.client == "wrk"
        server_params = config.build_server_params()
        client_params = ClientParams(
            rate_per_s=config.rate_per_s, spacing=config.spacing,
            timeout_s=config.duration_s if wrk else config.timeout_s,
            rate_profile=config.rate_profile, concurrency=config.concurrency,
            keepalive=config.keepalive, processes_per_cpu=config.client_processes_per_cpu,
            turn_order_s=config.client_turn_order_s,
            turn_delays=config.client_turn_delays,
            asks_close=wrk and not config.keepalive,
            connect_threads=config.wrk_threads if wrk else 0,
            # a server that limits the requests of a kept connection closes it then (nginx's
            # keepalive_requests); one whose parameters have no such limit never does
            kept_requests=getattr(server_params, "keepalive_requests", 0),
            # on loopback a segment reaches its socket as it is sent, not a LAN's delay later
            **({"rtt_s": config.loopback_rtt_s()} if config.network == "loopback" else {}),
        )
        client_costs = (dataclasses.replace(config.costs, client_loop_base_s=0.0,
                                            client_poll_per_socket_s=0.0)
                        if wrk else config.costs)
        self.client = Client(
            env, client_params, config.kernel, self.workload, streams, client_costs
        )
        if config.network == "loopback":  # the clients' timers tick on the host's kernel,
            self.client.share_one_kernel()  # and each connect() completes its handshake
            self.client.handshake_in_connect()
        # the send side charges the server host's kernel, and on loopback there is no link
        self.client.tx = SendPath(
            env, self.client, config.kernel, config.listen_costs(), config.costs.client_machines,
            0 if config.network == "loopback" else config.costs.nics,
        )
        self.custom_policy = policy
        #: every listening socket (one per worker with reuseport), and the workers (the
        #: server itself on one); one CPU is the case cpus = workers = 1 of the same wiring
        self.listens, self.workers = multicore.build(self, spec, server_params, policy)
        self.listen = self.listens[0]
        self.policy = self.workers[0]._policy
        self.server = self.workers[0] if len(self.workers) == 1 else Workers(self.workers)
        # what the server calls: the policy it bound to a live view of itself when built
        # (worker 0's, with several)
        self.bound = self.workers[0].policy
        if config.idle_connections:
            self.server.adopt_idle(config.idle_connections)
        #: when the clients start (s): a closed loop, or any load on a CPU quota, at a
        #: random instant of the kernel's timer cycle (:func:`start_phase`); the window,
        #: the series and the run's end count from there
        self.origin = start_phase(config, streams)
        self.client.start_s = self.origin
        self.client.window_start = self.origin + config.warmup_s
        self.client.window_end = self.origin + config.duration_s
        if config.series_interval_s > 0:
            self.client.record_series(config.series_interval_s, config.duration_s)
        self._start: dict[str, Any] = {}
        #: the client's response times, folded into a histogram past a bound
        #: (:mod:`acceptsim.models.latency`): by the time series' sampler if there is
        #: one, else by a timer
        self.latency = ResponseTimes(self.client)
        #: the time series' sampler (None: ``timeseries_interval_s`` is 0)
        self.timeseries: TimeSeries | None = None
        if config.timeseries_interval_s > 0:
            self.timeseries = TimeSeries(
                env, self.client, self.bound,
                None if config.concurrency else config.rate_per_s,
                config.timeseries_interval_s, self.origin + config.duration_s,
                latency=self.latency, start_s=self.origin,
            )  # fmt: skip
        else:
            self.latency.start_timer(env)

    def policy_for_worker(self, policy: Any) -> Any:
        """A policy for one worker: ``config.policy`` built, or the run's own policy
        (a class or factory is called: a fresh policy each)."""
        config = self.config
        if policy is None:
            return policies.build(config.policy, config.accept_limit)
        return policy() if policies.is_factory(policy) else policy

    def snapshot(self) -> dict[str, Any]:
        """The counters a window is measured by, now (:func:`acceptsim.models.record.measure`)."""
        per_cpu = [cpu.usage() for cpu in self.cpus]
        limits = [limit.counters() for limit in self.limits]
        return {
            "cpu": sum_dicts(per_cpu),
            "server": self.server.counters(),
            "drops": sum_dicts([listen.drop_counts() for listen in self.listens]),
            "cookies_sent": sum(listen.cookies_sent for listen in self.listens),
            "cfs": sum_dicts(limits) if limits else {},
            "links": self.client.tx.link_busy(),
            "per_cpu": per_cpu,
            "workers": [(w.counters(), w.replies_sent) for w in self.workers],
        }

    def run(self, progress: bool = False, slices: int | None = None) -> dict[str, Any]:
        """Run to ``duration_s`` and return the record (:mod:`acceptsim.models.record`).

        ``progress``: show simulated time, attempts per second and an ETA on stderr
        when it is a terminal (tqdm; nothing otherwise).  The run then advances in
        slices of simulated time, which gives the very same result as one stretch
        (``slices`` forces a number of slices, for tests).
        """
        config = self.config
        client = self.client
        client.start()
        self.env.call_at(self.origin + config.warmup_s,
                         lambda _: self._start.update(self.snapshot()))
        cpu_started = time.process_time()
        advance(
            self.env, self.origin + config.duration_s, progress=progress, slices=slices,
            attempts=lambda: estimate_work(config).attempts,
            started=lambda: client.connections_started,
        )  # fmt: skip
        if self.timeseries is not None:
            self.timeseries.finish()
        client.finish()
        cpu_time = time.process_time() - cpu_started
        return record.record(record.measure(self, self._start, self.snapshot(), cpu_time))

    def discard(self) -> None:
        """Let go of the run's pending events and open connections, once its record is
        taken: the host cannot run on.  What a run leaves behind is one reference cycle
        (the events and connections hold the model, the model holds them); dropped here,
        it is freed by reference counting, where Python's cyclic collector would scan
        every object in it (about a third of a short run's CPU time)."""
        self.env.discard()
        self.client.live.clear()
