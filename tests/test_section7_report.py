"""The report's section-7 table and Equation 1 past saturation (shortened runs)."""

from __future__ import annotations

import pytest

from acceptsim.commands import cmd_reproduce as reproduce
from acceptsim.models import calibration


def test_section7_section_has_every_target_and_equation1_at_20000_and_30000(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(calibration, "PAPER_DURATION_S", 1.0)  # the protocol, shortened
    text = reproduce.section7(jobs=1)
    for target in calibration.OVERLOAD_TARGETS:
        assert target.what in text
    assert "Equation 1 at 20,000 connections/s" in text
    assert "Equation 1 at 30,000 connections/s" in text
    fitted_rows = [line for line in text.splitlines() if line.endswith("| yes |")]
    assert len(fitted_rows) == len(calibration.OVERLOAD_PROBLEMS["overload"].targets)
