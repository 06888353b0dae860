"""Bad input to the commands that read a sweep, or run one, is one line and exit status 2
before any work (issue 46): metrics naming nothing, a name, a list or a column null in
every run; results with no rows or a foreign description; a hand-edited identity in a
sweep's manifest.json on --resume; a cache path that is no UTF-8 or cannot be written;
``~`` in --out and ACCEPTSIM_CACHE expanded."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from acceptsim.cli import main
from acceptsim.sim import files
from acceptsim.sim.sweep import METADATA_KEY

SCENARIO = """name = "tiny"
title = "t"
[base]
server = "userver"
duration_s = 0.2
warmup_s = 0.05
[sweep]
policy = ["static", "aimd"]
accept_limit = [1, 10]
rate_per_s = [1000]
"""


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> tuple[Path, Path]:
    """A scenario file and a finished sweep of it (2 replications)."""
    root = tmp_path_factory.mktemp("sweep")
    scenario = root / "tiny.toml"
    scenario.write_text(SCENARIO)
    out = root / "out"
    assert main(["sweep", str(scenario), "--out", str(out), "--replications", "2", "--quiet",
                 "--no-cache", "--jobs", "1"]) == 0
    return scenario, out


def refused(capsys, argv: list[str], *words: str) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for word in words:
        assert word in err, err
    return err


@pytest.mark.parametrize(("metric", "allowed"), [
    ("nosuch", "a column of the results"),
    ("server", "a column of numbers"),
    ("link_utilization", "a column of numbers"),  # a list per NIC
    # static at 2 limits and aimd once (it sets its own limit), 2 replications each
    ("syn_drops_per_timed_out", "null in every one of these 6 runs"),
])  # fmt: skip
@pytest.mark.parametrize("command", [["compare"], ["compare", "--regret"], ["plot"]])
def test_a_metric_that_is_no_column_of_numbers_is_refused(capsys, stored, tmp_path, metric,
                                                          allowed, command) -> None:
    _, out = stored
    extra = ["--to", str(tmp_path / "p")] if command == ["plot"] else []
    refused(capsys, [command[0], str(out), *command[1:], "--metric", metric, *extra],
            f"--metric='{metric}'", allowed)
    assert not (tmp_path / "p").exists()


def _rewrite(out: Path, to: Path, rows: int | None = None, varied: object = "keep") -> Path:
    table = pq.read_table(out / "results.parquet")
    meta = dict(table.schema.metadata)
    key = METADATA_KEY.encode() if isinstance(METADATA_KEY, str) else METADATA_KEY
    if varied != "keep":
        description = json.loads(meta[key])
        description["varied"] = varied
        meta[key] = json.dumps(description).encode()
    to.mkdir()
    table = table.slice(0, rows) if rows is not None else table
    pq.write_table(table.replace_schema_metadata(meta), to / "results.parquet")
    return to


@pytest.mark.parametrize(("rows", "varied", "words"), [
    (0, "keep", ["at least one run"]),
    (None, ["nosuch"], ["varied=['nosuch']", "a list of the results' columns"]),
    (None, "policy", ["varied='policy'", "a list of the results' columns"]),
])  # fmt: skip
@pytest.mark.parametrize("command", ["compare", "plot"])
def test_results_without_rows_or_with_a_foreign_description(capsys, stored, tmp_path, rows,
                                                            varied, words, command) -> None:
    results = _rewrite(stored[1], tmp_path / "r", rows, varied)
    refused(capsys, [command, str(results)], *words)


def test_a_sweep_metric_is_checked_before_any_run(capsys, stored, tmp_path) -> None:
    scenario, _ = stored
    for metric, words in [
        ("nosuch", ["--metric='nosuch'", "a column of the runs' records"]),
        ("drops_per_s", ["--metric='drops_per_s'", "drops_per_s.<key>"]),
        ("link_utilization", ["a column of numbers (this one holds a list"]),
    ]:
        refused(capsys, ["sweep", str(scenario), "--out", str(tmp_path / "o"), "--metric",
                         metric, "--no-cache"], *words)
        assert not (tmp_path / "o").exists()


def test_a_target_ci_on_a_metric_null_in_every_run_summarises_without_a_traceback(
        capsys, stored, tmp_path) -> None:
    scenario, _ = stored
    assert main(["sweep", str(scenario), "--out", str(tmp_path / "o"), "--target-ci", "0.1",
                 "--metric", "syn_drops_per_timed_out", "--max-replications", "2", "--quiet",
                 "--no-cache", "--jobs", "1"]) == 0
    assert "syn_drops_per_timed_out" in capsys.readouterr().out


@pytest.mark.parametrize(("old", "new", "words"), [
    ('"replications": 2', '"replications": "two"', ["identity.replications='two'"]),
    ('"name": "tiny"', '"name": 5', ["identity.name=5"]),
    ('"stop": null', '"stop": {"x": 1}', ["identity.stop=", "a stopping rule's table"]),
    ('"stop": null', '"stop": {"metric": "m", "rel_half_width": -1}',
     ["identity.stop=", "a positive fraction"]),
])  # fmt: skip
def test_a_hand_edited_identity_is_refused_on_resume(capsys, stored, tmp_path, old, new,
                                                     words) -> None:
    scenario, out = stored
    copy = shutil.copytree(out, tmp_path / "o")
    manifest = copy / "manifest.json"
    text = manifest.read_text()
    assert old in text
    manifest.write_text(text.replace(old, new))
    refused(capsys, ["sweep", str(scenario), "--out", str(copy), "--resume", "--no-cache"],
            *words)


def test_a_cache_that_is_no_utf8_path_or_is_read_only_is_refused_first(
        capsys, stored, tmp_path, monkeypatch) -> None:
    scenario, _ = stored
    argv = ["sweep", str(scenario), "--out", str(tmp_path / "o"), "--quiet"]
    monkeypatch.setenv("ACCEPTSIM_CACHE", str(tmp_path / "c\udcff"))
    refused(capsys, argv, "ACCEPTSIM_CACHE=", "UTF-8")
    cache = tmp_path / "ro"
    cache.mkdir()
    monkeypatch.setenv("ACCEPTSIM_CACHE", str(cache))
    real = os.access
    monkeypatch.setattr(files.os, "access", lambda p, mode: Path(p) != cache and real(p, mode))
    refused(capsys, argv, f"ACCEPTSIM_CACHE='{cache}'", "is not writable")
    assert not (tmp_path / "o").exists()  # before the first run


def test_a_tilde_in_out_and_the_cache_is_the_home_directory(stored, tmp_path,
                                                            monkeypatch) -> None:
    scenario, _ = stored
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ACCEPTSIM_CACHE", "~/cache")
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", str(scenario), "--out", "~/sw", "--quiet", "--jobs", "1"]) == 0
    assert (home / "sw" / "results.parquet").is_file()
    assert any((home / "cache").iterdir())
    assert not (tmp_path / "~").exists()


def test_search_checks_the_cache_before_any_run(capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ACCEPTSIM_CACHE", str(tmp_path / "c\udcff"))
    refused(capsys, ["search", "--rate", "1000", "--duration", "0.3", "--candidates", "1,10",
                     "--replications", "2"], "ACCEPTSIM_CACHE=", "UTF-8")
