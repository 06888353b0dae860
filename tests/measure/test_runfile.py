"""run.toml: the schema is validated, and errors name the file and the key."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
from measure_samples import RUN_DIRS, RUN_SETS, replay

from acceptsim.measure import parse_run_info, read_run_info
from acceptsim.measure.runfile import FORMAT
from acceptsim.sim.errors import ConfigError

MINIMAL: dict[str, Any] = {
    "format": FORMAT,
    "server": {"name": "nginx"},
    "load": {"target_rate_per_s": 1000, "duration_s": 10, "timeout_s": 1},
}


def with_change(table: str | None, key: str, value: Any) -> dict[str, Any]:
    data = {k: dict(v) if isinstance(v, dict) else v for k, v in MINIMAL.items()}
    if table is None:
        data[key] = value
    else:
        data.setdefault(table, {})[key] = value
    return data


def test_minimal_file_takes_documented_defaults() -> None:
    info = parse_run_info(MINIMAL)
    assert info.server.name == "nginx" and info.server.multi_accept is False
    assert info.load.target_rate_per_s == 1000.0 and isinstance(info.load.target_rate_per_s, float)
    assert info.kernel.profile == "linux-modern"
    assert info.counters.before == ("counters-before.txt",)


def test_recorded_files_validate_and_round_trip(run_set: list[Path]) -> None:
    replay(run_set, recorded_files_validate_and_round_trip)


def recorded_files_validate_and_round_trip(run_dir: Path) -> None:
    info = read_run_info(run_dir / "run.toml")
    assert info.server.name == "nginx" and info.server.backlog == 128
    # one worker, or as many as the run's name says (acceptsim measure --workers N)
    workers = int(run_dir.name.split("workers-")[1].split("-")[0]) if "workers-" in run_dir.name \
        else 1
    assert info.server.worker_processes == workers and info.server.events == "epoll"
    assert info.load.address == "127.0.0.1"
    again = parse_run_info(tomllib.loads(info.to_toml()))
    assert again == info


@pytest.mark.parametrize(
    ("table", "key", "value", "field", "allowed"),
    [
        (None, "colour", "red", "colour", "unknown key"),
        ("server", "multi_acept", True, "server.multi_acept", "unknown key; allowed: name"),
        ("server", "multi_accept", "yes", "server.multi_accept", "true or false"),
        ("server", "backlog", 0, "server.backlog", ">= 1"),
        ("server", "cpu_quota", -0.1, "server.cpu_quota", ">= 0"),
        ("server", "cpu_quota", 0.1, "server.cpu_period_us", "> 0 exactly when"),
        ("server", "cpu_period_us", 2000, "server.cpu_period_us", "> 0 exactly when"),
        ("server", "cpu_period_us", 2_000_000, "server.cpu_period_us", "<= 1e+06"),
        ("load", "target_rate_per_s", -5, "load.target_rate_per_s", ">= 0"),
        ("load", "target_rate_per_s", "fast", "load.target_rate_per_s", "a number"),
        ("load", "spacing", "bursty", "load.spacing", "one of 'poisson'"),
        ("load", "port", 70000, "load.port", "<= 65535"),
        ("kernel", "profile", "linux-3.1", "kernel.profile", "one of"),
        ("kernel", "tcp_syncookies", 3, "kernel.tcp_syncookies", "one of 0, 1, 2"),
        ("host", "repeat", 1.5, "host.repeat", "an integer"),
        ("counters", "before", [], "counters.before", "non-empty list"),
        ("counters", "after", ["/etc/passwd"], "counters.after", "inside the run directory"),
        ("counters", "after", ["./../x.txt"], "counters.after", "no '..'"),
        ("counters", "during", ["x"], "counters.during", "unknown key"),
        (None, "format", "acceptsim-measured-run/0", "format", FORMAT),
        (None, "server", "nginx", "server", "a table"),
    ],
)
def test_bad_keys_and_values_name_file_and_key(
    table: str | None, key: str, value: Any, field: str, allowed: str
) -> None:
    with pytest.raises(ConfigError) as info:
        parse_run_info(with_change(table, key, value), "runs/a/run.toml")
    assert info.value.field == f"runs/a/run.toml: {field}"
    assert allowed in info.value.allowed
    assert str(info.value).startswith(f"runs/a/run.toml: {field}=")


@pytest.mark.parametrize(
    ("table", "key"),
    [("server", "name"), ("load", "target_rate_per_s"), ("load", "duration_s"),
     ("load", "timeout_s")],
)
def test_required_keys(table: str, key: str) -> None:
    data = {k: dict(v) if isinstance(v, dict) else v for k, v in MINIMAL.items()}
    del data[table][key]
    with pytest.raises(ConfigError, match=f"run.toml: {table}.{key}=None .*required"):
        parse_run_info(data)


def test_cpu_quota_is_recorded_with_its_period() -> None:
    info = parse_run_info(with_change("server", "cpu_quota", 0.1) | {
        "server": {"name": "nginx", "cpu_quota": 0.1, "cpu_period_us": 10000}
    })
    assert info.server.cpu_quota == 0.1 and info.server.cpu_period_us == 10000
    assert parse_run_info(tomllib.loads(info.to_toml())) == info
    # a quota with a period under the kernel's 1 ms minimum is refused
    with pytest.raises(ConfigError, match="server.cpu_period_us"):
        parse_run_info(with_change("server", "cpu_quota", 0.1) | {
            "server": {"name": "nginx", "cpu_quota": 0.1, "cpu_period_us": 500}
        })
    # runs recorded before the option existed had no limit
    assert parse_run_info(MINIMAL).server.cpu_quota == 0.0


def test_the_quota_sweep_records_its_quota() -> None:
    quota_runs = [d for d in RUN_DIRS if d.parent.name == "nginx-loopback-quota"]
    assert len(quota_runs) == 96
    for d in quota_runs:
        server = read_run_info(d / "run.toml").server
        assert server.cpu_quota == pytest.approx(0.1) and server.cpu_period_us == 10000


def test_required_table() -> None:
    data = dict(MINIMAL)
    del data["load"]
    with pytest.raises(ConfigError, match="load"):
        parse_run_info(data)


def test_unreadable_toml_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "run.toml"
    path.write_text("format = \n")
    with pytest.raises(ConfigError, match="valid TOML") as info:
        read_run_info(path)
    assert str(path) in str(info.value)
    with pytest.raises(ConfigError, match="No such file"):
        read_run_info(tmp_path / "missing.toml")


def test_every_recorded_run_has_its_own_file() -> None:
    assert len({p.resolve() for p in RUN_DIRS}) == len(RUN_DIRS)


def test_the_sets_hold_every_recorded_run_once() -> None:
    assert sorted(d for s in RUN_SETS.values() for d in s) == sorted(RUN_DIRS)


def test_a_set_replay_names_every_failing_folder() -> None:
    run_set = RUN_SETS["nginx-loopback"]
    bad = {run_set[1], run_set[3]}

    def check(run_dir: Path) -> None:
        assert run_dir not in bad, "a bad folder"

    with pytest.raises(AssertionError) as info:
        replay(run_set, check)
    message = str(info.value)
    assert f"check: 2 of {len(run_set)} folders fail" in message
    named = [line.split(":")[0] for line in message.splitlines()[1:] if line[:1] != " "]
    assert named == [f"nginx-loopback/{d.name}" for d in run_set if d in bad]
    assert message.count("AssertionError: a bad folder") == 2
    replay(run_set, lambda run_dir: None)  # every folder passes: no assertion
