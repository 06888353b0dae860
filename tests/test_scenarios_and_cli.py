"""Scenario files validate; the CLI's JSON contract holds for every server and workload."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from acceptsim import report
from acceptsim.cli import main
from acceptsim.models.experiment import RunConfig
from acceptsim.models.runner import scenarios as available
from acceptsim.sim import scenario

SCENARIOS = sorted(
    (Path(__file__).resolve().parents[1] / "acceptsim" / "scenarios").glob("*.toml"))


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_every_scenario_point_is_a_valid_run(path):
    s = scenario.load(path)
    for point in s.points():
        RunConfig.from_dict(point)
    assert s.name in available()


@pytest.mark.parametrize(
    "server,limit,workload",
    [("tux", "1", "one-packet"), ("knot", "50", "one-packet"), ("knot-a", "inf", "one-packet"),
     ("userver", "inf", "specweb99"), ("tux", "inf", "specweb99")],
)
def test_run_json_contract(capsys, server, limit, workload):
    code = main(["run", "--server", server, "--accept-limit", limit, "--workload", workload,
                 "--rate", "2000", "--duration", "1.5", "--format", "json"])
    assert code == 0
    record = json.loads(capsys.readouterr().out)
    for key in ("reply_rate_per_s", "accept_rate_per_s", "accept_phases_per_s",
                "accepts_per_phase", "select_calls_per_s", "drops_per_s", "connections",
                "target_request_rate_per_s"):
        assert key in record
    assert (record["select_calls_per_s"] is None) == (server != "userver")
    assert ("threads_busy_mean" in record) == server.startswith("knot")


def test_unknown_server_is_one_line_and_status_2(capsys):
    assert main(["run", "--server", "apache", "--rate", "10", "--duration", "1"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_equation1_table_orders_servers_and_limits():
    frame = pd.DataFrame(
        [
            {"server": s, "workload": "one-packet", "accept_limit": lim,
             "target_rate_per_s": 24000.0, "accept_phases_per_s": ph, "accepts_per_phase": per,
             "accept_rate_per_s": ph * per, "reply_rate_per_s": ph * per}
            for s, lim, ph, per in [("tux", "inf", 150.0, 130.0), ("tux", 1, 23000.0, 1.0),
                                    ("userver", 1, 19000.0, 1.0),
                                    ("userver", "inf", 150.0, 140.0)]
        ]
    )
    rows = report.equation1_rows([frame])
    assert [(r["server"], r["accept_limit"]) for r in rows] == [
        ("tux", "1"), ("tux", "inf"), ("userver", "1"), ("userver", "inf")]
    text = report.equation1_section([frame])
    assert "tux: accept-limit 1 -> raises" in text
    assert "userver: accept-limit 1 -> lowers" in text
