"""Each real server's model runs with that server's own defaults; the testbed's settings
come from the measured runs, the paper's from the paper's servers and scenarios (issue 47).
No simulation here: the configurations are checked as they are built."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from acceptsim.cli import main as cli_main
from acceptsim.commands.cmd_run import config_from_args
from acceptsim.measure import testbed
from acceptsim.measure.calibrate import config_for
from acceptsim.measure.harness import HAPROXY_DEFAULT_MAXACCEPT, haproxy_conf, nginx_conf
from acceptsim.measure.run import load_run
from acceptsim.measure.runfile import parse_run_info
from acceptsim.models.config import RunConfig
from acceptsim.models.costs import CLUSTER1
from acceptsim.models.kernel import LINUX_24, LINUX_MODERN
from acceptsim.models.servers import haproxy
from acceptsim.models.servers.registry import FIRST, SERVERS

MEASURED = Path(__file__).parent / "data" / "measured"


def run_args(*argv: str):  # type: ignore[no-untyped-def]
    from acceptsim.cli import build_parser

    return build_parser().parse_args(["run", "--duration", "1", "--rate", "100", *argv])


def test_nginx_runs_with_nginx_defaults_and_todays_kernel() -> None:
    config = RunConfig(server="nginx")
    params = config.build_server_params()
    assert (params.backlog, params.max_connections) == (511, 512)
    assert config.accept_limit == 1  # multi_accept off
    assert config.kernel == LINUX_MODERN
    assert (config.workers, config.wakeup) == (1, "exclusive")  # accept_mutex off


def test_haproxy_runs_with_its_maxaccept_and_derived_maxconn() -> None:
    config = RunConfig(server="haproxy")
    params = config.build_server_params()
    assert config.accept_limit == haproxy.MAXACCEPT == 4
    assert config.kernel == LINUX_MODERN
    derived = (haproxy.SYSTEMD_NOFILE_HARD - haproxy.OWN_DESCRIPTORS) // 2
    assert params.max_connections == params.backlog == derived
    # the measuring host's open-file limit gives the maxconn HAProxy reported there
    host = params.replace(open_files=20000)
    assert host.max_connections == host.backlog == testbed.HAPROXY_MAXCONN
    assert params.replace(max_connections=100).backlog == 100  # backlog follows maxconn
    assert params.replace(open_files=64).max_connections == haproxy.DEFAULT_MAXCONN


@pytest.mark.parametrize("server", FIRST[:1] + FIRST[2:])
def test_the_papers_servers_keep_the_papers_settings(server: str) -> None:
    config = RunConfig(server=server)
    assert config.kernel == LINUX_24
    assert config.accept_limit == 1


def test_the_command_line_takes_the_servers_defaults_unless_given() -> None:
    haproxy_run = config_from_args(run_args("--server", "haproxy"))
    assert haproxy_run.accept_limit == 4 and haproxy_run.kernel == LINUX_MODERN
    given = config_from_args(run_args("--server", "haproxy", "--accept-limit", "1",
                                      "--kernel", "linux-2.4"))
    assert given.accept_limit == 1 and given.kernel == LINUX_24
    nginx_run = config_from_args(run_args("--server", "nginx"))
    assert nginx_run == RunConfig.from_dict({"server": "nginx", "duration_s": 1.0,
                                             "rate_per_s": 100.0})
    assert config_from_args(run_args("--server", "nginx", "--kernel", "linux-modern")) == nginx_run


def test_defaults_follow_the_server_until_given() -> None:
    userver = RunConfig()
    moved = userver.replace(server="haproxy")
    assert (moved.accept_limit, moved.kernel) == (4, LINUX_MODERN)
    back = moved.replace(server="userver")
    assert (back.accept_limit, back.kernel) == (1, LINUX_24)
    pinned = RunConfig.from_dict({"server": "nginx", "kernel": "linux-2.4", "accept_limit": 8})
    assert pinned.replace(server="haproxy").kernel == LINUX_24
    assert pinned.replace(server="haproxy").accept_limit == 8
    # a table of kernel changes starts from the server's own kernel
    table = RunConfig.from_dict({"server": "nginx", "kernel": {"somaxconn": 1024}})
    assert table.kernel == LINUX_MODERN.replace(somaxconn=1024)
    assert RunConfig.from_dict({"kernel": {"somaxconn": 64}}).kernel.name == "linux-2.4"


def test_a_measured_run_is_simulated_with_the_testbeds_settings() -> None:
    nginx_run = load_run(next((MEASURED / "nginx-loopback").glob("*/")))
    assert "max_connections" not in (nginx_run.path / "run.toml").read_text()  # recorded before
    params = config_for(nginx_run, CLUSTER1).build_server_params()
    assert (params.backlog, params.max_connections) == (128, 16384)
    for quota in ("quota-0.05-period-20ms", "quota-0.1-period-10ms"):
        run = load_run(next((MEASURED / "haproxy-loopback-quotas" / quota).glob("*/")))
        assert "max_connections = 9987" in (run.path / "run.toml").read_text()  # recorded
        params = config_for(run, CLUSTER1).build_server_params()
        assert (params.backlog, params.max_connections) == (128, 9987)


def test_a_recorded_max_connections_is_kept() -> None:
    info = parse_run_info({"format": "acceptsim-measured-run/1",
                           "server": {"name": "nginx", "max_connections": 1024},
                           "load": {"target_rate_per_s": 1.0, "duration_s": 1.0,
                                    "timeout_s": 1.0}})
    assert info.server.max_connections == 1024
    assert parse_run_info({"format": "acceptsim-measured-run/1", "server": {"name": "x"},
                           "load": {"target_rate_per_s": 1.0, "duration_s": 1.0,
                                    "timeout_s": 1.0}}).server.max_connections == 0


def test_the_harness_writes_the_testbeds_declared_configuration(tmp_path: Path) -> None:
    conf = nginx_conf(tmp_path, False, 18080)
    assert f"worker_connections {testbed.NGINX_WORKER_CONNECTIONS};" in conf
    assert f"backlog={testbed.BACKLOG}" in conf
    assert f"backlog {testbed.BACKLOG}" in haproxy_conf(tmp_path, tmp_path / "f", 4, 18080)
    assert HAPROXY_DEFAULT_MAXACCEPT == haproxy.MAXACCEPT


def test_servers_says_where_each_default_comes_from(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["servers", "nginx"]) == 0
    out = capsys.readouterr().out
    for source in ("NGX_LISTEN_BACKLOG", "DEFAULT_CONNECTIONS", "multi_accept off",
                   "--kernel default linux-modern", "--accept-limit default 1"):
        assert source in out, source
    assert cli_main(["servers", "haproxy"]) == 0
    out = capsys.readouterr().out
    for source in ("--accept-limit default 4: tune.maxaccept", "compute_ideal_maxconn",
                   "262,131"):
        assert source in out, source
    for spec in SERVERS.values():
        assert spec.accept_limit_source and spec.kernel_source
        assert spec.accept_limit == 1 or spec.name in ("haproxy",)
        assert math.isinf(spec.accept_limit) or spec.accept_limit >= 1
