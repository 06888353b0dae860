"""The command-line contract other tools depend on."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

KEYS = {
    "reply_rate_per_s",
    "connection_rate_per_s",
    "accept_rate_per_s",
    "accept_phases_per_s",
    "accepts_per_phase",
    "drops_per_s",
    "select_calls_per_s",
    "conns_per_work_phase",
    "response_time_ms",
    "open_connections_mean",
    "client_timeouts_per_s",
    "cpu_share",
    "connections",
}


def acceptsim(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "acceptsim.cli", *args], capture_output=True, text=True, timeout=120
    )


def test_run_prints_one_json_object_with_the_contract_keys() -> None:
    out = acceptsim(
        "run", "--server", "userver", "--accept-limit", "inf", "--workload", "one-packet",
        "--rate", "5000", "--duration", "1", "--warmup", "0.2", "--seed", "3", "--format", "json",
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert KEYS <= set(result)
    assert set(result["drops_per_s"]) == {
        "syn_q_full", "accept_q_full", "drop_request", "listen_overflow", "total"
    }
    assert set(result["cpu_share"]) == {"kernel", "getevents", "accept", "work", "idle"}
    assert set(result["connections"]) == {"attempted", "completed", "timed_out", "in_flight_at_end"}
    assert set(result["response_time_ms"]) == {"mean", "p50", "p99", "p999", "max"}
    assert result["accept_limit"] == "inf"


def test_run_without_json_prints_a_readable_table() -> None:
    out = acceptsim("run", "--rate", "2000", "--duration", "0.5")
    assert out.returncode == 0
    assert "reply_rate_per_s" in out.stdout and "{" not in out.stdout


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--rate", "-5"], "rate_per_s=-5.0"),
        (["--accept-limit", "0"], "accept_limit=0"),
        (["--server", "nosuch"], "server='nosuch'"),
        (["--duration", "0"], "duration_s=0.0"),
    ],
)
def test_bad_input_exits_2_with_one_line_naming_field_value_and_allowed(args, field) -> None:
    base = {"--rate": "1000", "--duration": "1"}
    for flag, value in zip(args[::2], args[1::2], strict=True):
        base[flag] = value
    argv = ["run"] + [x for kv in base.items() for x in kv]
    out = acceptsim(*argv)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert field in lines[0] and "allowed" in lines[0]
    assert "Traceback" not in out.stderr and out.stdout == ""


@pytest.mark.parametrize(
    ("content", "field"),
    [("nosuch_s = 1e-6\n", "costs.nosuch_s"), ("accept_s = -1e-6\n", "costs.accept_s")],
)
def test_bad_params_file_exits_2_naming_the_key(tmp_path, content, field) -> None:
    path = tmp_path / "params.toml"
    path.write_text(content)
    out = acceptsim("run", "--rate", "1000", "--duration", "1", "--params", str(path))
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1
    assert field in out.stderr


def test_params_file_changes_the_costs(tmp_path) -> None:
    path = tmp_path / "params.toml"
    path.write_text('base = "cluster1"\nrequest_s = 200e-6\n')
    out = acceptsim(
        "run", "--rate", "8000", "--duration", "1", "--params", str(path), "--format", "json"
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["reply_rate_per_s"] < 6000  # 200 us per request caps it at 5000


def test_every_help_text_formats_and_is_plain_text(capsys) -> None:
    """``acceptsim --help`` and every command's ``--help`` print (a stray ``%`` breaks
    argparse's formatting) in plain words, without reST roles or double backquotes."""
    import pytest

    from acceptsim.cli import MODULES, build_parser, main

    names = [None] + sorted(build_parser()._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    assert len(names) > len(MODULES)  # one parser per command, and more names than modules
    for name in names:
        with pytest.raises(SystemExit) as done:
            main(["--help"] if name is None else [name, "--help"])
        assert done.value.code == 0, name
        out = capsys.readouterr().out
        for raw in ("``", ":class:", ":func:", ":meth:", ":mod:", ":data:"):
            assert raw not in out, (name, raw)


def test_the_listings_are_plain_text(capsys) -> None:
    from acceptsim.cli import main

    for command in (["servers"], ["policies"], ["servers", "twoclass-plain"]):
        assert main(command) == 0
        out = capsys.readouterr().out
        assert "``" not in out and ":class:" not in out, command
