"""Property tests: conservation and capacities hold for every architecture of issue 7."""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.experiment import RunConfig, simulate
from models.servers.dispatch import SERVERS as DISPATCH
from models.servers.flash import SERVERS as FLASH
from models.servers.twoclass import SERVERS as TWOCLASS

SERVERS = sorted(DISPATCH) + sorted(FLASH) + sorted(TWOCLASS)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    server=st.sampled_from(SERVERS),
    limit=st.one_of(st.integers(min_value=1, max_value=50), st.just(math.inf)),
    rate=st.floats(min_value=500.0, max_value=30000.0),
    workload=st.sampled_from(["one-packet", "fileset", "specweb99"]),
    idle=st.sampled_from([0, 100]),
    seed=st.integers(min_value=0, max_value=2**16),
)
def test_every_connection_has_exactly_one_outcome(server, limit, rate, workload, idle, seed):
    if workload == "specweb99":
        rate /= 7.2
    server_params = {"bg_rate_per_s": 50} if server in TWOCLASS else {}
    if server in FLASH:
        server_params = {"cache_bytes": 50e6}
    r = simulate(RunConfig(
        server=server, accept_limit=limit, rate_per_s=rate, workload=workload,
        idle_connections=idle if server in DISPATCH else 0, server_params=server_params,
        workload_params={"dataset_bytes": 200e6} if workload == "fileset" else {},
        duration_s=1.0, warmup_s=0.3, seed=seed,
    ))
    c = r["connections"]
    assert c["attempted"] == c["completed"] + c["timed_out"] + c["in_flight_at_end"]
    q = r["queues"]
    assert q["accept_queue_max"] <= q["accept_queue_capacity"]
    assert q["syn_queue_max"] <= q["syn_queue_capacity"]
    assert abs(sum(r["cpu_share"].values()) - 1.0) < 1e-9
    assert -1e-9 <= r["cpu_share"]["idle"] <= 1.0
    if r["accepts_per_phase"] is not None:
        assert r["accepts_per_phase"] <= limit
