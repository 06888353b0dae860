"""``acceptsim measure``: input checks, tool checks and the testbed's plan, without running it.

The real drive of nginx and httperf is in ``test_measure_end_to_end`` behind
``@pytest.mark.slow`` (CI machines may lack the Debian packages).
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
import tempfile
from pathlib import Path

import pytest

from acceptsim.cli import main
from acceptsim.measure import load_run
from acceptsim.measure.harness import (
    ADDRESS,
    CGROUP_NAME,
    HTTPERF_MAX_OPEN,
    CpuQuota,
    HarnessError,
    Nginx,
    Plan,
    check_tools,
    cpu_split,
    default_cpu_period_us,
    httperf_commands,
    nginx_conf,
)
from acceptsim.sim.errors import ConfigError

ARGS = ["measure", "--multi-accept", "on", "--rates", "500", "--duration", "2", "--repeats", "1"]


def plan(**changes: object) -> Plan:
    fields: dict[str, object] = dict(
        server="nginx", multi_accept=True, rates_per_s=(1000.0, 12000.0), duration_s=10.0,
        repeats=2, timeout_s=1.0, file_size_bytes=1024, port=18080, spacing="poisson",
        processes=None, pause_s=0.0,
    )
    fields.update(changes)
    return Plan(**fields)  # type: ignore[arg-type]


def script(directory: Path, name: str, body: str) -> None:
    path = directory / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def test_missing_tools_are_named_with_how_to_install_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    out = tmp_path / "out"
    assert main([*ARGS, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "missing tools: httperf, nginx" in err
    assert "apt-get install httperf wrk nginx-light haproxy iproute2" in err
    assert not out.exists()


def test_only_the_missing_tool_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script(bin_dir, "httperf", "exit 0")
    script(bin_dir, "taskset", 'shift 2; exec "$@"')
    monkeypatch.setenv("PATH", str(bin_dir))
    assert main([*ARGS, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "missing tools: nginx;" in err


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--multi-accept", "maybe"], "--multi-accept"),
        (["--rates", "100,-3"], "--rates"),
        (["--rates", "fast"], "--rates"),
        (["--rates", "300000", "--duration", "10"], "--rates"),
        (["--duration", "0"], "--duration"),
        (["--duration", "3600"], "--duration"),
        (["--repeats", "0"], "--repeats"),
        (["--repeats", "1.5"], "--repeats"),
        (["--server", "apache"], "--server"),
        (["--port", "80"], "--port"),
        (["--processes", "500"], "--processes"),
        (["--first-repeat", "0"], "--first-repeat"),
        (["--server-cpu-quota", "0"], "--server-cpu-quota"),
        (["--server-cpu-quota", "-0.5"], "--server-cpu-quota"),
        (["--server-cpu-quota", "nan"], "--server-cpu-quota"),
        (["--server-cpu-quota", "lots"], "--server-cpu-quota"),
        (["--server-cpu-quota", str((os.cpu_count() or 1) + 1)], "--server-cpu-quota"),
        (["--server-cpu-quota", "0.5", "--server-cpu-period", "999"], "--server-cpu-period"),
        (["--server-cpu-quota", "0.1", "--server-cpu-period", "5000"], "--server-cpu-period"),
    ],
)
def test_bad_arguments_are_refused_before_anything_runs(
    args: list[str], field: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main([*ARGS, *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("acceptsim measure: error: " + field) and err.count("\n") == 1
    assert not out.exists()


def test_plan_rejects_unbounded_work() -> None:
    with pytest.raises(ConfigError, match="rates x repeats"):
        plan(rates_per_s=tuple(range(1, 102)), repeats=2)
    with pytest.raises(ConfigError, match="--timeout"):
        plan(timeout_s=0.0)


@pytest.mark.parametrize("rate", [1.0, 500.0, 3000.0, 12000.0, 40000.0])
@pytest.mark.parametrize("timeout", [0.5, 1.0, 5.0])
def test_load_is_split_so_no_httperf_needs_more_descriptors_than_it_has(
    rate: float, timeout: float
) -> None:
    p = plan(rates_per_s=(rate,), timeout_s=timeout)
    commands = httperf_commands(p, rate, "/f1024.html")
    n = len(commands)
    assert n == p.processes_for(rate)
    # even if every connection waits the whole timeout
    assert rate / n * timeout <= HTTPERF_MAX_OPEN or n == 64
    conns = [int(a.split("=")[1]) for c in commands for a in c if a.startswith("--num-conns=")]
    assert sum(conns) == pytest.approx(rate * p.duration_s, rel=0.01, abs=n)
    for i, c in enumerate(commands):
        assert c[0] == "httperf" and f"--server={ADDRESS}" in c and f"--client={i}/{n}" in c
        assert f"--timeout={timeout:g}" in c and "--num-calls=1" in c
        period = next(a for a in c if a.startswith("--period=e"))
        assert float(period[len("--period=e"):]) == pytest.approx(n / rate, rel=1e-6)


def test_cpu_quota_bounds_and_period() -> None:
    with pytest.raises(ConfigError, match="<= 2 .the number of CPUs"):
        plan(server_cpu_quota=2.5, online_cpus=2)
    assert plan(server_cpu_quota=2.0, online_cpus=2).server_cpu_quota == 2.0
    # the default period is short, and long enough that the quota is the kernel's 1 ms minimum
    assert default_cpu_period_us(0.5) == 2000 and default_cpu_period_us(0.1) == 10000
    assert plan(server_cpu_quota=0.3).cpu_period_us == 3334
    assert plan(server_cpu_quota=0.3, server_cpu_period_us=5000).cpu_period_us == 5000
    with pytest.raises(ConfigError, match=">= 10000 us"):
        plan(server_cpu_quota=0.1, server_cpu_period_us=2000)


def fake_cgroup_root(tmp_path: Path) -> Path:
    root = tmp_path / "cpu"
    root.mkdir()
    for name in ("cpu.cfs_quota_us", "cpu.cfs_period_us", "cgroup.procs"):
        (root / name).write_text("")
    return root


def test_cpu_quota_group_is_made_set_and_removed(tmp_path: Path) -> None:
    root = fake_cgroup_root(tmp_path)
    group = CpuQuota(0.25, 4000, root)
    with group:
        assert (root / CGROUP_NAME / "cpu.cfs_period_us").read_text() == "4000"
        assert (root / CGROUP_NAME / "cpu.cfs_quota_us").read_text() == "1000"
        group.join()
        assert group.pids() == [os.getpid()]
        # a real cgroup's files go with it; a plain directory's must be deleted first
        for f in (root / CGROUP_NAME).iterdir():
            f.unlink()
    assert not (root / CGROUP_NAME).exists()


def test_cpu_quota_errors_say_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match=r"tried .*nowhere \(does not exist\)$"):
        with CpuQuota(0.5, 2000, tmp_path / "nowhere"):
            pass
    (tmp_path / "empty").mkdir()
    with pytest.raises(HarnessError, match=r"empty \(has neither .*cpu.cfs_quota_us \(v1"):
        with CpuQuota(0.5, 2000, tmp_path / "empty"):
            pass
    root = fake_cgroup_root(tmp_path)
    (root / CGROUP_NAME).write_text("not a directory")
    with pytest.raises(HarnessError, match="writable cgroup v1 cpu hierarchy .*cannot create"):
        with CpuQuota(0.5, 2000, root):
            pass
    with pytest.raises(HarnessError, match="below the kernel's minimum quota"):
        CpuQuota(0.1, 2000, root)


def test_unwritable_cgroups_are_a_clear_error_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import acceptsim.measure.harness as harness

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script(bin_dir, "httperf", "exit 0")
    script(bin_dir, "nginx", "echo 'nginx version: nginx/1.22.1' >&2")
    script(bin_dir, "taskset", 'shift 2; exec "$@"')
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setattr(harness, "CGROUP_CPU_ROOT", tmp_path / "no-cgroup")
    monkeypatch.setattr(harness, "CGROUP_ROOT", tmp_path / "no-unified")
    out = tmp_path / "out"
    assert main([*ARGS, "--server-cpu-quota", "0.5", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "acceptsim measure: error: --server-cpu-quota needs a cgroup v2 hierarchy with the "
        "cpu controller or a cgroup v1 cpu hierarchy, writable by this process: run as root"
    )
    assert f"tried {tmp_path / 'no-unified'} (does not exist) and " in err
    assert f"{tmp_path / 'no-cgroup'} (does not exist)" in err
    assert not out.exists()


def test_deterministic_spacing_uses_httperf_rate() -> None:
    (command,) = httperf_commands(plan(spacing="deterministic"), 500.0, "/x")
    assert "--rate=500" in command and not any(a.startswith("--period") for a in command)


def test_nginx_config_is_one_worker_epoll_backlog_128_on_loopback_only(tmp_path: Path) -> None:
    for on in (True, False):
        conf = nginx_conf(tmp_path, on, 18099)
        assert "worker_processes 1;" in conf and "use epoll;" in conf
        assert f"multi_accept {'on' if on else 'off'};" in conf
        listens = [ln.strip() for ln in conf.splitlines() if ln.strip().startswith("listen")]
        assert listens == ["listen 127.0.0.1:18099 backlog=128;"]
        assert "daemon off;" in conf and str(tmp_path) in conf


def test_server_and_clients_get_different_cpus() -> None:
    assert cpu_split([0]) == ("", "")
    assert cpu_split([0, 1]) == ("0", "1")
    assert cpu_split([2, 3, 5]) == ("2", "3,5")


def test_nginx_that_fails_to_start_is_reported_and_cleaned_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script(bin_dir, "nginx", 'echo "nginx: [emerg] bind() failed (98: Address in use)" >&2; exit 1')
    work = tmp_path / "tmp"
    work.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(work))
    with pytest.raises(HarnessError, match="nginx exited at start: .*Address in use"):
        # a free port: a real measure may be using the default one
        with Nginx(plan(port=_free_port()), "", str(bin_dir / "nginx")):
            pass
    assert list(work.iterdir()) == []


def test_check_tools_finds_them_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("httperf", "nginx"):
        script(bin_dir, name, "exit 0")
    monkeypatch.setenv("PATH", str(bin_dir))
    found = check_tools(need_taskset=False)
    assert found["httperf"] == str(bin_dir / "httperf") and found["nstat"] is None
    with pytest.raises(HarnessError, match="taskset"):
        check_tools(need_taskset=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((ADDRESS, 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_measure_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if not (shutil.which("httperf") and shutil.which("nginx")):
        pytest.skip("httperf and nginx are not installed (Debian: httperf nginx-light)")
    port = _free_port()
    out = tmp_path / "runs"
    status = main(
        ["measure", "--multi-accept", "off", "--rates", "300,600", "--duration", "3",
         "--repeats", "1", "--timeout", "1", "--pause", "0", "--port", str(port),
         "--out", str(out)]
    )
    assert status == 0, capsys.readouterr().err
    runs = sorted(out.iterdir())
    assert [p.name for p in runs] == [
        "nginx-multi_accept-off-rate-000300-rep-1",
        "nginx-multi_accept-off-rate-000600-rep-1",
    ]
    for run_dir, rate in zip(runs, (300, 600), strict=True):
        record = load_run(run_dir).record()
        assert record["reply_rate_per_s"] == pytest.approx(rate, rel=0.15)
        assert record["errors.total"] == 0 and record["multi_accept"] is False
    # nginx is gone: nothing listens on the port any more
    with socket.socket() as s, pytest.raises(OSError):
        s.settimeout(1.0)
        s.connect((ADDRESS, port))
    assert os.path.isdir(out)


@pytest.mark.slow
def test_measure_with_a_cpu_quota_end_to_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not (shutil.which("httperf") and shutil.which("nginx")):
        pytest.skip("httperf and nginx are not installed (Debian: httperf nginx-light)")
    from acceptsim.measure.harness import default_cgroup_root

    try:
        root = default_cgroup_root()
    except HarnessError as exc:
        pytest.skip(str(exc))
    if (root / CGROUP_NAME).exists():
        pytest.skip(f"{root / CGROUP_NAME} exists: another measure may be running")
    out = tmp_path / "runs"
    status = main(
        ["measure", "--multi-accept", "on", "--rates", "300", "--duration", "2",
         "--repeats", "1", "--timeout", "1", "--pause", "0", "--port", str(_free_port()),
         "--server-cpu-quota", "0.5", "--out", str(out)]
    )
    assert status == 0, capsys.readouterr().err
    (run_dir,) = sorted(out.iterdir())
    run = load_run(run_dir)
    assert run.info.server.cpu_quota == 0.5 and run.info.server.cpu_period_us == 2000
    assert run.record()["reply_rate_per_s"] == pytest.approx(300, rel=0.15)
    assert not (root / CGROUP_NAME).exists()


def test_a_port_in_use_is_refused(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind((ADDRESS, 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        with pytest.raises(HarnessError, match="in use"):
            with Nginx(plan(port=port), "", "/nonexistent/nginx"):
                pass


# -- several nginx workers ----------------------------------------------------------------------
def _plan(**fields):  # type: ignore[no-untyped-def]
    from acceptsim.measure.harness import Plan

    base = dict(server="nginx", multi_accept=False, rates_per_s=(1000.0,), duration_s=2.0,
                repeats=1, timeout_s=1.0, file_size_bytes=1024, port=18080,
                spacing="poisson", processes=None, pause_s=0.0)
    return Plan(**{**base, **fields})


@pytest.mark.parametrize(("fields", "option"), [
    ({"workers": 0}, "--workers"),
    ({"workers": 65}, "--workers"),
    ({"accept_mutex": True}, "--accept-mutex"),
    ({"reuseport": True}, "--reuseport"),
    ({"workers": 2, "accept_mutex": True, "reuseport": True}, "--accept-mutex"),
])
def test_worker_options_are_checked_before_anything_runs(fields: dict, option: str) -> None:
    with pytest.raises(ConfigError) as err:
        _plan(**fields)
    assert err.value.field == option


def test_several_workers_are_configured_and_counted(tmp_path: Path) -> None:
    from acceptsim.measure.harness import nginx_conf, run_dir_name

    conf = nginx_conf(tmp_path, False, 18080, workers=4, accept_mutex=True)
    assert "worker_processes 4;" in conf and "accept_mutex on;" in conf
    # each request's worker ($pid) in the access log, which every run writes (the time
    # series' replies)
    assert "log_format timing '$msec $request_time $pid $status';" in conf
    assert "access.log timing buffer=64k flush=1s;" in conf
    assert " reuseport;" in nginx_conf(tmp_path, False, 18080, workers=4, reuseport=True)
    one = nginx_conf(tmp_path, False, 18080)
    assert "worker_processes 1;" in one and "access.log timing" in one and "reuseport" not in one
    assert "workers-4-mutex" in run_dir_name(_plan(workers=4, accept_mutex=True), 1000.0, 1)
    assert "workers" not in run_dir_name(_plan(), 1000.0, 1)


def test_a_runs_worker_counts_give_its_shares_and_its_model(tmp_path: Path) -> None:
    import shutil

    from acceptsim.measure.calibrate import config_for
    from acceptsim.measure.run import WORKERS_FILE, load_run
    from acceptsim.models.costs import CLUSTER1

    source = Path(__file__).resolve().parents[1] / "data" / "measured" / "nginx-loopback-quota"
    run_dir = tmp_path / "run"
    shutil.copytree(sorted(p for p in source.iterdir() if p.is_dir())[0], run_dir)
    text = (run_dir / "run.toml").read_text().replace(
        "worker_processes = 1", "worker_processes = 4\naccept_mutex = true")
    (run_dir / "run.toml").write_text(text)
    (run_dir / WORKERS_FILE).write_text("pid,requests\n10,600\n11,200\n12,100\n13,100\n")
    record = load_run(run_dir).record()
    assert record["worker_shares"] == [0.6, 0.2, 0.1, 0.1]
    assert record["worker_imbalance"] == pytest.approx(2.4)
    config = config_for(load_run(run_dir), CLUSTER1)
    # on the one CPU nginx was pinned to (cpus = "0"), which its four workers share
    assert (config.cpus, config.workers, config.listen, config.wakeup) == (1, 4, "shared",
                                                                           "mutex")
    unpinned = text.replace('cpus = "0"', 'cpus = ""', 1)
    assert unpinned != text
    (run_dir / "run.toml").write_text(unpinned)
    config = config_for(load_run(run_dir), CLUSTER1)  # not pinned: every CPU of its host
    assert (config.cpus, config.workers) == (2, 4)
    (run_dir / "run.toml").write_text(text)
    (run_dir / WORKERS_FILE).write_text("pid;requests\n")
    from acceptsim.measure.parse_errors import ParseError

    with pytest.raises(ParseError):
        load_run(run_dir)


def test_worker_shares_are_compared_largest_to_largest() -> None:
    from acceptsim.measure.calibrate import worker_shares

    measured = {"worker_shares": [0.2, 0.8]}
    predicted = {"per_worker": [{"replies_per_s": 700.0}, {"replies_per_s": 300.0}]}
    theirs, ours, gap = worker_shares(measured, predicted)
    assert theirs == [0.8, 0.2] and ours == [0.7, 0.3] and gap == pytest.approx(10.0)
    assert worker_shares({"worker_shares": []}, predicted) is None
    assert worker_shares(measured, {"per_worker": [{"replies_per_s": 1.0}]}) is None


@pytest.mark.slow
def test_measure_traces_httperfs_turns_end_to_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--trace-turns on``: each run keeps its client CPUs' switches (client-turns.csv),
    its httperf processes are found taking turns there, and the tracefs instance is
    gone afterwards; refused before anything runs where tracefs cannot be used."""
    if not (shutil.which("httperf") and shutil.which("nginx")):
        pytest.skip("httperf and nginx are not installed (Debian: httperf nginx-light)")
    from acceptsim.measure.switch_trace import TRACEFS, SwitchTrace

    with SwitchTrace([0]) as probe:
        pass
    if probe.failed:
        pytest.skip(probe.failed)
    out = tmp_path / "runs"
    status = main(
        ["measure", "--multi-accept", "on", "--rates", "600", "--duration", "3",
         "--repeats", "1", "--timeout", "1", "--pause", "0", "--port", str(_free_port()),
         "--processes", "3", "--sample-interval", "0", "--trace-turns", "on",
         "--out", str(out)]
    )
    assert status == 0, capsys.readouterr().err
    (run_dir,) = sorted(out.iterdir())
    run = load_run(run_dir)
    assert (run_dir / "client-turns.csv").is_file() and run.turns is not None
    assert sorted(run.turns.processes.values())[-1] == 3 and run.turns.samples > 0
    assert not any(p.name.startswith("acceptsim-turns-")
                   for p in (TRACEFS / "instances").iterdir())
