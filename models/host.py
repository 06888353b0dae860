"""The model of one run, wired from its configuration: the CPU, the kernel's listen
socket, the clients, the workload and the server with its accept policy.

:class:`Host` builds the model and runs it; what it measured is read by
:mod:`acceptsim.models.record`, and its time series by :mod:`acceptsim.models.series`.
"""

from __future__ import annotations

import time
from typing import Any

from acceptsim.models import policies, record
from acceptsim.models.client import Client, ClientParams
from acceptsim.models.config import RunConfig
from acceptsim.models.kernel import ListenSocket
from acceptsim.models.progress import advance
from acceptsim.models.series import TimeSeries
from acceptsim.models.servers.base import ServerHost
from acceptsim.models.servers.registry import SERVERS
from acceptsim.models.work import estimate_work
from acceptsim.models.workloads import WORKLOADS
from acceptsim.sim.cpu import Cpu
from acceptsim.sim.engine import Environment
from acceptsim.sim.streams import Streams


class Host:
    """The model of one run, built from a :class:`~acceptsim.models.config.RunConfig` and
    not yet run."""

    def __init__(self, config: RunConfig, policy: Any = None) -> None:
        """``policy``: a policy object, or a zero-argument factory called here, used
        instead of ``config.policy`` (see :mod:`acceptsim.models.policies`)."""
        self.config = config
        self.env = env = Environment()
        self.streams = streams = Streams(config.seed)
        spec = SERVERS[config.server]
        self.cpu = Cpu(env, spec.categories)
        if config.cpu_quota:
            self.cpu.limit(config.cpu_quota * config.cpu_period_s, config.cpu_period_s)
        workload_cls, _ = WORKLOADS[config.workload]
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
        #: the time series' sampler (None: ``timeseries_interval_s`` is 0)
        self.timeseries: TimeSeries | None = None
        if config.timeseries_interval_s > 0:
            self.timeseries = TimeSeries(
                env, self.client, self.bound, config.rate_per_s,
                config.timeseries_interval_s, config.duration_s,
            )  # fmt: skip

    def snapshot(self) -> dict[str, Any]:
        """The counters a window is measured by, now (:func:`acceptsim.models.record.measure`)."""
        listen = self.listen
        return {
            "cpu": self.cpu.usage(),
            "server": self.server.counters(),
            "drops": listen.drop_counts(),
            "cookies_sent": listen.cookies_sent,
            "cfs": self.cpu.bandwidth.counters() if self.cpu.bandwidth else {},
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
        self.env.call_at(config.warmup_s, lambda _: self._start.update(self.snapshot()))
        cpu_started = time.process_time()
        advance(
            self.env, config.duration_s, progress=progress, slices=slices,
            attempts=lambda: estimate_work(config).attempts,
            started=lambda: client.connections_started,
        )  # fmt: skip
        client.finish()
        cpu_time = time.process_time() - cpu_started
        return record.record(record.measure(self, self._start, self.snapshot(), cpu_time))
