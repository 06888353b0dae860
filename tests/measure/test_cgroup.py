"""``--server-cpu-quota``'s cgroup on a fake cgroup v2 (unified) or v1 hierarchy:
which one is chosen, what is written, what is read, and that the group goes on exit."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path

import pytest
from fake_cgroupfs import make_root
from fake_tools import script

import acceptsim.measure.harness as harness
from acceptsim.cli import Terminated, _sigterm_stops, main
from acceptsim.measure.harness import (
    CGROUP_NAME,
    CpuQuota,
    HarnessError,
    default_cgroup_root,
)


@pytest.fixture
def roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """Where the harness looks: (unified root, v1 cpu root), neither made yet."""
    unified, v1 = tmp_path / "cgroup", tmp_path / "cgroup-v1-cpu"
    monkeypatch.setattr(harness, "CGROUP_ROOT", unified)
    monkeypatch.setattr(harness, "CGROUP_CPU_ROOT", v1)
    monkeypatch.setattr(harness, "CGROUP_RMDIR_WAIT_S", 1.0)
    return unified, v1


def test_the_unified_hierarchy_with_the_cpu_controller_is_chosen(
    roots: tuple[Path, Path],
) -> None:
    unified, v1 = roots
    make_root(unified, 2)
    make_root(v1, 1)
    assert default_cgroup_root() == unified
    group = CpuQuota(0.5, 2000)
    assert group.version == 2 and group.dir == unified / CGROUP_NAME


@pytest.mark.parametrize("unified_has", ["no cpu controller", "no cgroup.controllers"])
def test_v1_is_chosen_where_the_unified_hierarchy_lacks_cpu(
    roots: tuple[Path, Path], unified_has: str
) -> None:
    unified, v1 = roots
    if unified_has == "no cpu controller":
        make_root(unified, 2, controllers="memory pids")
    else:  # a hybrid host: /sys/fs/cgroup holds the v1 hierarchies
        unified.mkdir()
    make_root(v1, 1)
    assert default_cgroup_root() == v1
    group = CpuQuota(0.5, 2000)
    assert group.version == 1 and group.dir == v1 / CGROUP_NAME


def test_a_unified_hierarchy_that_is_not_writable_is_passed_over(
    roots: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    unified, v1 = roots
    make_root(unified, 2)
    make_root(v1, 1)
    # as os.access answers for a user who is not root, or a read-only mount
    monkeypatch.setattr(harness, "_writable", lambda root: root != unified)
    assert default_cgroup_root() == v1


def test_neither_hierarchy_writable_is_one_clear_error_before_anything_runs(
    roots: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    unified, v1 = roots
    make_root(unified, 2)
    make_root(v1, 1)
    monkeypatch.setattr(harness, "_writable", lambda root: False)
    with pytest.raises(HarnessError) as caught:
        CpuQuota(0.5, 2000)
    message = str(caught.value)
    assert message == (
        f"--server-cpu-quota needs a cgroup v2 hierarchy with the cpu controller or a cgroup "
        f"v1 cpu hierarchy, writable by this process: run as root (in a container: with "
        f"/sys/fs/cgroup mounted read-write) or delegate the hierarchy to this user; tried "
        f"{unified} (cgroup v2 with the cpu controller, not writable by this process (user "
        f"id {os.geteuid()})) and {v1} (cgroup v1 cpu hierarchy, not writable by this "
        f"process (user id {os.geteuid()}))"
    )
    # through the command: one line, status 2, before nginx (even nginx -v) runs
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    started = tmp_path / "started"
    script(bin_dir, "httperf", f"echo httperf >> {started}")
    script(bin_dir, "nginx", f"echo nginx >> {started}; echo 'nginx version: nginx/1.22.1' >&2")
    script(bin_dir, "taskset", 'shift 2; exec "$@"')
    monkeypatch.setenv("PATH", str(bin_dir))
    out = tmp_path / "out"
    assert main(["measure", "--multi-accept", "on", "--rates", "500", "--duration", "2",
                 "--repeats", "1", "--server-cpu-quota", "0.5", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == f"acceptsim measure: error: {message}\n"
    assert not started.exists() and not out.exists()
    assert not (unified / CGROUP_NAME).exists() and not (v1 / CGROUP_NAME).exists()


@pytest.mark.parametrize("unified", ["absent", "v1 mounts", "v2 without cpu"])
def test_neither_hierarchy_present_names_both_paths_and_why(
    roots: tuple[Path, Path], unified: str
) -> None:
    root, v1 = roots
    if unified == "v1 mounts":  # a hybrid host, without the cpu controller mounted
        root.mkdir()
    elif unified == "v2 without cpu":
        make_root(root, 2, controllers="memory pids")
    with pytest.raises(HarnessError) as caught:
        CpuQuota(0.5, 2000)
    why = {
        "absent": "does not exist",
        "v1 mounts": "has neither cgroup.controllers (v2) nor cpu.cfs_quota_us (v1 cpu)",
        "v2 without cpu": "cgroup v2 without the cpu controller: its cgroup.controllers "
        "lists memory pids",
    }[unified]
    assert str(caught.value).endswith(f"; tried {root} ({why}) and {v1} (does not exist)")


@pytest.mark.parametrize(
    ("subtree", "after"),
    [("", "cpu"), ("memory", "memory cpu"), ("cpu memory", "cpu memory")],
)
def test_v2_enables_the_cpu_controller_only_if_needed_and_writes_cpu_max(
    tmp_path: Path, cgroupfs: object, subtree: str, after: str
) -> None:
    root = make_root(tmp_path / "unified", 2, subtree=subtree)
    cgroupfs(root)  # type: ignore[operator]
    with CpuQuota(0.1, 10000, root) as group:
        assert (root / "cgroup.subtree_control").read_text().split() == after.split()
        assert (group.dir / "cpu.max").read_text() == "1000 10000\n"
        assert not (group.dir / "cpu.cfs_quota_us").exists()
    assert not group.dir.exists()


def test_v1_writes_the_period_and_the_quota(tmp_path: Path, cgroupfs: object) -> None:
    root = make_root(tmp_path / "cpu", 1)
    cgroupfs(root)  # type: ignore[operator]
    with CpuQuota(0.25, 4000, root) as group:
        assert (group.dir / "cpu.cfs_period_us").read_text() == "4000\n"
        assert (group.dir / "cpu.cfs_quota_us").read_text() == "1000\n"
        assert not (group.dir / "cpu.max").exists()
    assert not group.dir.exists()


@pytest.mark.parametrize(
    ("version", "stat"),
    [
        (2, "usage_usec 5000\nuser_usec 1\nsystem_usec 2\nnr_periods 40\nnr_throttled 30\n"
            "throttled_usec 270000\nnr_bursts 0\nburst_usec 0\n"),
        (1, "nr_periods 40\nnr_throttled 30\nthrottled_time 270000999\n"),
    ],
)
def test_throttling_is_read_in_microseconds_from_both_versions(
    tmp_path: Path, cgroupfs: object, version: int, stat: str
) -> None:
    root = make_root(tmp_path / "root", version)
    cgroupfs(root)  # type: ignore[operator]
    with CpuQuota(0.5, 2000, root) as group:
        assert group.throttled() == {"nr_periods": 0, "nr_throttled": 0, "throttled_us": 0}
        with open(group.dir / "cpu.stat", "w") as f:  # as the kernel updates it
            f.write(stat)
        assert group.throttled() == {
            "nr_periods": 40, "nr_throttled": 30, "throttled_us": 270000
        }


@pytest.mark.parametrize("version", [2, 1])
@pytest.mark.parametrize("how", ["done", "error", "interrupt"])
def test_the_group_is_removed_on_exit_with_whatever_ran_in_it(
    tmp_path: Path, cgroupfs: object, version: int, how: str
) -> None:
    """However the block ends, what runs in the group is killed and the group (which
    cgroupfs refuses to remove while a process is in it) is gone."""
    root = make_root(tmp_path / "root", version)
    cgroupfs(root)  # type: ignore[operator]
    children: list[subprocess.Popen[bytes]] = []
    try:
        with contextlib.suppress(RuntimeError, KeyboardInterrupt):
            with CpuQuota(0.5, 2000, root) as group:
                for _ in range(2):
                    children.append(subprocess.Popen(["sleep", "60"], preexec_fn=group.join))
                assert group.pids() == [c.pid for c in children]
                if how == "error":
                    raise RuntimeError("a run failed")
                if how == "interrupt":  # SIGINT; or SIGTERM, which the CLI raises as one
                    raise KeyboardInterrupt
        assert len(children) == 2
        for child in children:
            assert child.wait(timeout=5) == -9
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
    assert not (root / CGROUP_NAME).exists()


def test_a_group_left_empty_is_replaced(tmp_path: Path, cgroupfs: object) -> None:
    root = make_root(tmp_path / "unified", 2, subtree="cpu")
    cgroupfs(root)  # type: ignore[operator]
    (root / CGROUP_NAME).mkdir()  # as a run killed with SIGKILL leaves it, once nginx is gone
    with CpuQuota(0.5, 2000, root) as group:
        assert (group.dir / "cpu.max").read_text() == "1000 2000\n"
    assert not (root / CGROUP_NAME).exists()


def test_a_group_with_processes_in_it_is_refused_and_left_alone(
    tmp_path: Path, cgroupfs: object
) -> None:
    """Another measure's nginx (or a killed one's) is not ours to kill."""
    root = make_root(tmp_path / "unified", 2, subtree="cpu")
    cgroupfs(root)  # type: ignore[operator]
    other = root / CGROUP_NAME
    other.mkdir()
    (other / "cpu.max").write_text("5000 10000")
    stranger = subprocess.Popen(["sleep", "60"])
    try:
        (other / "cgroup.procs").write_text(str(stranger.pid))
        with pytest.raises(HarnessError) as caught:
            with CpuQuota(0.5, 2000, root):
                pass
        assert str(caught.value) == (
            f"{other} exists with processes in it (pids {stranger.pid}): another acceptsim "
            f"measure is running, or one was killed without cleaning up; wait for it, or "
            f"stop them (kill {stranger.pid}) and remove the group (rmdir {other})"
        )
        assert stranger.poll() is None
        assert (other / "cgroup.procs").read_text() == f"{stranger.pid}\n"
        assert (other / "cpu.max").read_text() == "5000 10000\n"
    finally:
        stranger.kill()
        stranger.wait()


def test_a_quota_the_kernel_refuses_leaves_no_group(tmp_path: Path, cgroupfs: object) -> None:
    root = make_root(tmp_path / "cpu", 1)
    fake = cgroupfs(root)  # type: ignore[operator]
    write = fake.write

    def refuse_quota(path: Path, data: str) -> None:
        if path.name == "cpu.cfs_quota_us":
            raise OSError(22, "Invalid argument", str(path))
        write(path, data)

    fake.write = refuse_quota
    with pytest.raises(HarnessError, match=r"cannot set the quota in .*: Invalid argument"):
        with CpuQuota(0.5, 2000, root):
            pass
    assert not (root / CGROUP_NAME).exists()


def test_a_signal_while_the_group_is_made_removes_it(tmp_path: Path, cgroupfs: object) -> None:
    """SIGTERM (as the CLI handles it) arriving while the quota is written: the group is
    finished, then the signal takes effect, and the group goes."""
    root = make_root(tmp_path / "unified", 2)
    fake = cgroupfs(root)  # type: ignore[operator]
    write = fake.write

    def signalled(path: Path, data: str) -> None:
        write(path, data)
        if path.name == "cpu.max":
            os.kill(os.getpid(), signal.SIGTERM)

    fake.write = signalled
    with _sigterm_stops(), pytest.raises(Terminated):
        with CpuQuota(0.5, 2000, root):
            pytest.fail("the block ran after SIGTERM")
    assert not (root / CGROUP_NAME).exists()


def test_a_group_that_cannot_be_removed_is_reported(
    tmp_path: Path, cgroupfs: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not silently left: a process that does not leave the group (stuck in the kernel)."""
    monkeypatch.setattr(harness, "CGROUP_RMDIR_WAIT_S", 0.2)
    root = make_root(tmp_path / "unified", 2)
    fake = cgroupfs(root)  # type: ignore[operator]

    def busy(group: Path) -> None:
        raise OSError(16, "Device or resource busy", str(group))

    fake.remove = busy
    with pytest.raises(HarnessError) as caught:
        with CpuQuota(0.5, 2000, root):
            pass
    assert str(caught.value) == (
        f"cannot remove {root / CGROUP_NAME} (Device or resource busy; pids still in it: "
        f"none, 0.2 s after they were killed); remove it with rmdir {root / CGROUP_NAME} "
        f"once they have exited"
    )
