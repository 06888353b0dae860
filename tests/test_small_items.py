"""Small things a user meets: the search table's headers, a sweep's summary of measures
only (no configuration column, no warning for an inf limit), the drop-kinds figure."""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest

from acceptsim.cli import main
from acceptsim.commands.cmd_search import format_text
from acceptsim.models import runner


def test_the_search_table_has_column_headers() -> None:
    out = {"search": "static accept-limit", "replications": 2, "best_accept_limit": 1.0,
           "best_reply_rate_per_s": 10.0, "ci95": [9.0, 11.0],
           "evaluated": [{"accept_limit": 1.0, "reply_rate_per_s": 10.0, "ci95": [9.0, 11.0],
                          "indistinguishable_from_best": True}]}
    header = format_text(out).splitlines()[1]
    assert "accept-limit" in header and "replies/s" in header and "95% CI" in header


def test_a_sweeps_summary_holds_measures_only_without_warnings(tmp_path: Path) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text("name = 's'\n[base]\nduration_s = 0.3\nwarmup_s = 0.1\n"
                        "[sweep]\naccept_limit = [1, 'inf']\n")
    out = tmp_path / "out"
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # e.g. the mean of an inf limit
        assert main(["sweep", str(scenario), "--out", str(out), "--quiet", "--jobs", "1",
                     "--replications", "2", "--no-cache"]) == 0
    table = pd.read_csv(out / "summary.csv")
    summarised = {c.rsplit(".", 1)[0] for c in table.columns if c.endswith(".mean")}
    assert "reply_rate_per_s" in summarised
    for column in summarised:
        assert runner.is_measure(column), column
    assert not summarised & {"seed", "duration_s", "warmup_s", "policy_params.limit",
                             "accept_limit", "target_rate_per_s"}


def test_a_panel_of_zeros_is_left_out_and_named(tmp_path: Path) -> None:
    from acceptsim import report
    from acceptsim.sim.scenario import Scenario

    frame = pd.DataFrame({"target_rate_per_s": [1.0, 2.0], "accept_limit": [1, 1],
                          "drops_per_s.syn_q_full": [0.0, 0.0],
                          "drops_per_s.accept_q_full": [3.0, 5.0]})
    scenario = Scenario(name="d", title="drops", base={}, sweep={}, plot={
        "y": ["drops_per_s.accept_q_full", "drops_per_s.syn_q_full"]})
    captured = {}

    def savefig(self, path, **kwargs):  # type: ignore[no-untyped-def]
        captured["fig"] = self
        Path(path).write_bytes(b"")

    import matplotlib.figure

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(matplotlib.figure.Figure, "savefig", savefig)
        report.plot(scenario, frame, tmp_path / "d.png")
    fig = captured["fig"]
    assert len(fig.axes) == 1
    assert fig.axes[0].get_ylabel() == report.LABELS["drops_per_s.accept_q_full"]
    assert any("SYN queue full" in t.get_text() for t in fig.texts)
