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

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from acceptsim.measure.run import MeasuredRun
from acceptsim.models.config import RunConfig
from acceptsim.models.costs import CLUSTER1, HostCosts
from acceptsim.models.runner import run_point
from acceptsim.sim.errors import ConfigError
from acceptsim.sim.sweep import run_many

#: measured record key -> predicted record key, for the metrics compared
COMPARED = {
    "reply_rate_per_s": "reply_rate_per_s",
    "connection_rate_per_s": "connection_rate_per_s",
    "client_timeouts_per_s": "client_timeouts_per_s",
    "listen_overflows_per_s": "nstat_per_s.TcpExtListenOverflows",
}

#: the servers a measured run can name, and the model that simulates each
SERVER_MODELS = {"nginx": "nginx", "userver": "userver"}

#: cost parameters fitted when none are named: the server's per-request cost and the
#: kernel's per-packet cost, which set the capacity
DEFAULT_FIT = ("request_s", "rx_segment_s")


def config_for(run: MeasuredRun, costs: HostCosts, seed: int = 1) -> RunConfig:
    """The run configuration that simulates ``run`` under ``costs``: its server model and
    ``multi_accept`` (accept-limit inf or 1), its CFS quota, kernel profile, target rate,
    spacing, httperf timeout and duration, measured from the start (no warm-up)."""
    info = run.info
    if info.server.name not in SERVER_MODELS:
        raise ConfigError(
            f"{run.path.name}: server.name", info.server.name, "one of " + ", ".join(SERVER_MODELS)
        )
    # the server's cgroup CFS quota, simulated (sim.cpu.Bandwidth); none: RunConfig's "no limit"
    quota = (
        {"cpu_quota": info.server.cpu_quota, "cpu_period_s": info.server.cpu_period_us / 1e6}
        if info.server.cpu_quota else {}
    )
    # several workers: one CPU each (the model's host), one cgroup for all of nginx (the
    # harness's), the listening sockets and wake-up rule nginx was configured with
    workers = info.server.worker_processes
    layout = {} if workers == 1 else {
        "cpus": workers, "workers": workers,
        "listen": "reuseport" if info.server.reuseport else "shared",
        "wakeup": "mutex" if info.server.accept_mutex else "exclusive",
    }
    return RunConfig.from_dict(
        {
            **quota,
            **layout,
            "server": SERVER_MODELS[info.server.name],
            "accept_limit": math.inf if info.server.multi_accept else 1,
            "rate_per_s": info.load.target_rate_per_s,
            "spacing": info.load.spacing,
            "timeout_s": info.load.timeout_s,
            "duration_s": info.load.duration_s,
            "warmup_s": 0.0,
            "kernel": info.kernel.profile,
            "costs": costs,
            "seed": seed,
        }
    )


def _simulate_flat(config: RunConfig) -> dict[str, Any]:
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

    def to_toml(self) -> str:
        lines = [
            "# cost parameters fitted by `acceptsim calibrate` to measured reply rates",
            f"# runs used: {len(self.runs_used)}; simulator evaluations: {self.evaluations}",
        ]
        for run, res in self.residuals.items():
            lines.append(f"#   residual {run}: {res:+.2%}")
        for name, value in self.fitted.items():
            lines.append(f"#   {name} = {value:.4g} +/- {self.stderr[name]:.2g} s")
        lines.append("")
        for name, value in self.costs.to_dict().items():
            lines.append(f"{name} = {value!r}")
        return "\n".join(lines) + "\n"


def usable(runs: Sequence[MeasuredRun], include_client_limited: bool = False) -> list[MeasuredRun]:
    return [r for r in runs if include_client_limited or not r.client_limited]


def calibrate(
    runs: Sequence[MeasuredRun],
    fit: Sequence[str] = DEFAULT_FIT,
    base: HostCosts = CLUSTER1,
    seed: int = 1,
    jobs: int | None = 1,
    max_evaluations: int = 60,
) -> Calibration:
    """Fit the named cost parameters so simulated reply rates match the measured ones."""
    names = [row["name"] for row in HostCosts.describe()]
    for name in fit:
        if name not in names:
            raise ConfigError("--fit", name, "cost parameter names: " + ", ".join(names))
    if not runs:
        raise ConfigError("runs", 0, "at least one measured run the clients did not limit")
    measured = np.array([r.record()["reply_rate_per_s"] for r in runs])
    x0 = np.array([getattr(base, name) for name in fit]) * 1e6  # fit in microseconds
    evaluations = 0

    def costs_at(x: np.ndarray) -> HostCosts:
        return base.replace(**{n: float(v) * 1e-6 for n, v in zip(fit, x, strict=True)})

    def residual(x: np.ndarray) -> np.ndarray:
        nonlocal evaluations
        evaluations += 1
        predicted = predict(runs, costs_at(x), seed=seed, jobs=jobs)
        sim = np.array([p["reply_rate_per_s"] for p in predicted])
        return (sim - measured) / measured

    # The reply rate only moves with the costs near saturation, so start from
    # the best common scaling of the fitted costs on a coarse log grid.
    scales = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0]
    scores = [float(np.sum(residual(x0 * s) ** 2)) for s in scales]
    x0 = x0 * scales[int(np.argmin(scores))]
    result = least_squares(
        residual,
        x0,
        bounds=(np.full(len(fit), 0.01), np.full(len(fit), 1000.0)),
        diff_step=0.05,  # the objective is a simulation: difference over 5% steps
        max_nfev=max_evaluations,
        x_scale="jac",
    )
    notes = [] if result.success else [f"least_squares stopped: {result.message}"]
    jac = result.jac
    dof = max(1, len(runs) - len(fit))
    s2 = float(result.fun @ result.fun) / dof
    try:
        cov = np.linalg.pinv(jac.T @ jac) * s2
        errs = np.sqrt(np.clip(np.diag(cov), 0, None)) * 1e-6
    except np.linalg.LinAlgError:
        errs = np.full(len(fit), math.nan)
    costs = costs_at(result.x)
    return Calibration(
        costs=costs,
        fitted={n: float(v) * 1e-6 for n, v in zip(fit, result.x, strict=True)},
        stderr={n: float(e) for n, e in zip(fit, errs, strict=True)},
        residuals={r.path.name: float(v) for r, v in zip(runs, result.fun, strict=True)},
        runs_used=[r.path.name for r in runs],
        evaluations=evaluations,
        notes=notes,
    )


def validate(
    runs: Sequence[MeasuredRun], costs: HostCosts, seed: int = 1, jobs: int | None = 1
) -> dict[str, Any]:
    """Measured against predicted, per run, and the reply rate's mean absolute % error.

    The error is averaged over the runs whose clients did not limit the load
    (:meth:`~acceptsim.measure.run.MeasuredRun.client_limits`); the others are listed
    under ``excluded`` with the reason, never dropped silently.
    ``mape_reply_rate_by_multi_accept`` gives the error per setting and ``direction``
    compares the measured and the predicted difference between the settings per rate
    (see :func:`~acceptsim.measure.calibrate.direction`).
    """
    predicted = predict(runs, costs, seed=seed, jobs=jobs)
    rows = []
    errors: dict[str, list[float]] = {"on": [], "off": []}
    share_errors: list[float] = []
    excluded = []
    for run, pred in zip(runs, predicted, strict=True):
        rec = run.record()
        measured = {k: rec.get(k) for k in COMPARED}
        predicted_row = {k: pred.get(v) for k, v in COMPARED.items()}
        reasons = run.client_limits()
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
                "target_rate_per_s": run.info.load.target_rate_per_s,
                "repeat": run.info.host.repeat,
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
            errors[setting].append(abs(error))
            if shares is not None:
                share_errors.append(shares[2])
    everything = errors["on"] + errors["off"]
    return {
        "runs": rows,
        "mape_reply_rate": float(np.mean(everything)) if everything else None,
        "runs_in_mape": len(everything),
        "mape_reply_rate_by_multi_accept": {
            k: (float(np.mean(v)) if v else None) for k, v in errors.items()
        },
        "excluded": excluded,
        "direction": direction(rows),
        # several workers: the largest gap between a measured and a predicted share
        "worker_share_error_pp_max": max(share_errors) if share_errors else None,
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
