"""Cluster-1 calibration targets beyond the userver's one-packet peaks (slow: `make test-slow`).

Each target is computed the way ``acceptsim calibrate-paper`` fits it, so
a change of model or default that moves a result out of the brief's 10 % band
(section 7) fails here.
"""

from __future__ import annotations

import math

import pytest

from acceptsim.commands.cmd_search import search_static
from acceptsim.commands.common import DEFAULT_CANDIDATES
from acceptsim.models import calibration, simulate
from acceptsim.models.costs import CLUSTER1
from acceptsim.models.workloads import SpecWeb99Params

pytestmark = pytest.mark.slow


def test_tux_one_packet_peaks_match_the_paper_within_10_percent() -> None:
    problem = calibration.PROBLEMS["tux"]
    simulated = calibration.peaks(problem, CLUSTER1, jobs=1)
    for target, peak in zip(problem.targets, simulated, strict=True):
        assert peak == pytest.approx(target.paper_peak_per_s, rel=0.10), target
    assert simulated[0] > simulated[1] * 1.05  # limit 1 beats original TUX (inf)


def test_tux_search_finds_accept_limit_1_at_24000_per_s() -> None:
    """`acceptsim search --server tux --rate 24000 --replications 3`, no indifference zone."""
    point = {"server": "tux", "workload": "one-packet", "rate_per_s": 24000.0,
             "rate_profile": "", "duration_s": 10.0, "warmup_s": 0.0, "seed": 1}
    candidates = [float(c) for c in DEFAULT_CANDIDATES.split(",")]
    out = search_static(point, candidates, "smallest", replications=3, jobs=1)
    assert out["best_accept_limit"] == 1
    assert out["argmax_accept_limit"] == 1
    curve = [e["reply_rate_per_s"] for e in out["evaluated"]]
    assert curve[0] > curve[-1] * 1.05  # 1 against inf: the paper's direction, clearly


def test_specweb_userver_inf_beats_limit_1_by_39_percent_at_30000_per_s() -> None:
    """The paper's protocol (two-minute runs from the start), as the think time is fitted."""
    problem = calibration.RATIO_PROBLEMS["specweb"]
    assert problem.duration_s == calibration.PAPER_DURATION_S and problem.warmup_s == 0.0
    think = SpecWeb99Params().think_mean_s
    assert think > 0  # the fitted default
    assert calibration.ratio(problem, think, jobs=1) == pytest.approx(1.39, rel=0.08)


def test_specweb_tux_limit_1_beats_inf_at_peak() -> None:
    """At the peak of each (target request rates 12,000 to 24,000/s, the paper's protocol),
    and with no NIC above 90%."""

    def peak(limit: float) -> float:
        runs = [
            simulate(server="tux", workload="specweb99", accept_limit=limit,
                     rate_per_s=target / 7.2, duration_s=calibration.PAPER_DURATION_S,
                     warmup_s=0.0)
            for target in (12000, 15000, 18000, 21000, 24000)
        ]  # fmt: skip
        assert max(u for r in runs for u in r["link_utilization"]) < 0.9
        return max(r["reply_rate_per_s"] for r in runs)

    assert peak(1) > peak(math.inf)


@pytest.mark.parametrize(
    "server,limit",
    [
        ("userver", math.inf),
        pytest.param("userver", 1, marks=pytest.mark.xfail(
            strict=True, reason="issue 31: the userver's one-packet limit 1 at 30,000/s is "
            "deep in its collapse, below what its SPECweb99-like limit 1 serves; no rule of "
            "2.4's send path closes the gap, and which side is off needs the paper's "
            "SPECweb99-like reply rates or the testbed's fd-unavail counts (docs/design.md, "
            "\"Replies larger than a packet\"); numbers and arithmetic: docs/design_log.md, "
            "\"Replies larger than a packet: each mechanism's effect, and the limit-1 miss\"")),
        ("tux", 1),
        ("tux", math.inf),
    ],
)
def test_specweb_replies_sit_below_one_packet_past_saturation(server, limit) -> None:
    """At 30,000 target requests/s (the paper's protocol), and no NIC above 90%."""

    def run(workload: str) -> dict:
        per_connection = 7.2 if workload == "specweb99" else 1.0
        return simulate(server=server, workload=workload, accept_limit=limit,
                        rate_per_s=30000 / per_connection,
                        duration_s=calibration.PAPER_DURATION_S, warmup_s=0.0)

    spec, one = run("specweb99"), run("one-packet")
    assert max(spec["link_utilization"] + one["link_utilization"]) < 0.9
    assert spec["reply_rate_per_s"] < one["reply_rate_per_s"]
