"""The simulator against measured runs: a round trip, and calibration on known truth."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

from acceptsim.measure import load_run
from acceptsim.measure.calibrate import calibrate, config_for, direction, validate
from acceptsim.measure.harness import scheduler_tick_s
from acceptsim.measure.synthetic import write_run
from acceptsim.models import RunConfig, simulate
from acceptsim.models.costs import CLUSTER1
from acceptsim.sim.errors import ConfigError

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
            network="loopback",  # as every measured run is simulated (config_for)
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


def test_the_evaluation_budget_counts_every_simulation(tmp_path, monkeypatch) -> None:
    """--max-evaluations 2 makes 2 simulations, not the grid's 7 and the Jacobian's too,
    and says where it stopped."""
    import acceptsim.measure.calibrate as cal

    runs = simulated_runs(tmp_path, CLUSTER1.replace(request_s=30e-6), [25000], duration=0.5)
    made = []
    real = cal.predict
    monkeypatch.setattr(cal, "predict", lambda *a, **k: made.append(1) or real(*a, **k))
    result = calibrate(runs, fit=["request_s"], base=CLUSTER1, max_evaluations=2)
    assert len(made) == 2 and result.evaluations == 2
    assert any("budget of 2 simulator evaluations" in note for note in result.notes)
    assert math.isnan(result.stderr["request_s"]) and result.residuals


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


QUOTA = SAMPLES.parent / "nginx-loopback-quota"


def test_client_limits_name_their_reason() -> None:
    contended = load_run(SAMPLES / "nginx-multi_accept-on-rate-014000-rep-1")
    reasons = " ".join(contended.client_limits())
    assert contended.client_limited
    assert "httperf processes ran out of client resources (fd-unavail" in reasons
    assert "fell behind its schedule" in reasons and "under 95% of the target" in reasons
    # nginx limited to 0.1 CPU overflows at 8000/s, but the clients kept their schedule
    overloaded = load_run(QUOTA / "nginx-multi_accept-off-rate-008000-rep-1")
    assert overloaded.record()["listen_overflows_per_s"] > 1000
    assert overloaded.client_limits() == [] and not overloaded.client_limited


MEASURED = SAMPLES.parent


def test_host_limits_name_a_busy_server_cpu(tmp_path: Path) -> None:
    """A run whose server CPU was busy with other work (its busy time well above the
    server's own usage) is the host's, not the server's: named, and left out."""
    import pandas as pd

    from acceptsim.measure.calibrate import usable

    quiet = load_run(next((MEASURED / "timeseries-demo").iterdir()))
    assert quiet.host_limits() == []
    busy_dir = tmp_path / quiet.path.name
    shutil.copytree(quiet.path, busy_dir)
    series = pd.read_csv(busy_dir / "timeseries.csv")
    series["server_cpu_busy_ms"] += 0.6 * 1000 * series["interval_s"]  # another task's
    series.to_csv(busy_dir / "timeseries.csv", index=False)
    busy = load_run(busy_dir)
    (reason,) = busy.host_limits()
    assert "ran other tasks" in reason and "minus usage_ms" in reason
    assert not busy.client_limited  # the clients are not to blame
    assert usable([quiet, busy]) == [quiet]


#: shipped runs that the quiet-machine rule flags, and why it does
FLAGGED = {
    "nginx-loopback-timeseries-2/quota-0.25-period-4000us/"
    "nginx-multi_accept-off-rate-006000-rep-4": (
        "0.303 of the load outside nginx: /proc/stat counts by ticks on this kernel "
        "(CONFIG_TICK_CPU_ACCOUNTING), and a tick that throttles nginx charges it the whole "
        "tick; its cgroup's period timer fired 2.70 ms past the ticks, so nginx ran 1.3 ms "
        "of each such tick (tests/data/measured/README.md, nginx-wrk-quiet-5)"),
    "nginx-wrk-quiet-6/workers-1/nginx-multi_accept-off-wrk-c-00016-keepalive-on-rep-1": (
        "0.40 of the load outside nginx, as steady in each of the 100 intervals (0.16-0.62) "
        "as an accounting artefact is and another task would not be: the same ticks, with "
        "the period timer 2.98 ms past them, so nginx, never asleep with its 16 kept "
        "connections, used its quota up as each tick came"),
}


def test_every_shipped_measured_run_was_recorded_on_a_quiet_machine() -> None:
    """The rule for recording sets, checked on every run that can tell (a time series
    with the server's busy time and its cgroup's usage); the runs of :data:`FLAGGED` are
    flagged by it, and for the reason given."""
    from acceptsim.measure import find_runs

    told = 0
    flagged = set()
    for directory in find_runs(MEASURED):
        run = load_run(directory)
        name = directory.relative_to(MEASURED).as_posix()
        if name in FLAGGED:
            flagged.add(name)
            assert run.host_limits() != [], name
        else:
            assert run.host_limits() == [], (directory, run.host_limits())
        told += run.other_tasks_share is not None
    assert told >= 400 and flagged == set(FLAGGED)


def test_validate_lists_the_excluded_runs_with_their_reason(monkeypatch) -> None:
    import acceptsim.measure.calibrate as cal

    runs = [
        load_run(SAMPLES / "nginx-multi_accept-on-rate-014000-rep-1"),
        load_run(QUOTA / "nginx-multi_accept-on-rate-003000-rep-1"),
    ]
    fake = {
        "reply_rate_per_s": 3300.0,
        "connection_rate_per_s": 3300.0,
        "client_timeouts_per_s": 0.0,
        "nstat_per_s.TcpExtListenOverflows": 0.0,
    }
    monkeypatch.setattr(cal, "predict", lambda runs, *a, **k: [dict(fake) for _ in runs])
    report = validate(runs, CLUSTER1)
    assert [e["run"] for e in report["excluded"]] == [runs[0].path.name]
    assert "fd-unavail" in report["excluded"][0]["reason"]
    assert report["runs"][0]["excluded_because"] == report["excluded"][0]["reason"]
    assert report["runs_in_mape"] == 1
    assert report["mape_reply_rate"] == pytest.approx(10.0)
    assert report["mape_reply_rate_by_multi_accept"] == {"on": pytest.approx(10.0), "off": None}


def _row(multi: bool, rate: float, measured: float, predicted: float) -> dict:
    return {
        "multi_accept": multi,
        "target_rate_per_s": rate,
        "excluded_because": None,
        "measured": {"reply_rate_per_s": measured},
        "predicted": {"reply_rate_per_s": predicted},
    }


@pytest.mark.parametrize(
    ("measured_off", "predicted_off", "right"),
    [
        ((900, 910, 905), 950, True),  # off below on, predicted below: right
        ((900, 910, 905), 1050, False),  # predicted above: wrong
        ((960, 1040, 1000), 950, None),  # measured difference within the noise
    ],
)
def test_direction_counts_only_differences_beyond_the_noise(
    measured_off, predicted_off, right
) -> None:
    rows = [_row(True, 1000, m, 1000) for m in (995, 1000, 1005)]
    rows += [_row(False, 1000, m, predicted_off) for m in measured_off]
    d = direction(rows)
    (point,) = d["rates"]
    assert point["direction_right"] is right
    assert point["exceeds_noise"] is (right is not None)
    assert (d["right"], d["wrong"]) == {True: (1, 0), False: (0, 1), None: (0, 0)}[right]
    assert d["all_right"] is (right is True)
    assert d["pooled"]["direction_right"] is right


def test_quota_sweep_calibrated_on_multi_accept_on_predicts_off() -> None:
    """The issue's check: fitted to the multi_accept=on runs of the quota sweep, the
    simulator, running each run under its CFS quota, predicts the off runs' reply rate
    within 10% MAPE and gets the sign of off minus on right wherever the measured
    difference exceeds its noise.  (Its size there, -480 predicted against -213 +/- 90
    at 5,000/s, follows the costs of that machine, which were never measured:
    tests/test_measured_policy_effect.py holds it as a strict xfail.)  The off runs'
    MAPE is 9.8%, near its limit: the set was recorded on an older machine and is
    simulated on the cluster-1 costs and this host's HZ=250 timer wheel.  It was 10.1%
    (a strict xfail) until httperf's processes read their replies, and closed their
    connections, in their turns on the client CPU, and loopback segments stopped taking
    a LAN's round trip."""
    from acceptsim.config_io import load_params_file
    from acceptsim.measure import find_runs

    costs, _ = load_params_file(QUOTA.parent / "nginx-loopback-quota.params.toml")
    runs = [load_run(d) for d in find_runs(QUOTA)]
    report = validate(runs, costs)
    assert report["excluded"] == []  # the clients kept their schedule at every rate
    assert report["mape_reply_rate_by_multi_accept"]["off"] <= 10.0
    d = report["direction"]
    assert d["wrong"] == 0 and d["right"] >= 1
    # both measured and predicted: off serves fewer replies than on, on average over rates
    assert d["pooled"]["measured_off_minus_on"] < 0 and d["pooled"]["predicted_off_minus_on"] < 0


@pytest.mark.parametrize("quota", ["0.1", "0.15", "0.2"])
def test_one_calibration_predicts_every_quota(quota: str) -> None:
    """Issue 16's check: costs fitted to the multi_accept=on runs at 0.1 CPU, with each
    run simulated under its own quota and period, predict the runs at 0.1, 0.15 and 0.2
    CPU of both settings with a reply-rate MAPE of at most 10% per quota.  Fails if the
    quota is ignored (the unthrottled costs then predict several times the replies)."""
    from acceptsim.config_io import load_params_file
    from acceptsim.measure import find_runs

    root = QUOTA.parent / "nginx-loopback-quotas"
    costs, _ = load_params_file(QUOTA.parent / "nginx-loopback-quotas.params.toml")
    runs = [load_run(d) for d in find_runs(root / f"quota-{quota}")]
    assert len(runs) == 30  # the quota as the cgroup applied it: 1 ms per 6,667 us is 0.14999
    assert all(r.info.server.cpu_quota == pytest.approx(float(quota), rel=1e-3) for r in runs)
    report = validate(runs, costs)
    assert report["excluded"] == []
    assert report["mape_reply_rate"] <= 10.0
    for setting in ("on", "off"):
        assert report["mape_reply_rate_by_multi_accept"][setting] <= 10.0


def test_a_run_that_recorded_its_hosts_tick_is_simulated_with_that_tick(tmp_path) -> None:
    """The kernel notices a used-up quota at its scheduler tick (sim.cpu.Bandwidth): a run
    recorded on a host of HZ=1000 is simulated with a 1-ms tick; one recorded before the
    field existed keeps its profile's (linux-modern: 4 ms)."""
    source = SAMPLES / "nginx-multi_accept-on-rate-010000-rep-1"
    assert config_for(load_run(source), CLUSTER1).kernel.sched_tick_s == 0.004
    run_dir = tmp_path / "run"
    shutil.copytree(source, run_dir)
    text = (run_dir / "run.toml").read_text()
    (run_dir / "run.toml").write_text(text.replace("[kernel]\n", "[kernel]\ntick_s = 0.001\n"))
    config = config_for(load_run(run_dir), CLUSTER1)
    assert config.kernel.sched_tick_s == 0.001 and config.kernel.name == "linux-modern"


def test_the_hosts_tick_is_read_from_the_coarse_clock() -> None:
    """1/HZ: 1, 2.5, 3.3, 4 or 10 ms on the kernels Linux configures (HZ 1000, 400, 300,
    250, 100)."""
    tick = scheduler_tick_s()
    assert any(tick == pytest.approx(1 / hz) for hz in (1000, 400, 300, 250, 100))


def test_httperfs_turns_keep_their_order_unless_the_sampler_shares_their_cpu() -> None:
    """A run's httperf processes on one client CPU keep the order of their turns for the
    testbed's mean (measure.testbed.CLIENT_TURN_ORDER_S); the time series' sampler wakes
    on that CPU every interval, and its rate adds to theirs; one process per CPU has no
    turns to order."""
    from acceptsim.measure.calibrate import turn_order_s
    from acceptsim.measure.testbed import CLIENT_TURN_ORDER_S

    data = Path(__file__).resolve().parents[1] / "data" / "measured"
    plain = load_run(next(iter(sorted((data / "nginx-loopback-quota").glob("*rate-007000-rep-1")))))
    assert plain.info.timeseries.interval_s == 0 and plain.info.load.processes == 10
    assert turn_order_s(plain) == CLIENT_TURN_ORDER_S
    assert turn_order_s(plain, 2.0) == 2.0 and turn_order_s(plain, 0.0) == 0.0
    assert config_for(plain, CLUSTER1).client_turn_order_s == CLIENT_TURN_ORDER_S
    sampled = load_run(data / "timeseries-demo" / "nginx-multi_accept-on-rate-002500-rep-1")
    interval = sampled.info.timeseries.interval_s
    assert interval == 0.1
    assert turn_order_s(sampled) == pytest.approx(1 / (1 / CLIENT_TURN_ORDER_S + 1 / interval))
    one = load_run(data / "nginx-loopback-idle-gaps" / "nginx-multi_accept-on-rate-001000-rep-2")
    assert one.info.load.processes == 1 and turn_order_s(one) == 0.0


def test_validate_says_what_the_repeats_alone_leave_to_a_prediction(monkeypatch) -> None:
    """Two repeats of one point (3,810 and 3,017 replies/s: the best one number for both
    is 3,017, 20.8% off the one and exact for the other, where their mean, 3,413, is
    10.4% and 13.1% off), a point measured once and a point whose other repeat is
    excluded: one point of two runs counts, 10.4%.  Whatever the model predicts."""
    import acceptsim.measure.calibrate as cal

    wrk = MEASURED / "nginx-wrk-quiet-6" / "workers-1"
    names = ["nginx-multi_accept-off-wrk-c-00001-keepalive-off-rep-1",
             "nginx-multi_accept-off-wrk-c-00001-keepalive-off-rep-2",
             "nginx-multi_accept-off-wrk-c-00004-keepalive-off-rep-1",
             "nginx-multi_accept-off-wrk-c-00016-keepalive-on-rep-1",  # excluded (FLAGGED)
             "nginx-multi_accept-off-wrk-c-00016-keepalive-on-rep-2"]
    runs = [load_run(wrk / name) for name in names]
    for predicted in (1000.0, 5000.0):
        fake = {"reply_rate_per_s": predicted}
        monkeypatch.setattr(cal, "predict", lambda runs, *a, f=fake, **k: [dict(f) for _ in runs])
        report = validate(runs, CLUSTER1)
        assert report["repeats"] == {"mape_floor": pytest.approx(10.41, abs=0.01),
                                     "points": 1, "runs": 2}
    assert [r["point"] for r in report["runs"]][:2] == [
        "workers-1/nginx-multi_accept-off-wrk-c-00001-keepalive-off"] * 2
    assert validate(runs[2:3], CLUSTER1)["repeats"] is None
