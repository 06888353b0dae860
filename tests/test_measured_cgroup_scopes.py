"""nginx's workers under per-worker and one-group CFS quotas, measured with a reference
recorded in the same session (tests/data/measured/nginx-loopback-cgroup-scopes).

The set's costs (``nginx-loopback-cgroup-scopes.params.toml``) are the host's, measured
at the start of the session, with ``request_s`` fitted to the one-worker runs
(``workers-1``: one 0.1-CPU group, period 10 ms) and nothing fitted to the others:

- ``workers-2``: 2 workers with a 0.1-CPU group each (period 10 ms): shared socket, accept
  mutex, reuseport;
- ``workers-2-one-group``: the same 2 workers in one 0.2-CPU group, shared socket;
- ``workers-4``: 4 workers with a 0.05-CPU group each (period 20 ms), three layouts.

Every repeat records each configuration in turn, so a drift of the machine's speed
over the session reaches the reference and the predicted runs alike.  The earlier
``nginx-loopback-worker-cgroups`` set was predicted from costs fitted six hours before
it was recorded, on a machine that ran about 20% slower by then; this set is the same
question asked with its reference beside it.

What holds: every layout's reply rates within a MAPE of 10%, the shares of the shared
socket and reuseport within 10 points run by run, and one group of 0.2 CPU serving what
two groups of 0.1 do, and the accept mutex's mean shares (with the quota noticed at the
scheduler's tick and an overrun owed to later periods, as the kernel does), and the
handshakes the kernel completes past saturation for connections that never bring a
request (a strict xfail until httperf's give-up came on a tick).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from measured_layouts import (
    MUTEX_CASES,
    assert_mutex_share_is_the_models,
    layout_of,
    seed_mean_mape,
)

from acceptsim.config_io import load_params_file
from acceptsim.measure import find_runs, load_run
from acceptsim.measure.calibrate import config_for, validate
from acceptsim.models.runner import run_point

DATA = Path(__file__).resolve().parent / "data" / "measured"
SET = DATA / "nginx-loopback-cgroup-scopes"
PARAMS = DATA / "nginx-loopback-cgroup-scopes.params.toml"
COSTS = load_params_file(PARAMS)[0]
#: part of the set: (workers, CPU quota per group, period in us, whose group it is)
PARTS = {
    "workers-1": (1, 0.1, 10000, "server"),
    "workers-2": (2, 0.1, 10000, "worker"),
    "workers-2-one-group": (2, 0.2, 10000, "server"),
    "workers-4": (4, 0.05, 20000, "worker"),
}
LAYOUTS = {"workers-1": ("shared",), "workers-2": ("shared", "mutex", "reuseport"),
           "workers-2-one-group": ("shared",), "workers-4": ("shared", "mutex", "reuseport")}


def runs_of(part: str, layout: str | None = None) -> list:
    runs = [load_run(d) for d in find_runs(SET / part)]
    return [r for r in runs if layout is None or layout_of(r.path.name) == layout]


@pytest.fixture(scope="module")
def reports() -> dict[str, dict]:
    return {part: validate(runs_of(part), COSTS, jobs=2) for part in PARTS}


def rows_of(report: dict, layout: str) -> list[dict]:
    rows = [row for row in report["runs"] if layout_of(row["run"]) == layout]
    assert len(rows) == 15 and not any(row["excluded_because"] for row in rows)
    return rows


@pytest.mark.parametrize("part", sorted(PARTS))
def test_every_run_is_recorded_as_planned_and_the_server_saturated_first(part: str) -> None:
    workers, quota, period, scope = PARTS[part]
    runs = runs_of(part)
    assert len(runs) == 15 * len(LAYOUTS[part])
    for run in runs:
        server = run.info.server
        assert (server.worker_processes, server.cpu_quota, server.cpu_period_us,
                server.cpus, server.multi_accept) == (workers, quota, period, "0", False)
        assert (server.cpu_quota_scope or "server") == scope
        assert config_for(run, COSTS).cpu_quota_scope == scope
        assert not run.client_limited, (run.path.name, run.client_limits())


def test_only_the_reference_runs_were_fitted() -> None:
    """The parameter file names the runs it was fitted to: the one-worker runs alone."""
    header = PARAMS.read_text().split("\n[", 1)[0]
    fitted = [line.split()[2].rstrip(":") for line in header.splitlines()
              if line.startswith("#   residual ")]
    assert len(fitted) == 15
    assert {r.path.name for r in runs_of("workers-1")} == set(fitted)


def _fitted_request_s(path: Path) -> tuple[float, float]:
    """The fitted request_s and its error, as the parameter file's header states them."""
    for line in path.read_text().splitlines():
        if line.startswith("#   request_s = "):
            value, _, error = line.removeprefix("#   request_s = ").split()[:3]
            return float(value), float(error)
    raise AssertionError(f"{path.name}: no fitted request_s")


def test_the_machines_speed_drifted_between_the_mornings_reference_and_this_one() -> None:
    """The same configuration (one worker, one 0.1-CPU group, period 10 ms) fitted at
    07:28 UTC (nginx-loopback-workers, multi_accept on) and at 14:54 (this set,
    multi_accept off): request_s 34.1 +/- 1.2 us against 42.9 +/- 1.7, further apart than
    four of their combined errors.  Each multi-worker set is predicted within 10% by the
    costs of its own half of the day (test_measured_workers.py and this file; the 13:04
    set by these costs, test_measured_worker_cgroups.py), so a set is validated against a
    reference recorded beside it."""
    morning = _fitted_request_s(DATA / "nginx-loopback-workers.params.toml")
    afternoon = _fitted_request_s(PARAMS)
    assert afternoon[0] == pytest.approx(COSTS.request_s, rel=1e-3)
    combined = (morning[1] ** 2 + afternoon[1] ** 2) ** 0.5
    assert afternoon[0] - morning[0] > 4 * combined


def _parts_and_layouts() -> list[tuple[str, str]]:
    return [(part, layout) for part in PARTS for layout in LAYOUTS[part]]


@pytest.mark.parametrize(("part", "layout"), _parts_and_layouts())
def test_each_layouts_reply_rates_within_a_mape_of_10pct(
    reports: dict[str, dict], part: str, layout: str
) -> None:
    """Against one seed's prediction of each run; under the accept mutex against the
    model's mean over seeds, where which worker holds the mutex when a quota runs out
    moves a seed's MAPE over 6.9-12.0% (seeds 1-5 of workers-4; 8.1% for their mean
    over 8 seeds)."""
    rows = rows_of(reports[part], layout)
    if layout == "mutex":
        mape = seed_mean_mape(runs_of(part, layout), COSTS)
    else:
        mape = sum(abs(row["reply_rate_error_pct"]) for row in rows) / len(rows)
    assert mape <= 10.0, mape


@pytest.mark.parametrize(("part", "layout"), [
    (p, lay) for p, lay in _parts_and_layouts() if p != "workers-1" and lay != "mutex"])
def test_below_the_quotas_saturation_every_run_within_2pct_and_every_share_within_10_points(
    reports: dict[str, dict], part: str, layout: str
) -> None:
    rows = rows_of(reports[part], layout)
    below = [abs(row["reply_rate_error_pct"]) for row in rows
             if row["target_rate_per_s"] <= 2000.0]
    assert len(below) == 6 and max(below) <= 2.0, below
    gaps = [row["worker_share_error_pp"] for row in rows]
    assert max(gaps) <= 10.0, gaps


def test_a_group_per_worker_costs_what_one_group_of_their_sum_does() -> None:
    """2 workers, 0.1 CPU each in groups of their own, against the same 2 workers in one
    0.2-CPU group, past the quotas' saturation (3,500-6,000/s): the measured reply rates
    differ by less than 5% (3,227 against 3,329/s, within two standard errors of the
    repeats), and the model's difference lies within two standard errors of the measured
    one (it serves 3,203/s either way: after a throttle, of its own group or of the
    server's, the burst cut resumes cold on the idle processor).  The earlier set's miss
    was no cost of the per-worker groups: see the module's docstring."""
    def saturated(part: str) -> list:
        return [r for r in runs_of(part, "shared") if r.info.load.target_rate_per_s >= 3500]

    runs = (saturated("workers-2"), saturated("workers-2-one-group"))
    assert [len(r) for r in runs] == [9, 9]
    measured = [np.array([r.record()["reply_rate_per_s"] for r in part]) for part in runs]
    gap = measured[0].mean() - measured[1].mean()
    two_se = 2 * np.sqrt(measured[0].var(ddof=1) / 9 + measured[1].var(ddof=1) / 9)
    assert abs(gap) <= two_se and abs(gap) / measured[1].mean() < 0.05, (measured, gap)
    predicted = [np.mean([row["predicted"]["reply_rate_per_s"]
                          for row in validate(part, COSTS, jobs=2)["runs"]]) for part in runs]
    assert abs((predicted[0] - predicted[1]) - gap) <= two_se, (predicted, gap, two_se)
    assert abs(predicted[0] - predicted[1]) / predicted[1] < 0.05


@pytest.mark.parametrize(("workers", "rate"), MUTEX_CASES)
def test_the_mutex_busier_workers_mean_share_is_the_models(workers: int, rate: float) -> None:
    """As tests/test_measured_workers.py (measured_layouts.assert_mutex_share_is_the_models).
    Past the quotas' saturation each worker runs in bursts to a scheduler tick and then
    pays its overrun for whole periods (sim.cpu.Bandwidth): the mutex passes from one
    burst to the next among all the workers.  With the quota enforced at once the model's
    busier worker of 4 took 0.54-0.57 of the requests against 0.35-0.39 measured, and
    the second of 2 workers took some at 1,000/s where the measured never did."""
    assert_mutex_share_is_the_models(runs_of(f"workers-{workers}", "mutex"), rate, COSTS)


def test_handshakes_completed_without_a_request_past_saturation_are_the_models() -> None:
    """One worker at 5,000 and 6,000/s: the connections the kernel established
    (TcpPassiveOpens) beyond the replies, per second, against the model's accepts beyond
    its replies, within 30% on the mean of the six runs: 767/s measured (684-886), 581
    simulated (556 and 606).  This is the race of two 1-s timers: a SYN the kernel
    retransmits after the deadline but before its httperf process's turn, in which the
    process gives up, completes a handshake that never brings a request.  The model met
    it with 403 and 498/s (a strict xfail) until the give-up came on a tick, after that
    tick's timers (``Client.give_up_at``); the SYNs retransmitted at 6,000/s went from 1,522/s
    to 1,866/s, where the counters say 2,002-2,253
    (tests/data/measured/README.md, "The client's two clocks")."""
    runs = [r for r in runs_of("workers-1") if r.info.load.target_rate_per_s >= 5000]
    assert len(runs) == 6
    measured = np.mean([(r.counter_deltas["TcpPassiveOpens"] - r.record()["replies_2xx"])
                        / r.info.load.duration_s for r in runs])
    assert measured > 300  # the counters say it happens
    records = [run_point(config_for(r, COSTS), checked=False) for r in runs]
    simulated = np.mean([rec["accept_rate_per_s"] - rec["reply_rate_per_s"] for rec in records])
    assert simulated == pytest.approx(measured, rel=0.3), (measured, simulated)
