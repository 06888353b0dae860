"""Hostile and careless input: refused up front with one line, exit 2; long runs show
progress on a terminal and stop cleanly on SIGINT/SIGTERM (issue #18)."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import shutil
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

import acceptsim.models.work as work
from acceptsim import sim
from acceptsim.cli import main
from acceptsim.measure import load_run
from acceptsim.models.experiment import Host, RunConfig, check_work, estimate_work, simulate
from acceptsim.sim.engine import Environment
from acceptsim.sim.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]
MEASURED = REPO / "tests" / "data" / "measured" / "nginx-loopback"


@pytest.fixture
def no_simulation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any run that starts fails the test: refusals must come before any simulation."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a simulation started")

    monkeypatch.setattr(Host, "run", refuse)


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


LONG_NAME = "x" * 100_000

# the issue's cases: (extra arguments to `acceptsim run`, text the one line must contain)
REFUSED = [
    (["--duration", "1", "--rate", "1e308"], "--force"),
    (["--rate", "2000", "--duration", "1e308"], "--force"),
    (["--rate", "2000", "--duration", "1", "--timeseries", "1e-9"], "timeseries_interval_s=1e-09"),
    (["--rate", "1e-320", "--duration", "1"], "rate_per_s=1e-320"),
    (["--rate", "100", "--duration", "1e-320"], "duration_s=1e-320"),
    (["--rate", "100", "--duration", "1", "--warmup", "1e-320"], "warmup_s=1e-320"),
    (["--rate", "100", "--duration", "1", "--timeout", "1e-320"], "timeout_s=1e-320"),
    (["--rate", "100", "--duration", "1", "--timeseries", "0"], "timeseries='0'"),
    (["--rate", "100", "--duration", "1", "--params", ""], "--params=''"),
    (["--rate", "100", "--duration", "1", "--accept-limit", "9" * 23], "accept_limit="),
    (["--rate", "\uff11\uff10", "--duration", "1"], "rate="),
    (["--rate", "100", "--duration", "1", "--accept-limit", "\uff11\uff10"], "accept_limit="),
    (["--rate", "100", "--duration", "1", "--rate-profile", "step:\uff11\uff10@0"],
     "rate_profile="),
    (["--rate", "1_000", "--duration", "1"], "rate="),
    (["--rate", "100", "--duration", "1", "--params", LONG_NAME], "100,000 characters"),
    (["--rate", "100", "--duration", "1", "--seed", str(2**64)], "64 bits"),
    (["--rate", "100", "--duration", "1", "--idle-connections", "1e9"], "idle-connections"),
    # issue 46: a closed loop of no user, and an accept mutex beside per-worker sockets
    (["--concurrency", "0", "--duration", "1"], "--concurrency='0'"),
    (["--server", "nginx", "--cpus", "2", "--listen", "reuseport", "--wakeup", "mutex",
      "--rate", "100", "--duration", "1"], "wakeup='mutex'"),
    # nan, which float() reads and a parameter set takes as "its default"
    (["--rate", "100", "--duration", "1", "--warmup", "nan"], "warmup='nan'"),
    (["--rate", "nan", "--duration", "1"], "rate='nan'"),
]


@pytest.mark.parametrize("option", ["--duration=nan", "--warmup=nan", "--set=warmup_s=nan",
                                    "--set=duration_s=nan"])
def test_a_sweep_refuses_nan_with_one_line_before_any_simulation(
    capsys: pytest.CaptureFixture[str], no_simulation: None, tmp_path: Path, option: str
) -> None:
    """A sweep's --duration=nan reached the run keys' canonical form, whose integer test
    raised (the slow fuzz test found it); --warmup=nan and --set warmup_s=nan became the
    warm-up's default (nan is how a parameter set is told to follow a field's rule)."""
    code, out, err = run_cli(capsys, "sweep", "userver-one-packet", "--out",
                             str(tmp_path / "out"), "--quiet", "--jobs", "1", option)
    assert code == 2, err
    lines = err.splitlines()
    assert len(lines) == 1 and "nan" in lines[0] and "is not allowed" in lines[0], err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("args", "fragment"), REFUSED)
def test_the_issues_cases_exit_2_with_one_line_before_any_simulation(
    capsys: pytest.CaptureFixture[str], no_simulation: None, args: list[str], fragment: str
) -> None:
    started = time.perf_counter()
    code, out, err = run_cli(capsys, "run", *args)
    assert code == 2, err
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert fragment in lines[0] and "is not allowed" in lines[0]
    assert len(lines[0]) < 700  # long values are truncated, not echoed
    assert time.perf_counter() - started < 5


def test_a_run_beyond_the_work_bound_is_refused_with_the_estimate_and_forced_with_force(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(work, "MAX_ATTEMPTS", 500.0)
    code, _, err = run_cli(capsys, "run", "--rate", "1000", "--duration", "1", "--warmup", "0.2")
    assert code == 2
    assert "rate_per_s x duration_s=1000.0" in err and "at most 5e+02" in err
    assert "--force" in err
    code, out, err = run_cli(
        capsys, "run", "--rate", "1000", "--duration", "1", "--warmup", "0.2", "--force"
    )
    assert code == 0, err
    assert "reply_rate_per_s" in out
    with pytest.raises(ConfigError, match="force=True"):
        simulate(rate_per_s=1000, duration_s=1, warmup_s=0.2)
    assert simulate(rate_per_s=1000, duration_s=1, warmup_s=0.2, force=True)["connections"][
        "attempted"
    ] > 500


def test_the_work_estimate_counts_attempts_profiles_background_and_series_points() -> None:
    assert estimate_work(RunConfig(rate_per_s=2000, duration_s=10)).attempts == 20000
    stepped = RunConfig(rate_per_s=1, duration_s=10, rate_profile="step:1000@0,5000@5")
    assert estimate_work(stepped).attempts == 50000  # the profile's peak, an upper estimate
    background = RunConfig(server="twoclass", rate_per_s=100, duration_s=10,
                           server_params={"bg_rate_per_s": 50})  # fmt: skip
    assert estimate_work(background).attempts == 1500
    series = RunConfig(duration_s=10, timeseries_interval_s=0.5, series_interval_s=0.1)
    assert estimate_work(series).series_points == pytest.approx(120)
    with pytest.raises(ConfigError, match="time-series points"):
        check_work(RunConfig(duration_s=10, series_interval_s=1e-6))
    check_work(RunConfig(duration_s=10, series_interval_s=1e-6), force=True)
    # time-series rows are bounded whatever force (memory): tests/test_bounded_memory.py


def test_a_sweep_beyond_its_bounds_is_refused_before_anything_runs_or_is_written(
    capsys: pytest.CaptureFixture[str], no_simulation: None, tmp_path: Path
) -> None:
    out = tmp_path / "sweep"
    code, _, err = run_cli(capsys, "sweep", "userver-one-packet", "--replications", "20000",
                           "--out", str(out), "--quiet")  # fmt: skip
    assert code == 2 and len(err.splitlines()) == 1
    assert "points x replications" in err and "--force" in err
    code, _, err = run_cli(capsys, "sweep", "userver-one-packet", "--duration", "1e300",
                           "--out", str(out), "--quiet")  # fmt: skip
    assert code == 2 and "rate_per_s x duration_s" in err and len(err.splitlines()) == 1
    code, _, err = run_cli(capsys, "sweep", "userver-one-packet", "--duration", "1e308",
                           "--detect-warmup", "--out", str(out), "--quiet")  # fmt: skip
    assert code == 2 and "never end" in err and len(err.splitlines()) == 1
    assert not out.exists()
    with pytest.raises(ConfigError, match="points x replications"):
        sim.sweep("userver-one-packet", replications=5, progress=False,
                  stop=sim.stats.StoppingRule("reply_rate_per_s", 0.01, max_replications=10_000))


def test_a_run_in_slices_gives_the_very_same_record_as_one_stretch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = RunConfig(server="tux", rate_per_s=9000, duration_s=1.3, warmup_s=0.3, seed=5,
                       policy="aimd", rate_profile="step:6000@0,12000@0.7",
                       timeseries_interval_s=0.1)  # fmt: skip
    whole = Host(config).run()
    stops: list[float] = []
    original = Environment.run

    def recording(self, until=None):  # type: ignore[no-untyped-def]
        stops.append(until)
        return original(self, until)

    monkeypatch.setattr(Environment, "run", recording)
    for slices in (3, 17):
        stops.clear()
        sliced = Host(config).run(slices=slices)
        assert len(stops) == slices and stops[-1] == config.duration_s
        assert deterministic_record(sliced) == deterministic_record(whole)
        assert sliced["timeseries"] == whole["timeseries"]


def deterministic_record(record: dict) -> dict:
    return {k: v for k, v in record.items() if not k.startswith("sim_")}


def test_progress_off_a_terminal_runs_in_one_stretch(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    original = Environment.run

    def counting(self, until=None):  # type: ignore[no-untyped-def]
        calls.append(until)
        return original(self, until)

    monkeypatch.setattr(Environment, "run", counting)
    simulate(rate_per_s=20000, duration_s=3, warmup_s=0.5, progress=True)  # stderr: no tty
    assert calls == [3.0]


# -- long runs: progress and signals, in a subprocess ---------------------------------------------
def _sigint_as_at_a_terminal() -> None:
    """In the child: SIGINT with its default disposition, even where these tests run
    with it ignored (started by ``nohup`` or ``&`` from a script, as the child would then
    inherit): the signal tests deliver what a terminal's ^C delivers."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start_on_pty(*args: str) -> tuple[subprocess.Popen[bytes], int]:
    """``acceptsim ARGS`` with stderr on a pseudo-terminal of 120 columns."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-m", "acceptsim.cli", *args], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=slave,
                            preexec_fn=_sigint_as_at_a_terminal)  # fmt: skip
    os.close(slave)
    return proc, master


def _read_until(master: int, proc: subprocess.Popen[bytes], needle: bytes, limit: float) -> bytes:
    seen = b""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                seen += os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if needle in seen:
                break
        elif proc.poll() is not None:
            break
    return seen


@pytest.mark.parametrize(("signum", "status", "name"),
                         [(signal.SIGINT, 130, "SIGINT"), (signal.SIGTERM, 143, "SIGTERM")])
def test_a_long_run_shows_progress_on_a_terminal_and_stops_cleanly_on_a_signal(
    signum: int, status: int, name: str
) -> None:
    proc, master = _start_on_pty("run", "--rate", "24000", "--duration", "2000")
    try:
        shown = _read_until(master, proc, b"attempts/s", 60)
        assert b"simulated" in shown and b"of 2,000.00 s" in shown and b"ETA" in shown, shown
        proc.send_signal(signum)
        assert proc.wait(timeout=20) == status
        rest = _read_until(master, proc, b"\n" + name.encode(), 5).decode(errors="replace")
        lines = [ln.strip() for ln in rest.replace("\r", "\n").splitlines() if ln.strip()]
        assert lines[-1] == f"acceptsim run: stopped by {name}", rest
        assert "Traceback" not in rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)


def _wait_until_it_catches(pid: int, signum: int, limit_s: float) -> None:
    """Until process ``pid`` has a handler for ``signum`` (its /proc status's SigCgt
    mask), at most ``limit_s``: on a loaded machine its imports take longer than any
    fixed wait."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("SigCgt:") and int(line.split()[1], 16) >> (signum - 1) & 1:
                return
        time.sleep(0.05)
    raise AssertionError(f"no handler for signal {signum} after {limit_s} s")


def test_off_a_terminal_a_long_run_is_quiet_and_sigterm_leaves_one_line() -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-m", "acceptsim.cli", "run", "--rate", "24000",
                             "--duration", "2000"], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    _wait_until_it_catches(proc.pid, signal.SIGTERM, 60)  # its imports take seconds
    time.sleep(1)  # into the run
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 143
    assert out == "" and err == "acceptsim run: stopped by SIGTERM\n"


SCENARIO = """\
name = "two-quick-two-long"
title = "two short runs, then two that would take minutes"
[base]
server = "userver"
rate_per_s = 20000
warmup_s = 0.1
[sweep]
duration_s = [0.3, 0.4, 900, 901]
"""


@pytest.mark.parametrize(("signum", "status", "name"),
                         [(signal.SIGINT, 130, "SIGINT"), (signal.SIGTERM, 143, "SIGTERM")])
def test_a_signal_stops_a_parallel_sweep_at_once_and_keeps_every_finished_run(
    tmp_path: Path, signum: int, status: int, name: str
) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-m", "acceptsim.cli", "sweep", str(scenario),
                             "--jobs", "2", "--out", str(out), "--quiet"], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_sigint_as_at_a_terminal)  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while len(list((out / "parts").glob("*.parquet"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(list((out / "parts").glob("*.parquet"))) == 2
        time.sleep(0.5)  # the long runs are under way in both workers
        proc.send_signal(signum)
        stopped = time.monotonic()
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert time.monotonic() - stopped < 15  # workers ended, not waited for
    assert proc.returncode == status
    assert err.splitlines() == [
        f"acceptsim sweep: stopped by {name}; 2 finished runs kept in {out / 'parts'}; add "
        "--resume to continue"
    ], err
    assert len(list((out / "parts").glob("*.parquet"))) == 2
    assert not (out / "results.parquet").exists()


# -- measured runs: counter files stay inside the run directory -----------------------------------
@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    source = next(p for p in sorted(MEASURED.iterdir()) if (p / "run.toml").is_file())
    target = tmp_path / "runs" / "one"
    shutil.copytree(source, target)
    (tmp_path / "runs" / "secret.txt").write_text((target / "counters-after.txt").read_text())
    return target


def _set_counters(run_dir: Path, after: str) -> None:
    text = (run_dir / "run.toml").read_text()
    if "[counters]" in text:
        head, _, tail = text.partition("[counters]")
        rest = tail.split("\n[", 1)
        text = head + ("[" + rest[1] if len(rest) > 1 else "")
    (run_dir / "run.toml").write_text(text + f'\n[counters]\nafter = ["{after}"]\n')


def test_a_run_directory_reads_as_it_is(run_dir: Path) -> None:
    assert load_run(run_dir).counters_after


@pytest.mark.parametrize("name", ["../secret.txt", "sub/../../secret.txt", "/etc/hostname"])
def test_counter_paths_out_of_the_run_directory_are_refused(run_dir: Path, name: str) -> None:
    _set_counters(run_dir, name)
    with pytest.raises(ConfigError, match="counters.after"):
        load_run(run_dir)


def test_a_counter_file_that_links_out_of_the_run_directory_is_refused(run_dir: Path) -> None:
    (run_dir / "counters-after.txt").unlink()
    (run_dir / "counters-after.txt").symlink_to(run_dir.parent / "secret.txt")
    with pytest.raises(ConfigError, match="links to a file outside"):
        load_run(run_dir)
    (run_dir / "counters-after.txt").unlink()
    (run_dir / "inside.txt").write_text((run_dir.parent / "secret.txt").read_text())
    (run_dir / "counters-after.txt").symlink_to("inside.txt")  # a link inside is fine
    assert load_run(run_dir).counters_after


@pytest.mark.parametrize("make", ["directory", "unreadable", "binary"])
def test_file_system_errors_on_user_files_exit_2_with_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, make: str
) -> None:
    path = tmp_path / "params.toml"
    if make == "directory":
        path.mkdir()
    elif make == "unreadable":
        path.write_text("request_s = 1e-5\n")
        path.chmod(0)
        if os.access(path, os.R_OK):  # root reads anything
            pytest.skip("running as root")
    else:
        path.write_bytes(b"\xff\xfe\x00 not text")
    for argv in (["run", "--rate", "100", "--duration", "1", "--params", str(path)],
                 ["sweep", str(path), "--quiet", "--out", str(tmp_path / "o")],
                 ["run", "--rate", "100", "--duration", "1", "--workload", "wsesslog",
                  "--workload-file", str(path)],
                 ["validate", str(path)]):  # fmt: skip
        code, _, err = run_cli(capsys, *argv)
        assert code == 2, (argv, err)
        assert len(err.splitlines()) == 1 and str(path)[:40] in err, err


def test_an_output_directory_that_cannot_be_made_exits_2_naming_out(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO.replace("900, 901", "0.3"))
    for argv in (["sweep", str(scenario), "--quiet", "--jobs", "1", "--out", str(blocker / "o")],
                 ["reproduce", str(scenario), "--jobs", "1", "--out", str(blocker / "o")]):
        code, _, err = run_cli(capsys, *argv)
        assert code == 2, err
        assert err.splitlines() == [err.strip()] and "out=" in err
        assert "Not a directory" in err or f"{blocker} is a file" in err
