"""The run record: one declaration of every measure a run reports.

:data:`METRICS` lists each field of the record that :func:`acceptsim.models.experiment.simulate`
returns (the JSON of ``acceptsim run``), in the record's order: its name, its unit, what
it means and where it comes from, and how it is computed from the measurement window
(:class:`Window`).  The record (:func:`record`), the list in ``acceptsim run --help``
(:func:`help_text`) and the table in the documentation (:func:`markdown_table`) all read
this one declaration, so a new measure is added here and nowhere else.

A server's own measures (Flash's file cache, Knot's scheduling, a dispatch mechanism's
calls) are declared by the server class, in its
:meth:`~acceptsim.models.servers.base.Server.result_extras`, and follow these fields.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from acceptsim.models import policies
from acceptsim.models.latency import FOLD_THRESHOLD, RELATIVE_PRECISION
from acceptsim.models.servers.base import ServerCounters
from acceptsim.models.wrk_report import wrk_latency_ms
from acceptsim.sim.cpu import KERNEL
from acceptsim.sim.results import differences, ratio

if TYPE_CHECKING:
    from acceptsim.models.host import Host

#: where a measure comes from (the :attr:`Metric.source` values)
SOURCES = {
    "config": "the run's configuration (RunConfig), as it ran",
    "policy": "the accept policy the server ran with",
    "client": "the simulated httperf clients",
    "server": "the server's counters (its accept phase, select() calls and work phases)",
    "kernel": "the kernel's listen socket (SYN and accept queues, drop rules)",
    "cpu": "the CPU's accounting per category, and the CFS bandwidth limit",
    "network": "the server's links to the client machines (models.tcp)",
    "simulator": "the simulator itself (not the model)",
}


@dataclass(frozen=True)
class WorkerWindow:
    """What one worker did over the window (a host of several CPUs)."""

    #: its counters over the window
    server: ServerCounters
    #: replies it wrote
    replies: int
    #: processor seconds it used (its CPU's task time)
    busy_s: float


@dataclass(frozen=True)
class Window:
    """What a run measured between the end of its warm-up and its end: the differences
    of the counters over the window, and the run's objects for what is read as is."""

    host: Host
    #: the window's length (``duration_s - warmup_s``)
    seconds: float
    #: the server's counters over the window
    server: ServerCounters
    #: SYN drops over the window by rule, and their ``total``
    drops: dict[str, int]
    #: SYN cookies sent over the window
    cookies: int
    #: share of the window's CPU time per category, ``idle`` included
    cpu_share: dict[str, float]
    #: the CFS bandwidth counters over the window (empty without a limit)
    cfs: dict[str, float]
    #: the simulator's own CPU time for the run (process time)
    cpu_time_s: float
    #: per worker, on a host of several CPUs (empty on one)
    workers: list[WorkerWindow]
    #: the share of each CPU's time its kernel work took, on a host of several CPUs
    kernel_per_cpu: list[float]
    #: the share of the window each of the server's links was sending (one per NIC)
    links: list[float]

    @property
    def target_rate_per_s(self) -> float | None:
        """The target rate; with a rate profile, its mean over the window; None for a
        closed loop (``concurrency``), which has none."""
        config = self.host.config
        if config.concurrency:
            return None
        profile = self.host.client.rate_profile
        if profile is None:
            return config.rate_per_s
        return profile.mean_rate(config.warmup_s, config.duration_s)

    def per_s(self, count: float) -> float:
        return count / self.seconds


@dataclass(frozen=True)
class Metric:
    """One field of the run record."""

    name: str
    #: its unit ("" for names, counts of a kind said in ``meaning``, and tables)
    unit: str
    #: what it means, in a line
    meaning: str
    #: where it comes from: a key of :data:`SOURCES`
    source: str
    #: its value, from the window
    value: Callable[[Window], Any]
    #: whether the record has it (a field kept only when asked for, or when it applies)
    present: Callable[[Window], bool] | None = None


def _waits_in_epoll(w: Window) -> bool:
    """Whether the run's server waits for events with epoll_wait: nginx's event loop (and
    HAProxy's, built on it) or the userver's epoll dispatch."""
    from acceptsim.models.servers.nginx import Nginx

    server = w.host.server
    return isinstance(server, Nginx) or getattr(server, "mechanism", None) == "epoll"


def _policy_params(policy: Any) -> dict[str, Any]:
    """A built-in policy's parameters (empty for a custom policy without ``p``)."""
    if isinstance(policy, policies.StaticLimit):
        return {"limit": policy.limit}
    params = getattr(policy, "p", None)
    return params.to_dict() if hasattr(params, "to_dict") else {}


def _accept_limit(w: Window) -> float:
    """A static policy's limit; NaN for a policy that sets its own each phase (it ignores
    the configured one: ``accepts_per_phase`` says what it did)."""
    policy = w.host.policy
    return policy.limit if isinstance(policy, policies.StaticLimit) else math.nan


def _connections(w: Window) -> dict[str, int]:
    client = w.host.client
    return {
        "attempted": client.attempted,
        "completed": client.completed,
        "timed_out": client.timed_out,
        "in_flight_at_end": client.in_flight_at_end,
    }


def _nstat(w: Window) -> dict[str, float]:
    drops = w.drops
    return {
        "TcpExtListenOverflows": w.per_s(drops["accept_q_full"] + drops["listen_overflow"]),
        "TcpExtListenDrops": w.per_s(drops["total"]),
        "TcpExtTCPReqQFullDrop": w.per_s(drops["syn_q_full"]),
        "TcpExtTCPReqQFullDoCookies": w.per_s(w.cookies),
        "TcpExtSyncookiesSent": w.per_s(w.cookies),
    }


def _queues(w: Window) -> dict[str, int]:
    listens = w.host.listens  # one per worker with reuseport: the longest, and each's capacity
    listen = listens[0]
    return {
        "accept_queue_max": max(s.max_accept_len for s in listens),
        "accept_queue_capacity": listen.backlog + 1,
        "syn_queue_max": max(s.max_syn_len for s in listens),
        "syn_queue_capacity": listen.syn_capacity,
    }


def _cfs(w: Window) -> dict[str, float]:
    config = w.host.config
    return {
        "quota_cpus": config.cpu_quota,
        "period_s": config.cpu_period_s,
        "periods": w.cfs["periods"],
        "throttled_periods": w.cfs["throttled_periods"],
        "throttled_share": w.per_s(w.cfs["throttled_s"]),
    }


def _workers(w: Window) -> list[dict[str, Any]]:
    out = []
    for i, worker in enumerate(w.workers):
        c = worker.server
        out.append({
            "worker": i,
            "replies_per_s": w.per_s(worker.replies),
            "accept_rate_per_s": w.per_s(c.accepts),
            "failed_accepts_per_s": w.per_s(c.failed_accepts),
            "accepts_per_phase": ratio(c.accepts, c.accept_phases),
            "cpu_share": w.per_s(worker.busy_s),
            "open_connections_mean": w.per_s(c.open_area),
        })
    return out


def _imbalance(w: Window) -> float | None:
    replies = [worker.replies for worker in w.workers]
    mean = sum(replies) / len(replies) if replies else 0
    return max(replies) / mean if mean else None


def _multicore(w: Window) -> bool:
    return w.host.config.cpus > 1 or w.host.config.workers > 1


def _target_requests(w: Window) -> float | None:
    rate = w.target_rate_per_s
    return None if rate is None else rate * w.host.workload.mean_requests_per_connection()


def _closed_loop(w: Window) -> bool:
    return w.host.config.concurrency > 0


def _wrk(w: Window) -> bool:
    return w.host.config.client == "wrk"


def _wrk_report(w: Window) -> dict[str, Any]:
    """wrk's latency report of the window's replies (models.wrk_report)."""
    values, counts = w.host.latency.values_and_counts()
    return wrk_latency_ms(values, counts, w.seconds, w.host.config.concurrency,
                          w.host.config.timeout_s)


def _reaction_ms(w: Window) -> float:
    client = w.host.client
    return 1e3 * ratio(client.reaction_delays, client.reactions) if client.reactions else 0.0


#: every field of the run record, in the record's order
METRICS: tuple[Metric, ...] = (
    # -- the configuration it ran with
    Metric("server", "", "server architecture", "config", lambda w: w.host.config.server),
    Metric("accept_limit", "connections", "accept-limit per accept phase of a static policy "
           "(NaN for a policy that sets its own: see accepts_per_phase)", "config",
           _accept_limit),
    Metric("policy", "", "the accept policy as configured (a spec), or a custom policy's name",
           "policy", lambda w: w.host.config.policy if w.host.custom_policy is None
           else w.host.bound.name),
    Metric("policy_name", "", "the accept policy's name", "policy", lambda w: w.host.bound.name),
    Metric("policy_params", "", "a built-in policy's parameters (empty for a custom one)",
           "policy", lambda w: _policy_params(w.host.policy)),
    Metric("rate_profile", "", "the time-varying target rate (empty: constant)", "config",
           lambda w: w.host.config.rate_profile),
    Metric("workload", "", "workload", "config", lambda w: w.host.config.workload),
    Metric("target_rate_per_s", "connections/s", "httperf's target rate of new connections "
           "(a rate profile's mean over the window; None for a closed loop)", "config",
           lambda w: w.target_rate_per_s),
    Metric("target_request_rate_per_s", "requests/s", "the target rate times the workload's "
           "mean requests per connection (the paper's x axis for SPECweb99; None for a "
           "closed loop)", "config", _target_requests),
    Metric("duration_s", "s", "simulated time of the run", "config",
           lambda w: w.host.config.duration_s),
    Metric("warmup_s", "s", "initial time left out of every measure", "config",
           lambda w: w.host.config.warmup_s),
    Metric("seed", "", "seed of the run's random streams", "config", lambda w: w.host.config.seed),
    Metric("idle_connections", "connections", "idle persistent connections held open",
           "config", lambda w: w.host.config.idle_connections),
    # -- what the clients and the server did over the window
    Metric("reply_rate_per_s", "replies/s", "replies the clients received in time", "client",
           lambda w: w.per_s(w.host.client.replies)),
    Metric("connection_rate_per_s", "connections/s", "connections the clients attempted",
           "client", lambda w: w.per_s(w.host.client.attempted)),
    Metric("accept_rate_per_s", "connections/s", "connections accepted (Equation 1's "
           "left-hand side)", "server", lambda w: w.per_s(w.server.accepts)),
    Metric("accept_phases_per_s", "phases/s", "accept phases (Equation 1's first factor)",
           "server", lambda w: w.per_s(w.server.accept_phases)),
    Metric("accepts_per_phase", "connections", "accepts per accept phase (Equation 1's second "
           "factor; None: no phase)", "server",
           lambda w: ratio(w.server.accepts, w.server.accept_phases)),
    Metric("accept_phases_skipped", "phases", "accept phases a policy skipped (limit 0)",
           "server", lambda w: w.server.accept_skips),
    Metric("drops_per_s", "SYNs/s", "SYN drops by rule (syn_q_full, accept_q_full, "
           "drop_request), listen_overflow, and their total", "kernel",
           lambda w: {k: w.per_s(v) for k, v in w.drops.items()}),
    Metric("select_calls_per_s", "calls/s", "select() calls (None: the server has none); for "
           "a server that waits in epoll_wait (nginx, HAProxy) its epoll_wait calls, which "
           "epoll_wait_calls_per_s names", "server",
           lambda w: w.per_s(w.server.select_calls) if w.host.server.has_select else None),
    Metric("epoll_wait_calls_per_s", "calls/s", "epoll_wait() calls of a server that waits "
           "for events with it (nginx, HAProxy, userver-epoll; None: the server waits "
           "otherwise)", "server",
           lambda w: w.per_s(w.server.select_calls) if _waits_in_epoll(w) else None),
    Metric("conns_per_work_phase", "connections", "connections served per work phase", "server",
           lambda w: ratio(w.server.conns_worked, w.server.work_phases)),
    Metric("response_time_ms", "ms", "the replies' response times: mean, p50, p99, p999 (the "
           f"99.9th percentile) and max; exact up to {FOLD_THRESHOLD:,} replies, beyond them "
           f"the percentiles within {RELATIVE_PRECISION:.1%} (a histogram: models.latency)",
           "client", lambda w: w.host.latency.summary_ms()),
    Metric("open_connections_mean", "connections", "connections the server held open, on "
           "average over time", "server", lambda w: w.per_s(w.server.open_area)),
    Metric("client_timeouts_per_s", "connections/s", "connections httperf gave up on",
           "client", lambda w: w.per_s(w.host.client.timeouts)),
    Metric("wasted_replies_per_s", "replies/s", "replies sent to a client that had gone",
           "client", lambda w: w.per_s(w.host.client.wasted_replies)),
    Metric("client_reaction_ms_mean", "ms", "httperf's event-loop reaction delay (0 when the "
           "client loop is not modelled)", "client", _reaction_ms),
    Metric("cpu_share", "CPUs", "share of the CPU per category: kernel, the server's phases, "
           "idle (summed over the CPUs: they add up to cpus)", "cpu", lambda w: w.cpu_share),
    Metric("link_utilization", "fraction", "the share of the window each of the server's "
           "links to the clients was sending (one per NIC, costs.nics; replies' frames with "
           "their overheads)", "network", lambda w: w.links),
    Metric("connections", "connections", "the window's connections: attempted, completed, "
           "timed_out, in_flight_at_end", "client", _connections),
    Metric("syn_drops_per_completed", "SYNs/connection", "SYN drops per completed connection "
           "(None: none completed)", "client",
           lambda w: ratio(w.host.client.completed_syn_drops, w.host.client.completed)),
    Metric("syn_drops_per_timed_out", "SYNs/connection", "SYN drops per timed-out connection "
           "(None: none timed out)", "client",
           lambda w: ratio(w.host.client.timed_out_syn_drops, w.host.client.timed_out)),
    Metric("httperf", "", "the window's totals in httperf's own terms (connections, replies, "
           "the largest connect burst of one process, reply-rate samples, errors)", "client",
           lambda w: w.host.client.httperf_summary()),
    Metric("nstat_per_s", "events/s", "the drops under the names nstat gives them on a modern "
           "kernel", "kernel", _nstat),
    Metric("queues", "entries", "the largest SYN and accept queue lengths, and their "
           "capacities (of any one socket, with reuseport)", "kernel", _queues),
    Metric("sim_cpu_time_s", "s", "the simulator's CPU time for the run", "simulator",
           lambda w: w.cpu_time_s),
    Metric("sim_conns_per_cpu_s", "connections/CPU-s", "the simulator's speed: connections "
           "started per CPU second", "simulator",
           lambda w: ratio(w.host.client.connections_started, w.cpu_time_s)),
    # -- kept when asked for, or when they apply
    Metric("replies_per_interval", "replies", "replies per series_interval_s over the whole "
           "run (with series_interval_s > 0)", "client",
           lambda w: list(w.host.client.series or ()),
           present=lambda w: w.host.client.series is not None),
    Metric("timeseries", "", "the time series, a column each (with timeseries_interval_s > 0; "
           "acceptsim.models.run_series.COLUMNS)", "simulator",
           lambda w: w.host.timeseries.columns if w.host.timeseries else None,
           present=lambda w: w.host.timeseries is not None),
    Metric("concurrency", "connections", "the closed loop's users (with concurrency > 0)",
           "config", lambda w: w.host.config.concurrency, present=_closed_loop),
    Metric("keepalive", "", "whether the closed loop's users keep their connections (with "
           "concurrency > 0)", "config", lambda w: w.host.config.keepalive,
           present=_closed_loop),
    Metric("client_start_s", "s", "when the clients started, drawn from the seed over the "
           "kernel's timer cycle (models.host.start_phase); the window, the series and the "
           "run's end count from it (with concurrency > 0 or a CPU quota)", "client",
           lambda w: w.host.origin,
           present=lambda w: _closed_loop(w) or bool(w.host.config.cpu_quota)),
    Metric("cpu_period_offset_s", "s", "where the CPU quota's period timer fired past "
           "multiples of its period, the ticks on multiples of theirs "
           "(RunConfig.cpu_period_offset_s; with a CPU quota)", "config",
           lambda w: w.host.config.cpu_period_offset_s,
           present=lambda w: bool(w.host.config.cpu_quota)),
    Metric("wrk_latency_ms", "ms", "the replies' response times as wrk 4.1 reports them "
           "(with client = wrk): mean, p50, p75, p90, p99 and max after its "
           "coordinated-omission correction, times at or past its --timeout (timeout_s) "
           "left out (models.wrk_report)", "client",
           lambda w: {k: v for k, v in _wrk_report(w).items()
                      if k not in ("requests", "timeouts")}, present=_wrk),
    Metric("client_thread_wakes_per_reply", "wake-ups/reply", "a closed loop's wrk threads "
           "woken from epoll_wait, per reply (with client = wrk; 0 unless its CPU per reply, "
           "client_request_s, is given: wrk's threads are modelled then; the measured "
           "counterpart is wrk's voluntary context switches)", "client",
           lambda w: ratio(w.host.client.thread_wakes, w.host.client.replies), present=_wrk),
    Metric("wrk_timeouts_per_s", "replies/s", "replies whose response time reached wrk's "
           "--timeout (timeout_s), which wrk counts as socket-error timeouts (with client = "
           "wrk)", "client", lambda w: w.per_s(_wrk_report(w)["timeouts"]), present=_wrk),
    Metric("cpus", "CPUs", "processors of the host (with cpus or workers > 1)", "config",
           lambda w: w.host.config.cpus, present=_multicore),
    Metric("listen", "", "the listening-socket layout of the workers: shared or reuseport "
           "(with cpus or workers > 1)", "config", lambda w: w.host.config.listen,
           present=_multicore),
    Metric("wakeup", "", "which workers a connection on a shared socket wakes (with cpus or "
           "workers > 1)", "config", lambda w: w.host.config.wakeup, present=_multicore),
    Metric("network", "", "how the clients reach the server: loopback (with network = "
           "loopback; absent: lan)", "config", lambda w: w.host.config.network,
           present=lambda w: w.host.config.network != "lan"),
    Metric("softirq", "", "where the kernel's per-packet work runs: rss or cpu0 (with "
           "cpus or workers > 1)", "config", lambda w: w.host.config.softirq,
           present=_multicore),
    Metric("workers", "processes", "server processes, worker i on CPU i mod cpus (with "
           "cpus or workers > 1)", "config", lambda w: w.host.config.workers, present=_multicore),
    Metric("per_worker", "", "per worker (with cpus or workers > 1): replies_per_s, "
           "accept_rate_per_s, failed_accepts_per_s, accepts_per_phase, cpu_share (its "
           "task's share of a CPU), open_connections_mean", "server", _workers,
           present=_multicore),
    Metric("worker_imbalance", "", "the busiest worker's replies over the workers' mean (1: "
           "even; None: no replies; with cpus or workers > 1)", "server", _imbalance,
           present=_multicore),
    Metric("kernel_share_per_cpu", "CPUs", "the share of each CPU's time its kernel work took "
           "(with cpus or workers > 1)", "cpu", lambda w: w.kernel_per_cpu, present=_multicore),
    Metric("cfs", "", "the CFS bandwidth limit as the cgroup's cpu.stat reports it (with "
           "cpu_quota > 0; with a cgroup per worker, their counts added up)", "cpu", _cfs,
           present=lambda w: w.host.cpu.bandwidth is not None),
    Metric("threads_busy_mean", "threads", "a worker pool's busy threads, on average over "
           "time", "server", lambda w: w.per_s(w.server.own["busy_area"]),
           present=lambda w: "busy_area" in w.server.own),
)

#: the fields of the record that are no single number: a table (a sweep's frame has a column
#: per key, ``drops_per_s.total``) or a list (one value per NIC, CPU or worker: no column of
#: numbers); tests/test_trust_figures.py checks it against a record
SHAPES: dict[str, str] = {
    "policy_params": "table", "drops_per_s": "table", "response_time_ms": "table",
    "cpu_share": "table", "connections": "table", "httperf": "table", "nstat_per_s": "table",
    "queues": "table", "timeseries": "table", "link_utilization": "list",
    "cfs": "table", "per_worker": "list", "kernel_share_per_cpu": "list",
    "replies_per_interval": "list", "wrk_latency_ms": "table",
}


def measure(host: Host, start: dict[str, Any], end: dict[str, Any], cpu_time_s: float) -> Window:
    """The window between two snapshots of the host's counters
    (:meth:`acceptsim.models.host.Host.snapshot`)."""
    config = host.config
    seconds = config.duration_s - config.warmup_s
    drops = differences(end["drops"], start["drops"])
    drops["total"] = sum(drops.values())
    used = differences(end["cpu"], start["cpu"])
    shares = {KERNEL: used.pop(KERNEL) / seconds}
    shares.update({k: v / seconds for k, v in used.items()})
    idle = config.cpus - sum(shares.values())
    shares["idle"] = 0.0 if abs(idle) < 1e-9 else idle  # float noise of summed costs
    workers = []
    if "workers" in end:  # several CPUs: per worker and per CPU
        for i, ((c1, r1), (c0, r0)) in enumerate(zip(end["workers"], start["workers"],
                                                     strict=True)):
            used = differences(end["per_cpu"][i], start["per_cpu"][i])
            busy = sum(v for k, v in used.items() if k != KERNEL)
            busy = 0.0 if abs(busy) < 1e-12 else busy  # float noise of summed costs
            workers.append(WorkerWindow(c1.since(c0), r1 - r0, busy))
    per_cpu_kernel = [  # (the first ``cpus``: with workers sharing CPUs, the rest are
        # the other workers' tasks on them, whose CPU's kernel work is the first's)
        (e[KERNEL] - s[KERNEL]) / seconds
        for e, s in zip(end.get("per_cpu", ()), start.get("per_cpu", ()), strict=True)
    ][: config.cpus]
    return Window(
        host=host,
        seconds=seconds,
        workers=workers,
        kernel_per_cpu=per_cpu_kernel,
        server=end["server"].since(start["server"]),
        drops=drops,
        cookies=end["cookies_sent"] - start["cookies_sent"],
        cpu_share=shares,
        cfs=differences(end["cfs"], start["cfs"]) if end["cfs"] else {},
        links=[(e - s) / seconds for e, s in zip(end["links"], start["links"], strict=True)],
        cpu_time_s=cpu_time_s,
    )


def record(window: Window) -> dict[str, Any]:
    """The run record: every metric that applies, then the server's own measures."""
    result = {
        m.name: m.value(window) for m in METRICS if m.present is None or m.present(window)
    }
    result.update(window.host.server.result_extras(window.server, window.seconds))
    return result


def help_text() -> str:
    """The record's fields, one a line (``acceptsim run --help``)."""
    width = max(len(m.name) for m in METRICS)
    lines = ["the run record's fields (--format json; the table shows the same):"]
    for m in METRICS:
        unit = f" [{m.unit}]" if m.unit else ""
        lines.append(f"  {m.name:<{width}}  {m.meaning}{unit}")
    lines.append("  then the server's own measures, if it has any (Flash's file cache, Knot's")
    lines.append("  scheduling, a dispatch mechanism's calls)")
    return "\n".join(lines)


def markdown_table() -> str:
    """The record's fields as a Markdown table (the documentation's)."""
    rows = ["| field | unit | meaning | from |", "|---|---|---|---|"]
    for m in METRICS:
        rows.append(f"| `{m.name}` | {m.unit} | {m.meaning} | {m.source} |")
    return "\n".join(rows) + "\n"
