"""The run cache: a sweep run again costs only what changed, and never serves a result
of other code."""

from __future__ import annotations

from pathlib import Path

import pytest

from acceptsim.models import runner
from acceptsim.sim import sweep as sweep_mod

POINTS = [{"rate_per_s": rate, "duration_s": 0.4, "warmup_s": 0.1} for rate in (8000.0, 20000.0)]
CALLS: list[float] = []


def counting_run(point):  # a module-level run function: it may go to worker processes
    CALLS.append(point["rate_per_s"])
    return runner.run_point(point)


def test_a_sweep_run_again_takes_finished_runs_from_the_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    CALLS.clear()
    first = sweep_mod.sweep(POINTS, run=counting_run, normalise=runner.normalise,
                            replications=2, jobs=1, progress=False, cache=cache)
    assert len(CALLS) == 4
    more = [*POINTS, {"rate_per_s": 24000.0, "duration_s": 0.4, "warmup_s": 0.1}]
    again = sweep_mod.sweep(more, run=counting_run, normalise=runner.normalise,
                            replications=2, jobs=1, progress=False, cache=cache)
    assert CALLS[4:] == [24000.0, 24000.0]  # only the new point ran
    columns = [c for c in first.columns if not c.startswith("sim_")]
    assert again[columns].head(4).equals(first[columns])
    assert first.attrs["sweep"]["cache"].startswith(str(cache))


def test_other_code_is_another_cache_and_off_means_off(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    CALLS.clear()
    sweep_mod.sweep(POINTS[:1], run=counting_run, normalise=runner.normalise, jobs=1,
                    progress=False, cache=cache)
    sweep_mod.sweep(POINTS[:1], normalise=runner.normalise, run=runner.run_point, jobs=1,
                    progress=False, cache=cache)  # another run function: its own digest
    assert len(list(cache.iterdir())) == 2
    sweep_mod.sweep(POINTS[:1], run=counting_run, normalise=runner.normalise, jobs=1,
                    progress=False, cache=False)
    assert len(CALLS) == 2  # the first sweep, and the one with the cache off


def test_the_digest_follows_the_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = sweep_mod.code_digest(counting_run)
    assert sweep_mod.code_digest(counting_run) == before
    real = Path.read_bytes

    def edited(self: Path) -> bytes:  # as if one source had been edited
        data = real(self)
        return data + b"\n# edited\n" if self.name == "kernel.py" else data

    monkeypatch.setattr(Path, "read_bytes", edited)
    assert sweep_mod.code_digest(counting_run) != before


def test_the_environment_variable_sets_the_directory_or_turns_it_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(sweep_mod.CACHE_ENV, str(tmp_path / "env-cache"))
    parts = sweep_mod.open_cache(None, counting_run)
    assert parts is not None and parts.parts.parent == tmp_path / "env-cache"
    monkeypatch.setenv(sweep_mod.CACHE_ENV, "off")
    assert sweep_mod.open_cache(None, counting_run) is None
    monkeypatch.delenv(sweep_mod.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    parts = sweep_mod.open_cache(None, counting_run)
    assert parts is not None and parts.parts.is_relative_to(tmp_path / "xdg" / "acceptsim")


def test_the_digest_is_quick_and_covers_a_users_module(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib
    import time

    started = time.perf_counter()
    sweep_mod.code_digest(counting_run)
    assert time.perf_counter() - started < 0.5  # the package's sources, not the checkout's
    module = tmp_path / "my_runs.py"
    module.write_text("def helper():\n    return 1\n\ndef run(point):\n    return helper()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    mine = importlib.import_module("my_runs")
    before = sweep_mod.code_digest(mine.run)
    module.write_text("def helper():\n    return 2\n\ndef run(point):\n    return helper()\n")
    assert sweep_mod.code_digest(mine.run) != before  # its helper changed, not run itself
