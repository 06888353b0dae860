"""The overload fit's optimiser, on a stand-in for the simulator with a known answer."""

from __future__ import annotations

import pytest

from acceptsim.models import calibration


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


def test_band_errors_are_zero_at_the_paper_and_one_at_the_band_edge() -> None:
    problem = calibration.JOINT_PROBLEMS["joint-cluster1"]
    overload = [t for t in calibration.OVERLOAD_TARGETS if t.name in problem.overload]
    assert calibration.band_errors(problem, [t.paper for t in problem.peaks],
                                   [t.paper for t in overload]) == [0.0] * (len(overload) + 4)
    edge = calibration.band_errors(
        problem, [t.paper * 1.10 for t in problem.peaks],
        [t.paper * (1.08 if t.kind == "ratio" else 0.90) for t in overload],
    )  # fmt: skip
    for t, e in zip(list(problem.peaks) + overload, edge, strict=True):
        kind = getattr(t, "kind", "peak")  # peaks +10%, ratios +8%, rates -10%
        assert e == pytest.approx(-1.0 if kind in ("replies", "drops") else 1.0)


def test_fit_joint_walks_every_field_to_a_known_optimum(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in simulator whose every target is met at one known point of the fields."""
    problem = calibration.JOINT_PROBLEMS["joint-cluster1"]
    base = calibration.PARAMETER_SETS[problem.costs]
    truth = {f: getattr(base, f) * 1.15 for f in problem.fields}
    overload = [t for t in calibration.OVERLOAD_TARGETS if t.name in problem.overload]

    def fake_values(problem_, costs, jobs=None):  # type: ignore[no-untyped-def]
        off = [getattr(costs, f) / truth[f] - 1 for f in problem.fields]
        # each target depends on a different mix of the fields
        def value(paper: float, i: int) -> float:
            return paper * (1 + off[i % len(off)] + 0.5 * off[(i + 1) % len(off)])
        return ([value(t.paper, i) for i, t in enumerate(problem.peaks)],
                [value(t.paper, i + 4) for i, t in enumerate(overload)])

    monkeypatch.setattr(calibration, "joint_values", fake_values)
    out = calibration.fit_joint(problem, maxfev=200)
    assert out["best"]["score"] < out["start"]["score"] / 100
    for f in problem.fields:
        assert out["values_s"][f] == pytest.approx(truth[f], rel=0.02)
