"""The paper's userver results: calibration targets and directions (slow: `make test-slow`).

Peaks are taken the way the costs were fitted (see ``acceptsim/models/costs.py``):
best reply rate over target rates 17k..25k, 8 s runs with 3 s warm-up.
"""

from __future__ import annotations

import math
from concurrent.futures import ProcessPoolExecutor

import pytest

from acceptsim.models import simulate

pytestmark = pytest.mark.slow

RATES = range(17000, 25001, 1000)


def _reply_rate(args: tuple[float, float]) -> float:
    limit, rate = args
    return simulate(accept_limit=limit, rate_per_s=rate, duration_s=8, warmup_s=3)[
        "reply_rate_per_s"
    ]


def _peak(limit: float) -> float:
    with ProcessPoolExecutor(2) as pool:
        return max(pool.map(_reply_rate, [(limit, r) for r in RATES]))


@pytest.mark.parametrize(("limit", "paper"), [(1, 19500), (10, 22000)])
def test_userver_one_packet_peak_matches_the_paper_within_10_percent(limit, paper) -> None:
    assert _peak(limit) == pytest.approx(paper, rel=0.10)


def test_userver_gains_from_higher_accept_limits_past_saturation() -> None:
    rates = {lim: _reply_rate((lim, 27000)) for lim in (1, 10, math.inf)}
    assert rates[10] > rates[1]
    assert rates[math.inf] > rates[1] * 1.05  # "much better than limit-1 past it"


def test_higher_limits_make_the_userver_burstier() -> None:
    def run(limit: float) -> dict:
        return simulate(accept_limit=limit, rate_per_s=24000, duration_s=8, warmup_s=3)

    one, ten, inf = run(1), run(10), run(math.inf)
    assert one["conns_per_work_phase"] < ten["conns_per_work_phase"] < inf["conns_per_work_phase"]
    assert one["accepts_per_phase"] < ten["accepts_per_phase"] < inf["accepts_per_phase"]
    # fewer, larger accept phases: Equation 1's factors move in opposite directions
    assert one["accept_phases_per_s"] > ten["accept_phases_per_s"] > inf["accept_phases_per_s"]
