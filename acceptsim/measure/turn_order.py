"""The order of httperf's turns, from the SYNs the kernel retransmitted.

httperf's processes busy-poll, so k of them on one client CPU take turns of a scheduler
tick, and a step is given up at its deadline only if its process is running then, else
at its process's next turn; a dropped SYN's retransmission, due 1-8 ticks after the
250th (HZ=250, the timer wheel's bucket), still goes out if it comes first.  Where a
deadline finds its process depends on whether the round kept its order for the second
since the step began (``RunConfig.client_turn_order_s``): if it did, the deadline falls
250 mod k ticks into the round that started the step; if not, anywhere.  So the fraction
of the connections beyond the replies whose SYN the kernel retransmitted
(``TcpExtTCPSynRetrans`` over rate minus replies) measures the order, point by point,
and :func:`fit_turn_order` finds the mean time the order lasts that the model needs to
give the measured fractions (``acceptsim.measure.testbed.CLIENT_TURN_ORDER_S``;
``tools/fit_turn_order.py``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from acceptsim.measure import calibrate
from acceptsim.measure.run import MeasuredRun, find_runs, load_run
from acceptsim.models.costs import HostCosts

#: points whose kernel retransmitted fewer SYNs a second than this say little (a few
#: dozen retransmissions over a run)
MIN_RETRANSMISSIONS_PER_S = 50.0


@dataclass(frozen=True)
class FractionPoint:
    """One point of a measured set (a server setting and rate, its repeats): the fraction
    of its connections beyond the replies whose SYN the kernel retransmitted, measured
    (the repeats' means) and simulated (one seed), and its httperf processes per CPU."""

    name: str
    processes_per_cpu: int
    measured: float
    simulated: float


def _points(folder: Path) -> dict[tuple[str, bool, float], list[MeasuredRun]]:
    """The runs of ``folder`` by point (their directory, multi_accept, rate), the
    client-limited runs and those without the retransmission counter left out."""
    points: dict[tuple[str, bool, float], list[MeasuredRun]] = {}
    for d in find_runs(folder):
        run = load_run(d)
        if run.client_limited or "TcpExtTCPSynRetrans" not in run.counter_deltas:
            continue
        key = (d.parent.name, run.info.server.multi_accept, run.info.load.target_rate_per_s)
        points.setdefault(key, []).append(run)
    return points


def retransmitted_fractions(
    sets: Iterable[tuple[Path, HostCosts]],
    turn_order_s: float | None = None,
    seed: int = 1,
) -> list[FractionPoint]:
    """Per point of each measured set (a folder of runs and the costs it is simulated
    with) whose kernel retransmitted more than :data:`MIN_RETRANSMISSIONS_PER_S` SYNs a
    second: the fraction of its connections beyond the replies whose SYN the kernel
    retransmitted, measured and simulated.  ``turn_order_s``: simulate with this mean
    time the order of the turns lasts (the sampler's rate added where a run had one, as
    :func:`~acceptsim.measure.calibrate.turn_order_s` does; a run whose turns were traced
    keeps its own); None: as the runs are simulated (the testbed's, or a traced run's
    own).  A point whose runs were all traced is simulated once per run, each with its
    own order, and the fractions averaged; any other with its first run's
    configuration."""
    from acceptsim.models.runner import run_point

    found = []
    for folder, costs in sets:
        for key, runs in sorted(_points(folder).items()):
            rate = key[2]
            retransmitted = float(np.mean([
                r.counter_deltas["TcpExtTCPSynRetrans"] / r.info.load.duration_s for r in runs]))
            if retransmitted <= MIN_RETRANSMISSIONS_PER_S:
                continue
            beyond = rate - float(np.mean([
                r.record()["replies_2xx"] / r.info.load.duration_s for r in runs]))
            # a point whose runs traced their turns: each run with its own order, the
            # fractions' mean; else its first run's configuration
            simulated = []
            for run in runs if all(r.turns is not None for r in runs) else runs[:1]:
                config = calibrate.config_for(run, costs, seed).replace(
                    timeseries_interval_s=1.0)
                if turn_order_s is not None and not config.client_turn_delays:
                    config = config.replace(
                        client_turn_order_s=calibrate.turn_order_s(run, turn_order_s))
                record = run_point(config, timeseries=True, checked=False)
                simulated.append(float(np.mean(record["timeseries"]["syn_retrans_per_s"]))
                                 / (rate - record["reply_rate_per_s"]))
            found.append(FractionPoint(
                f"{folder.name}/{key[0]} multi_accept={'on' if key[1] else 'off'} {rate:g}/s",
                config.client_processes_per_cpu, retransmitted / beyond,
                float(np.mean(simulated))))
    return found


def rms_error(points: Sequence[FractionPoint]) -> float:
    """The root mean square of the simulated fractions' errors."""
    return math.sqrt(float(np.mean([(p.simulated - p.measured) ** 2 for p in points])))


def fit_turn_order(
    sets: Sequence[tuple[Path, HostCosts]], candidates: Sequence[float], seed: int = 1
) -> list[tuple[float, float]]:
    """Each candidate mean time the order lasts (seconds; 0: none) with the root mean
    square error of the retransmitted fractions it gives over ``sets``, in the order
    given."""
    return [(order, rms_error(retransmitted_fractions(sets, order, seed)))
            for order in candidates]
