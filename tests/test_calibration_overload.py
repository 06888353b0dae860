"""The overload fit's optimiser, on a stand-in for the simulator with a known answer."""

from __future__ import annotations

import pytest

from models import calibration


def test_fit_overload_finds_the_value_where_every_target_is_met(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    problem = calibration.OVERLOAD_PROBLEMS["overload"]
    truth = 0.1e-6  # inside the problem's bounds

    def fake_values(targets, costs, jobs=None):  # type: ignore[no-untyped-def]
        value = getattr(costs[problem.costs], problem.field)
        return [t.paper * (1 + (value - truth) / truth) for t in targets]

    monkeypatch.setattr(calibration, "overload_values", fake_values)
    out = calibration.fit_overload(problem)
    assert out["value"] == pytest.approx(truth, abs=problem.xatol)
    assert [t.name for t in out["targets"]] == list(problem.targets)
    for t, v in zip(out["targets"], out["values"], strict=True):
        assert v == pytest.approx(t.paper, rel=0.05)
    assert out["evaluations"] >= 3
