"""nginx with 2 and 4 workers, measured (tests/data/measured/nginx-loopback-workers), against
the model with the one-worker runs' costs and nothing fitted to the workers' runs.

Each layout's reply rates within a MAPE of 10%.  The workers' shares of the requests:
within 10 points of the prediction, run by run, for the shared socket (EPOLLEXCLUSIVE
with nginx 1.22.1's re-adding of the socket every 16 accept events) and reuseport; the
model without the re-adding (nginx before 1.21.6) would put 95% on one worker where the
measured shares are even.  The accept mutex is the known miss: on this testbed all the
workers share one CPU, so the holder keeps the mutex while the others cannot run, where
the model gives each worker a CPU of its own (strict xfail: a fix makes it pass).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from acceptsim.config_io import load_params_file
from acceptsim.measure import find_runs, load_run
from acceptsim.measure.calibrate import config_for, validate
from acceptsim.models.runner import run_point

DATA = Path(__file__).resolve().parent / "data" / "measured"
SET = DATA / "nginx-loopback-workers"
COSTS = load_params_file(DATA / "nginx-loopback-workers.params.toml")[0]


def layout_of(name: str) -> str:
    return "reuseport" if "reuseport" in name else "mutex" if "mutex" in name else "shared"


@pytest.fixture(scope="module")
def reports() -> dict[int, dict]:
    return {n: validate([load_run(d) for d in find_runs(SET / f"workers-{n}")], COSTS, jobs=2)
            for n in (2, 4)}


def _by_layout(report: dict, layout: str) -> list[dict]:
    rows = [row for row in report["runs"] if layout_of(row["run"]) == layout]
    assert len(rows) == 15 and not any(row["excluded_because"] for row in rows)
    return rows


@pytest.mark.parametrize("workers", [2, 4])
@pytest.mark.parametrize("layout", ["shared", "reuseport", "mutex"])
def test_each_layouts_reply_rates_within_a_mape_of_10pct(
    reports: dict[int, dict], workers: int, layout: str
) -> None:
    rows = _by_layout(reports[workers], layout)
    mape = sum(abs(row["reply_rate_error_pct"]) for row in rows) / len(rows)
    assert mape <= 10.0, mape


@pytest.mark.parametrize("workers", [2, 4])
@pytest.mark.parametrize("layout", [
    "shared", "reuseport",
    pytest.param("mutex", marks=pytest.mark.xfail(strict=True, reason=(
        "the testbed's workers share one CPU: the holder keeps the mutex (module docstring)"))),
])
def test_each_workers_share_within_10_points(
    reports: dict[int, dict], workers: int, layout: str
) -> None:
    gaps = [row["worker_share_error_pp"] for row in _by_layout(reports[workers], layout)]
    assert max(gaps) <= 10.0, gaps


def test_without_nginx_1_21_6s_re_adding_the_shared_socket_would_be_far_off() -> None:
    """Below saturation (1,000/s) the measured shares are even; EPOLLEXCLUSIVE's walk
    alone would give the first-registered worker most of the connections."""
    for n in (2, 4):
        run = load_run(SET / f"workers-{n}" /
                       f"nginx-workers-{n}-shared-multi_accept-off-rate-001000-rep-1")
        measured = max(run.record()["worker_shares"])
        config = config_for(run, COSTS)
        old = run_point(config.replace(server_params={"reorder_accept_every": 0}), checked=False)
        replies = [w["replies_per_s"] for w in old["per_worker"]]
        assert measured < 1 / n + 0.02
        assert max(replies) / sum(replies) > 0.85
