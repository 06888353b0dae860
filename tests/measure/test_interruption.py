"""An interrupted ``acceptsim measure`` (SIGINT, SIGTERM, an error) leaves no nginx, no
httperf and no cgroup behind; with fake nginx, httperf and cgroup hierarchies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fake_cgroupfs import FakeCgroupfs, make_root
from fake_tools import fake_bin, free_port, kill_all, recorded, running

import acceptsim.measure.harness as harness
from acceptsim.cli import Terminated, _sigterm_stops
from acceptsim.measure.harness import CGROUP_NAME, CpuQuota, HarnessError, Nginx, Plan

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parents[1]


def plan(port: int) -> Plan:
    return Plan(
        server="nginx", multi_accept=True, rates_per_s=(500.0,), duration_s=300.0,
        repeats=1, timeout_s=1.0, file_size_bytes=1024, port=port, spacing="poisson",
        processes=None, pause_s=0.0,
    )


def wait_for(pids: Path, count: int, proc: subprocess.Popen[str] | None = None) -> None:
    """Until ``count`` fake processes have recorded themselves (bounded: 30 s)."""
    deadline = time.monotonic() + 30
    while len(recorded(pids)) < count:
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"acceptsim exited early: {proc.communicate()}")
        if time.monotonic() > deadline:
            pytest.fail(f"only {recorded(pids)} of {count} fake processes started")
        time.sleep(0.05)


def default_sigint() -> None:
    """SIGINT as at a terminal, even if these tests run where it is ignored (``nohup``,
    ``&``): Python then raises KeyboardInterrupt on it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def gone(pids: Path) -> list[int]:
    """The recorded processes still running after a moment for SIGKILL to land."""
    deadline = time.monotonic() + 2
    while running(pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return running(pids)


def reap(proc: subprocess.Popen[str], pids: Path) -> list[int]:
    """After a test's measure: kill it if it still runs; the recorded fake processes that
    survived it (then killed, so that none outlives the test)."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    survivors = gone(pids)
    kill_all(pids)
    return survivors


@pytest.mark.parametrize(
    ("signum", "cgroup"),
    [
        (signal.SIGTERM, "v2"),
        (signal.SIGTERM, "v1"),
        (signal.SIGTERM, "none"),
        (signal.SIGINT, "v2"),
    ],
    ids=["SIGTERM-v2", "SIGTERM-v1", "SIGTERM-no-quota", "SIGINT-v2"],
)
def test_a_signalled_measure_stops_everything_it_started(
    tmp_path: Path, signum: int, cgroup: str
) -> None:
    """Tried as a user would: ``kill`` (or Ctrl-C) of a running ``acceptsim measure``
    while its httperfs run exits 143 (130) with one line, and leaves no nginx master or
    worker, no httperf and no cgroup behind."""
    pids = tmp_path / "pids"
    bin_dir = fake_bin(tmp_path / "bin", pids)
    root = tmp_path / "cgroup"
    env = dict(os.environ, PATH=f"{bin_dir}:/usr/bin:/bin", FAKE_PIDS=str(pids),
               PYTHONPATH=f"{PROJECT}:{HERE}")
    if cgroup == "none":
        command = [sys.executable, "-m", "acceptsim.cli"]
        quota = []
    else:
        command = [sys.executable, str(HERE / "fake_cgroupfs.py"), cgroup, str(root)]
        quota = ["--server-cpu-quota", "0.5"]
        env["FAKE_CGROUP_PROCS"] = str(root / CGROUP_NAME / "cgroup.procs")
    processes = 2  # httperfs
    proc = subprocess.Popen(
        [*command, "measure", "--multi-accept", "on", "--rates", "500", "--duration", "300",
         "--repeats", "1", "--timeout", "1", "--processes", str(processes),
         "--port", str(free_port()), "--out", str(tmp_path / "out"), *quota],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=default_sigint,
    )
    try:
        wait_for(pids, 2 + processes, proc)  # nginx answered, and every httperf runs
        if cgroup != "none":
            assert (root / CGROUP_NAME).is_dir()
            assert len((root / CGROUP_NAME / "cgroup.procs").read_text().split()) == 2
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=30)
    finally:
        survivors = reap(proc, pids)
    name = "SIGTERM" if signum == signal.SIGTERM else "SIGINT"
    assert proc.returncode == (143 if signum == signal.SIGTERM else 130), err
    assert err.splitlines() == [f"acceptsim measure: stopped by {name}"], err
    assert survivors == [], f"still running: {survivors} of {recorded(pids)}"
    assert not (root / CGROUP_NAME).exists()
    assert list((tmp_path / "out").iterdir()) == []  # no run directory, not even partial


def test_a_second_signal_does_not_cut_the_clean_up_short(tmp_path: Path) -> None:
    """Ctrl-C pressed twice, or ``kill`` sent twice: the second arrives while nginx's
    master takes its time to stop; the harness still kills what is left of nginx."""
    pids = tmp_path / "pids"
    bin_dir = fake_bin(tmp_path / "bin", pids)
    env = dict(os.environ, PATH=f"{bin_dir}:/usr/bin:/bin", FAKE_PIDS=str(pids),
               FAKE_NGINX_SLOW_STOP="1", PYTHONPATH=str(PROJECT))
    proc = subprocess.Popen(
        [sys.executable, "-m", "acceptsim.cli", "measure", "--multi-accept", "on",
         "--rates", "500", "--duration", "300", "--repeats", "1", "--timeout", "1",
         "--processes", "1", "--port", str(free_port()), "--out", str(tmp_path / "out")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        wait_for(pids, 3, proc)
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)  # the master is stopping (1.5 s)
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        survivors = reap(proc, pids)
    assert proc.returncode == 143, err
    assert survivors == [], f"still running: {survivors} of {recorded(pids)}"


def send_when_started(pids: Path, count: int, signum: int) -> threading.Thread:
    """A thread that sends ``signum`` to this process once ``count`` fakes run (and gives
    up after 30 s without sending anything)."""

    def send() -> None:
        deadline = time.monotonic() + 30
        while len(recorded(pids)) < count:
            if time.monotonic() > deadline:
                return
            time.sleep(0.05)
        os.kill(os.getpid(), signum)

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "time limit"])
def test_run_httperfs_kills_every_httperf_however_it_is_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """In this process: the CLI's SIGTERM handler (or SIGINT's) raises while the harness
    waits for its httperfs, or the wall-clock limit passes; none is left running."""
    pids = tmp_path / "pids"
    bin_dir = fake_bin(tmp_path / "bin", pids)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    commands = [["httperf", f"--client={i}/3"] for i in range(3)]
    try:
        if how == "time limit":
            with pytest.raises(HarnessError, match="httperf still running after 1 s"):
                harness.run_httperfs(commands, "", limit_s=1.0)
        else:
            signum = signal.SIGTERM if how == "SIGTERM" else signal.SIGINT
            # SIGINT as at a terminal, even where these tests run with it ignored
            sigint = signal.signal(signal.SIGINT, signal.default_int_handler)
            sender = send_when_started(pids, 3, signum)
            try:
                with _sigterm_stops():
                    with pytest.raises(Terminated if how == "SIGTERM" else KeyboardInterrupt):
                        harness.run_httperfs(commands, "0", limit_s=60.0)
            finally:
                sender.join()
                signal.signal(signal.SIGINT, sigint)
        assert len(recorded(pids)) == 3
        assert gone(pids) == []
    finally:
        kill_all(pids)


@pytest.mark.parametrize("version", [2, 1])
def test_nginx_and_its_group_go_when_the_run_is_terminated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: int
) -> None:
    """In this process: SIGTERM's exception (the CLI's Terminated) raised inside the
    harness's nginx and group blocks leaves no master, no worker, no group and no
    nginx prefix directory."""
    pids = tmp_path / "pids"
    bin_dir = fake_bin(tmp_path / "bin", pids)
    root = make_root(tmp_path / "cgroup", version)
    for name, function in FakeCgroupfs(root).patches().items():
        monkeypatch.setattr(Path, name, function)
    monkeypatch.setenv("FAKE_PIDS", str(pids))
    monkeypatch.setenv("FAKE_CGROUP_PROCS", str(root / CGROUP_NAME / "cgroup.procs"))
    prefixes = tmp_path / "tmp"
    prefixes.mkdir()
    monkeypatch.setattr(harness.tempfile, "tempdir", str(prefixes))
    try:
        with pytest.raises(Terminated):
            with CpuQuota(0.5, 2000, root) as group:
                with Nginx(plan(free_port()), "", str(bin_dir / "nginx"), group):
                    assert len(running(pids)) == 2 and len(group.pids()) == 2
                    raise Terminated
        assert gone(pids) == []
    finally:
        kill_all(pids)
    assert not (root / CGROUP_NAME).exists()
    assert list(prefixes.iterdir()) == []
