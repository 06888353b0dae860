"""The multi-worker measured sets' layouts, shared by their tests
(``test_measured_workers.py``, ``test_measured_worker_cgroups.py``)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from acceptsim.measure import find_runs, load_run
from acceptsim.measure.calibrate import config_for, validate
from acceptsim.models.runner import run_point

#: the workers' numbers each set was recorded with, and the runs per layout in each
WORKERS = (2, 4)
RUNS_PER_LAYOUT = 15
#: the target rates every layout was recorded at (connections/s)
RATES = (1000.0, 2000.0, 3500.0, 5000.0, 6000.0)


def layout_of(name: str) -> str:
    """A run's layout from its directory name: shared, reuseport or mutex."""
    return "reuseport" if "reuseport" in name else "mutex" if "mutex" in name else "shared"


def validate_set(path: Path, costs: Any) -> dict[int, dict]:
    """``acceptsim validate``'s report of each ``workers-N`` part of the set at ``path``."""
    return {n: validate([load_run(d) for d in find_runs(path / f"workers-{n}")], costs, jobs=2)
            for n in WORKERS}


def by_layout(report: dict, layout: str) -> list[dict]:
    """The report's rows of one layout: all of them, none left out."""
    rows = [row for row in report["runs"] if layout_of(row["run"]) == layout]
    assert len(rows) == RUNS_PER_LAYOUT and not any(row["excluded_because"] for row in rows)
    return rows


def layout_mape(report: dict, layout: str) -> float:
    """The mean absolute % error of one layout's reply rates in ``report``."""
    rows = by_layout(report, layout)
    return sum(abs(row["reply_rate_error_pct"]) for row in rows) / len(rows)


#: the seeds the model's mean share is taken over (:func:`busier_share_gap`)
SEEDS = range(1, 9)


def seed_mean_mape(runs: list[Any], costs: Any) -> float:
    """The mean absolute % error of ``runs``' reply rates against the model's mean over
    :data:`SEEDS` at each run's configuration (the repeats of a point share one)."""
    predicted: dict[float, float] = {}
    errors = []
    for run in runs:
        rate = run.info.load.target_rate_per_s
        if rate not in predicted:
            predicted[rate] = float(np.mean([
                run_point(config_for(run, costs, seed=seed), checked=False)["reply_rate_per_s"]
                for seed in SEEDS]))
        measured = run.record()["reply_rate_per_s"]
        errors.append(abs(predicted[rate] - measured) / measured * 100)
    return float(np.mean(errors))


def busier_share_gap(runs: list[Any], costs: Any) -> tuple[float, float, list, list]:
    """The busier worker's share of the requests in ``runs`` (the repeats of one point)
    against the model's over :data:`SEEDS`: the gap between the two means, two standard
    errors of that difference, and the measured and simulated shares."""
    measured = [max(r.record()["worker_shares"]) for r in runs]
    simulated = []
    for seed in SEEDS:
        record = run_point(config_for(runs[0], costs, seed=seed), checked=False)
        replies = [w["replies_per_s"] for w in record["per_worker"]]
        simulated.append(max(replies) / sum(replies))
    gap = abs(float(np.mean(measured)) - float(np.mean(simulated)))
    se = math.sqrt(np.var(measured, ddof=1) / len(measured)
                   + np.var(simulated, ddof=1) / len(simulated))
    return gap, 2 * se, measured, simulated


#: the (workers, rate) points of a set's mutex mean-share test
MUTEX_CASES = [(n, rate) for n in WORKERS for rate in RATES]


def assert_mutex_share_is_the_models(runs: list[Any], rate: float, costs: Any) -> None:
    """The busier worker's share of the requests under the accept mutex at ``rate``: the
    measured repeats' mean within 10 points of the model's mean over :data:`SEEDS`, or
    within two standard errors of their difference."""
    at_rate = [r for r in runs if r.info.load.target_rate_per_s == rate]
    assert len(at_rate) == 3
    gap, two_se, measured, simulated = busier_share_gap(at_rate, costs)
    assert gap <= max(0.10, two_se), (measured, simulated)
