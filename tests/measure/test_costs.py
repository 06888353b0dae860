"""Costs measured on the host (``acceptsim measure-costs``), the bounds they put on a
fit, and the two mechanisms they brought in: loopback placement of the clients'
segments and the cost of an epoll_wait that sleeps."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from acceptsim.config_io import load_measurements, load_params_file
from acceptsim.measure import host_costs as mc
from acceptsim.measure import load_run
from acceptsim.measure.calibrate import (
    MEASURED_BOUND_SPREADS,
    PHYSICAL_BOUNDS,
    bounds_for,
    calibrate,
)
from acceptsim.measure.synthetic import write_run
from acceptsim.models import RunConfig, simulate
from acceptsim.models.config import CLIENT_SEGMENT_COSTS
from acceptsim.models.costs import CLUSTER1
from acceptsim.sim.errors import ConfigError

MEASURED = Path(__file__).resolve().parents[1] / "data" / "measured"
#: this project's host's measured costs (recorded with `acceptsim measure-costs`)
HOST_COSTS = MEASURED / "host-costs.toml"


def report() -> mc.CostReport:
    """A small report as measure_costs makes one (known numbers)."""
    host = mc.HostInfo("2026-11-26T00:00:00Z", "6.18", "cpu", 2, False, "3.11")
    rep = mc.CostReport(host)
    rep.measurements += [
        mc.Measurement("accept_s", (4e-6, 5e-6), "s", "accept4", 1000, "accept_s"),
        mc.Measurement("close_s", (10e-6, 12e-6), "s", "close", 1000, "close_s"),
        mc.Measurement("epoll_base_s", (1e-6, 1e-6), "s", "epoll", 1000, "epoll_base_s"),
        mc.Measurement("epoll_ctl_s", (2e-6, 2e-6), "s", "ctl", 1000, "epoll_ctl_s"),
        mc.Measurement("nginx_cpu_per_reply_s", (80e-6, 90e-6), "s", "nginx", 1),
        mc.Measurement("wakeup_s", (14e-6, 16e-6), "s", "wake", 1000, "wakeup_s"),
    ]
    return rep


def test_the_line_fit_recovers_a_known_base_and_slope() -> None:
    base, slope = mc.line_fit({k: 0.8e-6 + 0.15e-6 * k for k in (1, 8, 32, 64)})
    assert base == pytest.approx(0.8e-6)
    assert slope == pytest.approx(0.15e-6)


def test_a_measured_cost_file_is_a_parameter_file_with_its_measurements(tmp_path) -> None:
    path = tmp_path / "costs.toml"
    path.write_text(mc.to_toml(report(), "acceptsim measure-costs --out costs.toml"))
    costs, _ = load_params_file(path)
    assert costs.accept_s == pytest.approx(4.5e-6)
    assert costs.wakeup_s == pytest.approx(15e-6)
    assert costs.request_s == CLUSTER1.request_s  # not measured: the default
    measured = load_measurements(path)
    assert measured["accept_s"]["samples"] == [4e-6, 5e-6]
    assert measured["accept_s"]["sets"] == "accept_s"
    assert "sets" not in measured["nginx_cpu_per_reply_s"]
    assert measured["host"]["irq_time_accounting"] is False


def test_a_fit_of_a_measured_cost_stays_within_its_spreads(tmp_path) -> None:
    path = tmp_path / "costs.toml"
    path.write_text(mc.to_toml(report()))
    measured = load_measurements(path)
    bound = bounds_for("close_s", measured)
    spread = math.sqrt(2e-12)  # sample deviation of 10 and 12 us
    assert bound.low == pytest.approx(11e-6 - MEASURED_BOUND_SPREADS * spread)
    assert bound.high == pytest.approx(11e-6 + MEASURED_BOUND_SPREADS * spread)
    # request_s: at most nginx's CPU per reply less its measured calls
    assert bounds_for("request_s", measured).high == pytest.approx(85e-6 - 4.5e-6 - 11e-6
                                                                    - 1e-6 - 2e-6)
    assert bounds_for("request_s", {}) == PHYSICAL_BOUNDS["request_s"]


def loopback_runs(tmp_path: Path, costs, rates, multi=True, duration=1.5) -> list:
    runs = []
    for rate in rates:
        config = RunConfig(server="nginx", accept_limit=math.inf if multi else 1,
                           rate_per_s=rate, duration_s=duration, warmup_s=0.0, timeout_s=1.0,
                           kernel="linux-modern", costs=costs, network="loopback")
        runs.append(load_run(write_run(tmp_path / f"r{rate}", config, simulate(config))))
    return runs


def test_a_fit_that_ends_on_its_bound_is_a_missing_mechanism(tmp_path) -> None:
    truth = CLUSTER1.replace(request_s=60e-6)
    runs = loopback_runs(tmp_path, truth, [20000, 30000])
    measured = {"nginx_cpu_per_reply_s": {"mean": 40e-6, "spread": 1e-6}}
    result = calibrate(runs, fit=["request_s"], base=CLUSTER1, max_evaluations=12,
                       measurements=measured)
    assert result.on_bound == ["request_s"]
    assert any(n.startswith("missing mechanism? request_s") for n in result.notes)
    assert result.fitted["request_s"] == pytest.approx(40e-6, rel=0.02)


@pytest.mark.parametrize("name", CLIENT_SEGMENT_COSTS)
def test_a_cost_that_does_not_act_on_loopback_is_not_fitted(tmp_path, name) -> None:
    runs = loopback_runs(tmp_path, CLUSTER1, [5000], duration=0.5)
    with pytest.raises(ConfigError, match="loopback"):
        calibrate(runs, fit=[name], base=CLUSTER1)


def test_on_loopback_the_clients_segments_cost_the_server_nothing() -> None:
    common = dict(server="nginx", rate_per_s=5000, duration_s=1.0, warmup_s=0.2,
                  kernel="linux-modern")
    lan = simulate(RunConfig(**common))
    loop = simulate(RunConfig(**common, network="loopback"))
    assert lan["cpu_share"]["kernel"] > 0.02
    assert loop["cpu_share"]["kernel"] == 0.0
    assert loop["network"] == "loopback" and "network" not in lan
    assert loop["reply_rate_per_s"] == pytest.approx(lan["reply_rate_per_s"], rel=0.02)


def test_each_epoll_wait_that_slept_costs_the_wakeup() -> None:
    """Below saturation the worker sleeps between connections; with epoll_wait's other
    costs at 0 the CPU of its calls is exactly wakeup_s per counted sleep."""
    common = dict(server="nginx", rate_per_s=1000, duration_s=2.0, warmup_s=0.5,
                  kernel="linux-modern", network="loopback")
    free = CLUSTER1.replace(epoll_base_s=0.0, epoll_per_event_s=0.0, epoll_ctl_s=0.0)
    base = simulate(RunConfig(**common, costs=free))
    woken = simulate(RunConfig(**common, costs=free.replace(wakeup_s=15e-6)))
    assert base["cpu_share"]["getevents"] == 0.0
    assert woken["epoll_sleeps_per_s"] > 500  # about one sleep per request and per accept
    assert woken["cpu_share"]["getevents"] == pytest.approx(
        woken["epoll_sleeps_per_s"] * 15e-6, rel=1e-6)


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs a second CPU for the peers")
def test_the_microbenchmarks_measure_positive_costs_with_a_spread(tmp_path) -> None:
    allowed = os.sched_getaffinity(0)
    rep = mc.measure_costs(0, 1, operations=400, repeats=2)
    names = {m.name for m in rep.measurements}
    assert {"accept_s", "accept_empty_s", "epoll_base_s", "epoll_ctl_s", "close_s",
            "wakeup_s", "send_per_byte_s", "syn_drop_s", "loopback_handshake_s"} <= names
    for meas in rep.measurements:
        assert len(meas.samples) == 2 and all(math.isfinite(s) for s in meas.samples)
    by = rep.by_name()
    assert by["accept_s"].mean > 0 and by["close_s"].mean > 0
    assert os.sched_getaffinity(0) == allowed  # the caller's CPUs given back


def test_calibrate_writes_nothing_when_a_fit_ends_on_its_bound(tmp_path, capsys) -> None:
    from acceptsim.cli import main

    runs = loopback_runs(tmp_path, CLUSTER1.replace(request_s=60e-6), [20000, 30000])
    params = tmp_path / "p.toml"
    params.write_text('[measured.nginx_cpu_per_reply_s]\nmean = 40e-6\nspread = 1e-6\n')
    out = tmp_path / "fit.toml"
    code = main(["calibrate", *(str(r.path) for r in runs), "--params", str(params),
                 "--out", str(out), "--max-evaluations", "12"])
    assert code == 3 and not out.exists()
    assert "missing mechanism? request_s" in capsys.readouterr().out


def test_the_host_costs_file_is_within_the_physical_bounds() -> None:
    measured = load_measurements(HOST_COSTS)
    for table in measured.values():
        name = table.get("sets") if isinstance(table, dict) else None
        if name in PHYSICAL_BOUNDS:
            bound = PHYSICAL_BOUNDS[name]
            assert bound.low <= table["mean"] <= bound.high, name


def test_the_cold_cost_grows_with_the_idle_time_as_stated() -> None:
    from acceptsim.sim import Cpu, Environment

    cpu = Cpu(Environment(), ["work"])
    assert cpu.cold_cost(5e-3) == 0.0  # none by default: the paper's hosts
    cpu.cold_s, cpu.cold_tau_s = 60e-6, 2e-3
    assert cpu.cold_cost(0.0) == 0.0
    assert cpu.cold_cost(2e-3) == pytest.approx(60e-6 * (1 - math.exp(-1)))
    assert cpu.cold_cost(1.0) == pytest.approx(60e-6)


def test_a_burst_cut_by_a_throttle_resumes_paying_the_cold_cost() -> None:
    """1 ms per 10 ms: the burst cut at 1 ms resumes at 10 ms after 9 ms idle and runs
    cold_cost(9 ms) longer; the quota still bounds what the task uses per period."""
    from acceptsim.sim import Cpu, Environment

    env = Environment()
    cpu = Cpu(env, ["work"])
    cpu.cold_s, cpu.cold_tau_s = 100e-6, 3e-3
    ends = []

    def task():
        while True:
            yield "work", 3e-4
            ends.append(env.now)

    cpu.start(task())
    cpu.limit(1e-3, 1e-2)
    env.run(until=1.0)
    cold = 100e-6 * (1 - math.exp(-9e-3 / 3e-3))
    assert ends[3] == pytest.approx(1e-2 + 2e-4 + cold)
    assert cpu.usage()["work"] == pytest.approx(0.1, rel=1e-9)


def test_a_sleep_after_a_long_idle_costs_nginx_more() -> None:
    """At 200/s the worker sleeps about 5 ms between connections (a long idle, nearly
    the whole cold cost) and briefly between a reply and the client's close (little of
    it); with epoll_wait's other costs at 0 its calls' CPU is wakeup_s per sleep without
    the cold cost, and between wakeup_s plus a quarter and plus all of it with."""
    common = dict(server="nginx", rate_per_s=200, duration_s=4.0, warmup_s=0.5,
                  kernel="linux-modern", network="loopback")
    free = CLUSTER1.replace(epoll_base_s=0.0, epoll_per_event_s=0.0, epoll_ctl_s=0.0,
                            wakeup_s=10e-6)
    warm = simulate(RunConfig(**common, costs=free))
    cold = simulate(RunConfig(**common, costs=free.replace(wakeup_cold_s=80e-6,
                                                            wakeup_cold_tau_s=1e-3)))
    per_sleep_warm = warm["cpu_share"]["getevents"] / warm["epoll_sleeps_per_s"]
    per_sleep_cold = cold["cpu_share"]["getevents"] / cold["epoll_sleeps_per_s"]
    assert per_sleep_warm == pytest.approx(10e-6)
    assert 10e-6 + 20e-6 < per_sleep_cold < 10e-6 + 80e-6


def test_the_sleep_cost_curve_fit_recovers_known_values() -> None:
    gaps = (0.2e-3, 1e-3, 3e-3, 10e-3)
    warm, cold, tau = mc.cold_fit({g: 15e-6 + 70e-6 * (1 - math.exp(-g / 2e-3)) for g in gaps})
    assert warm == pytest.approx(15e-6, rel=1e-3)
    assert cold == pytest.approx(70e-6, rel=1e-3)
    assert tau == pytest.approx(2e-3, rel=1e-3)


def test_a_measurement_name_that_is_no_bare_key_reads_back(tmp_path) -> None:
    rep = report()
    rep.measurements.append(mc.Measurement("after_0.2ms_s", (1e-6, 2e-6), "s", "x", 10))
    path = tmp_path / "costs.toml"
    path.write_text(mc.to_toml(rep))
    assert load_measurements(path)["after_0.2ms_s"]["samples"] == [1e-6, 2e-6]


def test_the_command_line_and_python_give_one_answer_on_loopback(capsys) -> None:
    import json

    from acceptsim.cli import main

    assert main(["run", "--server", "nginx", "--rate", "3000", "--duration", "0.5",
                 "--warmup", "0.1", "--network", "loopback", "--format", "json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    py = simulate(RunConfig(server="nginx", rate_per_s=3000, duration_s=0.5, warmup_s=0.1,
                            network="loopback"))
    assert cli["network"] == "loopback"
    assert cli["reply_rate_per_s"] == py["reply_rate_per_s"]
    assert cli["cpu_share"]["kernel"] == py["cpu_share"]["kernel"] == 0.0


@pytest.mark.parametrize("path", sorted(MEASURED.glob("*.toml")), ids=lambda p: p.name)
def test_every_shipped_measurement_says_its_method_in_full(path) -> None:
    """A method text is written once per measurement: a placeholder left unformatted
    (a "{...}" outside an f-string) would stand in every file measured after it."""
    for name, table in load_measurements(path).items():
        if isinstance(table, dict) and "method" in table:
            assert "{" not in table["method"] and "}" not in table["method"], (path.name, name)


@pytest.mark.parametrize("values", [
    (-3e-6, -1e-6, 2e-6, 5e-6),  # noise below zero after a short idle
    (2e-3, 2.1e-3, 2.5e-3, 3e-3),  # a loaded host's delays, past the bounds
])
def test_the_idle_curve_fits_whatever_the_points_within_its_bounds(values) -> None:
    """``cold_fit`` starts inside its bounds whatever the points (a wake-up's latency on a
    loaded host can be milliseconds), and ends there."""
    gaps = (0.03e-3, 0.2e-3, 1e-3, 3e-3)
    warm, cold, tau = mc.cold_fit(dict(zip(gaps, values, strict=True)))
    assert 0.0 <= warm <= 1e-3 and 0.0 <= cold <= 1e-3 and 1e-5 <= tau <= 0.1
