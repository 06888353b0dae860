"""Exit codes as ``--help`` promises (issue 46): a user's error is one line and exit
status 2, never 0 nor "stopped by SIGINT"."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from acceptsim.cli import main

MEASURED = (Path(__file__).parent / "data" / "measured" / "nginx-loopback-idle-gaps"
            / "nginx-multi_accept-on-rate-001000-rep-2")


def one_line(capsys, argv: list[str], *words: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for word in words:
        assert word in err, err


@pytest.mark.parametrize(("argv", "words"), [
    (["reproduce", "--list", "nosuch"], ["--list='nosuch'", "given alone"]),
    (["reproduce", "--rates", ""], ["--rates=''", "at least one target rate"]),
    (["reproduce", "--rates", " , "], ["--rates=' , '"]),
])  # fmt: skip
def test_reproduce_refuses_its_own_arguments(capsys, argv, words) -> None:
    one_line(capsys, argv, *words)


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))

    def write(name: str, text: str) -> str:
        (tmp_path / f"{name}.py").write_text(text)
        monkeypatch.delitem(sys.modules, name, raising=False)
        return name

    return write


def test_a_policy_module_raising_keyboard_interrupt_is_an_error(capsys, user_module) -> None:
    name = user_module("pol_kbd46", 'raise KeyboardInterrupt("boom")\n')
    one_line(capsys, ["run", "--policy", f"{name}:P", "--rate", "1000", "--duration", "0.2"],
             "a module that imports without an error", "KeyboardInterrupt: boom")


def test_a_policy_exiting_during_the_run_is_an_error(capsys, user_module) -> None:
    name = user_module("pol_exit46", "class P:\n    def accept_limit(self, *a, **k):\n"
                       "        raise SystemExit(0)\n")
    one_line(capsys, ["run", "--policy", f"{name}:P", "--rate", "1000", "--duration", "0.2"],
             "SystemExit(0)")


def test_calibrate_refuses_an_empty_fit(capsys, tmp_path) -> None:
    one_line(capsys, ["calibrate", str(MEASURED), "--out", str(tmp_path / "f.toml"),
                      "--fit", ","], "--fit=','", "at least one cost parameter")
    assert not (tmp_path / "f.toml").exists()


def test_output_cut_short_by_its_reader_ends_silently() -> None:
    """`acceptsim reproduce --list | head -1`: no traceback, no error line, 141 (SIGPIPE's
    status) as a Unix tool's."""
    import subprocess

    done = subprocess.run(
        f"{sys.executable} -m acceptsim reproduce --list | head -c 10; "
        "echo \" ${PIPESTATUS[0]}\"",
        shell=True, executable="/bin/bash", capture_output=True, text=True, check=True,
    )
    assert done.stdout.endswith(" 141\n"), done.stdout
    assert "Traceback" not in done.stderr and "error" not in done.stderr, done.stderr
