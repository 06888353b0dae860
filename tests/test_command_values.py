"""One reader of command-line values (acceptsim.sim.params.parse_value) and command
modules that share code through acceptsim.commands.common, never through each other."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acceptsim.commands.cmd_run import parse_assignments
from acceptsim.models.policies import parse_spec
from acceptsim.sim.errors import ConfigError
from acceptsim.sim.params import parse_value, split_assignment

COMMANDS = Path(__file__).resolve().parent.parent / "acceptsim" / "commands"


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_an_integer_reads_back(value: int) -> None:
    assert parse_value(f" {value} ") == value


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_a_finite_float_reads_back(value: float) -> None:
    assert parse_value(repr(value)) == value


@pytest.mark.parametrize("text", ["inf", "INF", "Infinity", " inf ", "+inf"])
def test_infinity_in_any_case(text: str) -> None:
    assert parse_value(text) == math.inf


@pytest.mark.parametrize(("text", "value"), [
    ("true", True), ('"quoted text"', "quoted text"), ("abc", "abc"), ("  abc  ", "abc"),
    ("[1, 2]", [1, 2]), ("1e3", 1000.0), ("1\nx = 2", "1\nx = 2"),
])  # fmt: skip
def test_toml_values_else_the_text(text: str, value: object) -> None:
    assert parse_value(text) == value


@pytest.mark.parametrize("text", ["1e3", "inf", "Infinity", "true", "abc", "10", '"x"'])
def test_a_server_param_a_policy_spec_and_a_set_read_one_text_alike(text: str) -> None:
    from_run = parse_assignments("server-param", [f"backlog={text}"])["backlog"]
    from_policy = parse_spec(f"aimd:decrease={text}")[1]["decrease"]
    key, raw = split_assignment("--set", f"rate_per_s = {text}")
    assert key == "rate_per_s"
    assert from_run == from_policy == parse_value(raw)


@pytest.mark.parametrize("text", ["novalue", "=1", " = 2"])
def test_an_assignment_without_a_key_names_the_field(text: str) -> None:
    with pytest.raises(ConfigError, match="--set"):
        split_assignment("--set", text)


def test_no_command_module_imports_another_command_module() -> None:
    """Commands share code through ``acceptsim.commands.common`` and the library
    (``acceptsim.analysis``, ``acceptsim.models``), never through each other."""
    names = {p.stem for p in COMMANDS.glob("*.py")} - {"__init__", "common"}
    offenders = []
    for path in sorted(COMMANDS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                parts = node.module.split(".")
                if parts[:2] == ["acceptsim", "commands"]:
                    imported = parts[2:] or [a.name for a in node.names]
                    if set(imported) & (names - {path.stem}):
                        offenders.append(f"{path.name}: {node.module}")
    assert offenders == []


def test_search_from_the_command_line_and_from_python_give_one_answer(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """One preference, declared once (sim.search.PREFER), for acceptsim search and
    best_of: the same runs give the same best limit."""
    import json
    import math

    from acceptsim.cli import main
    from acceptsim.sim import search

    assert main(["search", "--rate", "24000", "--duration", "0.5", "--warmup", "0",
                 "--candidates", "1,16,inf", "--replications", "2", "--jobs", "1",
                 "--format", "json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    base = {"server": "userver", "workload": "one-packet", "rate_per_s": 24000.0,
            "rate_profile": "", "duration_s": 0.5, "warmup_s": 0.0, "seed": 1}
    python = search.best_of(base, "accept_limit", [1, 16, math.inf], replications=2, jobs=1)
    assert cli["prefer"] == search.PREFER
    assert cli["best_accept_limit"] == python.best.value
    assert cli["best_reply_rate_per_s"] == pytest.approx(python.best.mean)
    with pytest.raises(ConfigError, match="smallest"):
        search.best_of(base, "accept_limit", [1], prefer="first")


def test_one_warm_up_rule_for_python_and_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    """A run that sets no warm-up leaves out a quarter of its duration, at most 5 s,
    from Python and from every command alike; a warm-up given is kept as given."""
    import json

    from acceptsim.cli import main
    from acceptsim.commands.common import base_point
    from acceptsim.models.config import RunConfig
    from acceptsim.models.experiment import simulate

    assert RunConfig(rate_per_s=24000, duration_s=3).warmup_s == 0.75  # was an error
    assert RunConfig().warmup_s == 5.0 and RunConfig(duration_s=100).warmup_s == 5.0
    assert RunConfig(duration_s=3, warmup_s=0).warmup_s == 0.0
    assert RunConfig().replace(duration_s=2).warmup_s == 0.5  # the rule follows the duration
    assert RunConfig(warmup_s=1).replace(duration_s=8).warmup_s == 1.0  # a given one is kept
    assert main(["run", "--rate", "3000", "--duration", "1.2", "--format", "json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    python = json.loads(json.dumps(simulate(rate_per_s=3000, duration_s=1.2), default=str))
    assert cli["warmup_s"] == python["warmup_s"] == 0.3
    timing = ("sim_cpu_time_s", "sim_conns_per_cpu_s")
    assert {k: v for k, v in cli.items() if k not in timing} == {
        k: v for k, v in python.items() if k not in timing}
    import argparse

    args = argparse.Namespace(server="userver", workload="one-packet", rate="3000",
                              rate_profile="", duration="2", warmup=None, seed="1", set=[],
                              params=None, force=False)
    assert base_point(args)["warmup_s"] == 0.5  # search and oracle: the same rule


def test_run_leaves_every_default_to_runconfig() -> None:
    """One default per setting: an option left out of ``acceptsim run`` is RunConfig's
    default (its help says which), never a second copy of it in the command line."""
    from acceptsim.cli import build_parser
    from acceptsim.commands.cmd_run import config_from_args
    from acceptsim.models.config import RunConfig, default_text

    args = build_parser().parse_args(["run", "--rate", "3000", "--duration", "8"])
    assert config_from_args(args) == RunConfig(rate_per_s=3000, duration_s=8)
    help_text = build_parser()._subparsers._group_actions[0].choices["run"].format_help()  # type: ignore[union-attr]
    flat = " ".join(help_text.split())
    for name in ("timeout_s", "seed", "spacing", "cpu_period_s", "accept_limit"):
        assert f"(default {default_text(name)})" in flat, name


def test_the_refusals_time_estimate_uses_the_speed_of_the_path_in_use(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from acceptsim.models import work
    from acceptsim.models.config import RunConfig
    from acceptsim.sim import native

    config = RunConfig(rate_per_s=3e6, duration_s=100.0)  # 3e8 attempts
    for compiled, speed in ((True, work.SPEED_COMPILED), (False, work.SPEED_PYTHON)):
        monkeypatch.setattr(native, "is_compiled", lambda c=compiled: c)
        with pytest.raises(ConfigError) as refused:
            work.check_work(config)
        assert f"~{speed:,.0f} attempts/s" in str(refused.value)
        assert ("compiled" in str(refused.value)) == compiled
    assert 2 < work.SPEED_COMPILED / work.SPEED_PYTHON < 8  # as measured: about 4
