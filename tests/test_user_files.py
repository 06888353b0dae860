"""The files a user gives (issue 46): a run's key holds those it reads besides its
configuration, so an edited policy module or session file is a new run, never one served
from the cache; a parameter file's measurements are checked before they bound a fit."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from acceptsim.models import runner
from acceptsim.sim import sweep as sweep_mod

POLICY = '''
class Fixed:
    """Accepts {limit} a phase."""

    def accept_limit(self, view):
        return {limit}
'''


def point(**more: object) -> dict:
    return {"rate_per_s": 8000.0, "duration_s": 0.4, "warmup_s": 0.1, **more}


def test_an_edited_policy_module_is_a_new_run(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    module = tmp_path / "edited_policy_mod.py"
    module.write_text(POLICY.format(limit=1))
    monkeypatch.syspath_prepend(str(tmp_path))
    cache = tmp_path / "cache"
    spec = "edited_policy_mod:Fixed"
    first = sweep_mod.sweep([point(policy=spec)], jobs=1, progress=False, cache=cache)
    assert first["reply_rate_per_s"].iloc[0] > 1000
    module.write_text(POLICY.format(limit=0))  # accepts nothing now
    sys.modules.pop("edited_policy_mod", None)
    second = sweep_mod.sweep([point(policy=spec)], jobs=1, progress=False, cache=cache)
    assert second["run_key"].iloc[0] != first["run_key"].iloc[0]
    assert second["reply_rate_per_s"].iloc[0] == 0  # run again, not 8,000/s from the cache


def test_an_edited_session_file_is_a_new_run(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions.log"
    sessions.write_text("/a.html\n\n")
    config = runner.normalise(point(workload="wsesslog", workload_file=str(sessions)))
    before = sweep_mod.make_tasks([config], 1, inputs=runner.inputs)[0].key
    sessions.write_text("/a.html\n/b.html\n\n")
    after = sweep_mod.make_tasks([config], 1, inputs=runner.inputs)[0].key
    assert before != after
    # a configuration that reads no file keeps the key it always had
    plain = runner.normalise(point())
    assert runner.inputs(plain) == ""
    assert sweep_mod.make_tasks([plain], 1, inputs=runner.inputs)[0].key == \
        sweep_mod.run_key({**plain, "seed": sweep_mod.replication_seed(plain["seed"], 0)}, 0)


@pytest.mark.parametrize(("line", "key"), [
    ("mean = nan\nspread = 1e-7", "mean"), ("mean = 4e-6\nspread = inf", "spread"),
    ("mean = -4e-6\nspread = 1e-7", "mean"), ('mean = "4us"\nspread = 1e-7', "mean"),
])
def test_a_measurement_of_nan_or_inf_is_refused_naming_it(tmp_path: Path, line: str,
                                                          key: str) -> None:
    """A measured bound of nan or inf would let a fit go anywhere (issue 46)."""
    from acceptsim.config_io import load_measurements
    from acceptsim.sim.errors import ConfigError

    params = tmp_path / "params.toml"
    params.write_text(f'[measured.accept_s]\n{line}\nsets = "accept_s"\n')
    with pytest.raises(ConfigError) as err:
        load_measurements(params)
    assert err.value.field == f"{params}: measured.accept_s.{key}"


def test_measured_files_that_contradict_each_other_are_refused(tmp_path: Path) -> None:
    """httperf's totals and the workers' counts checked against each other and
    run.toml (issue 46): more replies than requests, more requests than connections x
    --num-calls, more workers than nginx ran or more requests than httperf sent."""
    import re
    import shutil

    from acceptsim.measure import load_run
    from acceptsim.measure.parse_errors import ParseError

    data = Path(__file__).resolve().parent / "data" / "measured" / "nginx-loopback-workers"
    source = next(d for d in sorted(data.rglob("*workers-2*")) if (d / "workers.csv").is_file())
    run = tmp_path / "run"
    shutil.copytree(source, run)
    assert load_run(run).worker_requests  # as recorded: it loads
    text = (run / "httperf.txt").read_text()
    replies = re.search(r"Total: connections (\d+) requests (\d+) replies (\d+)", text)
    assert replies is not None
    conns, requests = int(replies[1]), int(replies[2])
    for bad in (f"Total: connections {conns} requests {requests} replies 9999999",
                f"Total: connections {conns} requests {conns * 5} replies {conns * 5}"):
        (run / "httperf.txt").write_text(text.replace(replies[0], bad, 1))
        with pytest.raises(ParseError, match="replies for|requests from"):
            load_run(run)
    (run / "httperf.txt").write_text(text)
    counts = (run / "workers.csv").read_text()
    (run / "workers.csv").write_text(counts + "99999,1\n")
    with pytest.raises(ParseError, match="3 workers but run.toml"):
        load_run(run)
    (run / "workers.csv").write_text("pid,requests\n1,18000000\n2,0\n")
    with pytest.raises(ParseError, match="more than the"):
        load_run(run)


def test_a_finished_sweep_is_never_overwritten_nor_a_set_aside_part(tmp_path: Path) -> None:
    """A new sweep into an OUT that holds another sweep's results is refused even with its
    parts gone; a part set aside twice keeps both copies (issue 46)."""
    from acceptsim.sim.errors import ConfigError

    out = tmp_path / "out"
    sweep_mod.sweep([point()], jobs=1, progress=False, cache=False, out=out)
    results = (out / "results.parquet").read_bytes()
    for part in (out / "parts").glob("*.parquet"):
        part.unlink()
    with pytest.raises(ConfigError, match="results.parquet"):
        sweep_mod.sweep([point(rate_per_s=9000.0)], jobs=1, progress=False, cache=False,
                        out=out)
    assert (out / "results.parquet").read_bytes() == results
    parts = sweep_mod.Parts(tmp_path / "parts")
    parts.parts.mkdir()
    for round_ in (1, 2):
        parts.part("k").write_text(f"not parquet {round_}")
        parts.load(["k"])
    kept = sorted(p.read_text() for p in parts.parts.glob("k.parquet.rejected*"))
    assert kept == ["not parquet 1", "not parquet 2"]


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_files_written_whole_honour_the_umask(tmp_path: Path, umask: int, mode: int) -> None:
    """summary.csv, calibrate --out, plots: written through a temporary file, which
    mkstemp makes 0600, and given the mode the umask gives a new file (issue 46)."""
    import os

    from acceptsim.sim.files import write_text_atomic

    old = os.umask(umask)
    try:
        write_text_atomic(tmp_path / "out.csv", "x\n")
    finally:
        os.umask(old)
    assert (tmp_path / "out.csv").stat().st_mode & 0o777 == mode


@pytest.mark.parametrize(("source", "fragment"), [
    ("def broken(:\n", "SyntaxError"),
    ("raise RuntimeError('no config')\n", "RuntimeError: no config"),
    ("raise SystemExit(0)\n", "SystemExit"),
    ("class P:\n    def __init__(self):\n        raise ValueError('bad')\n"
     "    def accept_limit(self, view):\n        return 1\n", "ValueError: bad"),
])
def test_a_policy_module_that_fails_is_one_line_exit_2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        source: str, fragment: str) -> None:
    """A policy module that raises on import, does not parse, exits, or whose class
    raises when made: one line naming the policy, exit 2, no traceback (issue 46)."""
    from acceptsim.cli import main

    name = f"failing_policy_{abs(hash(source))}"
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    code = main(["run", "--rate", "1000", "--duration", "0.2", "--policy", f"{name}:P"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert f"policy='{name}:P'" in err and fragment in err


def test_a_plot_file_without_an_image_extension_is_refused_before_the_run(
        capsys: pytest.CaptureFixture[str]) -> None:
    from acceptsim.cli import main

    for command in (["run", "--rate", "1000", "--duration", "0.2"],
                    ["search", "--rate", "1000", "--duration", "0.5", "--candidates", "1,2"]):
        assert main([*command, "--plot", "myplot"]) == 2
        err = capsys.readouterr().err
        assert "--plot='myplot'" in err and ".png" in err and err.count("\n") == 1


def test_a_sweep_of_a_configuration_column_as_its_metric_is_refused_first(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from acceptsim.cli import main

    out = tmp_path / "sweep"
    assert main(["sweep", "userver-one-packet", "--metric", "server", "--out", str(out)]) == 2
    assert "--metric='server'" in capsys.readouterr().err
    assert not out.exists()  # refused before any run or file


def test_a_fifo_where_a_file_is_read_is_refused_not_waited_on(tmp_path: Path) -> None:
    """workers.csv (validate, calibrate) and a sweep's manifest.json (--resume): a FIFO
    there would block the read for ever; it is refused at once (issue 46)."""
    import os
    import shutil
    import signal

    from acceptsim.measure import load_run
    from acceptsim.measure.parse_errors import ParseError
    from acceptsim.sim.errors import ConfigError

    def hung(*_: object) -> None:
        raise AssertionError("a read waited on a FIFO")

    data = Path(__file__).resolve().parent / "data" / "measured" / "nginx-loopback-workers"
    source = next(d for d in sorted(data.rglob("*workers-2*")) if (d / "workers.csv").is_file())
    run = tmp_path / "run"
    shutil.copytree(source, run)
    (run / "workers.csv").unlink()
    os.mkfifo(run / "workers.csv")
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "manifest.json")
    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(20)
    try:
        with pytest.raises(ParseError, match="workers.csv"):
            load_run(run)
        with pytest.raises(ConfigError, match="manifest"):
            sweep_mod.sweep([point()], jobs=1, progress=False, cache=False, out=out,
                            resume=True)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
