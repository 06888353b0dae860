"""nginx's CPU per reply against the idle time before each request, measured
(tests/data/measured/nginx-loopback-idle-gaps): one worker pinned to CPU 0 with no
limit (a 1.0-CPU group, never throttled, so that its CPU time is counted), one httperf
process sending a connection every 10, 4, 2, 1, 0.5 and 0.25 ms (100-4,000/s, evenly
spaced), against the model with the costs of ``nginx-loopback-cgroup-scopes.params.toml``
(measured and fitted on the same machine ten minutes later).

What holds: every connection served, and CPU per reply falling as the gaps shorten.
What misses, kept as strict xfails with the numbers:

- the sleeps: the measured worker sleeps once per connection up to 1,000/s, the model's
  twice (it waits for the client's FIN after each reply, where on loopback the FIN
  arrives while nginx is still finishing the request);
- the cold cost: after 10 ms idle a reply costs 226 us measured, the model's 146 us; the
  microbenchmark's cold cost (a few kilobytes of state) is smaller than nginx's.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from acceptsim.config_io import load_params_file
from acceptsim.measure import find_runs, load_run
from acceptsim.measure.calibrate import config_for
from acceptsim.models.runner import run_point

DATA = Path(__file__).resolve().parent / "data" / "measured"
SET = DATA / "nginx-loopback-idle-gaps"
COSTS = load_params_file(DATA / "nginx-loopback-cgroup-scopes.params.toml")[0]
RATES = (100.0, 250.0, 500.0, 1000.0, 2000.0, 4000.0)


def measured_at(rate: float) -> list[tuple[float, float]]:
    """Each repeat's nginx CPU seconds per reply (its group's usage) and sleeps per reply
    (its voluntary context switches), from the run's time series."""
    out = []
    for d in find_runs(SET):
        run = load_run(d)
        if run.info.load.target_rate_per_s != rate:
            continue
        series = run.timeseries()
        replies = run.record()["replies_2xx"]
        usage = series["usage_ms"].sum() * 1e-3
        sleeps = (series["server_sleeps_per_s"] * series["interval_s"]).sum()
        out.append((usage / replies, sleeps / replies))
    assert len(out) == 3
    return out


def simulated_at(rate: float) -> tuple[float, float]:
    """The model's CPU seconds per reply and sleeps per reply for the first repeat."""
    run = next(load_run(d) for d in find_runs(SET)
               if load_run(d).info.load.target_rate_per_s == rate)
    rec = run_point(config_for(run, COSTS), checked=False)
    share = rec["cpu_share"]
    busy = 1.0 - share["idle"] - share.get("kernel", 0.0)
    return busy / rec["reply_rate_per_s"], rec["epoll_sleeps_per_s"] / rec["reply_rate_per_s"]


def test_every_connection_was_served_and_nothing_throttled() -> None:
    runs = [load_run(d) for d in find_runs(SET)]
    assert len(runs) == 18
    for run in runs:
        rec = run.record()
        assert not run.client_limited
        assert rec["replies_2xx"] == run.info.load.target_rate_per_s * run.info.load.duration_s
        assert run.info.server.cpu_quota == 1.0 and run.info.load.spacing == "deterministic"
        assert run.timeseries()["throttled_periods"].sum() == 0


def test_a_reply_costs_more_the_longer_the_cpu_stood_idle_before_it() -> None:
    """Measured and simulated alike: CPU per reply falls as the gaps shorten."""
    measured = [np.mean([m[0] for m in measured_at(rate)]) for rate in RATES]
    simulated = [simulated_at(rate)[0] for rate in RATES]
    assert measured == sorted(measured, reverse=True), measured
    assert simulated == sorted(simulated, reverse=True), simulated


@pytest.mark.xfail(strict=True, reason=(
    "the model's worker sleeps twice per connection where the real one sleeps once or "
    "less: after each reply the model's nginx waits for the client's FIN, which on "
    "loopback arrives while the real one is still finishing the request (logging it); "
    "numbers: tests/data/measured/README.md, nginx-loopback-idle-gaps"))
@pytest.mark.parametrize("rate", RATES)
def test_the_worker_sleeps_as_often_as_measured(rate: float) -> None:
    measured = np.mean([m[1] for m in measured_at(rate)])
    assert simulated_at(rate)[1] == pytest.approx(measured, abs=0.15)


@pytest.mark.xfail(strict=True, reason=(
    "after a long idle a reply costs nginx more than the model charges: the cold cost "
    "(wakeup_cold_s) is measured by a microbenchmark whose state is a few kilobytes; "
    "nginx's is larger; numbers: tests/data/measured/README.md, nginx-loopback-idle-gaps"))
@pytest.mark.parametrize("rate", [100.0, 250.0])
def test_after_a_long_idle_a_reply_costs_what_it_measured(rate: float) -> None:
    measured = np.mean([m[0] for m in measured_at(rate)])
    assert simulated_at(rate)[0] == pytest.approx(measured, rel=0.15)
