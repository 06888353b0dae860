"""Progress where a user can see it: a widget in a Jupyter kernel, a bar on a terminal,
nothing in CI or a pipe, nothing when asked for quiet."""

from __future__ import annotations

import io
import sys
import types

import pytest

from acceptsim.models import progress
from acceptsim.sim import bars
from acceptsim.sim import sweep as sweep_mod


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def fake_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    shell = types.SimpleNamespace(kernel=object())
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    monkeypatch.setitem(sys.modules, "ipykernel", types.ModuleType("ipykernel"))


def test_a_kernel_shows_progress_though_its_stderr_is_no_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert not bars.show_progress()
    fake_kernel(monkeypatch)
    assert bars.in_kernel() and bars.show_progress()
    assert not bars.show_progress(asked=False)  # quiet is quiet everywhere
    bar = sweep_mod._bar(10, 0, True, "runs")
    assert not bar.disable
    bar.close()
    assert progress.progress_bar(5.0) is not None


def test_a_terminal_shows_it_and_a_pipe_does_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "ipykernel", raising=False)
    monkeypatch.setattr(sys, "stderr", _Tty())
    assert bars.show_progress()
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert not bars.show_progress()
    bar = sweep_mod._bar(10, 0, True, "runs")
    assert bar.disable
    assert progress.progress_bar(5.0) is None


def test_summary_reads_the_stored_description_and_refuses_a_frame_without_it(tmp_path) -> None:
    import pandas as pd

    from acceptsim.sim.errors import ConfigError

    out = tmp_path / "out"
    points = [{"rate_per_s": r, "duration_s": 0.3, "warmup_s": 0.1} for r in (5000.0, 9000.0)]
    sweep_mod.sweep(points, replications=2, jobs=1, out=out, progress=False, cache=False)
    frame, _ = sweep_mod.read_results(out)
    by_frame = sweep_mod.summary(frame, ["reply_rate_per_s"])
    by_path = sweep_mod.summary(out, ["reply_rate_per_s"])
    assert len(by_frame) == 2 and by_frame["replications"].tolist() == [2, 2]
    assert by_frame.equals(by_path)
    bare = pd.read_parquet(out / "results.parquet")  # loses the description
    with pytest.raises(ConfigError, match="read_results"):
        sweep_mod.summary(bare, ["reply_rate_per_s"])
