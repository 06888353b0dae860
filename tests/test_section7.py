"""Brief section 7's overload numbers under the paper's protocol (slow: `make test-slow`).

Every target is simulated as ``acceptsim calibrate-paper section7`` does:
two-minute runs measured from their start, default parameter sets.  Reply rates
must be within 10 % of the paper, ratios within 8 %.  Targets the model does not
meet yet are marked ``xfail(strict=True)`` with the reason, so that they are seen
in every slow run and the mark must go when a mechanism brings them in.
"""

from __future__ import annotations

import pytest

from acceptsim.models import calibration

pytestmark = pytest.mark.slow

#: targets the current mechanisms miss (see the overload-fidelity issue's notes), with
#: whether the miss is clear (strict) or on the boundary of the band
KNOWN_MISSES = {
    "userver_1_replies_20k": (False, "+10.3% at the fitted client loop cost, on the band's edge: "
                              "limit 1 collapses less deeply at 20,000/s than the paper's"),
    "userver_inf_over_1_21k": (True, "-12.6%: limit 1 keeps falling from 20,000 to 30,000/s "
                               "in the model while the paper's falls at once and levels off, "
                               "so one client loop cost trades 21,000/s against 30,000/s"),
    "userver_inf_over_1_30k": (True, "+11.1% at the fitted client loop cost (the same "
                               "trade-off)"),
    "knot_50_over_1_14k": (True, "Knot-C's middle limit gains too little just past its peak "
                           "(-12.7%)"),
}


def _cases() -> list[object]:
    out = []
    for t in calibration.OVERLOAD_TARGETS:
        marks = ()
        if t.name in KNOWN_MISSES:
            strict, reason = KNOWN_MISSES[t.name]
            marks = (pytest.mark.xfail(strict=strict, reason=reason),)
        out.append(pytest.param(t, id=t.name, marks=marks))
    return out


@pytest.mark.parametrize("target", _cases())
def test_section7_overload_target(target: calibration.OverloadTarget) -> None:
    (value,) = calibration.overload_values([target], jobs=2)
    tolerance = 0.08 if target.kind == "ratio" else 0.10
    assert value == pytest.approx(target.paper, rel=tolerance)
