"""``acceptsim reproduce --protocol paper``: every run two minutes, measured from its start."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from acceptsim.cli import main
from acceptsim.models.calibration import PAPER_DURATION_S

SCENARIO = """\
name = "one-quiet-point"
title = "one point well below saturation"
[base]
server = "userver"
rate_per_s = 200
duration_s = 2
warmup_s = 0.5
[sweep]
accept_limit = [1]
"""


def reproduce(tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    code = main(["reproduce", str(scenario), "--jobs", "1", "--out", str(tmp_path / "o"), *extra])
    return code, capsys.readouterr().err


def test_paper_protocol_runs_every_point_two_minutes_from_its_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = reproduce(tmp_path, capsys, "--protocol", "paper")
    assert code == 0, err
    frame = pd.read_csv(tmp_path / "o" / "one-quiet-point.csv")
    assert list(frame["duration_s"]) == [PAPER_DURATION_S] and list(frame["warmup_s"]) == [0.0]
    report = (tmp_path / "o" / "report.md").read_text()
    assert "the paper's protocol, every run 120 s measured from its start" in report


def test_scenario_protocol_keeps_the_scenarios_run_lengths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = reproduce(tmp_path, capsys)
    assert code == 0, err
    frame = pd.read_csv(tmp_path / "o" / "one-quiet-point.csv")
    assert list(frame["duration_s"]) == [2.0] and list(frame["warmup_s"]) == [0.5]
    assert "each scenario's own duration and warm-up" in (tmp_path / "o" / "report.md").read_text()


@pytest.mark.parametrize("flag", ["--duration", "--warmup"])
def test_paper_protocol_with_a_run_length_is_refused_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    code, err = reproduce(tmp_path, capsys, "--protocol", "paper", flag, "5")
    assert code == 2
    assert err.count("\n") == 1 and flag.lstrip("-") in err and "--protocol paper" in err
    assert not (tmp_path / "o").exists()  # refused before anything ran or was written
