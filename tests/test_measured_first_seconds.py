"""The first seconds past saturation (issue 47), on the measured time-series sets
(tests/data/measured/nginx-loopback-timeseries: one nginx worker under a CPU quota, 100-ms
and 4-ms periods, 8-s runs of httperf with a 1-s timeout, six repeats a point).

Past saturation the real nginx serves more in its first second than from its fourth on:
the reply rate over the intervals that end within the first second over that of the
intervals ending between 4 and 8 s is 1.13-1.14 at 6,000/s (100-ms periods, multi_accept
on and off; 4-ms periods, on), 1.07 at 5,000/s (100 ms, on) and 1.10 at 5,500/s (4 ms, on),
each more than two standard errors of its six repeats above 1.  Its accept queue
overflows from 0.2-0.6 s in every repeat at these rates, so the excess is not a queue
filling before its first overflow; it is the time before the client's 1-s timeout and the
first SYN retransmissions set in (the handshakes httperf completes and closes without a
request come only then).  Below saturation neither the real nginx nor the model has an
excess.  Part of it is the quota's first period: the load starts at an arbitrary instant
of the periods' grid, with a whole quota waiting (the strict xfail below has the rest).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from acceptsim.config_io import load_params_file
from acceptsim.measure import find_runs, load_run
from acceptsim.measure.timeseries_check import nominal_interval_s, simulated_series

pytestmark = pytest.mark.slow

MEASURED = Path(__file__).resolve().parent / "data" / "measured"
#: the time-series sets (and the costs they are predicted with: tests/data/measured/README.md)
SETS = ("nginx-loopback-timeseries/quota-0.2-period-100000us",
        "nginx-loopback-timeseries/quota-0.25-period-4000us")
COSTS = "nginx-loopback-timeseries.params.toml"
#: the first second, and the late part of the run the excess is measured against (s)
FIRST_S = (0.0, 1.0)
LATE_S = (4.0, 8.0)
#: the model's seeds (its first second differs from seed to seed by a few percent)
SEEDS = (1, 2)


def excess(series: pd.DataFrame) -> float:
    """The reply rate over the intervals ending within :data:`FIRST_S` over that over the
    intervals ending within :data:`LATE_S`."""
    t = series["time_s"].to_numpy(dtype=float)
    rate = series["reply_rate_per_s"].to_numpy(dtype=float)

    def mean(span: tuple[float, float]) -> float:
        return float(rate[(t > span[0]) & (t <= span[1])].mean())

    return mean(FIRST_S) / mean(LATE_S)


@pytest.fixture(scope="module")
def points() -> list[dict]:
    """Per point (set, multi_accept, target rate): the measured excess over its repeats
    (mean and standard error), its late reply rate, and the model's excess (mean over
    :data:`SEEDS`)."""
    costs = load_params_file(MEASURED / COSTS)[0]
    out = []
    for folder in SETS:
        groups: dict[tuple[bool, float], list] = {}
        for d in find_runs(MEASURED / folder):
            run = load_run(d)
            groups.setdefault(
                (run.info.server.multi_accept, run.info.load.target_rate_per_s), []
            ).append(run)
        for (multi_accept, rate), runs in sorted(groups.items()):
            series = [r.timeseries() for r in runs]
            measured = [excess(s) for s in series]
            late = float(np.mean([
                s["reply_rate_per_s"][(s["time_s"] > LATE_S[0]) & (s["time_s"] <= LATE_S[1])]
                .mean() for s in series]))
            interval = nominal_interval_s(runs[0], series[0])
            model = float(np.mean([excess(simulated_series(runs[0], costs, interval, seed))
                                   for seed in SEEDS]))
            out.append({
                "point": (folder.split("/")[-1], multi_accept, rate),
                "measured": float(np.mean(measured)),
                "error": float(np.std(measured, ddof=1) / np.sqrt(len(measured))),
                "late_per_s": late,
                "model": model,
            })
    return out


def test_below_saturation_neither_serves_more_in_its_first_second(points: list[dict]) -> None:
    """Where the real nginx keeps up (its late reply rate within 5% of the target: 3,000/s
    at 100-ms periods, 4,000/s at 4 ms), the first second's rate is the late one within
    3%, measured and simulated."""
    below = [p for p in points if p["late_per_s"] >= 0.95 * p["point"][2]]
    assert len(below) >= 4, [p["point"] for p in below]
    for p in below:
        assert abs(p["measured"] - 1.0) <= 0.03, p
        assert abs(p["model"] - 1.0) <= 0.03, p


@pytest.mark.xfail(strict=True, reason=(
    "the model's first second is 3.5-5.4% above its late rate at 100-ms periods and "
    "1.0-2.1% at 4 ms, where the real nginx's is 7.2-14.1% above: 0.38-0.48 of the "
    "measured excess at 100 ms, 0.10-0.15 at 4 ms (2026-12-07).  The part the model has "
    "is the CPU: a server idle before the load holds a whole quota when it starts, "
    "wherever the start falls in the period (models.host.start_phase), so its first "
    "second holds up to a period's quota more; measured, nginx used 1.01-1.06 of its "
    "quota in the first second at 100 ms, and 0.97-0.98 at 4 ms, where a period's "
    "quota is 1 ms.  The part it lacks is the work per reply: the measured replies per "
    "CPU-millisecond fall by 10-13% when the client's timeout and the first SYN "
    "retransmissions set in (at 4 ms, 6,000/s: 188 over 0-1 s, 166 over 1.5-2 s, "
    "163 after).  The handshakes httperf completes and closes without a request "
    "begin then (about 740/s there, from the kernel's passive opens less the replies), "
    "but to take that CPU each would have to cost about 44 us, where the accept, "
    "epoll_ctl and close measured on this host sum to 13 us (and a read that finds the "
    "FIN); the model also completes fewer of them than measured "
    "(tests/test_two_clocks.py).  Profiled (tests/data/measured/README.md, \"Where "
    "nginx's CPU goes past saturation\"), the CPU per reply grows after the first second "
    "in every call alike, nginx's own code included (below saturation it does not): not "
    "a cost per handshake without a request"))
def test_past_saturation_the_first_seconds_excess_is_the_measured_one(
    points: list[dict],
) -> None:
    """Wherever the measured excess lies more than two standard errors above 1, the
    model's excess is at least half the measured one and at most one and a half times it."""
    past = [p for p in points if p["measured"] - 1.0 > 2.0 * p["error"]]
    assert len(past) >= 4, [p["point"] for p in past]
    for p in past:
        assert 0.5 <= (p["model"] - 1.0) / (p["measured"] - 1.0) <= 1.5, p
