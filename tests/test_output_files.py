"""Outputs are checked before any work and written atomically; a sweep's workers die
with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from acceptsim.cli import main
from acceptsim.models.host import Host
from acceptsim.sim.errors import ConfigError
from acceptsim.sim.files import atomic_path, check_output_file, write_text_atomic

MEASURED = Path(__file__).resolve().parent / "data" / "measured" / "nginx-loopback"


@pytest.fixture
def no_simulation(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a simulation started")

    monkeypatch.setattr(Host, "run", refuse)


def test_a_failed_write_leaves_the_old_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "params.toml"
    path.write_text("request_s = 1e-5\n")
    with pytest.raises(UnicodeEncodeError), atomic_path(path) as tmp:
        tmp.write_text("run = '\udcff'\n")  # not encodable: fails half-way
    assert path.read_text() == "request_s = 1e-5\n"
    assert [p.name for p in tmp_path.iterdir()] == ["params.toml"]  # no temporary left
    write_text_atomic(path, "request_s = 2e-5\n")
    assert path.read_text() == "request_s = 2e-5\n"


@pytest.mark.parametrize("command", [
    ["run", "--rate", "5000", "--duration", "1", "--plot", "{dir}"],
    ["run", "--rate", "5000", "--duration", "1", "--plot", "{ro}/s.png"],
    ["search", "--rate", "5000", "--duration", "0.5", "--plot", "{dir}"],
    ["validate", str(MEASURED), "--plot", "{dir}"],
    ["calibrate", str(MEASURED), "--out", "{dir}"],
    ["reproduce", "userver-one-packet", "--out", "{file}"],
])  # fmt: skip
def test_an_output_that_cannot_be_written_is_refused_before_any_run(
    command: list[str], tmp_path: Path, no_simulation: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "a-file").write_text("x")
    readonly = tmp_path / "ro"
    readonly.mkdir()
    readonly.chmod(0o500)
    if os.access(readonly, os.W_OK):  # root writes anywhere: that case says nothing here
        readonly.chmod(0o700)
        if "{ro}" in " ".join(command):
            pytest.skip("running as root: a read-only directory is writable")
    names = {"dir": str(tmp_path), "ro": str(readonly), "file": str(tmp_path / "a-file")}
    args = [a.format(**names) for a in command]
    started = time.perf_counter()
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is not allowed" in err
    assert time.perf_counter() - started < 5
    readonly.chmod(0o700)


def test_a_file_name_is_checked_as_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="a file name"):
        check_output_file("--plot", tmp_path)
    assert check_output_file("--plot", tmp_path / "new" / "x.png") == tmp_path / "new" / "x.png"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process table in /proc")
def test_a_killed_sweep_leaves_no_worker_behind(tmp_path: Path) -> None:
    script = tmp_path / "long_sweep.py"
    script.write_text(textwrap.dedent('''
        from acceptsim import sim
        points = [{"rate_per_s": 20000.0, "duration_s": 60.0, "warmup_s": 0.0, "seed": s}
                  for s in range(4)]
        sim.sweep(points, jobs=2, progress=False, cache=False, force=True)
    '''))
    parent = subprocess.Popen([sys.executable, str(script)])

    def children() -> list[int]:
        found = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == parent.pid:
                found.append(int(stat.parent.name))
        return found

    deadline = time.monotonic() + 30
    workers: list[int] = []
    while time.monotonic() < deadline and len(workers) < 2:
        time.sleep(0.2)
        workers = children()
    assert len(workers) >= 2, "the sweep started no workers"
    time.sleep(1.0)  # the workers are inside their runs
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 10
    alive = workers
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = [pid for pid in workers if Path(f"/proc/{pid}").exists()
                 and "Z" not in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1][:3]]
    assert alive == [], f"workers {alive} outlived their sweep"


def test_a_write_that_fails_names_its_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    import pyarrow.parquet as pq

    from acceptsim.sim.sweep import Parts

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    target = tmp_path / "report.md"
    with pytest.raises(ConfigError, match="report.md.*No space left"):
        with atomic_path(target) as tmp:
            tmp.write_text("x")
            full()
    monkeypatch.setattr(pq, "write_table", full)
    with pytest.raises(ConfigError, match=r"abc\.parquet.*No space left"):
        Parts(tmp_path).save({"run_key": "abc", "reply_rate_per_s": 1.0})
    assert list(tmp_path.iterdir()) == []
