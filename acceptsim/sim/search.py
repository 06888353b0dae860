"""Noise-aware search over a simulated system's configuration.

Nothing here knows what is simulated: a *run function* maps a point (a
configuration mapping with a ``seed``) to a flat record, and the search
maximises one metric of the record.

* :func:`best_of`: evaluate a list of candidate values of one field (e.g. a
  log-scale ladder of accept-limits), each over the same replications
  (common random numbers: replication ``r`` of every candidate runs with the
  same seed, see :func:`acceptsim.sim.sweep.replication_seed`), and pick the best with
  a 95 % confidence interval.  Because the candidates share their random
  numbers, they are compared by *paired* differences: a candidate is
  *indistinguishable* from the best when the CI of its paired difference
  from the best contains 0.  ``prefer`` chooses among the indistinguishable
  ones (:data:`PREFERENCES`; the default :data:`PREFER` is the one ``acceptsim
  search`` uses too): ``"smallest"`` the smallest value (at equal throughput the
  smaller accept-limit has shorter phases and response times; values that are not
  numbers: the first in the candidates' order), ``"max"`` the highest mean.  ``indifference``
  adds an indifference zone (Bechhofer's ranking-and-selection idea): a
  candidate whose mean is within this fraction of the best mean also counts
  as equivalent, however tight its interval (0: statistics alone).
* :func:`optimise`: tune continuous parameters with ``scipy.optimize``
  (bounded ``minimize_scalar`` for one, Nelder-Mead on the unit cube for
  several), the objective being the mean metric over the same replications.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from acceptsim.sim.errors import ConfigError

RunFn = Callable[[Mapping[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class Evaluated:
    """One candidate: its value(s), the metric's mean and 95 % CI, per-replication values."""

    value: Any
    mean: float
    ci95: tuple[float, float]
    values: tuple[float, ...]
    indistinguishable: bool = False  # from the best (paired CI of the difference contains 0)


@dataclass(frozen=True)
class SearchResult:
    best: Evaluated
    argmax: Evaluated
    evaluated: list[Evaluated] = field(default_factory=list)
    metric: str = "reply_rate_per_s"
    replications: int = 1


def _metric_values(frame: Any, metric: str, n_points: int, replications: int) -> np.ndarray:
    if metric not in frame.columns:
        raise ConfigError("metric", metric, "a column of the run records")
    values = np.asarray(frame[metric], dtype=float)
    return values.reshape(n_points, replications)  # sweep frames are point-major


def evaluate(
    points: Sequence[Mapping[str, Any]],
    *,
    run: RunFn | None = None,
    normalise: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None,
    metric: str = "reply_rate_per_s",
    replications: int = 3,
    jobs: int | None = None,
    progress: bool = False,
    force: bool = False,
    cache: Any = None,
) -> np.ndarray:
    """The metric for every point and replication (array ``[point, replication]``);
    ``force`` lifts the sweep's work bounds, ``cache`` is the sweep's run cache (see
    :func:`acceptsim.sim.sweep.sweep`)."""
    from acceptsim.sim.sweep import sweep

    frame = sweep(
        list(points), run=run, normalise=normalise, replications=replications, jobs=jobs,
        progress=progress, force=force, cache=cache,
    )  # fmt: skip
    return _metric_values(frame, metric, len(points), replications)


def mean_ci(values: Any) -> Any:
    """:func:`acceptsim.sim.stats.mean_ci`, its module (scipy's statistics) imported on first
    use, so that ``acceptsim search --help`` starts quickly."""
    from acceptsim.sim.stats import mean_ci as of

    return of(values)


#: what :func:`best_of` may prefer among the candidates indistinguishable from the best
PREFERENCES = ("smallest", "max")
#: the preference of :func:`best_of` and of ``acceptsim search`` alike
PREFER = "smallest"


def _smallest(rows: Sequence[Evaluated]) -> Evaluated:
    """The row with the smallest value (inf the largest); the first for non-numbers."""
    def key(row: Evaluated) -> float:
        value = row.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return math.nan
        return float(value)

    keys = [key(r) for r in rows]
    if any(math.isnan(k) for k in keys):
        return rows[0]
    return rows[min(range(len(rows)), key=keys.__getitem__)]


def best_of(
    base: Mapping[str, Any],
    field_name: str,
    candidates: Sequence[Any],
    *,
    prefer: str = PREFER,
    indifference: float = 0.0,
    **kwargs: Any,
) -> SearchResult:
    """Evaluate ``base`` with ``field_name`` set to each candidate; the best one."""
    if not candidates:
        raise ConfigError("candidates", candidates, "at least one value")
    if prefer not in PREFERENCES:
        raise ConfigError("prefer", prefer, "'smallest' (the smallest value among those "
                          "indistinguishable from the best) or 'max' (the highest mean)")
    if not 0.0 <= indifference < 1.0:
        raise ConfigError("indifference", indifference, "a fraction in [0, 1)")
    points = [{**base, field_name: c} for c in candidates]
    values = evaluate(points, **kwargs)
    means = values.mean(axis=1)
    top = int(np.nanargmax(means))
    rows = []
    for i, c in enumerate(candidates):
        ci = mean_ci(values[i])
        if i == top:
            same = True
        else:
            diff = mean_ci(values[i] - values[top])
            same = (
                bool(diff.n > 1 and diff.low <= 0.0 <= diff.high)
                or bool(np.allclose(values[i], values[top]))
                or bool(means[i] >= (1.0 - indifference) * means[top] and indifference > 0)
            )
        rows.append(
            Evaluated(c, float(means[i]), (ci.low, ci.high), tuple(map(float, values[i])), same)
        )
    argmax = rows[top]
    best = argmax if prefer == "max" else _smallest([r for r in rows if r.indistinguishable])
    return SearchResult(best, argmax, rows, kwargs.get("metric", "reply_rate_per_s"),
                        values.shape[1])  # fmt: skip


def optimise(
    base: Mapping[str, Any],
    make_point: Callable[[Mapping[str, Any], Mapping[str, float]], dict[str, Any]],
    bounds: Mapping[str, tuple[float, float]],
    *,
    log_scale: Mapping[str, bool] | None = None,
    max_evals: int = 12,
    **kwargs: Any,
) -> SearchResult:
    """Maximise the mean metric over parameters in ``bounds`` with scipy.optimize.

    ``make_point(base, params)`` builds a point from a parameter assignment.
    Every evaluation uses the same replications (common random numbers).
    """
    from scipy import optimize

    names = list(bounds)
    if not names:
        raise ConfigError("tune", bounds, "at least one parameter with bounds")
    logs = {n: bool((log_scale or {}).get(n, False)) for n in names}
    for n, (lo, hi) in bounds.items():
        if not (hi > lo) or (logs[n] and lo <= 0):
            raise ConfigError(f"tune.{n}", (lo, hi), "low < high (and low > 0 on a log scale)")

    def to_params(u: Sequence[float]) -> dict[str, float]:
        out = {}
        for n, x in zip(names, u, strict=True):
            lo, hi = bounds[n]
            x = min(max(float(x), 0.0), 1.0)
            out[n] = lo * (hi / lo) ** x if logs[n] else lo + (hi - lo) * x
        return out

    seen: dict[tuple[float, ...], Evaluated] = {}

    def objective(u: Sequence[float]) -> float:
        params = to_params(u)
        key = tuple(round(params[n], 9) for n in names)
        if key not in seen:
            if len(seen) >= max_evals:
                return math.inf  # budget spent: the optimiser only sees a wall
            vals = evaluate([make_point(base, params)], **kwargs)[0]
            ci = mean_ci(vals)
            seen[key] = Evaluated(params, float(vals.mean()), (ci.low, ci.high),
                                  tuple(map(float, vals)))  # fmt: skip
        return -seen[key].mean

    if len(names) == 1:
        optimize.minimize_scalar(
            lambda x: objective([x]), bounds=(0.0, 1.0), method="bounded",
            options={"maxiter": max_evals, "xatol": 0.02},
        )  # fmt: skip
    else:
        optimize.minimize(
            objective, x0=np.full(len(names), 0.5), method="Nelder-Mead",
            options={"maxfev": max_evals, "xatol": 0.02, "fatol": 1.0,
                     "initial_simplex": _simplex(len(names))},
        )  # fmt: skip
    rows = list(seen.values())
    best = max(rows, key=lambda r: r.mean)
    return SearchResult(best, best, rows, kwargs.get("metric", "reply_rate_per_s"),
                        len(best.values))  # fmt: skip


def _simplex(n: int) -> np.ndarray:
    """A start simplex spanning most of the unit cube."""
    simplex = np.full((n + 1, n), 0.3)
    for i in range(n):
        simplex[i + 1, i] = 0.8
    return simplex
