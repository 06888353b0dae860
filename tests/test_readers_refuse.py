"""Readers refuse, never hang or crash: a FIFO, a symbolic-link loop or a directory where
a file is expected, counters that go backwards, a negative test duration, an empty
scenario, and a [plot] or [[expect]] the report could not use (refused before any run)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from acceptsim.cli import main
from acceptsim.measure import ParseError, load_run
from acceptsim.models.host import Host

MEASURED = Path(__file__).resolve().parent / "data" / "measured" / "nginx-loopback"
RUN = sorted(MEASURED.iterdir())[0]


@pytest.fixture
def no_simulation(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a simulation started")

    monkeypatch.setattr(Host, "run", refuse)


def one_line_refusal(capsys: pytest.CaptureFixture[str], args: list[str]) -> str:
    started = time.perf_counter()
    assert main(args) == 2
    assert time.perf_counter() - started < 10  # refused, not waited on
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


@pytest.mark.parametrize("kind", ["fifo", "loop", "directory"])
@pytest.mark.parametrize("option", ["--params", "--workload-file", "scenario"])
def test_a_special_file_is_refused_with_its_reason(
    kind: str, option: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    no_simulation: None,
) -> None:
    path = tmp_path / "input"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "loop":
        os.symlink(tmp_path / "other", path)
        os.symlink(path, tmp_path / "other")
    else:
        path.mkdir()
    if option == "scenario":
        args = ["sweep", str(path), "--quiet"]
    elif option == "--params":
        args = ["run", "--rate", "1000", "--duration", "1", "--params", str(path)]
    else:
        args = ["run", "--rate", "1000", "--duration", "1", "--workload", "wsesslog",
                "--workload-file", str(path)]
    err = one_line_refusal(capsys, args)
    reason = {"fifo": "not a regular file", "loop": "symbolic links",
              "directory": "irectory"}[kind]
    assert str(path) in err and (reason in err or "not a regular file" in err), err


@pytest.mark.parametrize("name", ["run.toml", "httperf.txt", "counters-after.txt"])
def test_a_fifo_in_a_run_directory_is_refused(name: str, tmp_path: Path) -> None:
    run = tmp_path / RUN.name
    shutil.copytree(RUN, run)
    (run / name).unlink()
    os.mkfifo(run / name)
    started = time.perf_counter()
    with pytest.raises((ParseError, Exception), match="not a regular file"):
        load_run(run)
    assert time.perf_counter() - started < 5


def test_counters_that_go_backwards_are_refused_naming_the_counter(tmp_path: Path) -> None:
    run = tmp_path / RUN.name
    shutil.copytree(RUN, run)
    before, after = run / "counters-before.txt", run / "counters-after.txt"
    text_before, text_after = before.read_text(), after.read_text()
    before.write_text(text_after)
    after.write_text(text_before)  # swapped: every growing counter now shrinks
    with pytest.raises(ParseError, match=r"counter \w+ went from \d+ to \d+"):
        load_run(run)


def test_a_negative_test_duration_is_refused(tmp_path: Path) -> None:
    run = tmp_path / RUN.name
    shutil.copytree(RUN, run)
    httperf = run / "httperf.txt"
    text = httperf.read_text()
    assert "test-duration " in text
    import re

    httperf.write_text(re.sub(r"test-duration [0-9.]+ s", "test-duration -7.9 s", text, count=1))
    with pytest.raises(ParseError):
        load_run(run)


def test_an_empty_scenario_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      no_simulation: None) -> None:
    path = tmp_path / "empty.toml"
    path.write_text("")
    assert "neither" in one_line_refusal(capsys, ["sweep", str(path), "--quiet"])


@pytest.mark.parametrize(("table", "field"), [
    ('[plot]\ny = "reply_rate_per_s"\n', "plot.y"),
    ("[plot]\ncolour = 'red'\n", "plot.colour"),
    ("[plot.normalise]\nmetric = 'reply_rate_per_s'\n", "plot.normalise"),
    ("[[expect]]\nwhat = 'no metric'\npaper = 1.0\n", "expect[0].metric"),
    ("[[expect]]\nmetric = 'reply_rate_per_s'\npaper = 'high'\n", "expect[0].paper"),
])  # fmt: skip
@pytest.mark.parametrize("command", ["reproduce", "sweep"])
def test_reproduce_checks_the_figure_and_the_published_numbers_before_any_run(
    table: str, field: str, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    no_simulation: None,
) -> None:
    """reproduce uses them; sweep does not, but a scenario it runs is refused as reproduce
    would refuse it (a file with nonsense in it is not run as if it were sound)."""
    path = tmp_path / "bad.toml"
    path.write_text("name = 'bad'\ntitle = 't'\n[base]\nduration_s = 0.3\nwarmup_s = 0.1\n"
                    "[sweep]\nrate_per_s = [1000.0]\n" + table)
    err = one_line_refusal(capsys, [command, str(path), "--out", str(tmp_path / "o")])
    assert f"bad: {field}" in err


def test_calibrate_refuses_zero_evaluations_before_reading_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_simulation: None,
) -> None:
    err = one_line_refusal(capsys, ["calibrate", str(MEASURED), "--max-evaluations", "0",
                                    "--out", str(tmp_path / "p.toml")])
    assert "--max-evaluations" in err


def test_toml_nested_hundreds_deep_is_refused_and_deep_tables_shown_briefly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_simulation: None,
) -> None:
    deep = tmp_path / "deep.toml"
    deep.write_text("a = " + "[" * 600 + "1" + "]" * 600 + "\n")
    err = one_line_refusal(capsys, ["run", "--rate", "1000", "--duration", "1",
                                    "--params", str(deep)])
    assert "nested less deeply" in err
    tables = tmp_path / "tables.toml"
    tables.write_text("[" + ".".join(["x"] * 500) + "]\ny = 1\n")
    err = one_line_refusal(capsys, ["sweep", str(tables), "--quiet"])
    assert "{...}" in err and len(err) < 700


def test_a_cost_error_in_a_params_file_names_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_simulation: None,
) -> None:
    params = tmp_path / "costs.toml"
    params.write_text("request_s = -1\n")
    err = one_line_refusal(capsys, ["run", "--rate", "1000", "--duration", "1",
                                    "--params", str(params)])
    assert f"{params}: costs.request_s" in err


def test_a_session_size_beyond_any_reply_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_simulation: None,
) -> None:
    sessions = tmp_path / "s.log"
    sessions.write_text("/a size=99999999999999999999999\n")
    err = one_line_refusal(capsys, ["run", "--rate", "100", "--duration", "1", "--workload",
                                    "wsesslog", "--workload-file", str(sessions)])
    assert f"{sessions}:1" in err and "size=" in err


def test_an_output_name_that_is_not_utf8_is_refused_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_simulation: None,
) -> None:
    scenario = tmp_path / "ok.toml"
    scenario.write_text("name = 'ok'\n[base]\nduration_s = 0.3\nwarmup_s = 0.1\n")
    bad = str(tmp_path / "out") + "\udcff"  # a byte that is not UTF-8, as argv gives it
    err = one_line_refusal(capsys, ["sweep", str(scenario), "--out", bad, "--quiet"])
    assert "UTF-8" in err


def test_a_sweep_too_large_is_refused_from_its_lists_lengths_before_expanding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    values = ", ".join(str(i) for i in range(1, 1001))
    huge = tmp_path / "huge.toml"
    huge.write_text(f"name = 'huge'\n[base]\nduration_s = 0.3\n[sweep]\n"
                    f"rate_per_s = [{values}]\nseed = [{values}]\n")
    for args in (["sweep", str(huge), "--quiet"],
                 ["reproduce", str(huge), "--out", str(tmp_path / "o")]):
        started = time.perf_counter()
        err = one_line_refusal(capsys, args)
        assert "1,000,000" in err or "1000000" in err
        assert time.perf_counter() - started < 5


def test_a_bad_value_in_a_scenario_names_the_scenario_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_simulation: None,
) -> None:
    path = tmp_path / "bad-rate.toml"
    path.write_text("name = 'b'\n[base]\nduration_s = 0.3\nwarmup_s = 0.1\nrate_per_s = -5\n")
    for args in (["sweep", str(path), "--quiet"], ["reproduce", str(path), "--out",
                                                   str(tmp_path / "o")]):
        err = one_line_refusal(capsys, args)
        assert f"{path}: rate_per_s=" in err
