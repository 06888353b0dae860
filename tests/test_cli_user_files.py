"""Where users work (issue 46): a policy given as its file (``FILE.py:CLASS``), searched
over its own parameters; a server that runs as one worker on several CPUs said so."""

from __future__ import annotations

import json
import os
import sys

import pytest

from acceptsim.cli import main

POLICY = """class Fixed:
    TUNE = {"limit": (1.0, 64.0, True)}

    def __init__(self, limit=4):
        self.limit = limit

    def accept_limit(self, view):
        return self.limit


class Untuned(Fixed):
    TUNE = {}
"""


@pytest.fixture
def policy_file(tmp_path, monkeypatch):
    """A policy module in a folder of its own, not on the import path; the path, the
    environment and the module cache restored after."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    folder = tmp_path / "mine"
    folder.mkdir()
    path = folder / "userpol46.py"
    path.write_text(POLICY)
    yield path
    sys.modules.pop("userpol46", None)


def test_a_policy_named_by_its_file_runs(policy_file, capsys) -> None:
    assert main(["run", "--policy", f"{policy_file}:Fixed", "--policy-param", "limit=2",
                 "--rate", "1000", "--duration", "0.3", "--format", "json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["policy"] == "userpol46:Fixed:limit=2"


@pytest.mark.parametrize(("name", "allowed"), [
    ("nosuch.py", "is no file"),
    ("random.py", "rename the file"),  # the standard library's module of that name
    ("my-pol.py", "a module name"),
])  # fmt: skip
def test_a_policy_file_that_cannot_import_as_itself_is_refused(policy_file, capsys, name,
                                                               allowed) -> None:
    path = policy_file.parent / name
    if name != "nosuch.py":
        path.write_text(POLICY)
    assert main(["run", "--policy", f"{path}:Fixed", "--rate", "1000", "--duration",
                 "0.3"]) == 2
    err = capsys.readouterr().err
    assert allowed in err and err.count("\n") == 1, err


def test_search_tunes_a_policy_of_the_users(policy_file, capsys) -> None:
    argv = ["search", "--rate", "5000", "--duration", "0.3", "--warmup", "0.1",
            "--replications", "2", "--jobs", "1", "--max-evals", "2", "--format", "json"]
    assert main([*argv, "--policy", f"{policy_file}:Fixed"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["policy"] == "userpol46:Fixed"
    assert out["best_policy"].startswith("userpol46:Fixed:limit=")
    assert isinstance(out["best_params"]["limit"], int)  # its default is an integer
    assert main([*argv, "--policy", f"{policy_file}:Untuned"]) == 2
    assert "declares no TUNE" in capsys.readouterr().err
    assert main([*argv, "--policy", f"{policy_file}:Untuned", "--tune", "limit=1:8"]) == 0


def test_a_one_worker_server_on_several_cpus_is_said_so(capsys) -> None:
    argv = ["run", "--rate", "1000", "--duration", "0.2", "--format", "json", "--cpus", "4"]
    assert main([*argv, "--server", "tux"]) == 0
    err = capsys.readouterr().err
    assert "'tux' runs as one worker" in err and "other 3 of the 4 CPUs" in err, err
    assert main([*argv, "--server", "nginx"]) == 0
    assert "one worker" not in capsys.readouterr().err
