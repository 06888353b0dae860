"""Property tests: conservation and queue capacities hold for every new server and workload."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from models.experiment import RunConfig, simulate


@settings(max_examples=12, deadline=None)
@given(
    server=st.sampled_from(["tux", "knot", "knot-a"]),
    limit=st.one_of(st.integers(min_value=1, max_value=200), st.just(math.inf)),
    rate=st.floats(min_value=500.0, max_value=35000.0),
    workload=st.sampled_from(["one-packet", "specweb99"]),
    seed=st.integers(min_value=0, max_value=2**16),
)
def test_every_connection_has_exactly_one_outcome(server, limit, rate, workload, seed):
    if workload == "specweb99":
        rate /= 7.2
    r = simulate(RunConfig(server=server, accept_limit=limit, rate_per_s=rate, workload=workload,
                           duration_s=1.2, warmup_s=0.4, seed=seed))
    c = r["connections"]
    assert c["attempted"] == c["completed"] + c["timed_out"] + c["in_flight_at_end"]
    q = r["queues"]
    assert q["accept_queue_max"] <= q["accept_queue_capacity"]
    assert q["syn_queue_max"] <= q["syn_queue_capacity"]
    assert 0.0 <= r["cpu_share"]["idle"] <= 1.0
    assert r["reply_rate_per_s"] >= 0.0
    if r["accepts_per_phase"] is not None:
        assert r["accepts_per_phase"] <= limit


def test_same_seed_same_result():
    a = simulate(RunConfig(server="knot", accept_limit=50, rate_per_s=15000.0, duration_s=1.0,
                           warmup_s=0.3, seed=7))
    b = simulate(RunConfig(server="knot", accept_limit=50, rate_per_s=15000.0, duration_s=1.0,
                           warmup_s=0.3, seed=7))
    for key in ("reply_rate_per_s", "accept_rate_per_s", "drops_per_s", "threads_busy_mean"):
        assert a[key] == b[key]
