"""A scenario's ``[plot]`` and ``[[expect]]`` naming a column its runs do not have, a column
of names where numbers are needed, or an empty list are refused before any run with one
line (issue 46: 14 tracebacks after all the runs, the report not written)."""

from __future__ import annotations

import pandas as pd
import pytest

from acceptsim import report
from acceptsim.models import runner
from acceptsim.sim import scenario as scenario_mod
from acceptsim.sim.errors import ConfigError

BASE = """name = "t"
title = "t"
[base]
server = "{server}"
duration_s = 0.3
warmup_s = 0.1
[sweep]
accept_limit = [1, 10]
rate_per_s = [1000]
"""


def load(tmp_path, text: str, server: str = "userver") -> scenario_mod.Scenario:
    path = tmp_path / "s.toml"
    path.write_text(BASE.format(server=server) + text)
    return scenario_mod.load(path)


@pytest.mark.parametrize(("text", "field", "allowed"), [
    ('[plot]\ny = ["nosuch"]\n', "plot.y='nosuch'", "a column of the runs' records"),
    ('[plot]\ny = ["server"]\n', "plot.y='server'", "a column of numbers"),
    ('[plot]\ny = []\n', "plot.y=[]", "a non-empty list"),
    ('[plot]\nseries = []\n', "plot.series=[]", "a non-empty list"),
    ('[plot]\nx = "nosuch"\n', "plot.x='nosuch'", "a column of the runs' records"),
    ('[plot]\ntable = "workload"\n', "plot.table='workload'", "a column of numbers"),
    ('[plot]\nlogy = ["drops_per_s.total"]\n', "plot.logy='drops_per_s.total'", "one of plot.y"),
    ('[plot.normalise]\nmetric = "nosuch"\nat = 1000\n', "plot.normalise.metric='nosuch'",
     "a column of the runs' records"),
    ('[[expect]]\nmetric = "nosuch"\npaper = 3\n', "expect[0].metric='nosuch'",
     "a column of the runs' records"),
    ('[[expect]]\nmetric = "top:reply_rate_per_s"\npaper = 3\n', "expect[0].metric=",
     "peak:COLUMN"),
    ('[[expect]]\nmetric = "policy"\npaper = 3\n', "expect[0].metric='policy'",
     "a column of numbers"),
    ('[[expect]]\nmetric = "reply_rate_per_s"\nnosuch = 3\n', "expect[0].nosuch='nosuch'",
     "a column of the runs' records"),
    ('[plot]\ny = ["knot_switches_per_conn"]\n', "plot.y='knot_switches_per_conn'",
     "a column of the runs' records"),  # Knot's own measure, on the userver
])  # fmt: skip
def test_a_bad_column_is_refused_before_any_run(tmp_path, text, field, allowed) -> None:
    with pytest.raises(ConfigError) as refused:
        report.check_spec(load(tmp_path, text))
    message = str(refused.value)
    assert f"t: {field}" in message and allowed in message, message
    assert "\n" not in message


def test_a_servers_own_measure_and_the_sweeps_fields_are_columns(tmp_path) -> None:
    report.check_spec(load(tmp_path, '[plot]\ny = ["knot_switches_per_conn"]\n', "knot"))
    report.check_spec(load(tmp_path, '[plot]\nx = "rate_per_s"\nseries = ["accept_limit", '
                                     '"replication"]\ny = ["drops_per_s.total"]\n'))


def test_every_built_in_scenario_passes() -> None:
    for name in runner.scenarios():
        report.check_spec(runner.load_scenario(name))


def test_a_nested_column_is_checked_against_the_runs_frame(tmp_path) -> None:
    """drops_per_s.nosuch has a known base: found missing in the frame, before the figure,
    with the columns of that name."""
    s = load(tmp_path, '[plot]\ny = ["drops_per_s.nosuch"]\n')
    report.check_spec(s)  # its base is a field of the record
    frame = pd.DataFrame({"target_rate_per_s": [1.0], "accept_limit": [1],
                          "reply_rate_per_s": [1.0], "drops_per_s.total": [0.0]})
    with pytest.raises(ConfigError, match=r"plot.y='drops_per_s.nosuch'.*drops_per_s.total"):
        report.add_normalised(s, frame)
    text = load(tmp_path, '[plot]\ny = ["reply_rate_per_s"]\n')
    bad = frame.assign(reply_rate_per_s=["many"])
    with pytest.raises(ConfigError, match="a column of numbers"):
        report.add_normalised(text, bad)


def test_every_panel_zero_still_draws_a_figure(tmp_path) -> None:
    s = load(tmp_path, '[plot]\ny = ["reply_rate_per_s", "drops_per_s.total"]\n')
    frame = pd.DataFrame({"target_rate_per_s": [1.0, 2.0], "accept_limit": [1, 1],
                          "reply_rate_per_s": [0.0, 0.0], "drops_per_s.total": [0.0, 0.0]})
    report.plot(s, frame, tmp_path / "f.png")
    assert (tmp_path / "f.png").stat().st_size > 0


def test_the_rate_axis_says_connections() -> None:
    assert report.LABELS["target_rate_per_s"] == "target rate (connections/s)"
