"""The command line starts quickly (issue 46): ``acceptsim --version``, ``--help`` and a
command's ``--help`` import no command module but the one named, and none of numpy's heavy
neighbours (pandas, scipy, matplotlib); each command's heavy imports happen when it runs."""

from __future__ import annotations

import json
import subprocess
import sys

from acceptsim.cli import COMMANDS, build_parser

HEAVY = ("pandas", "scipy", "matplotlib")

#: commands whose parsers read their tables from modules that import pandas and matplotlib
#: (the report's): their --help is slower, their runs unchanged
SLOW_HELP = {"reproduce"}


def test_the_table_of_commands_is_the_modules_own() -> None:
    """cli.COMMANDS (what --help lists without importing the modules) names each command
    of each module, with the module's own help, in the modules' order."""
    parser = build_parser()  # every module imported, every parser its own
    actions = parser._subparsers._group_actions[0]  # type: ignore[union-attr]
    listed = [(a.dest, a.help) for a in actions._choices_actions]
    assert listed == [(name, help_text) for name, (_, help_text) in COMMANDS.items()]
    for name, (module, _) in COMMANDS.items():
        assert actions.choices[name].get_default("main").__module__ == (
            f"acceptsim.commands.{module}"), name


def _imported_after(calls: list[list[str]]) -> dict[str, list[str]]:
    """The heavy packages and command modules a fresh interpreter holds after each call of
    ``acceptsim.cli.main`` (one interpreter: the calls in order)."""
    code = (
        "import contextlib, io, json, sys\n"
        "from acceptsim.cli import main\n"
        "seen = {}\n"
        f"for argv in {calls!r}:\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        "        try:\n"
        "            main(argv)\n"
        "        except SystemExit:\n"
        "            pass\n"
        "    seen[' '.join(argv)] = sorted(m for m in sys.modules if m.split('.')[0] in "
        f"{HEAVY!r} and '.' not in m or m.startswith('acceptsim.commands.cmd_'))\n"
        "print(json.dumps(seen))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def test_version_and_help_import_nothing_heavy() -> None:
    calls = [["--version"], ["--help"], ["run", "--help"]]
    calls += [[name, "--help"] for name in COMMANDS if name not in SLOW_HELP and name != "run"]
    seen = _imported_after(calls)
    assert seen["--version"] == [], seen["--version"]
    assert seen["--help"] == [], seen["--help"]
    assert seen["run --help"] == ["acceptsim.commands.cmd_run"], seen["run --help"]
    last = " ".join(calls[-1])
    assert not set(seen[last]) & set(HEAVY), seen[last]  # no command's help imported them


def test_a_command_is_parsed_by_its_own_parser_only() -> None:
    """With argv, only the named command's module is imported; the others are listed."""
    args = build_parser(["policies"]).parse_args(["policies"])
    assert args.main.__module__ == "acceptsim.commands.cmd_policies"


def test_a_run_imports_nothing_heavy() -> None:
    """``acceptsim run`` simulates and prints its record without pandas, scipy or
    matplotlib (scipy.stats alone took about 1.3 s to import, most of a short run's
    time): they come with what needs them (intervals, tables, plots)."""
    argv = ["run", "--server", "userver", "--rate", "1000", "--duration", "0.01",
            "--format", "json", "--force"]
    seen = _imported_after([argv])
    assert seen[" ".join(argv)] == ["acceptsim.commands.cmd_run"], seen
