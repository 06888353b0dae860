"""A server of the user's is passed in like a policy of the user's (issue 45): the class
itself or its ServerSpec (``RunConfig(server=MyServer)``), or ``--server MODULE:CLASS``
in ``run``, ``sweep`` and ``search`` and in a scenario; checked before any run, named by
its spec in the record and the results, and its module's source in every run's key."""

from __future__ import annotations

import dataclasses
import importlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

from acceptsim import sim
from acceptsim.cli import main
from acceptsim.models import runner
from acceptsim.models.config import RunConfig
from acceptsim.models.experiment import simulate
from acceptsim.models.servers.registry import SERVERS
from acceptsim.models.servers.userver import Userver
from acceptsim.sim import sweep as sweep_mod
from acceptsim.sim.errors import ConfigError

MODULE = '''
"""Servers of a user's: the userver under another name, and things that are not servers."""

from dataclasses import replace

from acceptsim.models.servers.base import Server
from acceptsim.models.servers.registry import SERVERS
from acceptsim.models.servers.userver import Userver


class MyServer(Userver):
    """The userver, subclassed: it runs with the userver's spec."""

    def opened(self):
        return {opened}


class Listed(Userver):
    """Listed in SPECS with a spec of its own."""


LISTED = replace(SERVERS["userver"], name="listed", cls=Listed)
SPECS = (LISTED,)


class Bare(Server):
    """A server with no spec: neither listed nor derived from a built-in one."""


class Plain:
    """Not a server."""


def helper():
    return 1


BROKEN = replace(SERVERS["userver"], name="broken", params=int)
'''
RUN = {"rate_per_s": 8000.0, "duration_s": 0.4, "warmup_s": 0.1, "seed": 3}


def write_module(folder: Path, name: str, opened: str = "0.0") -> None:
    (folder / f"{name}.py").write_text(MODULE.format(opened=opened))


@pytest.fixture
def servers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """A module of servers on the path, with a name of its own per test."""
    name = f"my_servers_{tmp_path.name.replace('-', '_')}"
    write_module(tmp_path, name)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield importlib.import_module(name)
    sys.modules.pop(name, None)


def strip(record: dict) -> dict:
    """A record without what names the server or times the simulator."""
    return {k: v for k, v in record.items() if k != "server" and not k.startswith("sim_")}


def test_a_class_its_spec_and_its_name_run_the_same_and_the_record_names_it(servers) -> None:
    module = servers.__name__
    by_class = RunConfig(server=servers.MyServer, **RUN)
    assert by_class.server.startswith(f"{module}:MyServer@")  # the source's digest
    assert by_class.server_spec().cls is servers.MyServer
    assert by_class.server_spec().params is SERVERS["userver"].params  # the userver's spec
    listed = RunConfig(server=servers.LISTED, **RUN)  # a spec: the name bound to it
    assert listed.server.startswith(f"{module}:LISTED@")
    assert RunConfig(server=servers.Listed, **RUN).server_spec() is servers.LISTED
    records = [simulate(by_class), simulate(RunConfig(server=f"{module}:MyServer", **RUN)),
               simulate(listed)]
    assert [r["server"] for r in records] == [by_class.server, f"{module}:MyServer",
                                              listed.server]
    userver = simulate(RunConfig(**RUN))
    for record in records:  # a subclass that changes nothing runs as the userver
        assert strip(record) == strip(userver)
    # a built-in server's class or spec is its name
    assert RunConfig(server=Userver, **RUN).server == "userver"
    assert RunConfig(server=SERVERS["knot"], **RUN).server == "knot"


def test_the_run_command_takes_a_server_of_the_users(
    servers, capsys: pytest.CaptureFixture[str],
) -> None:
    spec = f"{servers.__name__}:MyServer"
    assert main(["run", "--server", spec, "--rate", "8000", "--duration", "0.4",
                 "--warmup", "0.1", "--seed", "3", "--format", "json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["server"] == spec
    assert strip(record)["reply_rate_per_s"] == pytest.approx(
        simulate(RunConfig(**RUN))["reply_rate_per_s"])


def test_the_servers_command_shows_a_server_of_the_users_parameters(
    servers, capsys: pytest.CaptureFixture[str],
) -> None:
    spec = f"{servers.__name__}:MyServer"
    assert main(["servers", spec, "--format", "json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)
    assert entry["name"] == spec and entry["kind"] == "servers"
    assert [p["name"] for p in entry["params"]] == \
        [r["name"] for r in SERVERS["userver"].params.describe()]
    assert main(["servers", f"{servers.__name__}:Plain"]) == 2
    assert "server=" in capsys.readouterr().err


def test_the_sweep_command_takes_servers_as_a_dimension(
    servers, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    scenario = tmp_path / "tiny.toml"
    scenario.write_text(textwrap.dedent('''
        name = "tiny"
        title = "a server of yours beside the userver"
        [base]
        rate_per_s = 8000.0
        duration_s = 0.4
        warmup_s = 0.1
        [sweep]
        accept_limit = [1, 10]
    '''))
    spec = f"{servers.__name__}:MyServer"
    out = tmp_path / "out"
    assert main(["sweep", str(scenario), "--out", str(out), "--jobs", "2", "--quiet",
                 "--server", "userver", "--server", spec]) == 0
    frame, _ = sim.sweep.read_results(out)
    assert sorted(frame["server"]) == sorted(["userver", "userver", spec, spec])
    rates = frame.set_index(["server", "accept_limit"])["reply_rate_per_s"]
    for limit in (1, 10):  # the same runs under either name
        assert rates[(spec, limit)] == rates[("userver", limit)]
    assert "server" in capsys.readouterr().out
    assert main(["sweep", str(scenario), "--out", str(tmp_path / "o2"), "--server", spec,
                 "--vary", "server=userver"]) == 2
    assert "--server" in capsys.readouterr().err


def test_a_scenario_names_a_server_of_the_users(servers, tmp_path: Path) -> None:
    spec = f"{servers.__name__}:MyServer"
    scenario = tmp_path / "mine.toml"
    scenario.write_text(textwrap.dedent(f'''
        name = "mine"
        [base]
        rate_per_s = 8000.0
        duration_s = 0.4
        warmup_s = 0.1
        [sweep]
        server = ["{spec}", "userver"]
    '''))
    frame = sim.sweep(str(scenario), jobs=1, progress=False)
    assert list(frame.sort_values("server")["server"]) == sorted([spec, "userver"])
    bad = tmp_path / "bad.toml"
    bad.write_text(scenario.read_text().replace(spec, f"{servers.__name__}:Nope"))
    with pytest.raises(ConfigError, match=r"bad\.toml: server=.*:Nope"):
        sim.sweep(str(bad), jobs=1, progress=False)


def test_the_search_command_takes_a_server_of_the_users(
    servers, capsys: pytest.CaptureFixture[str],
) -> None:
    spec = f"{servers.__name__}:MyServer"
    assert main(["search", "--server", spec, "--rate", "8000", "--duration", "0.4",
                 "--warmup", "0.1", "--candidates", "1,inf", "--replications", "2",
                 "--jobs", "1", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["run"]["server"] == spec
    assert len(out["evaluated"]) == 2


def test_a_server_defined_in_a_scripts_main_is_swept_by_forked_workers(
    tmp_path: Path,
) -> None:
    script = tmp_path / "notebook_like.py"
    script.write_text(textwrap.dedent('''
        from acceptsim import sim
        from acceptsim.models.servers.userver import Userver

        class Mine(Userver):
            """The userver, defined where a notebook defines it."""

        if __name__ == "__main__":
            point = {"server": Mine, "rate_per_s": 8000.0, "duration_s": 0.4, "warmup_s": 0.1}
            frame = sim.sweep([point], replications=2, jobs=2, progress=False)
            print(sorted(set(s.split("@")[0] for s in frame["server"])), len(frame))
    '''))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          check=True, cwd=tmp_path)
    assert done.stdout.strip().endswith("['__main__:Mine'] 2")


def test_an_edited_server_module_is_a_new_run(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    name = "edited_server_mod"
    write_module(tmp_path, name)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    spec = f"{name}:MyServer"
    config = runner.normalise({**RUN, "server": spec})
    before = runner.inputs(config)
    assert before and before != runner.inputs(runner.normalise(RUN)) == ""
    cache = tmp_path / "cache"
    first = sweep_mod.sweep([{**RUN, "server": spec}], jobs=1, progress=False, cache=cache)
    assert first["reply_rate_per_s"].iloc[0] > 7000
    again = sweep_mod.sweep([{**RUN, "server": spec}], jobs=1, progress=False, cache=cache)
    assert again["run_key"].iloc[0] == first["run_key"].iloc[0]  # the same code: cached
    write_module(tmp_path, name, opened="2e-3")  # 2 ms more per accepted connection
    sys.modules.pop(name, None)
    assert runner.inputs(config) != before
    second = sweep_mod.sweep([{**RUN, "server": spec}], jobs=1, progress=False, cache=cache)
    assert second["run_key"].iloc[0] != first["run_key"].iloc[0]
    assert second["reply_rate_per_s"].iloc[0] < 1000  # run again, not 8,000/s from the cache
    sys.modules.pop(name, None)


@pytest.mark.parametrize(("spec", "fragment"), [
    ("no_such_server_module_xyz:MyServer", "an importable module"),
    ("{m}:Nope", "a Server subclass or a ServerSpec defined in {m}"),
    ("{m}:helper", "a Server subclass or a ServerSpec"),
    ("{m}:Plain", "a Server subclass or a ServerSpec"),
    ("{m}:Bare", "listed in {m}'s SPECS"),
    ("{m}:BROKEN", "params is a Params subclass"),
    ("nosuch", "one of userver"),
    ("userver:", "MODULE:CLASS"),
])  # fmt: skip
def test_a_bad_server_is_one_line_exit_2_before_any_run(
    servers, spec: str, fragment: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    spec = spec.format(m=servers.__name__)
    fragment = fragment.format(m=servers.__name__)
    with pytest.raises(ConfigError, match="^server=") as err:
        RunConfig(server=spec, **RUN)
    assert fragment in str(err.value)
    scenario = tmp_path / "tiny.toml"
    scenario.write_text('name = "tiny"\n[base]\nrate_per_s = 8000.0\nduration_s = 0.4\n')
    for argv in (
        ["run", "--server", spec, "--rate", "8000", "--duration", "0.4"],
        ["sweep", str(scenario), "--server", spec, "--out", str(tmp_path / "out"), "--quiet"],
        ["search", "--server", spec, "--rate", "8000", "--duration", "0.4"],
    ):
        assert main(argv) == 2, argv
        captured = capsys.readouterr()
        assert captured.err.count("\n") == 1 and f"server={spec!r}" in captured.err, argv
        assert fragment in captured.err and captured.out == "", argv
    assert not (tmp_path / "out").exists()  # nothing ran, nothing written


def test_a_module_that_fails_on_import_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "failing_server_mod.py").write_text("raise RuntimeError('no server here')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "failing_server_mod", raising=False)
    code = main(["run", "--rate", "1000", "--duration", "0.2", "--server",
                 "failing_server_mod:S"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "server='failing_server_mod:S'" in err and "RuntimeError: no server here" in err


def test_an_object_that_cannot_be_found_by_its_name_is_refused_with_the_reason(
    servers,
) -> None:
    class Local(Userver):
        pass

    with pytest.raises(ConfigError, match="module's top level"):
        RunConfig(server=Local, **RUN)
    with pytest.raises(ConfigError, match="^server=.*one of userver"):
        RunConfig(server=object, **RUN)
    with pytest.raises(ConfigError, match="listed in .*'s SPECS"):
        RunConfig(server=servers.Bare, **RUN)  # a class without a spec
    unbound = dataclasses.replace(servers.LISTED, summary="bound to no name")
    with pytest.raises(ConfigError, match="importable by its name"):
        RunConfig(server=unbound, **RUN)
