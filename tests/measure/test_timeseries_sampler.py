"""The time series' sampler (``acceptsim measure --sample-interval``): its readers of a
fake /proc tree, of the listening socket's queue and of nginx's cgroup, its thread, the
access log nginx is configured to write, and (slow) a real measure's ``timeseries.csv``."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fake_cgroupfs import make_root

import acceptsim.measure.harness as harness
from acceptsim.cli import build_parser, main
from acceptsim.commands.cmd_measure import PLAN_DEFAULTS, plan_from_args
from acceptsim.measure import load_run
from acceptsim.measure.harness import (
    ADDRESS,
    CGROUP_NAME,
    CpuQuota,
    HarnessError,
    Plan,
    Sampler,
    listen_queue_netlink,
    nginx_conf,
    parse_cpu_list,
    parse_ss_listen,
    read_cpu_ticks,
    read_netstat,
    sampler_sources,
)
from acceptsim.measure.timeseries_csv import NAMES, TIMESERIES_FILE, parse_access_line
from acceptsim.sim.errors import ConfigError

NETSTAT = """\
TcpExt: SyncookiesSent SyncookiesRecv ListenOverflows ListenDrops TCPSynRetrans
TcpExt: 0 0 17 19 4
IpExt: InNoRoutes InOctets
IpExt: 0 12345
"""
STAT = """\
cpu  950032 10 133567 707115 3376 7 3994 522 0 0
cpu0 345360 5 25612 524648 715 3 2682 245 0 0
cpu1 604672 5 107954 182466 2660 4 1311 277 0 0
intr 1234 5 6
"""


def fake_proc(root: Path, netstat: str = NETSTAT, stat: str = STAT) -> Path:
    (root / "net").mkdir(parents=True)
    (root / "net" / "netstat").write_text(netstat)
    (root / "stat").write_text(stat)
    return root


def test_kernel_counters_and_cpu_time_are_read_from_proc(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path / "proc")
    assert read_netstat(proc) == {"TcpExtListenOverflows": 17, "TcpExtListenDrops": 19,
                                  "TcpExtTCPSynRetrans": 4}
    assert read_cpu_ticks("0", proc) == {"user_ticks": 345365, "system_ticks": 25612,
                                         "softirq_ticks": 2682,
                                         "busy_ticks": 345365 + 25612 + 3 + 2682}
    both = read_cpu_ticks("0-1", proc)
    assert both["user_ticks"] == 345365 + 604677
    assert read_cpu_ticks("", proc)["system_ticks"] == 133567  # not pinned: every CPU
    with pytest.raises(ValueError, match="lacks"):
        read_cpu_ticks("2", proc)
    assert parse_cpu_list("0-2,5") == [0, 1, 2, 5]


def test_the_real_proc_files_read(tmp_path: Path) -> None:
    counters = read_netstat()
    assert set(counters) == {"TcpExtListenOverflows", "TcpExtListenDrops",
                             "TcpExtTCPSynRetrans"}
    assert read_cpu_ticks("0")["busy_ticks"] > 0


def test_the_accept_queue_is_what_waits_unaccepted_on_the_listening_socket() -> None:
    with socket.socket() as server:
        server.bind((ADDRESS, 0))
        server.listen(16)
        port = server.getsockname()[1]
        assert listen_queue_netlink(port) == 0
        clients = [socket.create_connection((ADDRESS, port)) for _ in range(3)]
        try:
            deadline = time.monotonic() + 5
            while listen_queue_netlink(port) < 3 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert listen_queue_netlink(port) == 3
            if shutil.which("ss"):  # the fallback reads the same number
                assert harness.listen_queue_ss(port) == 3
        finally:
            for c in clients:
                c.close()


def test_ss_lines_are_summed_over_the_ports_listeners() -> None:
    text = ("LISTEN 5   128 127.0.0.1:18080 0.0.0.0:*\n"
            "LISTEN 2   128 127.0.0.1:18080 0.0.0.0:*\n"
            "LISTEN 9   128 0.0.0.0:22 0.0.0.0:*\n")
    assert parse_ss_listen(text, 18080) == 7 and parse_ss_listen("", 18080) == 0


def test_the_sampler_keeps_its_schedule_records_actual_times_and_drops_a_failing_source(
) -> None:
    calls = {"n": 0}
    threads: set[str] = set()

    def counter() -> dict[str, float]:
        calls["n"] += 1
        threads.add(threading.current_thread().name)
        return {"TcpExtListenDrops": calls["n"]}

    def failing() -> dict[str, float]:
        raise OSError("gone")

    sampler = Sampler(0.02, {"counter": counter, "cgroup": failing})
    with sampler:
        assert len(sampler.samples) == 1  # the first, as the load starts
        time.sleep(0.25)
    found = sampler.samples
    times = [s["wall_s"] for s in found]
    assert all(b > a for a, b in zip(times, times[1:], strict=False))
    assert 8 <= len(found) <= 16  # every 20 ms over 0.25 s, plus the first and the last
    gaps = [b - a for a, b in zip(times[1:-1], times[2:-1], strict=False)]
    assert sum(gaps) / len(gaps) == pytest.approx(0.02, rel=0.5)
    assert [s["TcpExtListenDrops"] for s in found] == list(range(1, len(found) + 1))
    assert sampler.failed == {"cgroup": "OSError: gone"}
    assert threads == {"acceptsim-sampler"} and 0 < sampler.cpu_s < 0.25
    assert not sampler._thread.is_alive()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: nothing to pin to")
def test_the_sampler_runs_on_the_client_cpus_only() -> None:
    cpu = max(os.sched_getaffinity(0))
    seen: list[set[int]] = []
    sampler = Sampler(0.01, {"where": lambda: seen.append(os.sched_getaffinity(0)) or {}},
                      str(cpu))
    with sampler:
        time.sleep(0.05)
    assert seen and all(s == {cpu} for s in seen)
    assert os.sched_getaffinity(0) != {cpu}  # the measuring process itself is not pinned


#: a child that uses about 20 ms of CPU, then sleeps
BUSY_THEN_SLEEP = ("import time\nt = time.process_time()\n"
                   "while time.process_time() - t < 0.02:\n    pass\ntime.sleep(30)\n")


def _wait_for_runtime(pid: int, ns: int) -> None:
    """Until the task has run ``ns`` nanoseconds (its schedstat), at most 10 s."""
    deadline = time.monotonic() + 10.0
    while int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) < ns:
        assert time.monotonic() < deadline, "the busy child did not run"
        time.sleep(0.01)


def test_the_cgroups_usage_is_read_from_each_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fake_cgroupfs import FakeCgroupfs

    for version in (2, 1):
        root = make_root(tmp_path / f"v{version}", version)
        fake = FakeCgroupfs(root)
        for name, function in fake.patches().items():
            monkeypatch.setattr(Path, name, function)
        with CpuQuota(0.5, 2000, root) as group:
            if version == 2:
                assert group.usage_us() == 0
                with open(group.dir / "cpu.stat", "w") as f:  # as the kernel updates it
                    f.write("usage_usec 1234\nuser_usec 1000\nsystem_usec 234\n"
                            "nr_periods 3\nnr_throttled 1\nthrottled_usec 500\n")
                assert group.usage_us() == 1234
                continue
            # v1 without cpuacct beside cpu (as here): its tasks' schedstat run times
            assert group.usage_us() == 0
            # a task that has run for a few ms (a fresh `sleep` may have used under 1 us's
            # worth of a microsecond count), then sleeps; killed with the group on exit
            task = subprocess.Popen([sys.executable, "-c", BUSY_THEN_SLEEP])
            try:
                _wait_for_runtime(task.pid, 5_000_000)
                (group.dir / "cgroup.procs").write_text(str(task.pid))
                schedstat = Path(f"/proc/{task.pid}/schedstat")
                before = int(schedstat.read_text().split()[0])
                used = group.usage_us()
                after = int(schedstat.read_text().split()[0])
                assert 0 < before // 1000 <= used <= after // 1000
                with open(group.dir / "cpuacct.usage", "w") as f:  # cpuacct mounted with cpu
                    f.write("7000000\n")
                assert group.usage_us() == 7000
            finally:
                task.kill()
                task.wait()
        monkeypatch.undo()


def test_the_sources_read_the_testbed(tmp_path: Path) -> None:
    sources = sampler_sources(port=1, server_cpus="0", group=None)
    assert set(sources) == {"kernel counters", "accept queue", "server CPU"}
    sample: dict[str, float] = {}
    for read in sources.values():
        sample.update(read())
    assert sample["accept_queue_len"] == 0 and sample["busy_ticks"] > 0


def test_nginx_logs_every_request_buffered_with_its_time_pid_and_status(tmp_path: Path) -> None:
    for workers in (1, 4):
        conf = nginx_conf(tmp_path, False, 18080, workers=workers)
        assert "log_format timing '$msec $request_time $pid $status';" in conf
        assert f"access_log {tmp_path}/logs/access.log timing buffer=64k flush=1s;" in conf
        assert "access_log off" not in conf
    assert parse_access_line("1764140000.123 0.000 812 200").pid == 812


def test_the_sample_interval_is_a_plan_field_with_one_default() -> None:
    assert PLAN_DEFAULTS["sample_interval_s"] == 0.1
    args = build_parser().parse_args(["measure", "--multi-accept", "on", "--rates", "100",
                                      "--out", "x"])
    assert plan_from_args(args).sample_interval_s == 0.1
    args = build_parser().parse_args(["measure", "--multi-accept", "on", "--rates", "100",
                                      "--out", "x", "--sample-interval", "0"])
    assert plan_from_args(args).sample_interval_s == 0
    base = dict(server="nginx", multi_accept=True, rates_per_s=(100.0,), duration_s=1.0,
                repeats=1, timeout_s=1.0, file_size_bytes=1024, port=18080,
                spacing="poisson", processes=None, pause_s=0.0)
    for bad in (-0.1, 0.001, 61.0, float("nan")):
        with pytest.raises(ConfigError) as err:
            Plan(**base, sample_interval_s=bad)  # type: ignore[arg-type]
        assert err.value.field == "--sample-interval"
    assert main(["measure", "--multi-accept", "on", "--rates", "100", "--out",
                 str(Path("/nonexistent")), "--sample-interval", "x"]) == 2


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((ADDRESS, 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_a_measured_run_has_its_time_series(tmp_path: Path) -> None:
    """A real nginx under httperf for 2 s at 0.5 CPU: timeseries.csv's replies add up to
    httperf's, sampled every 100 ms by a thread that costs little."""
    if not (shutil.which("httperf") and shutil.which("nginx")):
        pytest.skip("httperf and nginx are not installed (Debian: httperf nginx-light)")
    try:
        root = harness.default_cgroup_root()
    except HarnessError as exc:
        pytest.skip(str(exc))
    if (root / CGROUP_NAME).exists():
        pytest.skip(f"{root / CGROUP_NAME} exists: another measure may be running")
    out = tmp_path / "runs"
    assert main(["measure", "--multi-accept", "on", "--rates", "400", "--duration", "2",
                 "--repeats", "1", "--timeout", "1", "--pause", "0", "--port",
                 str(_free_port()), "--server-cpu-quota", "0.5", "--out", str(out)]) == 0
    (run_dir,) = sorted(out.iterdir())
    run = load_run(run_dir)
    ts = run.timeseries()
    assert (run_dir / TIMESERIES_FILE).exists() and list(ts.columns) == list(NAMES)
    # every 0.1 s until the load ended (the last interval ends with it)
    assert 18 <= len(ts) <= 40 and ts["interval_s"][:-1].between(0.05, 0.3).all()
    assert 0 < ts["interval_s"].iloc[-1] <= 0.3
    replies = (ts["reply_rate_per_s"] * ts["interval_s"]).sum()
    assert round(replies) == run.record()["connections.completed"]
    assert ts["usage_ms"].sum() > 0 and ts["server_cpu_busy_ms"].sum() > 0
    assert ts["throttled_ms"].notna().all() and ts["syn_retrans_per_s"].notna().all()
    assert run.info.timeseries.sampler_cpu_s < 0.1
