"""load_run and the flat record, in the simulator's metric names."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest
from measure_samples import DATA, HTTPERF_ONE, RUN_DIRS, replay

from acceptsim.measure import MeasuredRun, ParseError, find_runs, load_run, to_frame
from acceptsim.sim.errors import ConfigError

#: names shared with the simulator's JSON contract (models/record.py's METRICS, flattened)
SIMULATOR_NAMES = (
    "reply_rate_per_s",
    "connection_rate_per_s",
    "client_timeouts_per_s",
    "drops_per_s.listen_overflow",
    "drops_per_s.total",
    "target_rate_per_s",
    "server",
    "duration_s",
    "connections.attempted",
    "connections.completed",
    "connections.timed_out",
)

_LOADED: dict[Path, MeasuredRun] = {}


def loaded(run_dir: Path) -> MeasuredRun:
    """``load_run(run_dir)`` of a recorded folder, read once for this module's checks
    (each reads the run, none changes it)."""
    if run_dir not in _LOADED:
        _LOADED[run_dir] = load_run(run_dir)
    return _LOADED[run_dir]


def test_record_has_the_simulator_names(run_set: list[Path]) -> None:
    replay(run_set, record_has_the_simulator_names)


def record_has_the_simulator_names(run_dir: Path) -> None:
    record = loaded(run_dir).record()
    for name in SIMULATOR_NAMES + ("listen_overflows_per_s", "client_limited"):
        assert name in record


def test_record_is_consistent(run_set: list[Path]) -> None:
    replay(run_set, record_is_consistent)


def record_is_consistent(run_dir: Path) -> None:
    r = loaded(run_dir).record()
    assert 0 <= r["reply_rate_per_s"] <= r["connection_rate_per_s"] * (1 + 1e-9)
    assert r["client_timeouts_per_s"] >= 0
    assert r["listen_overflows_per_s"] == r["drops_per_s.listen_overflow"] >= 0
    assert r["drops_per_s.listen_overflow"] <= r["drops_per_s.total"]
    assert r["connections.completed"] <= r["connections.attempted"]
    # connections: at most what was asked for, and those without a descriptor make up the rest
    asked = r["target_rate_per_s"] * r["duration_s"]
    assert r["connections.attempted"] + r["errors.fd_unavail"] == pytest.approx(asked, rel=0.01)
    assert r["test_duration_s"] >= r["duration_s"] * 0.95
    if r["client_limited"] is False:
        # the offered load reached the server
        assert r["connection_rate_per_s"] == pytest.approx(r["target_rate_per_s"], rel=0.05)
    # httperf's own convention differs only by the tail after the last connection start
    tail = (r["timeout_s"] + 1.0) / r["duration_s"]
    assert r["httperf_connection_rate_per_s"] == pytest.approx(
        r["connection_rate_per_s"], rel=tail
    )


def test_light_load_is_served_in_full() -> None:
    runs = [loaded(d) for d in RUN_DIRS]  # the nginx runs (HAProxy's: per set)
    frame = to_frame(runs)
    # not light: the accept mutex with a cgroup per worker (nginx-loopback-worker-cgroups),
    # where the holder serves nearly everything on its own quota (4 workers: 0.05 CPU)
    alone = [r.info.server.cpu_quota_scope == "worker" and r.info.server.accept_mutex
             for r in runs]
    frame = frame[[not a for a in alone]]
    light = frame[frame.target_rate_per_s == frame.target_rate_per_s.min()]
    assert not light.empty
    assert (light["connections.completed"] == light["connections.attempted"]).all()
    assert (light.listen_overflows_per_s == 0).all()
    assert (light.client_timeouts_per_s == 0).all()
    rel = (light.reply_rate_per_s / light.target_rate_per_s - 1).abs()
    assert (rel < 0.05).all()


def test_frame_has_one_row_per_run() -> None:
    dirs = find_runs(DATA)
    frame = to_frame(loaded(d) for d in dirs)
    assert len(frame) == len(dirs)
    assert set(frame.multi_accept) == {True, False}


def test_wrong_number_of_summaries_is_an_error(run_copy: Path) -> None:
    (run_copy / "httperf.txt").write_text(HTTPERF_ONE)
    with pytest.raises(ParseError, match="load.processes"):
        load_run(run_copy)


def test_missing_pieces_are_named(run_copy: Path, tmp_path: Path) -> None:
    (run_copy / "counters-after.txt").unlink()
    with pytest.raises(ParseError, match="counters-after.txt:0: file not found"):
        load_run(run_copy)
    with pytest.raises(ParseError, match="not a run directory"):
        load_run(tmp_path / "nowhere")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match="run.toml"):
        load_run(empty)


def test_truncated_httperf_file_in_a_run_names_the_file(run_copy: Path) -> None:
    path = run_copy / "httperf.txt"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:-3]) + "\n")
    with pytest.raises(ParseError) as info:
        load_run(run_copy)
    assert info.value.path == str(path) and info.value.line == len(lines) - 3


def test_counter_files_named_in_run_toml_are_used(run_copy: Path) -> None:
    for which in ("before", "after"):
        text = (run_copy / f"counters-{which}.txt").read_text()
        (run_copy / f"counters-{which}.txt").unlink()
        (run_copy / f"{which}.nstat").write_text(text)
    toml = (run_copy / "run.toml").read_text()
    toml = toml.replace('before = ["counters-before.txt"]', 'before = ["before.nstat"]')
    toml = toml.replace('after = ["counters-after.txt"]', 'after = ["after.nstat"]')
    (run_copy / "run.toml").write_text(toml)
    record = load_run(run_copy).record()
    assert not math.isnan(record["listen_overflows_per_s"])


def test_a_copied_run_loads_like_the_original(run_copy: Path, tmp_path: Path) -> None:
    other = tmp_path / "again"
    shutil.copytree(run_copy, other)
    a, b = load_run(run_copy).record(), load_run(other).record()
    a.pop("run"), b.pop("run")
    assert a == b
