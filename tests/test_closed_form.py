"""A queue stage checked against its closed form within a confidence interval.

With every cost zero except a deterministic per-request cost D, the userver
is an M/D/1 queue for requests: a request that arrives while the server works
is accepted and then served after everything already ready (select, accept
and close cost nothing), so service is first-come first-served.  The
response time the client measures (request sent -> reply received) is one
round trip (the ACK+request going out, the reply coming back) plus the M/D/1
sojourn time D + lambda D^2 / (2 (1 - rho)).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from acceptsim.models import RunConfig, simulate
from acceptsim.models.costs import HostCosts

#: every CPU cost (seconds, or seconds per unit) set to zero
ZERO = {row["name"]: 0.0 for row in HostCosts.describe() if row["unit"].startswith("s")}


def md1_response_time(rate: float, service: float, rtt: float) -> float:
    rho = rate * service
    return rtt + service + rate * service**2 / (2 * (1 - rho))


def test_mean_response_time_matches_md1_within_a_95pct_ci() -> None:
    rate, service, rtt = 5000.0, 100e-6, 100e-6
    costs = HostCosts(**{**ZERO, "request_s": service})
    means = []
    for rep in range(8):
        config = RunConfig(
            rate_per_s=rate,
            accept_limit=math.inf,
            costs=costs,
            duration_s=3.0,
            warmup_s=0.5,
            seed=1000 + rep,
        )
        means.append(simulate(config)["response_time_ms"]["mean"] / 1e3)
    means_arr = np.array(means)
    half = stats.t.ppf(0.975, len(means) - 1) * means_arr.std(ddof=1) / math.sqrt(len(means))
    expected = md1_response_time(rate, service, rtt)
    assert abs(means_arr.mean() - expected) <= half, (means_arr.mean(), half, expected)
    # and the check is sharp enough to notice an M/M/1 answer instead
    mm1 = rtt + service / (1 - rate * service)
    assert abs(means_arr.mean() - mm1) > half
