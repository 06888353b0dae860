"""The accept policy's effect on real nginx, predicted from costs measured on the host.

For every recorded set with saturated rates: calibrated on its multi_accept=on runs
(request_s alone, inside its bound) from the host's measured costs
(``tests/data/measured/host-costs.toml``), the model must give the measured
off-minus-on difference its sign at every rate where it exceeds two standard errors;
pooled over the rates, lie within half to twice the measured difference where that
exceeds its noise, and inside the measured two-standard-error band where it does not;
and predict the multi_accept=off runs with a reply-rate MAPE of at most 10%.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from acceptsim.config_io import load_measurements, load_params_file
from acceptsim.measure import find_runs, load_run
from acceptsim.measure.calibrate import bounds_for, validate

MEASURED = Path(__file__).resolve().parent / "data" / "measured"
HOST_COSTS = MEASURED / "host-costs.toml"

#: set (a folder of runs) -> its parameter file, calibrated as tests/data/measured/README.md
#: says; the host's costs are those of the machine of every set but nginx-loopback-quota
SETS = {
    "nginx-loopback-quotas/quota-0.1": "nginx-loopback-quotas.params.toml",
    "nginx-loopback-quotas/quota-0.15": "nginx-loopback-quotas.params.toml",
    "nginx-loopback-quotas/quota-0.2": "nginx-loopback-quotas.params.toml",
    "nginx-loopback-workers/workers-1": "nginx-loopback-workers.params.toml",
    "nginx-loopback-timeseries/quota-0.2-period-100000us": "nginx-loopback-timeseries.params.toml",
    "nginx-loopback-timeseries/quota-0.25-period-4000us": "nginx-loopback-timeseries.params.toml",
    "nginx-loopback-quota": "nginx-loopback-quota.params.toml",
}

#: sets the model misses, and why (each a strict xfail: it fails the day it passes)
MISSED: dict[str, str] = {
    "nginx-loopback-quota": "recorded on an older Intel machine whose costs were never "
    "measured; calibrated on the cluster-1 costs (a failed accept cheaper than an "
    "epoll_wait, no wake-up cost or latency) the model predicts a multi_accept=off penalty "
    "several times the measured one: the penalty's size follows those machine costs; "
    "numbers: tests/data/measured/README.md, \"The recalibration from measured costs\"",
    "nginx-loopback-timeseries/quota-0.2-period-100000us": "at 4,000/s, just past "
    "saturation, the measured multi_accept=off runs serve 151 +/- 75 replies/s more than "
    "the on runs (two standard errors: the criterion's edge) and the model gives off 13 "
    "fewer (16 +/- 1 over eight seeds, before a tick's timers ran in the wheel's order), "
    "since the clients got their two clocks and their turns' bursts (before: 59 more); "
    "the other rates, the pooled difference and both MAPEs "
    "(3.1% on, 4.2% off) hold; numbers: tests/data/measured/README.md, "
    "\"The client's two clocks\"",
}

#: the most the multi_accept=off runs' reply-rate MAPE may be (%)
MAX_OFF_MAPE = 10.0


def policy_effect(folder: str) -> dict:
    runs = [load_run(d) for d in find_runs(MEASURED / folder)]
    costs, _ = load_params_file(MEASURED / SETS[folder])
    return validate(runs, costs)


def check(report: dict) -> None:
    direction = report["direction"]
    assert direction["wrong"] == 0, [r for r in direction["rates"]
                                     if r["direction_right"] is False]
    pooled = direction["pooled"]
    measured, stderr = pooled["measured_off_minus_on"], pooled["measured_diff_stderr"]
    predicted = pooled["predicted_off_minus_on"]
    if pooled["exceeds_noise"]:
        assert 0.5 <= predicted / measured <= 2.0, pooled
    else:
        assert abs(predicted - measured) <= 2 * stderr, pooled
    assert report["mape_reply_rate_by_multi_accept"]["off"] <= MAX_OFF_MAPE, report[
        "mape_reply_rate_by_multi_accept"]


@pytest.mark.parametrize("folder", [
    pytest.param(f, marks=pytest.mark.xfail(strict=True, reason=MISSED[f])) if f in MISSED
    else f for f in SETS
])  # fmt: skip
def test_the_policy_effect_on_each_measured_set(folder: str) -> None:
    check(policy_effect(folder))


@pytest.mark.parametrize("params", sorted(set(SETS.values()) - {
    "nginx-loopback-quota.params.toml"}))  # fmt: skip
def test_each_fitted_cost_lies_inside_its_bound_and_off_it(params: str) -> None:
    """What a calibration of this host fitted stays inside the bound its measurements
    give, and not on it (a cost on its bound is a missing mechanism)."""
    measured = load_measurements(HOST_COSTS)
    costs, _ = load_params_file(MEASURED / params)
    bound = bounds_for("request_s", measured)
    assert bound.low * 1.01 < costs.request_s < bound.high * 0.99
    host, _ = load_params_file(HOST_COSTS)
    for name in ("accept_s", "accept_empty_s", "epoll_base_s", "epoll_ctl_s", "close_s",
                 "wakeup_s", "wakeup_latency_s"):
        assert getattr(costs, name) == getattr(host, name), name  # measured, not fitted
    assert load_measurements(MEASURED / params) == measured  # carried into the file
