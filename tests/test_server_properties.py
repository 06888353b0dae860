"""Property tests over the registry: conservation and capacities hold for every server.

Parametrised once over :data:`acceptsim.models.servers.registry.SERVERS`, so a new server
is tested by being registered; what a server needs to exercise its features in
a short run comes from its spec (``test_params``, ``idle_connections``).
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acceptsim.models.experiment import RunConfig, simulate
from acceptsim.models.servers.registry import SERVERS
from acceptsim.models.servers.userver import Userver


@pytest.mark.parametrize("name", list(SERVERS))
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    limit=st.one_of(st.integers(min_value=1, max_value=200), st.just(math.inf)),
    rate=st.floats(min_value=500.0, max_value=35000.0),
    workload=st.sampled_from(["one-packet", "fileset", "specweb99"]),
    idle=st.sampled_from([0, 100]),
    seed=st.integers(min_value=0, max_value=2**16),
)
def test_every_connection_has_exactly_one_outcome_and_queues_stay_bounded(
    name: str, limit: float, rate: float, workload: str, idle: int, seed: int
) -> None:
    spec = SERVERS[name]
    if workload == "specweb99":
        rate /= 7.2
    r = simulate(RunConfig(
        server=name, accept_limit=limit, rate_per_s=rate, workload=workload,
        idle_connections=idle if spec.idle_connections else 0,
        server_params=dict(spec.test_params),
        workload_params={"dataset_bytes": 200e6} if workload == "fileset" else {},
        duration_s=1.0, warmup_s=0.3, seed=seed,
    ))
    c = r["connections"]
    assert c["attempted"] == c["completed"] + c["timed_out"] + c["in_flight_at_end"]
    assert min(c.values()) >= 0
    q = r["queues"]
    assert q["accept_queue_max"] <= q["accept_queue_capacity"]
    assert q["syn_queue_max"] <= q["syn_queue_capacity"]
    assert set(r["cpu_share"]) == {*spec.categories, "kernel", "idle"}
    assert abs(sum(r["cpu_share"].values()) - 1.0) < 1e-9
    assert -1e-9 <= r["cpu_share"]["idle"] <= 1.0
    assert r["reply_rate_per_s"] >= 0.0
    if r["accepts_per_phase"] is not None:
        assert r["accepts_per_phase"] <= limit


@pytest.mark.parametrize("name", list(SERVERS))
def test_the_same_seed_gives_the_same_record(name: str) -> None:
    spec = SERVERS[name]
    config = RunConfig(server=name, accept_limit=50, rate_per_s=15000.0, duration_s=0.6,
                       warmup_s=0.2, seed=7, server_params=dict(spec.test_params))
    a, b = simulate(config), simulate(config)
    for key in ("sim_cpu_time_s", "sim_conns_per_cpu_s"):
        a.pop(key), b.pop(key)
    assert a == b


def test_every_spec_is_consistent_with_its_class() -> None:
    for name, spec in SERVERS.items():
        assert spec.name == name
        assert spec.idle_connections == hasattr(spec.cls, "adopt_idle"), name
        assert len(spec.summary) > 20, name
        spec.params.from_dict(dict(spec.test_params))  # its test parameters are valid


class _DelegatingUserver(Userver):
    """The userver with its getevents reached through a generator (an override that only
    delegates), so that Userver.run delegates to it instead of running its own in place."""

    def getevents(self):  # type: ignore[no-untyped-def]
        return (yield from Userver.getevents(self))


@pytest.mark.parametrize("fields", [
    {"accept_limit": 1, "rate_per_s": 22000.0},
    {"accept_limit": math.inf, "rate_per_s": 30000.0},
    {"accept_limit": 10, "rate_per_s": 4000.0, "workload": "specweb99"},
    {"accept_limit": 1, "rate_per_s": 22000.0, "policy": "queue-aware"},
])
def test_the_userver_in_place_getevents_gives_the_delegating_paths_results(
    monkeypatch, fields
) -> None:
    """Userver.run runs its own getevents in place unless a subclass redefines it: the two
    paths must agree run by run, so a subclass that overrides getevents changes only what
    it overrides."""
    config = RunConfig(server="userver", duration_s=1.0, warmup_s=0.25, seed=5, **fields)
    inline = simulate(config)
    monkeypatch.setitem(SERVERS, "userver", replace(SERVERS["userver"], cls=_DelegatingUserver))
    general = simulate(config)
    for record in (inline, general):
        for name in ("sim_cpu_time_s", "sim_conns_per_cpu_s"):
            record.pop(name)
    assert inline["reply_rate_per_s"] > 0 and inline == general
