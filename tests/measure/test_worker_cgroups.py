"""``--server-cpu-quota-scope worker``: a cgroup per nginx worker, each with the quota (N slow
cores emulated on one CPU), on fake cgroup v2 and v1 hierarchies and a fake nginx; recorded
in run.toml and mapped by config_for to the model's ``cpu_quota_scope``."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from fake_cgroupfs import make_root
from fake_tools import fake_bin, free_port, kill_all, script
from measure_samples import HTTPERF_ONE

import acceptsim.measure.harness as harness
from acceptsim.cli import main
from acceptsim.measure import load_run, parse_run_info
from acceptsim.measure.calibrate import config_for
from acceptsim.measure.harness import (
    CGROUP_NAME,
    WORKER_CGROUPS_FILE,
    WORKER_CGROUPS_HEADER,
    CpuQuota,
    HarnessError,
    Plan,
)
from acceptsim.measure.run import WORKERS_FILE, MeasuredRun
from acceptsim.measure.runfile import FORMAT, RUN_FILE
from acceptsim.models.costs import CLUSTER1
from acceptsim.sim.errors import ConfigError

DATA = Path(__file__).resolve().parents[1] / "data" / "measured"
ARGS = ["measure", "--multi-accept", "off", "--rates", "500", "--duration", "2",
        "--repeats", "1", "--timeout", "1", "--pause", "0", "--sample-interval", "0"]


def plan(**changes: object) -> Plan:
    fields: dict[str, object] = dict(
        server="nginx", multi_accept=False, rates_per_s=(500.0,), duration_s=2.0, repeats=1,
        timeout_s=1.0, file_size_bytes=1024, port=18080, spacing="poisson", processes=None,
        pause_s=0.0, workers=2,
    )
    fields.update(changes)
    return Plan(**fields)  # type: ignore[arg-type]


# -- the option --------------------------------------------------------------------------------
def test_the_default_scope_is_declared_once_and_is_todays() -> None:
    from acceptsim.commands.cmd_measure import PLAN_DEFAULTS

    assert PLAN_DEFAULTS["server_cpu_quota_scope"] == "server"
    assert plan(server_cpu_quota=0.1).server_cpu_quota_scope == "server"


@pytest.mark.parametrize(("changes", "option", "value", "allowed"), [
    ({"server_cpu_quota": 0.1, "server_cpu_quota_scope": "cores"},
     "--server-cpu-quota-scope", "cores", "server or worker"),
    ({"server_cpu_quota_scope": "worker"}, "--server-cpu-quota-scope", "worker",
     "only with --server-cpu-quota"),
    ({"server_cpu_quota": 1.5, "server_cpu_quota_scope": "worker", "online_cpus": 2},
     "--server-cpu-quota", 1.5, "at most 1 CPU with --server-cpu-quota-scope worker"),
])
def test_bad_scopes_name_the_option_the_value_and_what_is_allowed(
    changes: dict, option: str, value: object, allowed: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        plan(**changes)
    assert caught.value.field == option and caught.value.value == value
    assert allowed in str(caught.value)


def test_a_bad_scope_on_the_command_line_is_one_line_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main([*ARGS, "--server-cpu-quota", "0.1", "--server-cpu-quota-scope", "cores",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("acceptsim measure: error: --server-cpu-quota-scope") and "cores" in err
    assert "server or worker" in err and err.count("\n") == 1
    assert not out.exists()


# -- the groups --------------------------------------------------------------------------------
@pytest.mark.parametrize("version", [2, 1])
def test_each_worker_gets_a_group_with_the_quota_and_the_master_one_without(
    tmp_path: Path, cgroupfs: object, version: int
) -> None:
    root = make_root(tmp_path / "root", version)
    cgroupfs(root)  # type: ignore[operator]
    children: list[subprocess.Popen[bytes]] = []
    try:
        with CpuQuota(0.05, 20000, root, scope="worker", workers=3) as group:
            nginx = root / CGROUP_NAME
            assert group.worker_dirs == [nginx / f"worker-{i}" for i in (1, 2, 3)]
            for d in group.worker_dirs:
                if version == 2:
                    assert (d / "cpu.max").read_text() == "1000 20000\n"
                else:
                    assert (d / "cpu.cfs_period_us").read_text() == "20000\n"
                    assert (d / "cpu.cfs_quota_us").read_text() == "1000\n"
            for d in (nginx, nginx / "master"):  # no limit: the kernel's default
                if version == 2:
                    assert (d / "cpu.max").read_text().split()[0] == "max"
                else:
                    assert (d / "cpu.cfs_quota_us").read_text() == "-1\n"
            # the master starts in its group; its workers (here: three sleeps) are moved
            master = subprocess.Popen(["sleep", "60"], preexec_fn=group.join)
            children.append(master)
            assert (nginx / "master" / "cgroup.procs").read_text() == f"{master.pid}\n"
            workers = [subprocess.Popen(["sleep", "60"]) for _ in range(3)]
            children.extend(workers)
            group.place_workers([w.pid for w in workers])
            for d, w in zip(group.worker_dirs, workers, strict=True):
                assert (d / "cgroup.procs").read_text() == f"{w.pid}\n"
            assert sorted(group.pids()) == sorted(c.pid for c in children)
            # the workers' throttling, added up; each group's on its own
            for i, d in enumerate(group.worker_dirs):
                with open(d / "cpu.stat", "w") as f:
                    f.write(f"nr_periods {10 * (i + 1)}\nnr_throttled {i + 1}\n"
                            + (f"throttled_usec {100 * (i + 1)}\n" if version == 2
                               else f"throttled_time {100_000 * (i + 1)}\n"))
            assert group.throttled() == {"nr_periods": 60, "nr_throttled": 6,
                                         "throttled_us": 600}
            assert group.throttled(group.worker_dirs[1])["nr_throttled"] == 2
        for child in children:
            assert child.wait(timeout=5) == -9
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
    assert not (root / CGROUP_NAME).exists()


def test_fewer_workers_than_groups_is_an_error_naming_the_option(
    tmp_path: Path, cgroupfs: object
) -> None:
    root = make_root(tmp_path / "root", 1)
    cgroupfs(root)  # type: ignore[operator]
    with CpuQuota(0.1, 10000, root, scope="worker", workers=2) as group:
        with pytest.raises(HarnessError, match="--server-cpu-quota-scope worker: nginx "
                           "started 1 workers .*not the 2 of --workers"):
            group.place_workers([12345])
    assert not (root / CGROUP_NAME).exists()


def test_a_left_over_group_with_worker_groups_in_it_is_replaced(
    tmp_path: Path, cgroupfs: object
) -> None:
    """As a worker-scope measure killed with SIGKILL leaves it, once nginx is gone."""
    root = make_root(tmp_path / "root", 2, subtree="cpu")
    cgroupfs(root)  # type: ignore[operator]
    (root / CGROUP_NAME).mkdir()
    (root / CGROUP_NAME / "cgroup.subtree_control").write_text("+cpu")
    (root / CGROUP_NAME / "worker-1").mkdir()
    with CpuQuota(0.5, 2000, root) as group:  # today's scope
        assert (group.dir / "cpu.max").read_text() == "1000 2000\n"
        assert not (group.dir / "worker-1").exists()
    assert not (root / CGROUP_NAME).exists()


# -- through the command -----------------------------------------------------------------------
def fake_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, procs: Path) -> Path:
    """Stand-ins for nginx and httperf on PATH, the fake nginx's workers starting in the
    group whose ``cgroup.procs`` is ``procs``; the file the fakes write their pids to."""
    pids = tmp_path / "pids"
    bin_dir = fake_bin(tmp_path / "bin", pids)
    (tmp_path / "httperf.txt").write_text(HTTPERF_ONE)
    script(bin_dir, "httperf", f"exec {shutil.which('cat')} {tmp_path / 'httperf.txt'}")
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("FAKE_PIDS", str(pids))
    monkeypatch.setenv("FAKE_CGROUP_PROCS", str(procs))
    return pids


@pytest.mark.parametrize("version", [2, 1])
def test_measure_moves_each_worker_into_its_own_group_and_records_the_scope(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    cgroupfs: object, version: int,
) -> None:
    root = make_root(tmp_path / "cgroup", version)
    cgroupfs(root)  # type: ignore[operator]
    monkeypatch.setattr(harness, "CGROUP_ROOT", root if version == 2 else tmp_path / "none")
    monkeypatch.setattr(harness, "CGROUP_CPU_ROOT", root if version == 1 else tmp_path / "no")
    # the fake's workers start in their master's group, as nginx's do
    pids = fake_tools(tmp_path, monkeypatch, root / CGROUP_NAME / "master" / "cgroup.procs")
    moves: list[tuple[str, str]] = []
    place = CpuQuota.place_workers

    def watched(self: CpuQuota, workers: list[int]) -> None:
        place(self, workers)
        moves.extend((d.name, (d / "cgroup.procs").read_text().strip())
                     for d in self.worker_dirs)

    monkeypatch.setattr(CpuQuota, "place_workers", watched)
    out = tmp_path / "out"
    try:
        status = main([*ARGS, "--port", str(free_port()), "--workers", "3",
                       "--server-cpu-quota", "0.1", "--server-cpu-period", "10000",
                       "--server-cpu-quota-scope", "worker", "--out", str(out)])
    finally:
        kill_all(pids)
    assert status == 0, capsys.readouterr().err
    (run_dir,) = sorted(out.iterdir())
    run = load_run(run_dir)
    assert run.info.server.cpu_quota_scope == "worker"
    assert (run.info.server.cpu_quota, run.info.server.cpu_period_us) == (0.1, 10000)
    assert 'cpu_quota_scope = "worker"' in (run_dir / RUN_FILE).read_text()
    workers = [int(line.split(",")[0])
               for line in (run_dir / WORKERS_FILE).read_text().splitlines()[1:]]
    assert len(workers) == 3
    # each worker alone in its group while the load ran, in start order
    assert moves == [(f"worker-{i}", str(pid)) for i, pid in enumerate(workers, start=1)]
    lines = (run_dir / WORKER_CGROUPS_FILE).read_text().splitlines()
    assert lines[0] == WORKER_CGROUPS_HEADER
    assert [(int(line.split(",")[0]), line.split(",")[1]) for line in lines[1:]] == [
        (pid, f"worker-{i}") for i, pid in enumerate(workers, start=1)]
    assert "the workers' groups throttled in" in capsys.readouterr().out
    assert not (root / CGROUP_NAME).exists()
    config = config_for(run, CLUSTER1)
    assert (config.cpu_quota_scope, config.cpu_quota, config.workers) == ("worker", 0.1, 3)


def measure_in_v1_group(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                        capsys: pytest.CaptureFixture[str], cgroupfs: object,
                        *args: str, tools: dict[str, str] | None = None
                        ) -> tuple[MeasuredRun, str]:
    """``acceptsim measure`` with ``args`` under a server-scope group of a fake cgroup v1
    hierarchy, with stand-ins for nginx and httperf and the shell scripts ``tools`` (name:
    body) on PATH: its one run, and what it printed."""
    root = make_root(tmp_path / "cgroup", 1)
    cgroupfs(root)  # type: ignore[operator]
    monkeypatch.setattr(harness, "CGROUP_ROOT", tmp_path / "none")
    monkeypatch.setattr(harness, "CGROUP_CPU_ROOT", root)
    pids = fake_tools(tmp_path, monkeypatch, root / CGROUP_NAME / "cgroup.procs")
    for name, body in (tools or {}).items():
        script(tmp_path / "bin", name, body)
    out = tmp_path / "out"
    try:
        status = main([*ARGS, "--port", str(free_port()), *args, "--out", str(out)])
    finally:
        kill_all(pids)
    printed = capsys.readouterr()
    assert status == 0, printed.err
    (run_dir,) = sorted(out.iterdir())
    return load_run(run_dir), printed.out


def test_todays_scope_leaves_the_workers_in_nginxs_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    cgroupfs: object,
) -> None:
    run, _ = measure_in_v1_group(tmp_path, monkeypatch, capsys, cgroupfs, "--workers", "2",
                                 "--server-cpu-quota", "0.1")
    run_dir = run.path
    assert run.info.server.cpu_quota_scope == "server"
    assert not (run_dir / WORKER_CGROUPS_FILE).exists()
    assert config_for(run, CLUSTER1).cpu_quota_scope == "server"


def test_measure_records_where_the_period_timer_fires_and_the_simulation_takes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    cgroupfs: object,
) -> None:
    """A stand-in perf traces CPU 0's ticks 15 us past multiples of 4 ms and the period
    timer 1234.53 us past them: the run records 1219.5 us (the interrupt's latency, common
    to both, cancels), and config_for simulates it there."""
    monkeypatch.setattr(harness, "scheduler_tick_s", lambda: 0.004)
    lines = []
    for k in range(1000, 1100):
        lines.append(f"[000] hrtimer=0x1 function=tick_nohz_handler now={k * 4_000_000 + 15_000}")
        lines.append(f"[000] hrtimer=0x2 function=sched_cfs_period_timer "
                     f"now={k * 4_000_000 + 1_234_530}")
    (tmp_path / "trace.txt").write_text("\n".join(lines) + "\n")
    perf = f"""
case "$1" in
  record) exit 0 ;;
  script) exec {shutil.which('cat')} {tmp_path / 'trace.txt'} ;;
esac
exit 1"""
    run, _ = measure_in_v1_group(tmp_path, monkeypatch, capsys, cgroupfs,
                                 "--server-cpu-quota", "0.25", "--server-cpu-period", "4000",
                                 tools={"perf": perf})
    assert run.info.server.cpu_period_offset_us == 1219.5
    assert config_for(run, CLUSTER1).cpu_period_offset_s == pytest.approx(1.2195e-3)


def test_without_perf_the_run_says_so_and_the_simulation_keeps_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    cgroupfs: object,
) -> None:
    run, printed = measure_in_v1_group(tmp_path, monkeypatch, capsys, cgroupfs,
                                       "--server-cpu-quota", "0.25")
    assert "period timer not placed (perf not found" in printed
    assert run.info.server.cpu_period_offset_us == -1.0
    assert config_for(run, CLUSTER1).cpu_period_offset_s == 0.0


# -- run.toml and config_for -------------------------------------------------------------------
def test_runs_recorded_before_the_option_read_as_one_group_for_nginx() -> None:
    run = load_run(DATA / "nginx-loopback-workers" / "workers-2" /
                   "nginx-workers-2-mutex-multi_accept-off-rate-002000-rep-1")
    assert "cpu_quota_scope" not in (run.path / RUN_FILE).read_text()
    assert run.info.server.cpu_quota_scope == "server"
    assert config_for(run, CLUSTER1).cpu_quota_scope == "server"


def test_config_for_follows_the_recorded_scope(tmp_path: Path) -> None:
    source = (DATA / "nginx-loopback-workers" / "workers-4" /
              "nginx-workers-4-shared-multi_accept-off-rate-001000-rep-1")
    run_dir = tmp_path / "run"
    shutil.copytree(source, run_dir)
    text = (run_dir / RUN_FILE).read_text().replace(
        "cpu_quota = 0.1", "cpu_quota = 0.05\ncpu_quota_scope = \"worker\"")
    (run_dir / RUN_FILE).write_text(text)
    config = config_for(load_run(run_dir), CLUSTER1)
    assert (config.cpu_quota_scope, config.cpu_quota, config.workers, config.cpus) == (
        "worker", 0.05, 4, 1)


@pytest.mark.parametrize(("server", "allowed"), [
    ({"cpu_quota_scope": "cores", "cpu_quota": 0.1, "cpu_period_us": 10000}, "server"),
    ({"cpu_quota_scope": "worker"}, "worker only with server.cpu_quota > 0"),
])
def test_run_toml_refuses_a_bad_scope_naming_the_key(server: dict, allowed: str) -> None:
    data = {"format": FORMAT, "server": {"name": "nginx", **server},
            "load": {"target_rate_per_s": 1000, "duration_s": 10, "timeout_s": 1}}
    with pytest.raises(ConfigError) as caught:
        parse_run_info(data, "x/run.toml")
    assert caught.value.field == "x/run.toml: server.cpu_quota_scope"
    assert caught.value.value == server["cpu_quota_scope"] and allowed in str(caught.value)
