"""nginx with a cgroup per worker, measured (tests/data/measured/nginx-loopback-worker-cgroups):
2 workers with 0.1 CPU each (period 10 ms) and 4 with 0.05 CPU each (period 20 ms, the
kernel's 1 ms minimum quota), all on CPU 0, against the model with the costs of
``nginx-loopback-workers.params.toml`` and nothing fitted to these runs (the predictions
were written before the recording: the data README).

What holds: below the quotas' saturation (1,000 and 2,000/s) the shared socket's and
reuseport's reply rates within 2% run by run, and their workers' shares within 10 points
run by run at every rate.  What misses, kept as strict xfails with the numbers: at and
above 3,500/s the measured workers serve about 3,000/s where the model's serve 4,200/s.
That is the machine, not the per-worker groups: the costs were fitted to runs recorded
at 07:28 UTC and these runs were recorded at 13:04, when the machine ran about 20%
slower.  With costs fitted to a reference recorded at 15:00 (the
``nginx-loopback-cgroup-scopes`` set) every layout of this set is within a MAPE of 10%,
and that set shows one group of 0.2 CPU serving what two groups of 0.1 do.  With those
costs the accept mutex's mean shares agree too (the quota noticed at the scheduler's
tick and an overrun owed to later periods, as the kernel does).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from measured_layouts import (
    MUTEX_CASES,
    assert_mutex_share_is_the_models,
    by_layout,
    layout_mape,
    layout_of,
    validate_set,
)

from acceptsim.config_io import load_params_file
from acceptsim.measure import find_runs, load_run
from acceptsim.measure.calibrate import config_for

DATA = Path(__file__).resolve().parent / "data" / "measured"
SET = DATA / "nginx-loopback-worker-cgroups"
COSTS = load_params_file(DATA / "nginx-loopback-workers.params.toml")[0]
#: the costs fitted to a reference recorded two hours after this set, on the same machine
AFTERNOON = load_params_file(DATA / "nginx-loopback-cgroup-scopes.params.toml")[0]


@pytest.fixture(scope="module")
def reports() -> dict[int, dict]:
    return validate_set(SET, COSTS)


@pytest.fixture(scope="module")
def afternoon() -> dict[int, dict]:
    return validate_set(SET, AFTERNOON)


def test_every_run_has_a_cgroup_per_worker_and_the_server_saturated_first() -> None:
    """Recorded with --server-cpu-quota-scope worker; httperf started every connection at
    its target rate (no run client-limited), so where replies fall short the server did."""
    for n, quota, period in ((2, 0.1, 10000), (4, 0.05, 20000)):
        runs = [load_run(d) for d in find_runs(SET / f"workers-{n}")]
        assert len(runs) == 45
        for run in runs:
            server = run.info.server
            assert (server.cpu_quota_scope, server.cpu_quota, server.cpu_period_us,
                    server.worker_processes, server.cpus) == ("worker", quota, period, n, "0")
            assert not run.client_limited, (run.path.name, run.client_limits())
            assert config_for(run, COSTS).cpu_quota_scope == "worker"


#: (workers, layout) predicted with the morning's costs: every layout misses (their
#: MAPEs: tests/data/measured/README.md, nginx-loopback-worker-cgroups).  Four workers
#: under the mutex, at 9.3%, did not until the scheduler kept each task's lag and a
#: quota's run began at a random instant of its period (13.0% since; with the
#: afternoon's costs 8.2% -> 4.8%)
MAPE_MISSES = {
    (2, "shared"), (2, "mutex"), (2, "reuseport"),
    (4, "shared"), (4, "reuseport"), (4, "mutex"),
}


def _mape_case(workers: int, layout: str) -> object:
    if (workers, layout) not in MAPE_MISSES:
        return (workers, layout)
    return pytest.param(workers, layout, marks=pytest.mark.xfail(strict=True, reason=(
        "the machine's drift, not the model: the costs were fitted to a reference recorded "
        "hours before these runs, on a VM that has since slowed, so the saturated workers "
        "serve less than predicted; with the costs of a reference recorded beside them "
        "(nginx-loopback-cgroup-scopes) every layout is within 10% "
        "(test_with_the_afternoons_costs_every_layout_within_a_mape_of_10pct); numbers: "
        "tests/data/measured/README.md, nginx-loopback-worker-cgroups")))


@pytest.mark.parametrize(("workers", "layout"), [
    _mape_case(n, layout) for n in (2, 4) for layout in ("shared", "reuseport", "mutex")])
def test_each_layouts_reply_rates_within_a_mape_of_10pct(
    reports: dict[int, dict], workers: int, layout: str
) -> None:
    mape = layout_mape(reports[workers], layout)
    assert mape <= 10.0, mape


@pytest.mark.parametrize("workers", [2, 4])
@pytest.mark.parametrize("layout", ["shared", "reuseport", "mutex"])
def test_with_the_afternoons_costs_every_layout_within_a_mape_of_10pct(
    afternoon: dict[int, dict], workers: int, layout: str
) -> None:
    """The same runs against the costs fitted to the one-worker reference of
    nginx-loopback-cgroup-scopes (recorded 15:00 UTC on the same machine, two hours after
    these): the saturated rates are the machine's speed that afternoon."""
    assert layout_mape(afternoon[workers], layout) <= 10.0


@pytest.mark.parametrize("workers", [2, 4])
@pytest.mark.parametrize("layout", ["shared", "reuseport"])
def test_below_the_quotas_saturation_every_run_within_2pct(
    reports: dict[int, dict], workers: int, layout: str
) -> None:
    rows = [row for row in by_layout(reports[workers], layout)
            if row["target_rate_per_s"] <= 2000.0]
    assert len(rows) == 6
    errors = [abs(row["reply_rate_error_pct"]) for row in rows]
    assert max(errors) <= 2.0, errors


@pytest.mark.parametrize("workers", [2, 4])
@pytest.mark.parametrize("layout", ["shared", "reuseport"])
def test_each_workers_share_within_10_points(
    reports: dict[int, dict], workers: int, layout: str
) -> None:
    gaps = [row["worker_share_error_pp"] for row in by_layout(reports[workers], layout)]
    assert max(gaps) <= 10.0, gaps


@pytest.mark.parametrize(("workers", "rate"), MUTEX_CASES)
def test_the_mutex_busier_workers_mean_share_is_the_models(workers: int, rate: float) -> None:
    """As tests/test_measured_workers.py (measured_layouts.assert_mutex_share_is_the_models),
    with the afternoon's costs: the machine's speed when the set was recorded (see
    test_with_the_afternoons_costs_every_layout_within_a_mape_of_10pct).  With the
    morning's the model's worker of 4 is fast enough to serve 1,000/s alone."""
    runs = [load_run(d) for d in find_runs(SET / f"workers-{workers}")
            if layout_of(d.name) == "mutex"]
    assert_mutex_share_is_the_models(runs, rate, AFTERNOON)
