"""`acceptsim measure --server haproxy`: the plan, the configuration it writes, the run
format's accept limit, and how a recorded HAProxy run is simulated."""

from __future__ import annotations

import dataclasses
import math
import shutil
import tomllib
from pathlib import Path

import pytest
from measure_samples import HAPROXY_RUN_DIRS

from acceptsim.commands.cmd_measure import add_parser
from acceptsim.commands.cmd_measure import plan_from_args as _plan_from_args
from acceptsim.measure import load_run
from acceptsim.measure.calibrate import accept_limit_of, config_for
from acceptsim.measure.harness import (
    HAPROXY_DEFAULT_MAXACCEPT,
    Plan,
    haproxy_conf,
    haproxy_maxconn,
    run_dir_name,
)
from acceptsim.measure.runfile import parse_run_info
from acceptsim.models.costs import CLUSTER1
from acceptsim.sim.errors import ConfigError


def haproxy_plan(**fields: object) -> Plan:
    base: dict[str, object] = dict(
        server="haproxy", multi_accept=False, rates_per_s=(1000.0, 2000.0), duration_s=2.0,
        repeats=3, timeout_s=1.0, file_size_bytes=1024, port=18080, spacing="poisson",
        processes=None, pause_s=0.0, accept_limits=(1, 4, math.inf))
    return Plan(**{**base, **fields})  # type: ignore[arg-type]


@pytest.mark.parametrize(("fields", "option"), [
    ({"accept_limits": ()}, "--accept-limit"),
    ({"accept_limits": (0,)}, "--accept-limit"),
    ({"accept_limits": (1.5,)}, "--accept-limit"),
    ({"accept_limits": (-1,)}, "--accept-limit"),
    ({"accept_limits": (4, 4)}, "--accept-limit"),
    ({"multi_accept": True}, "--multi-accept"),
    ({"reuseport": True}, "--reuseport"),
    ({"server_cpu_quota": 0.1, "server_cpu_quota_scope": "worker"},
     "--server-cpu-quota-scope"),
    ({"server": "nginx"}, "--accept-limit"),  # nginx's knob is multi_accept
    ({"server": "apache"}, "--server"),
])
def test_haproxy_options_are_checked_before_anything_runs(fields: dict, option: str) -> None:
    with pytest.raises(ConfigError) as err:
        haproxy_plan(**fields)
    assert err.value.field == option


def test_every_repeat_runs_each_rate_at_every_limit_in_a_rotated_order() -> None:
    points = haproxy_plan().points()
    assert len(points) == 2 * 3 * 3
    for repeat in (1, 2, 3):
        mine = [(rate, limit) for rate, r, limit in points if r == repeat]
        assert sorted(mine) == sorted((rate, limit) for rate in (1000.0, 2000.0)
                                      for limit in (1, 4, math.inf))
    firsts = [limit for rate, r, limit in points if rate == 1000.0][::3]
    assert firsts == [1, 4, math.inf]  # drift hits each limit first once
    # nginx: its one setting, every repeat of a rate in turn (as before)
    nginx = Plan(server="nginx", multi_accept=True, rates_per_s=(1000.0, 2000.0),
                 duration_s=2.0, repeats=2, timeout_s=1.0, file_size_bytes=1024, port=18080,
                 spacing="poisson", processes=None, pause_s=0.0)
    assert nginx.points() == [(1000.0, 1, None), (1000.0, 2, None), (2000.0, 1, None),
                              (2000.0, 2, None)]


def test_the_configuration_answers_itself_with_the_runs_limit(tmp_path: Path) -> None:
    conf = haproxy_conf(tmp_path, tmp_path / "f1024.html", math.inf, 18080, threads=2)
    assert "tune.maxaccept -1\n" in conf and "nbthread 2\n" in conf
    assert "bind 127.0.0.1:18080 backlog 128\n" in conf
    assert f"http-request return status 200 content-type text/html file {tmp_path}" in conf
    assert "maxconn" not in conf  # HAProxy's own default, read back from its stats
    assert "tune.maxaccept 8\n" in haproxy_conf(tmp_path, tmp_path / "f", 8, 18080)
    assert haproxy_maxconn("# show info\nName: HAProxy\nMaxconn: 9987\n") == 9987
    assert haproxy_maxconn("") == 0
    assert run_dir_name(haproxy_plan(), 3000.0, 2, math.inf) == \
        "haproxy-maxaccept-inf-rate-003000-rep-2"
    assert run_dir_name(haproxy_plan(workers=2), 3000.0, 1, 4) == \
        "haproxy-threads-2-maxaccept-4-rate-003000-rep-1"


def test_the_command_line_takes_limits_and_haproxys_default() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    base = ["measure", "--rates", "1000", "--out", "x"]
    plan = _plan_from_args(parser.parse_args([*base, "--server", "haproxy",
                                              "--accept-limit", "1,64,inf"]))
    assert plan.accept_limits == (1, 64, math.inf)
    plan = _plan_from_args(parser.parse_args([*base, "--server", "haproxy"]))
    assert plan.accept_limits == (HAPROXY_DEFAULT_MAXACCEPT,) == (4,)
    with pytest.raises(ConfigError) as err:  # nginx still needs its setting
        _plan_from_args(parser.parse_args(base))
    assert err.value.field == "--multi-accept"


MINIMAL = {"format": "acceptsim-measured-run/1",
           "load": {"target_rate_per_s": 1.0, "duration_s": 1.0, "timeout_s": 1.0}}


def test_the_run_format_says_the_limit() -> None:
    info = parse_run_info({**MINIMAL, "server": {"name": "haproxy", "accept_limit": "inf"}})
    assert info.server.accept_limit == math.inf
    text = info.to_toml()
    assert 'accept_limit = "inf"' in text
    assert parse_run_info(tomllib.loads(text)) == info
    for server in ({"name": "haproxy"}, {"name": "haproxy", "accept_limit": 0},
                   {"name": "nginx", "accept_limit": 4}):
        with pytest.raises(ConfigError, match="accept_limit"):
            parse_run_info({**MINIMAL, "server": server})


def test_a_recorded_run_is_simulated_with_its_limit_backlog_and_maxconn(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(HAPROXY_RUN_DIRS[0], run_dir)
    original = load_run(run_dir).info
    for limit in (math.inf, 16):
        server = dataclasses.replace(original.server, accept_limit=limit, max_connections=500)
        (run_dir / "run.toml").write_text(dataclasses.replace(original, server=server).to_toml())
        run = load_run(run_dir)
        config = config_for(run, CLUSTER1)
        assert config.server == "haproxy"
        assert config.accept_limit == accept_limit_of(run) == limit
        assert dict(config.server_params) == {"backlog": 128, "max_connections": 500}


def test_every_recorded_haproxy_run_loads_and_round_trips() -> None:
    """One pass over every HAProxy run (per set, not one test per folder)."""
    assert len(HAPROXY_RUN_DIRS) >= 2 * 3 * 7 * 3
    for run_dir in HAPROXY_RUN_DIRS:
        run = load_run(run_dir)
        info = run.info
        assert info.server.name == "haproxy" and info.server.backlog == 128
        assert run_dir.name.startswith(f"haproxy-maxaccept-{_limit(info.server.accept_limit)}-")
        assert parse_run_info(tomllib.loads(info.to_toml())) == info
        assert info.server.cpu_quota > 0 and info.load.timeout_s == 1.0
        assert (run_dir / "haproxy-stats.txt").is_file()


def _limit(value: float) -> str:
    return "inf" if value == math.inf else str(int(value))


def test_haproxys_activity_counters_are_read_from_its_stats() -> None:
    from acceptsim.measure.host_costs import haproxy_activity, line_fit

    stats = ("# show info\nMaxconn: 9987\n# show activity\nthread_id: 1 (1..1)\n"
             "ctxsw: 4\ntasksw: 4\nloops: 2\navg_loop_us: 1\naccepted: 1\n")
    assert haproxy_activity(stats) == {"thread_id": 1, "ctxsw": 4, "tasksw": 4, "loops": 2,
                                       "avg_loop_us": 1, "accepted": 1}
    assert haproxy_activity("# show info\nloops: 7\n") == {}  # only its own section
    # the turn's cost: the slope of CPU per reply against turns per reply
    assert line_fit({1.0: 60e-6, 0.5: 55e-6, 0.25: 52.5e-6})[1] == pytest.approx(10e-6)
