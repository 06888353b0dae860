"""The simulator against measured runs: a round trip, and calibration on known truth."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from acceptsim.measure import load_run
from acceptsim.measure.calibrate import calibrate, config_for, validate
from acceptsim.measure.synthetic import write_run
from models import RunConfig, simulate
from models.costs import CLUSTER1
from sim.errors import ConfigError

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "measured" / "nginx-loopback"


def simulated_runs(tmp_path: Path, costs, rates, multi=True, duration=2.0) -> list:
    runs = []
    for rate in rates:
        config = RunConfig(
            server="nginx",
            accept_limit=math.inf if multi else 1,
            rate_per_s=rate,
            duration_s=duration,
            warmup_s=0.0,
            timeout_s=1.0,
            kernel="linux-modern",
            costs=costs,
        )
        runs.append(load_run(write_run(tmp_path / f"r{rate}-{multi}", config, simulate(config))))
    return runs


def test_a_simulated_run_read_back_validates_with_zero_error(tmp_path) -> None:
    runs = simulated_runs(tmp_path, CLUSTER1, [5000, 30000])
    report = validate(runs, CLUSTER1)
    assert report["mape_reply_rate"] == pytest.approx(0.0, abs=1e-9)
    for row in report["runs"]:
        assert row["measured"]["listen_overflows_per_s"] == pytest.approx(
            row["predicted"]["listen_overflows_per_s"], abs=1.0
        )


def test_validate_notices_a_wrong_cost(tmp_path) -> None:
    runs = simulated_runs(tmp_path, CLUSTER1.replace(request_s=30e-6), [30000])
    assert validate(runs, CLUSTER1)["mape_reply_rate"] > 10


def test_calibration_recovers_a_known_per_request_cost(tmp_path) -> None:
    truth = CLUSTER1.replace(request_s=30e-6)
    runs = simulated_runs(tmp_path, truth, [15000, 25000, 35000], duration=1.5)
    result = calibrate(runs, fit=["request_s"], base=CLUSTER1, max_evaluations=25)
    assert result.fitted["request_s"] == pytest.approx(30e-6, rel=0.05)
    assert max(abs(r) for r in result.residuals.values()) < 0.02


def test_measured_runs_map_to_the_matching_configuration() -> None:
    run = load_run(SAMPLES / "nginx-multi_accept-on-rate-010000-rep-1")
    config = config_for(run, CLUSTER1)
    assert config.server == "nginx" and config.accept_limit == math.inf
    assert config.rate_per_s == 10000 and config.kernel.name == "linux-modern"
    off = config_for(load_run(SAMPLES / "nginx-multi_accept-off-rate-010000-rep-1"), CLUSTER1)
    assert off.accept_limit == 1


def test_an_unknown_cost_to_fit_is_named(tmp_path) -> None:
    runs = simulated_runs(tmp_path, CLUSTER1, [5000], duration=0.5)
    with pytest.raises(ConfigError, match="--fit='nosuch_s'"):
        calibrate(runs, fit=["nosuch_s"])
