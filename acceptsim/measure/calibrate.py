"""Measured runs against the simulator: predictions, calibration and validation.

* :func:`~acceptsim.measure.calibrate.config_for` turns a measured run into the run
  configuration that simulates it (server and ``multi_accept`` -> accept-limit,
  kernel profile, target rate, duration, httperf timeout);
* :func:`predict` simulates every run under one cost set;
* :func:`calibrate` fits chosen cost parameters with
  ``scipy.optimize.least_squares`` (bounded) to the measured reply rates,
  reporting each fitted value with its standard error and the residual per
  run;
* :func:`validate` puts measured and predicted metrics side by side with the
  mean absolute percentage error of the reply rate (overall and per
  ``multi_accept`` setting) and, per rate, the measured and predicted
  difference off minus on against the repeats' noise
  (:func:`~acceptsim.measure.calibrate.direction`).

Runs whose clients, not the server, shaped the load
(:meth:`~acceptsim.measure.run.MeasuredRun.client_limits`: httperf ran out
of descriptors, fell behind its schedule or started connections late) say
nothing about the server: calibration leaves them out unless asked for, and
validation lists them under ``excluded`` with the reason.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from acceptsim.measure.run import MeasuredRun
from acceptsim.measure.runfile import parse_cpu_list
from acceptsim.measure.testbed import CLIENT_TURN_ORDER_S
from acceptsim.models.config import RunConfig
from acceptsim.models.costs import CLUSTER1, HostCosts
from acceptsim.sim.errors import ConfigError

#: measured record key -> predicted record key, for the metrics compared
COMPARED = {
    "reply_rate_per_s": "reply_rate_per_s",
    "connection_rate_per_s": "connection_rate_per_s",
    "client_timeouts_per_s": "client_timeouts_per_s",
    "listen_overflows_per_s": "nstat_per_s.TcpExtListenOverflows",
}
#: a wrk run's measured record keys and the predicted ones they compare with: its
#: throughput, its latency report (models.wrk_report) and the replies it timed
COMPARED_WRK = {
    "reply_rate_per_s": "reply_rate_per_s",
    "wrk_latency_ms.p50": "wrk_latency_ms.p50",
    "wrk_latency_ms.p99": "wrk_latency_ms.p99",
    "wrk_latency_ms.mean": "wrk_latency_ms.mean",
    "wrk_timeouts_per_s": "wrk_timeouts_per_s",
    "listen_overflows_per_s": "nstat_per_s.TcpExtListenOverflows",
    "client_sleeps_per_reply": "client_thread_wakes_per_reply",
}

#: the servers a measured run can name, and the model that simulates each
SERVER_MODELS = {"nginx": "nginx", "userver": "userver", "haproxy": "haproxy"}

#: cost parameters fitted when none are named: the server's per-request work, which no
#: microbenchmark isolates (``acceptsim measure-costs`` measures the system calls around
#: it); the kernel's per-packet costs do not act on loopback runs (``RunConfig.network``)
DEFAULT_FIT = ("request_s",)

#: how many of a measurement's spreads a fitted measured cost may move from its mean
MEASURED_BOUND_SPREADS = 3.0

#: a fitted value this close to a bound (share of the bound's value) counts as on it
ON_BOUND_SHARE = 0.01


@dataclass(frozen=True)
class Bound:
    """The physical range a fitted cost may take, and why (seconds)."""

    low: float
    high: float
    reason: str


#: what the hardware can do, for a cost without a measurement: a modern x86 core (a
#: system call's entry and exit about 0.1-1 us; a loopback segment's receive path
#: about 1-3 us); generous, so that a fit on one says a mechanism is missing
PHYSICAL_BOUNDS = {
    "rx_segment_s": Bound(0.2e-6, 10e-6, "a TCP segment's receive path (driver or lo, IP, "
                          "TCP lookup) takes 1-3 us on a modern core"),
    "syn_queue_s": Bound(0.2e-6, 20e-6, "a request sock and a SYN-ACK: a few us"),
    "child_socket_s": Bound(0.2e-6, 20e-6, "a child socket cloned and queued: a few us"),
    "tx_segment_s": Bound(0.2e-6, 10e-6, "one segment built and sent: 1-3 us"),
    "accept_s": Bound(0.2e-6, 20e-6, "accept4() returning a socket: a system call and a "
                      "file: a few us"),
    "accept_empty_s": Bound(0.1e-6, 10e-6, "accept4() failing with EAGAIN: a system call"),
    "epoll_base_s": Bound(0.1e-6, 10e-6, "epoll_wait() finding events ready: a system call"),
    "epoll_per_event_s": Bound(0.01e-6, 2e-6, "one event copied out: tens of ns"),
    "epoll_ctl_s": Bound(0.1e-6, 10e-6, "epoll_ctl(ADD): a system call and an rb-tree insert"),
    "close_s": Bound(0.5e-6, 50e-6, "close() with its FIN: a few system-call and segment "
                     "costs"),
    "wakeup_s": Bound(0.0, 100e-6, "two context switches and an inter-processor interrupt"),
    "request_s": Bound(1e-6, 1e-3, "a static one-packet request: read, parse, open and "
                       "send a file: tens of us"),
    "send_per_byte_s": Bound(0.01e-9, 10e-9, "a copy and a checksum: 0.1-1 ns per byte"),
}

#: for a cost neither measured nor in PHYSICAL_BOUNDS (the paper's servers' costs)
GENERIC_BOUND = Bound(0.01e-6, 1e-3, "0.01 us to 1 ms (no physical bound stated)")


#: the system calls every connection makes, which nginx's measured CPU per reply includes
CONNECTION_CALLS = ("accept_s", "epoll_ctl_s", "close_s", "epoll_base_s")


def measurement_of(name: str, measured: dict[str, Any] | None) -> dict[str, Any] | None:
    """The ``[measured]`` table that sets cost field ``name`` (its ``sets``), or None."""
    return next((m for m in (measured or {}).values()
                 if isinstance(m, dict) and m.get("sets") == name), None)


def bounds_for(name: str, measured: dict[str, dict[str, Any]] | None = None) -> Bound:
    """The bound a fit of cost ``name`` must stay in: around its measurement, if the
    parameter file has one (``[measured.NAME]``: mean +/- MEASURED_BOUND_SPREADS spreads,
    inside the physical bound), else the physical bound.  ``request_s``, which no
    microbenchmark isolates, is capped by the server's measured CPU per reply (nginx's or
    HAProxy's) minus the measured system calls every connection makes."""
    physical = PHYSICAL_BOUNDS.get(name, GENERIC_BOUND)
    entry = measurement_of(name, measured)
    if entry is not None:
        mean, spread = float(entry["mean"]), float(entry["spread"])
        width = MEASURED_BOUND_SPREADS * spread
        return Bound(max(physical.low, mean - width), min(physical.high, mean + width),
                     f"measured {mean * 1e6:.3g} +/- {spread * 1e6:.2g} us "
                     f"({entry.get('method', 'acceptsim measure-costs')}), "
                     f"+/- {MEASURED_BOUND_SPREADS:g} spreads")
    # the server's measured CPU per reply (nginx's or HAProxy's: measure-costs --server)
    total = next((v for k, v in (measured or {}).items()
                  if k.endswith("_cpu_per_reply_s") and isinstance(v, dict)), None)
    if name == "request_s" and isinstance(total, dict):
        calls = sum(float(m["mean"]) for m in
                    (measurement_of(c, measured) for c in CONNECTION_CALLS) if m is not None)
        high = float(total["mean"]) - calls
        if high > physical.low:
            return Bound(physical.low, high,
                         f"at most the server's measured CPU per reply "
                         f"({float(total['mean']) * 1e6:.3g} us) minus its measured accept, "
                         f"epoll_ctl, close and one epoll_wait "
                         f"({calls * 1e6:.3g} us)")
    return physical


def config_for(run: MeasuredRun, costs: HostCosts, seed: int = 1) -> RunConfig:
    """The run configuration that simulates ``run`` under ``costs``: its server model and
    ``multi_accept`` (accept-limit inf or 1), its CFS quota and whose cgroup it is
    (``cpu_quota_scope``) and its period timer's place where the run traced it, kernel
    profile, target rate, spacing, httperf timeout and duration, measured from the start
    (no warm-up); httperf's processes per client CPU (``httperf_processes_per_cpu``), or
    wrk's connections and its own CPU per request."""
    info = run.info
    if info.server.name not in SERVER_MODELS:
        raise ConfigError(
            f"{run.path.name}: server.name", info.server.name, "one of " + ", ".join(SERVER_MODELS)
        )
    # the server's cgroup CFS quota, simulated (sim.cpu.Bandwidth); none: RunConfig's "no limit"
    # whose it is: one cgroup for all of nginx, or one per worker (cpu_quota_scope)
    quota = (
        {"cpu_quota": info.server.cpu_quota, "cpu_period_s": info.server.cpu_period_us / 1e6,
         "cpu_quota_scope": info.server.cpu_quota_scope}
        if info.server.cpu_quota else {}
    )
    # where its period timer fired, if the run traced it (else the default, 0)
    if info.server.cpu_quota and info.server.cpu_period_offset_us >= 0.0:
        quota["cpu_period_offset_s"] = info.server.cpu_period_offset_us / 1e6
    # several workers: on the CPUs nginx was pinned to (all of the host's if it was not;
    # more workers than CPUs share them), the listening sockets and wake-up rule nginx was
    # configured with
    workers = info.server.worker_processes
    cpus = info.server_cpu_count
    layout = {} if workers == 1 else {
        "cpus": min(cpus, workers), "workers": workers,
        "listen": "reuseport" if info.server.reuseport else "shared",
        "wakeup": "mutex" if info.server.accept_mutex else "exclusive",
    }
    # the testbed's settings of the server, from the run (not the model's defaults, which
    # are the server's own): its listen backlog and its most connections (a run recorded
    # before the field: the testbed's of the time, acceptsim.measure.testbed)
    server_params: dict[str, Any] = {"backlog": info.server.backlog}
    if info.server.max_connections:
        server_params["max_connections"] = info.server.max_connections
    # the load: httperf's open loop at its target rate, or wrk's closed loop of its
    # connections (wrk's rules: models.config.RunConfig.client)
    load: dict[str, Any] = (
        {"client": "wrk", "concurrency": info.load.concurrency,
         "keepalive": info.load.keepalive, "wrk_threads": info.load.threads}
        if info.load.tool == "wrk" else
        {"rate_per_s": info.load.target_rate_per_s, "spacing": info.load.spacing,
         "client_processes_per_cpu": httperf_processes_per_cpu(run),
         **turn_settings(run)}
    )
    # wrk's own CPU per request, as the run measured it (its thread's time is part of each
    # request's cycle at a few connections: HostCosts.client_request_s); without keep-alive
    # it holds the connections' work too, so none is added per connection
    if info.load.tool == "wrk" and info.load.client_cpu_s and run.wrk is not None \
            and run.wrk.requests:
        costs = dataclasses.replace(costs, client_request_s=info.load.client_cpu_s
                                    / run.wrk.requests, client_connection_s=0.0)
    return RunConfig.from_dict(
        {
            **quota,
            **layout,
            **load,
            "server_params": server_params,
            "server": SERVER_MODELS[info.server.name],
            "accept_limit": accept_limit_of(run),
            "timeout_s": info.load.timeout_s,
            "duration_s": info.load.duration_s,
            "warmup_s": 0.0,
            # the profile, with the host's scheduler tick where the run recorded it (the
            # kernel notices a used-up quota at its tick: sim.cpu.Bandwidth)
            "kernel": ({"name": info.kernel.profile, "sched_tick_s": info.kernel.tick_s}
                       if info.kernel.tick_s else info.kernel.profile),
            # nginx and httperf on one host: the clients' segments are received on their
            # own CPUs (RunConfig.network)
            "network": "loopback",
            "costs": costs,
            "seed": seed,
        }
    )


def httperf_processes_per_cpu(run: MeasuredRun) -> int:
    """How many of a run's httperf processes shared each client CPU: its processes over
    the CPUs the clients were pinned to (all of the host's if they were not), rounded up.
    They busy-poll, so they take turns of a scheduler tick
    (``RunConfig.client_processes_per_cpu``)."""
    load = run.info.load
    cpus = len(parse_cpu_list(load.cpus)) if load.cpus else run.info.host.cpus
    return -(-load.processes // max(1, cpus))


def turn_order_s(run: MeasuredRun, unsampled_s: float = CLIENT_TURN_ORDER_S) -> float:
    """How long the httperf processes of ``run`` on one client CPU kept the order of their
    turns, in the mean (``RunConfig.client_turn_order_s``): ``unsampled_s`` with nothing
    of acceptsim's beside them (the testbed's,
    ``acceptsim.measure.testbed.CLIENT_TURN_ORDER_S``), shortened by the time
    series' sampler, which wakes on the client CPUs once an interval and so reorders
    the turns at that rate too (their rates add); 0 for one process per CPU, or with
    ``unsampled_s`` 0 (no order lasts).

    A run whose client CPUs' switches were traced (``MeasuredRun.turns``) gives its own:
    the share e of its rounds that kept their order over its timeout T is exp(-T / tau),
    so tau = -T / ln(e), whatever ran beside httperf (the sampler included); 0 if none
    kept it, and a share of 1 is taken as 1 - 1/(2n) of its n instants (the least share
    they could tell from 1)."""
    if httperf_processes_per_cpu(run) == 1:
        return 0.0
    turns = run.turns
    if turns is not None and turns.samples:
        if turns.share <= 0.0:
            return 0.0
        share = min(turns.share, 1.0 - 0.5 / turns.samples)
        return -run.info.load.timeout_s / math.log(share)
    if unsampled_s <= 0.0:
        return 0.0
    rate = 1.0 / unsampled_s
    if run.info.timeseries.interval_s > 0:
        rate += 1.0 / run.info.timeseries.interval_s
    return 1.0 / rate


def turn_settings(run: MeasuredRun) -> dict[str, Any]:
    """Where the deadlines of ``run``'s httperf steps fall in their processes' rounds of
    turns, as its simulation takes it: the places its trace measured
    (``client_turn_delays``, ``MeasuredRun.turns``) where the run traced its client
    CPUs' switches and has two processes or more on a CPU, else the mean time the order
    lasts (``client_turn_order_s``, :func:`turn_order_s`)."""
    turns = run.turns
    if httperf_processes_per_cpu(run) > 1 and turns is not None and turns.delays:
        return {"client_turn_delays": turns.delays_text(), "client_turn_order_s": 0.0}
    return {"client_turn_order_s": turn_order_s(run)}


def accept_limit_of(run: MeasuredRun) -> float:
    """The accept limit a measured run ran with: its server's own (HAProxy's
    ``tune.maxaccept``, ``server.accept_limit``), else nginx's ``multi_accept`` (on: inf,
    off: 1)."""
    server = run.info.server
    if server.accept_limit:
        return server.accept_limit
    return math.inf if server.multi_accept else 1


def _simulate_flat(config: RunConfig) -> dict[str, Any]:
    from acceptsim.models.runner import run_point  # scipy's statistics: on demand
    from acceptsim.sim.results import flatten

    return flatten(run_point(config, checked=False))


def predict(
    runs: Sequence[MeasuredRun], costs: HostCosts, seed: int = 1, jobs: int | None = 1
) -> list[dict[str, Any]]:
    """The simulator's flat record for each measured run (same seed for all).

    Repeats of one point (same server, setting, rate, duration, timeout) have the
    same configuration, hence the same prediction: each distinct configuration is
    simulated once.
    """
    from acceptsim.sim.sweep import run_many  # pandas: on demand

    configs = [config_for(r, costs, seed) for r in runs]
    unique: dict[RunConfig, int] = {}
    for config in configs:
        unique.setdefault(config, len(unique))
    records = run_many(_simulate_flat, list(unique), jobs=jobs, progress=False)
    return [dict(records[unique[config]]) for config in configs]


@dataclass
class Calibration:
    """What :func:`~acceptsim.measure.calibrate.calibrate` found: the fitted cost set,
    each fitted value with its standard error, the residual per run, the runs used and
    the simulator evaluations it took."""

    costs: HostCosts
    #: the fitted values, by cost field (seconds)
    fitted: dict[str, float]
    #: their standard errors
    stderr: dict[str, float]
    #: run -> relative reply-rate error after the fit
    residuals: dict[str, float]
    runs_used: list[str]
    evaluations: int
    notes: list[str] = field(default_factory=list)
    #: the bound each fitted cost was kept in
    bounds: dict[str, Bound] = field(default_factory=dict)
    #: the fitted costs that ended on a bound: a missing mechanism, not a result
    on_bound: list[str] = field(default_factory=list)
    #: the parameter file's measurements, carried into the written file
    measured: dict[str, Any] = field(default_factory=dict)

    def to_toml(self) -> str:
        lines = [
            "# cost parameters fitted by `acceptsim calibrate` to measured reply rates",
            f"# runs used: {len(self.runs_used)}; simulator evaluations: {self.evaluations}",
        ]
        for run, res in self.residuals.items():
            lines.append(f"#   residual {run}: {res:+.2%}")
        for name, value in self.fitted.items():
            lines.append(f"#   {name} = {value:.4g} +/- {self.stderr[name]:.2g} s")
            bound = self.bounds.get(name)
            if bound is not None:
                lines.append(f"#     bound [{bound.low:.3g}, {bound.high:.3g}] s: {bound.reason}")
        for key, entry in self.measured.items():
            name = entry.get("sets") if isinstance(entry, dict) else None
            if isinstance(name, str) and name not in self.fitted:
                lines.append(f"#   {name} = {float(entry['mean']):.4g} +/- "
                             f"{float(entry['spread']):.2g} {entry.get('unit', 's')}: measured "
                             f"({key} in [measured]), not fitted")
        lines.append("")
        for name, value in self.costs.to_dict().items():
            lines.append(f"{name} = {value!r}")
        if self.measured:
            from acceptsim.measure.host_costs import measured_tables

            lines += ["", measured_tables(self.measured)]
        return "\n".join(lines) + "\n"


def usable(runs: Sequence[MeasuredRun], include_client_limited: bool = False) -> list[MeasuredRun]:
    return [r for r in runs
            if (include_client_limited or not r.client_limited) and not r.host_limits()]


class _BudgetSpent(Exception):
    """The calibration's simulator evaluations reached ``max_evaluations``."""


def calibrate(
    runs: Sequence[MeasuredRun],
    fit: Sequence[str] = DEFAULT_FIT,
    base: HostCosts = CLUSTER1,
    seed: int = 1,
    jobs: int | None = 1,
    max_evaluations: int = 60,
    measurements: dict[str, Any] | None = None,
) -> Calibration:
    """Fit the named cost parameters so simulated reply rates match the measured ones,
    each inside its bound (:func:`bounds_for`; ``measurements``: the parameter file's
    ``[measured]`` table).  A fitted value that ends on its bound is listed in
    ``on_bound``: a mechanism the model lacks, absorbed as a cost."""
    from scipy.optimize import least_squares  # on demand: `calibrate --help` starts fast

    from acceptsim.models.config import CLIENT_SEGMENT_COSTS

    names = [row["name"] for row in HostCosts.describe()]
    for name in fit:
        if name not in names:
            raise ConfigError("--fit", name, "cost parameter names: " + ", ".join(names))
        if name in CLIENT_SEGMENT_COSTS:
            raise ConfigError("--fit", name, "a cost that acts on these runs: on loopback "
                              "the clients' segments are received on the clients' CPUs, so "
                              f"{', '.join(CLIENT_SEGMENT_COSTS)} cost the server nothing")
    if not runs:
        raise ConfigError("runs", 0, "at least one measured run the clients did not limit")
    bounds = {name: bounds_for(name, measurements) for name in fit}
    for name, bound in bounds.items():
        if not bound.low < bound.high:
            raise ConfigError("--fit", name, f"a cost with room to fit (its bound "
                              f"[{bound.low:.3g}, {bound.high:.3g}] s is empty: {bound.reason})")
    measured = np.array([r.record()["reply_rate_per_s"] for r in runs])
    low = np.array([bounds[n].low for n in fit]) * 1e6  # fit in microseconds
    high = np.array([bounds[n].high for n in fit]) * 1e6
    x0 = np.clip(np.array([getattr(base, name) for name in fit]) * 1e6, low, high)
    evaluations = 0
    best: list[Any] = [math.inf, x0, None]  # the best sum of squares so far, its x, residuals

    def costs_at(x: np.ndarray) -> HostCosts:
        return base.replace(**{n: float(v) * 1e-6 for n, v in zip(fit, x, strict=True)})

    def residual(x: np.ndarray) -> np.ndarray:
        nonlocal evaluations
        if evaluations >= max_evaluations:  # every simulation counts, the Jacobian's too
            raise _BudgetSpent
        evaluations += 1
        predicted = predict(runs, costs_at(x), seed=seed, jobs=jobs)
        sim = np.array([p["reply_rate_per_s"] for p in predicted])
        out = (sim - measured) / measured
        if float(out @ out) < best[0]:
            best[:] = [float(out @ out), np.array(x, dtype=float), out]
        return out

    # The reply rate only moves with the costs near saturation, so start from
    # the best common scaling of the fitted costs on a coarse log grid (the scales
    # nearest 1, as many as leave the fit at least half of the budget).
    scales = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0]
    kept = sorted(scales, key=lambda s: abs(math.log(s)))[:max(1, max_evaluations // 2)]
    starts = [np.clip(x0 * s, low, high) for s in scales if s in kept]
    scores = [float(np.sum(residual(x) ** 2)) for x in starts]
    x0 = starts[int(np.argmin(scores))]
    # least_squares needs a start strictly inside the bounds
    x0 = np.clip(x0, low + 1e-6 * (high - low), high - 1e-6 * (high - low))
    try:
        result = least_squares(
            residual,
            x0,
            bounds=(low, high),
            diff_step=0.05,  # the objective is a simulation: difference over 5% steps
            max_nfev=max_evaluations,
            x_scale="jac",
        )
        notes = [] if result.success else [f"least_squares stopped: {result.message}"]
        x, fun, jac = result.x, result.fun, result.jac
    except _BudgetSpent:  # the best point simulated within the budget
        notes = [f"stopped at the budget of {max_evaluations} simulator evaluations "
                 "(--max-evaluations): the best point simulated, no standard errors"]
        x, fun, jac = best[1], best[2], None
    dof = max(1, len(runs) - len(fit))
    s2 = float(fun @ fun) / dof
    try:
        if jac is None:
            raise np.linalg.LinAlgError
        cov = np.linalg.pinv(jac.T @ jac) * s2
        errs = np.sqrt(np.clip(np.diag(cov), 0, None)) * 1e-6
    except np.linalg.LinAlgError:
        errs = np.full(len(fit), math.nan)
    costs = costs_at(x)
    on_bound = []
    for name, value, lo, hi in zip(fit, x, low, high, strict=True):
        # within ON_BOUND_SHARE of a bound's own value (of the range for a bound at 0)
        at_low = value - lo <= ON_BOUND_SHARE * (lo if lo > 0 else hi - lo)
        if at_low or hi - value <= ON_BOUND_SHARE * hi:
            side = "lower" if at_low else "upper"
            on_bound.append(name)
            notes.append(
                f"missing mechanism? {name} = {value:.4g} us ended on its {side} bound "
                f"[{lo:.3g}, {hi:.3g}] us ({bounds[name].reason}): the runs ask for a "
                "cost the hardware does not have"
            )
    return Calibration(
        costs=costs,
        fitted={n: float(v) * 1e-6 for n, v in zip(fit, x, strict=True)},
        stderr={n: float(e) for n, e in zip(fit, errs, strict=True)},
        residuals={r.path.name: float(v) for r, v in zip(runs, fun, strict=True)},
        runs_used=[r.path.name for r in runs],
        evaluations=evaluations,
        notes=notes,
        bounds=bounds,
        on_bound=on_bound,
        measured=dict(measurements or {}),
    )


def validate(
    runs: Sequence[MeasuredRun], costs: HostCosts, seed: int = 1, jobs: int | None = 1
) -> dict[str, Any]:
    """Measured against predicted, per run, and the reply rate's mean absolute % error.

    The error is averaged over the runs whose clients did not limit the load
    (:meth:`~acceptsim.measure.run.MeasuredRun.client_limits`); the others are listed
    under ``excluded`` with the reason, never dropped silently.
    ``mape_reply_rate_by_multi_accept`` gives the error per nginx setting,
    ``mape_reply_rate_by_accept_limit`` per limit of a server with its own (HAProxy's
    ``tune.maxaccept``; :func:`by_limit` compares the limits per rate), and ``direction``
    compares the measured and the predicted difference between the settings per rate
    (see :func:`~acceptsim.measure.calibrate.direction`).  ``repeats`` gives the least
    error the measured repeats of each point leave to any prediction (:func:`repeat_floor`).
    """
    predicted = predict(runs, costs, seed=seed, jobs=jobs)
    rows = []
    errors: dict[str, list[float]] = {"on": [], "off": []}
    by_limit_errors: dict[float, list[float]] = {}
    share_errors: list[float] = []
    excluded = []
    for run, pred in zip(runs, predicted, strict=True):
        rec = run.record()
        compared = COMPARED_WRK if run.wrk is not None else COMPARED
        measured = {k: rec.get(k) for k in compared}
        predicted_row = {k: pred.get(v) for k, v in compared.items()}
        reasons = run.client_limits() + run.host_limits()
        error = None
        if measured["reply_rate_per_s"]:
            error = (
                100.0
                * (predicted_row["reply_rate_per_s"] - measured["reply_rate_per_s"])
                / measured["reply_rate_per_s"]
            )
        elif not reasons:
            reasons = ["no replies measured (no reply-rate error defined)"]
        setting = "on" if run.info.server.multi_accept else "off"
        shares = worker_shares(rec, pred)
        if shares is not None:
            predicted_row["worker_shares"] = shares[1]
            measured["worker_shares"] = shares[0]
        rows.append(
            {
                "run": run.path.name,
                "multi_accept": run.info.server.multi_accept,
                "accept_limit": accept_limit_of(run),
                "target_rate_per_s": run.info.load.target_rate_per_s,
                "client": run.info.load.tool,
                "concurrency": run.info.load.concurrency,
                "keepalive": run.info.load.keepalive,
                "worker_processes": run.info.server.worker_processes,
                "repeat": run.info.host.repeat,
                # the point the run repeats: its folder and name less its repeat number
                "point": (f"{run.path.parent.name}/"
                          f"{run.path.name.removesuffix(f'-rep-{run.info.host.repeat}')}"),
                "client_limited": run.client_limited,
                "excluded_because": "; ".join(reasons) or None,
                "measured": measured,
                "predicted": predicted_row,
                "reply_rate_error_pct": error,
                "worker_share_error_pp": shares[2] if shares is not None else None,
            }
        )
        if reasons:
            excluded.append({"run": run.path.name, "reason": "; ".join(reasons)})
        elif error is not None:
            if run.info.server.accept_limit:  # a limit of the server's own, not multi_accept
                by_limit_errors.setdefault(accept_limit_of(run), []).append(abs(error))
            else:
                errors[setting].append(abs(error))
            if shares is not None:
                share_errors.append(shares[2])
    everything = errors["on"] + errors["off"] + [e for v in by_limit_errors.values() for e in v]
    return {
        "runs": rows,
        "mape_reply_rate": float(np.mean(everything)) if everything else None,
        "runs_in_mape": len(everything),
        "mape_reply_rate_by_multi_accept": {
            k: (float(np.mean(v)) if v else None) for k, v in errors.items()
        },
        # runs of a server with an accept limit of its own (HAProxy's tune.maxaccept)
        "mape_reply_rate_by_accept_limit": {
            ("inf" if k == math.inf else str(int(k))): float(np.mean(v))
            for k, v in sorted(by_limit_errors.items())
        },
        "excluded": excluded,
        "direction": direction(rows),
        "limits": by_limit(rows),
        # several workers: the largest gap between a measured and a predicted share
        "worker_share_error_pp_max": max(share_errors) if share_errors else None,
        "closed_loop": closed_loop(rows),
        "repeats": repeat_floor(rows),
    }


def repeat_floor(rows: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """What the measured repeats alone leave to a prediction: over the compared runs of
    the points measured twice or more, the least reply-rate mean absolute % error that
    any prediction of one number a point can have (``mape_floor``: at each point the
    best of its own measured rates, where the error, piecewise linear in the prediction,
    has its least).  A deterministic model's MAPE over those runs is at least this; on a
    machine whose speed drifts between the repeats it is the part of the error no model
    can remove.  None when no point was measured twice."""
    by_point: dict[str, list[float]] = {}
    for r in rows:
        rate = r["measured"]["reply_rate_per_s"]
        if not r["excluded_because"] and rate:
            by_point.setdefault(r["point"], []).append(rate)
    repeated = [v for v in by_point.values() if len(v) > 1]
    if not repeated:
        return None
    floors = [min(sum(abs(p - x) / x for x in v) for p in v) for v in repeated]
    runs = sum(len(v) for v in repeated)
    return {"mape_floor": 100.0 * sum(floors) / runs, "points": len(repeated), "runs": runs}


def closed_loop(rows: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The wrk runs' comparison (None: there are none): the throughput's mean absolute %
    error, each run's median latency error (%) and 99th-percentile ratio (predicted over
    measured), over the runs not excluded; and keep-alive's gain, the reply rate with
    keep-alive over the rate without, per worker count and concurrency, measured (mean of
    the repeats) and predicted."""
    wrk = [r for r in rows if r.get("client") == "wrk" and not r["excluded_because"]]
    if not wrk:
        return None
    p50_errors, p99_ratios = [], []
    for r in wrk:
        m, p = r["measured"], r["predicted"]
        if m.get("wrk_latency_ms.p50") and p.get("wrk_latency_ms.p50") is not None:
            p50_errors.append(100.0 * (p["wrk_latency_ms.p50"] - m["wrk_latency_ms.p50"])
                              / m["wrk_latency_ms.p50"])
        if m.get("wrk_latency_ms.p99") and p.get("wrk_latency_ms.p99") is not None:
            p99_ratios.append(p["wrk_latency_ms.p99"] / m["wrk_latency_ms.p99"])
    rates: dict[tuple[int, int, bool], dict[str, list[float]]] = {}
    for r in wrk:
        key = (r["worker_processes"], r["concurrency"], r["keepalive"])
        cell = rates.setdefault(key, {"measured": [], "predicted": []})
        cell["measured"].append(r["measured"]["reply_rate_per_s"])
        cell["predicted"].append(r["predicted"]["reply_rate_per_s"])
    gains = []
    for (workers, concurrency, keepalive), cell in sorted(rates.items()):
        off = rates.get((workers, concurrency, False))
        if not keepalive or off is None:
            continue
        gains.append({
            "worker_processes": workers, "concurrency": concurrency,
            "measured": float(np.mean(cell["measured"]) / np.mean(off["measured"])),
            "predicted": float(np.mean(cell["predicted"]) / np.mean(off["predicted"])),
        })
    return {
        "runs": len(wrk),
        "mape_reply_rate": float(np.mean([abs(r["reply_rate_error_pct"]) for r in wrk
                                          if r["reply_rate_error_pct"] is not None])),
        "p50_error_pct": p50_errors,
        "p50_error_pct_max": max(map(abs, p50_errors)) if p50_errors else None,
        "p99_ratio": p99_ratios,
        "keepalive_gain": gains,
    }


def worker_shares(
    measured: dict[str, Any], predicted: dict[str, Any]
) -> tuple[list[float], list[float], float] | None:
    """A run of several workers: its measured shares of the requests and the predicted
    shares of the replies, each from the largest down (which pid is which simulated
    worker is not known), and the largest gap between them, in percentage points; None
    for a run of one worker or without counts."""
    measured_shares = measured.get("worker_shares") or []
    workers = predicted.get("per_worker") or []
    total = sum(w["replies_per_s"] for w in workers)
    if len(measured_shares) < 2 or len(workers) != len(measured_shares) or not total:
        return None
    ours = sorted((w["replies_per_s"] / total for w in workers), reverse=True)
    theirs = sorted(measured_shares, reverse=True)
    gap = max(abs(a - b) for a, b in zip(ours, theirs, strict=True)) * 100.0
    return theirs, ours, gap


def _mean_se(values: Sequence[float]) -> tuple[float, float]:
    """The mean of the repeats and its standard error (nan with one repeat)."""
    a = np.asarray(values, dtype=float)
    se = math.sqrt(a.var(ddof=1) / len(a)) if len(a) >= 2 else math.nan
    return float(a.mean()), se


def by_limit(rows: Sequence[dict[str, Any]], noise_sigmas: float = 2.0) -> dict[str, Any]:
    """Per target rate: each accept limit's measured reply rate (mean and standard error
    over its repeats) and predicted one, the measured best limit and the predicted best.

    The prediction's best is right at a rate when its measured mean is the measured
    best's or within ``noise_sigmas`` standard errors of it (the standard error of the
    difference of the two means).  Where both limit 1 and unlimited were measured,
    ``one_minus_inf`` compares the measured and predicted difference of limit 1 minus
    unlimited as :func:`direction` does.  Only runs not excluded count; a rate needs at
    least two limits.
    """
    grouped: dict[float, dict[float, list[dict[str, Any]]]] = {}
    for row in rows:
        if row["excluded_because"]:
            continue
        grouped.setdefault(row["target_rate_per_s"], {}).setdefault(
            row["accept_limit"], []).append(row)
    points = []
    for rate in sorted(grouped):
        limits = grouped[rate]
        if len(limits) < 2:
            continue
        table = {}
        for limit, group in sorted(limits.items()):
            mean, se = _mean_se([r["measured"]["reply_rate_per_s"] for r in group])
            table[limit] = {"measured_mean": mean, "measured_stderr": se, "repeats": len(group),
                            "predicted": float(np.mean([r["predicted"]["reply_rate_per_s"]
                                                        for r in group]))}
        best = max(table, key=lambda k: table[k]["measured_mean"])
        chosen = max(table, key=lambda k: table[k]["predicted"])
        gap = table[best]["measured_mean"] - table[chosen]["measured_mean"]
        se = math.sqrt(table[best]["measured_stderr"] ** 2
                       + table[chosen]["measured_stderr"] ** 2)
        point: dict[str, Any] = {
            "target_rate_per_s": rate,
            "limits": [{"accept_limit": k, **v} for k, v in table.items()],
            "measured_best": best,
            "predicted_best": chosen,
            "best_gap": gap,
            "best_gap_stderr": se,
            "best_right": chosen == best or (not math.isnan(se) and gap <= noise_sigmas * se),
        }
        if 1 in table and math.inf in table:
            one, inf = table[1], table[math.inf]
            diff = one["measured_mean"] - inf["measured_mean"]
            diff_se = math.sqrt(one["measured_stderr"] ** 2 + inf["measured_stderr"] ** 2)
            predicted = one["predicted"] - inf["predicted"]
            significant = not math.isnan(diff_se) and abs(diff) > noise_sigmas * diff_se
            point["one_minus_inf"] = {
                "measured": diff, "measured_stderr": diff_se, "predicted": predicted,
                "exceeds_noise": significant,
                "sign_right": (math.copysign(1, diff) == math.copysign(1, predicted)
                               and predicted != 0) if significant else None,
            }
        points.append(point)
    return {"noise_sigmas": noise_sigmas, "rates": points,
            "best_right": sum(p["best_right"] for p in points),
            "best_wrong": sum(not p["best_right"] for p in points)}


def direction(rows: Sequence[dict[str, Any]], noise_sigmas: float = 2.0) -> dict[str, Any]:
    """Per target rate: the measured and predicted reply-rate difference off minus on.

    Only runs not excluded count.  The measured difference "exceeds the noise" when
    it is more than ``noise_sigmas`` standard errors from zero, the standard error
    being that of a difference of two means, from the sample standard deviations of
    the repeats (``sqrt(s_on^2/n_on + s_off^2/n_off)``; a rate needs at least two
    repeats of each setting).  The direction is right at a rate when the predicted
    difference has the measured one's sign; ``right``/``wrong`` count the rates whose
    measured difference exceeds the noise, and ``all_right`` is true when there is at
    least one such rate and none is wrong.  ``pooled`` does the same for the mean
    difference over all rates with repeats of both settings.
    """
    by_rate: dict[float, dict[bool, list[dict[str, Any]]]] = {}
    for row in rows:
        if row["excluded_because"]:
            continue
        by_rate.setdefault(row["target_rate_per_s"], {True: [], False: []})[
            row["multi_accept"]
        ].append(row)
    points = []
    right = wrong = 0
    for rate in sorted(by_rate):
        on, off = by_rate[rate][True], by_rate[rate][False]
        if not on or not off:
            continue
        m_on = np.array([r["measured"]["reply_rate_per_s"] for r in on])
        m_off = np.array([r["measured"]["reply_rate_per_s"] for r in off])
        p_on = float(np.mean([r["predicted"]["reply_rate_per_s"] for r in on]))
        p_off = float(np.mean([r["predicted"]["reply_rate_per_s"] for r in off]))
        measured_diff = float(m_off.mean() - m_on.mean())
        predicted_diff = p_off - p_on
        if len(m_on) >= 2 and len(m_off) >= 2:
            se = math.sqrt(m_on.var(ddof=1) / len(m_on) + m_off.var(ddof=1) / len(m_off))
            significant = abs(measured_diff) > noise_sigmas * se
        else:
            se, significant = math.nan, False
        agrees = math.copysign(1, predicted_diff) == math.copysign(1, measured_diff) and (
            predicted_diff != 0
        )
        if significant:
            right += agrees
            wrong += not agrees
        points.append(
            {
                "target_rate_per_s": rate,
                "measured_on": [float(v) for v in m_on],
                "measured_off": [float(v) for v in m_off],
                "measured_on_mean": float(m_on.mean()),
                "measured_off_mean": float(m_off.mean()),
                "predicted_on": p_on,
                "predicted_off": p_off,
                "measured_off_minus_on": measured_diff,
                "measured_diff_stderr": se,
                "predicted_off_minus_on": predicted_diff,
                "exceeds_noise": significant,
                "direction_right": agrees if significant else None,
            }
        )
    # all rates together: the mean over rates of the differences, whose standard error
    # is sqrt(sum se^2) / k (the rates are independent runs)
    usable_pts = [p for p in points if not math.isnan(p["measured_diff_stderr"])]
    pooled: dict[str, Any] = {"rates": len(usable_pts)}
    if usable_pts:
        k = len(usable_pts)
        m = sum(p["measured_off_minus_on"] for p in usable_pts) / k
        pr = sum(p["predicted_off_minus_on"] for p in usable_pts) / k
        se = math.sqrt(sum(p["measured_diff_stderr"] ** 2 for p in usable_pts)) / k
        significant = abs(m) > noise_sigmas * se
        pooled.update(
            measured_off_minus_on=m,
            measured_diff_stderr=se,
            predicted_off_minus_on=pr,
            exceeds_noise=significant,
            direction_right=(math.copysign(1, m) == math.copysign(1, pr) and pr != 0)
            if significant
            else None,
        )
    return {
        "noise_sigmas": noise_sigmas,
        "rates": points,
        "right": right,
        "wrong": wrong,
        "all_right": right > 0 and wrong == 0,
        "pooled": pooled,
    }
