"""sim.sweep: parallel, distributed and resumed sweeps give the same table; replications
of an M/M/1 queue give a confidence interval that covers the closed form."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from acceptsim import sim
from acceptsim.sim.engine import Environment
from acceptsim.sim.errors import ConfigError
from acceptsim.sim.stats import StoppingRule, mean_ci
from acceptsim.sim.streams import Streams
from acceptsim.sim.sweep import (
    deterministic,
    make_tasks,
    read_results,
    replication_seed,
    run_key,
    run_many,
    summary,
)

# a userver sweep small enough for the default suite: 3 limits x 2 rates, 0.6 s each
SMALL = {
    "overrides": {"duration_s": 0.6, "warmup_s": 0.2},
    "sweep_overrides": {"rate_per_s": [8000, 22000]},
}


# -- a tiny M/M/1 queue built directly on the engine -------------------------------------------
def mm1_run(point: Mapping[str, Any]) -> dict[str, Any]:
    """One replication: mean time in system of customers after a warm-up (FIFO, one server)."""
    env = Environment()
    streams = Streams(point["seed"])
    gap = streams.exponential("arrivals", 1.0 / point["arrival_rate"])
    service = streams.exponential("service", 1.0 / point["service_rate"])
    customers, warmup = point["customers"], point["warmup_customers"]
    in_system: deque[float] = deque()
    sojourns: list[float] = []
    arrived = 0

    def arrival(_: object) -> None:
        nonlocal arrived
        arrived += 1
        in_system.append(env.now)
        if len(in_system) == 1:
            env.call_in(service(), departure)
        if arrived < customers:
            env.call_in(gap(), arrival)

    def departure(_: object) -> None:
        sojourns.append(env.now - in_system.popleft())
        if in_system:
            env.call_in(service(), departure)

    env.call_in(gap(), arrival)
    env.run()
    kept = sojourns[warmup:]
    return {"mean_sojourn_time": float(np.mean(kept)), "customers_measured": len(kept)}


MM1 = {"arrival_rate": 0.5, "service_rate": 1.0, "customers": 4000, "warmup_customers": 400}


def identity(point: Mapping[str, Any]) -> dict[str, Any]:
    return dict(point)


def test_replications_of_an_mm1_queue_cover_the_closed_form_mean_time_in_system() -> None:
    frame = sim.sweep([{**MM1, "seed": 2004}], run=mm1_run, normalise=identity,
                      replications=20, jobs=1, progress=False)  # fmt: skip
    ci = mean_ci(frame["mean_sojourn_time"])
    exact = 1.0 / (MM1["service_rate"] - MM1["arrival_rate"])  # W = 1 / (mu - lambda)
    assert ci.covers(exact), (ci, exact)
    assert ci.relative_half_width < 0.1  # and the interval is informative


@pytest.mark.slow
def test_mm1_intervals_cover_the_closed_form_about_95_percent_of_the_time() -> None:
    points = [{**MM1, "seed": s} for s in range(100)]
    frame = sim.sweep(points, run=mm1_run, normalise=identity, replications=10, progress=False)
    exact = 1.0 / (MM1["service_rate"] - MM1["arrival_rate"])
    covered = [mean_ci(g["mean_sojourn_time"]).covers(exact) for _, g in frame.groupby("base_seed")]
    assert np.mean(covered) >= 0.88


def test_a_stopping_rule_adds_replications_until_the_interval_is_tight() -> None:
    points = [{**MM1, "customers": 1500, "seed": 1}, {**MM1, "arrival_rate": 0.2, "seed": 1}]
    rule = StoppingRule("mean_sojourn_time", rel_half_width=0.04, max_replications=12)
    frame = sim.sweep(points, run=mm1_run, normalise=identity, replications=2, stop=rule,
                      jobs=1, progress=False)  # fmt: skip
    for _, group in frame.groupby("arrival_rate"):
        n = len(group)
        assert sorted(group["replication"]) == list(range(n))
        assert n == 12 or mean_ci(group["mean_sojourn_time"]).relative_half_width <= 0.04
    assert len(frame) > 4  # at least one configuration needed more than its first two


# -- identity of runs ----------------------------------------------------------------------------
def test_replication_r_has_the_same_seed_in_every_configuration() -> None:
    tasks = make_tasks([{"x": 1, "seed": 7}, {"x": 2, "seed": 7}], 3)
    seeds = {(t.index, t.replication): t.config["seed"] for t in tasks}
    assert [seeds[(0, r)] for r in range(3)] == [seeds[(1, r)] for r in range(3)]
    assert len({seeds[(0, r)] for r in range(3)}) == 3
    assert seeds[(0, 1)] == replication_seed(7, 1)
    assert len({t.key for t in tasks}) == 6


def test_a_run_key_ignores_how_a_number_is_written() -> None:
    assert run_key({"a": 1, "b": math.inf}, 0) == run_key({"b": "inf", "a": 1.0}, 0)
    assert run_key({"a": 1}, 0) != run_key({"a": 1}, 1)
    assert run_key({"a": 1}, 0) != run_key({"a": 1.5}, 0)


def test_run_many_keeps_the_order_of_the_points() -> None:
    points = [{"i": i} for i in range(7)]
    assert run_many(identity, points, jobs=2, progress=False) == points


def test_points_are_validated_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        sim.sweep("userver-one-packet", sweep_overrides={"accept_limit": [1, 0]},
                  out=tmp_path / "x", progress=False)  # fmt: skip
    assert not (tmp_path / "x").exists()
    with pytest.raises(ConfigError):  # a swept field is not silently overridden
        sim.sweep("userver-one-packet", overrides={"accept_limit": 10}, progress=False)
    with pytest.raises(ConfigError):
        sim.sweep("no-such-scenario", progress=False)


# -- the same table wherever and however the runs ran ---------------------------------------------
@pytest.fixture(scope="module")
def serial() -> pd.DataFrame:
    return sim.sweep("userver-one-packet", replications=2, jobs=1, progress=False, **SMALL)


def test_a_sweep_has_one_row_per_run_with_configuration_and_metrics(serial: pd.DataFrame) -> None:
    assert len(serial) == 3 * 2 * 2
    for column in ("replication", "base_seed", "seed", "accept_limit", "rate_per_s",
                   "costs.request_s", "kernel.somaxconn", "reply_rate_per_s",
                   "drops_per_s.total", "cpu_share.kernel", "sim_conns_per_cpu_s"):  # fmt: skip
        assert column in serial.columns, column
    assert serial["run_key"].is_unique
    # common random numbers: every configuration's replication r ran with one seed
    assert serial.groupby("replication")["seed"].nunique().eq(1).all()
    table = summary(serial)
    assert len(table) == 6 and (table["replications"] == 2).all()


def test_two_jobs_give_exactly_the_rows_of_a_serial_sweep(serial: pd.DataFrame) -> None:
    parallel = sim.sweep("userver-one-packet", replications=2, jobs=2, progress=False, **SMALL)
    pd.testing.assert_frame_equal(deterministic(parallel), deterministic(serial))


def test_a_dask_cluster_gives_the_same_table(serial: pd.DataFrame) -> None:
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(processes=False, n_workers=1, threads_per_worker=2,
                                  dashboard_address=None) as cluster:  # fmt: skip
        # by address, as `acceptsim sweep --scheduler ADDRESS` does
        address = cluster.scheduler_address
        on_dask = sim.sweep(
            "userver-one-packet", replications=2, scheduler=address, progress=False, **SMALL
        )
    pd.testing.assert_frame_equal(deterministic(on_dask), deterministic(serial))


class FailsAfter:
    """A run function that dies after ``k`` runs, as a killed sweep would."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.calls = 0

    def __call__(self, point: Mapping[str, Any]) -> dict[str, Any]:
        if self.calls >= self.k:
            raise KeyboardInterrupt("killed")
        self.calls += 1
        from acceptsim.models.runner import run_point

        return run_point(point)


class Counting:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, point: Mapping[str, Any]) -> dict[str, Any]:
        self.calls += 1
        from acceptsim.models.runner import run_point

        return run_point(point)


def test_an_interrupted_sweep_resumes_to_the_same_table(tmp_path: Path,
                                                        serial: pd.DataFrame) -> None:  # fmt: skip
    out = tmp_path / "sweep"
    with pytest.raises(KeyboardInterrupt):
        sim.sweep("userver-one-packet", run=FailsAfter(5), replications=2, jobs=1, out=out,
                  progress=False, **SMALL)  # fmt: skip
    assert len(list((out / "parts").glob("*.parquet"))) == 5
    with pytest.raises(ConfigError):  # never silently overwrite a stored sweep
        sim.sweep("userver-one-packet", replications=2, out=out, progress=False, **SMALL)
    counting = Counting()
    resumed = sim.sweep("userver-one-packet", run=counting, replications=2, jobs=1, out=out,
                        resume=True, progress=False, **SMALL)  # fmt: skip
    assert counting.calls == len(serial) - 5  # ran only what was missing
    pd.testing.assert_frame_equal(deterministic(resumed), deterministic(serial))
    stored, description = read_results(out)
    pd.testing.assert_frame_equal(deterministic(stored), deterministic(resumed))
    assert description["versions"]["acceptsim"]
    assert description["base"]["duration_s"] == 0.6
    # resuming a finished sweep runs nothing
    again = Counting()
    sim.sweep("userver-one-packet", run=again, replications=2, jobs=1, out=out, resume=True,
              progress=False, **SMALL)  # fmt: skip
    assert again.calls == 0


class DiesOn:
    """A run function whose worker process dies (no exception, no cleanup) on one rate."""

    def __init__(self, rate: float) -> None:
        self.rate = rate

    def __call__(self, point: Mapping[str, Any]) -> dict[str, Any]:
        if point["rate_per_s"] == self.rate:
            time.sleep(0.3)  # let the other worker finish something first
            os._exit(1)
        from acceptsim.models.runner import run_point

        return run_point(point)


def test_a_sweep_whose_worker_dies_resumes_to_the_same_table(
    tmp_path: Path, serial: pd.DataFrame
) -> None:
    from concurrent.futures.process import BrokenProcessPool

    out = tmp_path / "sweep"
    with pytest.raises(BrokenProcessPool):
        sim.sweep("userver-one-packet", run=DiesOn(22000.0), replications=2, jobs=2, out=out,
                  progress=False, **SMALL)  # fmt: skip
    assert 1 <= len(list((out / "parts").glob("*.parquet"))) < len(serial)
    resumed = sim.sweep("userver-one-packet", replications=2, jobs=2, out=out, resume=True,
                        progress=False, **SMALL)  # fmt: skip
    pd.testing.assert_frame_equal(deterministic(resumed), deterministic(serial))


CLI_ARGS = ["userver-one-packet", "--duration", "0.6", "--warmup", "0.2",
            "--vary", "rate_per_s=8000,22000", "--replications", "2", "--quiet"]  # fmt: skip


def _acceptsim(*args: str | Path) -> list[str]:
    return [sys.executable, "-m", "acceptsim.cli", *map(str, args)]


def test_a_killed_cli_sweep_resumes_to_the_same_table_as_an_uninterrupted_one(
    tmp_path: Path,
) -> None:
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    subprocess.run(_acceptsim("sweep", *CLI_ARGS, "--jobs", "1", "--out", whole), check=True,
                   capture_output=True)  # fmt: skip
    proc = subprocess.Popen(_acceptsim("sweep", *CLI_ARGS, "--jobs", "2", "--out", cut),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while len(list((cut / "parts").glob("*.parquet"))) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)  # the sweep and its workers, mid-run
    finally:
        proc.wait()
    done = len(list((cut / "parts").glob("*.parquet")))
    assert 3 <= done < 12, done
    assert not (cut / "results.parquet").exists()
    failed = subprocess.run(_acceptsim("sweep", *CLI_ARGS, "--out", cut), capture_output=True,
                            text=True)  # fmt: skip
    assert failed.returncode == 2 and "resume" in failed.stderr
    subprocess.run(_acceptsim("sweep", *CLI_ARGS, "--jobs", "2", "--out", cut, "--resume"),
                   check=True, capture_output=True)  # fmt: skip
    a, _ = read_results(whole)
    b, _ = read_results(cut)
    pd.testing.assert_frame_equal(deterministic(b), deterministic(a))
    assert (cut / "summary.csv").exists()


# -- warm-up detection on the model ----------------------------------------------------------------
def test_a_reply_series_does_not_change_a_run() -> None:
    from acceptsim.models import simulate

    plain = simulate(rate_per_s=20000, duration_s=1.0, warmup_s=0.3)
    with_series = simulate(rate_per_s=20000, duration_s=1.0, warmup_s=0.3, series_interval_s=0.05)
    series = with_series.pop("replies_per_interval")
    for record in (plain, with_series):
        record.pop("sim_cpu_time_s"), record.pop("sim_conns_per_cpu_s")
    assert with_series == plain
    assert len(series) == 20
    # the series counts the same replies as the measurement window
    assert sum(series[6:]) == pytest.approx(plain["reply_rate_per_s"] * 0.7)


def test_mser5_columns_appear_when_a_sweep_asks_for_a_series() -> None:
    frame = sim.sweep("userver-one-packet", jobs=1, progress=False,
                      overrides={"duration_s": 2.0, "warmup_s": 0.2, "series_interval_s": 0.02},
                      sweep_overrides={"rate_per_s": [15000], "accept_limit": [10]})  # fmt: skip
    row = frame.iloc[0]
    assert 0 <= row["warmup_mser5_s"] <= 1.0
    assert row["reply_rate_mser5_per_s"] == pytest.approx(15000, rel=0.05)
    assert "replies_per_interval" not in frame.columns


def test_an_error_in_a_worker_reaches_the_caller_as_the_same_error() -> None:
    with pytest.raises(ConfigError, match="boom"):
        run_many(raise_config_error, [{"i": 0}, {"i": 1}], jobs=2, progress=False)


def raise_config_error(point: Mapping[str, Any]) -> dict[str, Any]:
    raise ConfigError("boom", point["i"], "nothing")


def test_a_series_too_short_for_mser5_is_refused_before_running() -> None:
    with pytest.raises(ConfigError, match="series_interval_s"):
        sim.sweep("userver-one-packet", progress=False,
                  overrides={"duration_s": 0.5, "warmup_s": 0.1, "series_interval_s": 0.1})


def test_sim_sweep_is_callable_and_a_simulation_does_not_import_it() -> None:
    code = (
        "import sys\nfrom acceptsim import models\n"
        "assert 'pandas' not in sys.modules and 'acceptsim.sim.sweep' not in sys.modules\n"
        "from acceptsim import sim\n"
        "from acceptsim.sim.sweep import run_many\n"
        "assert callable(sim.sweep) and sim.sweep.run_many is run_many\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(("key", "values", "allowed"), [
    ("+", [0], "none empty"),  # found by tests/test_fuzz.py: a TypeError before
    ("rate_per_s+", [[1000.0, 2.0]], "none empty"),
    ("rate_per_s+accept_limit", [8000.0], "2-element lists"),
    ("rate_per_s+accept_limit", [[8000.0, 1.0, 2.0]], "2-element lists"),
])
def test_a_linked_sweep_key_given_in_place_of_a_list_is_refused_by_name(
        key: str, values: list[Any], allowed: str) -> None:
    """``sweep_overrides`` (``--vary``) are checked as a scenario file's sweep is: a linked
    key names each field and gives one value per field, or the sweep does not start."""
    with pytest.raises(ConfigError, match=allowed) as err:
        sim.sweep("userver-one-packet", overrides=SMALL["overrides"],
                  sweep_overrides={key: values}, progress=False)
    assert err.value.field == f"sweep.{key}"
