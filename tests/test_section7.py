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

#: where every number of these targets is kept, paper against model (written by
#: `acceptsim calibrate-paper section7`); the reasons below name only the mechanism
NUMBERS = ('docs/design_log.md, "Past saturation: the fitted numbers, what is still wrong, '
           'the joint fit"')
#: what each miss lacks, and what would settle it
MISSING = 'docs/design.md, "What the remaining overload misses need"'

#: targets the current mechanisms miss, with whether the miss is clear (strict) or on the
#: boundary of the band
KNOWN_MISSES = {
    "userver_1_replies_20k": (False, "limit 1 collapses less deeply at 20,000/s than the "
                              "paper's, at the fitted client loop cost: on the band's edge; "
                              f"numbers: {NUMBERS}"),
    "userver_inf_over_1_21k": (True, "no bound on the clients' sockets: limit 1 keeps falling "
                               "from 20,000 to 30,000/s in the model while the paper's falls "
                               "at once and levels off, so one client loop cost trades "
                               f"21,000/s against 30,000/s ({MISSING}); numbers: {NUMBERS}"),
    "userver_inf_over_1_30k": (True, "no bound on the clients' sockets (the same trade-off: "
                               f"{MISSING}); numbers: {NUMBERS}"),
    "knot_50_over_1_14k": (True, "nothing in the model's Knot-C grows with the load past its "
                           "peak but kernel work, so its middle limit gains too little just "
                           f"past the peak ({MISSING}); numbers: {NUMBERS}"),
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
