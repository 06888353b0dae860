"""Invariants of whole runs, across the configuration space (hypothesis)."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acceptsim.models import RunConfig, simulate
from acceptsim.models.connection import Connection
from acceptsim.models.host import Host

NONDETERMINISTIC = ("sim_cpu_time_s", "sim_conns_per_cpu_s")

configs = st.builds(
    RunConfig,
    accept_limit=st.sampled_from([1, 2, 5, 10, 50, math.inf]),
    rate_per_s=st.floats(500, 40000),
    spacing=st.sampled_from(["poisson", "deterministic"]),
    timeout_s=st.floats(0.3, 10.0),
    duration_s=st.floats(0.6, 1.5),
    warmup_s=st.one_of(st.just(0.0), st.floats(1e-6, 0.5)),  # 0 < warm-up < 1 us is refused
    seed=st.integers(0, 2**32),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=configs)
def test_every_attempted_connection_ends_in_exactly_one_outcome(config: RunConfig) -> None:
    result = simulate(config)
    c = result["connections"]
    assert c["attempted"] == c["completed"] + c["timed_out"] + c["in_flight_at_end"]
    assert min(c.values()) >= 0


@settings(max_examples=50, deadline=None)
@given(ops=st.lists(st.tuples(st.booleans(), st.integers(0, 19)), max_size=120))
def test_the_clients_unresolved_connections_are_those_held_and_not_yet_let_go(
    ops: list[tuple[bool, int]],
) -> None:
    """The client's list of unresolved connections, whose resolved ones give their places
    to the last: after any sequence of holds and resolutions it holds exactly the
    connections held and not resolved, each at the place it knows; one not held cannot
    be let go."""
    client = Host(RunConfig(rate_per_s=1.0, duration_s=1.0, warmup_s=0.0)).client
    conns = [Connection(i, 0.0, 1.0) for i in range(20)]
    held: set[int] = set()
    for hold, i in ops:
        if hold and i not in held:
            client.hold(conns[i])
            held.add(i)
        elif not hold and i in held:
            client._let_go(conns[i])
            held.discard(i)
        assert sorted(c.id for c in client.live) == sorted(held)
        assert all(client.live[c.live_at] is c for c in client.live)
    free = next((c for c in conns if c.id not in held), None)
    if free is not None:
        with pytest.raises(AssertionError):
            client._let_go(free)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=configs)
def test_queues_never_exceed_capacity_and_cpu_shares_partition_time(config: RunConfig) -> None:
    result = simulate(config)
    q = result["queues"]
    assert q["accept_queue_max"] <= q["accept_queue_capacity"] == 129
    assert q["syn_queue_max"] <= q["syn_queue_capacity"] == 1024
    shares = result["cpu_share"]
    assert sum(shares.values()) == pytest.approx(1.0, abs=1e-9)
    assert all(-1e-9 <= v <= 1 + 1e-9 for v in shares.values())


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=configs)
def test_equation_1_holds_by_construction_of_the_counters(config: RunConfig) -> None:
    r = simulate(config)
    if r["accept_phases_per_s"] == 0:
        assert r["accept_rate_per_s"] == 0
    else:
        assert r["accept_rate_per_s"] == pytest.approx(
            r["accept_phases_per_s"] * r["accepts_per_phase"], rel=1e-12
        )
        assert r["accepts_per_phase"] <= config.accept_limit + 0  # never above the limit


def _deterministic(result: dict) -> dict:
    return {k: v for k, v in result.items() if k not in NONDETERMINISTIC}


def test_the_same_seed_gives_an_identical_result(short_config: RunConfig) -> None:
    assert _deterministic(simulate(short_config)) == _deterministic(simulate(short_config))


def test_another_seed_gives_another_result(short_config: RunConfig) -> None:
    other = simulate(short_config, seed=short_config.seed + 1)
    assert other["connections"] != simulate(short_config)["connections"]


def test_policies_compared_under_one_seed_see_the_same_arrivals(short_config: RunConfig) -> None:
    one = simulate(short_config, accept_limit=1)
    inf = simulate(short_config, accept_limit=math.inf)
    assert one["connections"]["attempted"] == inf["connections"]["attempted"]


def test_deterministic_spacing_starts_exactly_rate_times_window_connections() -> None:
    r = simulate(rate_per_s=1000, spacing="deterministic", duration_s=2.0, warmup_s=1.0)
    assert r["connections"]["attempted"] in (1000, 1001)


def test_light_load_completes_every_connection_without_drops() -> None:
    r = simulate(rate_per_s=2000, duration_s=2.0, warmup_s=0.5)
    assert r["drops_per_s"]["total"] == 0
    assert r["connections"]["timed_out"] == 0
    assert r["reply_rate_per_s"] == pytest.approx(2000, rel=0.1)


def test_timeouts_appear_when_the_server_is_overloaded_long_enough() -> None:
    r = simulate(rate_per_s=40000, duration_s=4.0, warmup_s=0.5, timeout_s=1.0)
    assert r["client_timeouts_per_s"] > 0
    assert r["drops_per_s"]["total"] > 0


SERVERS_WITH_OWN_STATE = ["userver", "nginx", "tux", "knot", "userver-epoll", "flash-amped",
                          "twoclass"]  # fmt: skip


@pytest.mark.parametrize("workload", ["one-packet", "specweb99"])
@pytest.mark.parametrize("server", SERVERS_WITH_OWN_STATE)
def test_a_run_leaves_no_cyclic_garbage(server: str, workload: str) -> None:
    """The event loop pauses Python's cyclic collector (sim.engine): that is only
    safe while the models create no reference cycles as they run."""
    import gc

    from acceptsim.models.experiment import Host

    config = RunConfig(server=server, workload=workload, accept_limit=10, rate_per_s=20000.0,
                       duration_s=0.5, warmup_s=0.1)  # fmt: skip
    Host(config).run()  # first use of anything imported lazily (modules hold cycles)
    host = Host(config)
    gc.collect()
    gc.disable()  # so that nothing is collected before we count
    try:
        host.run()
        assert not gc.isenabled()  # the loop restored the collector's state
        assert gc.collect() == 0
    finally:
        gc.enable()


@st.composite
def several_workers_or_closed_loop(draw: st.DrawFn) -> RunConfig:
    """Hosts of several CPUs (every server that runs on several workers, both socket
    layouts) and closed-loop clients, alone or together."""
    from acceptsim.models.servers.registry import SERVERS

    server = draw(st.sampled_from(["userver", "nginx", "prefork", "haproxy"]))
    cpus = draw(st.integers(1, 4))
    users = draw(st.sampled_from([0, 0, 5, 150]))
    quota = draw(st.sampled_from([0.0, 0.0, 0.3]))
    listen = draw(st.sampled_from(["shared", "reuseport"]))
    # the accept mutex is refused beside reuseport sockets (nginx takes none for them)
    wakeups = [w for w in SERVERS[server].wakeups if listen == "shared" or w != "mutex"]
    return RunConfig(
        server=server, cpus=cpus, listen=listen, wakeup=draw(st.sampled_from(wakeups)),
        cpu_quota=quota, cpu_period_s=0.01,
        cpu_quota_scope=draw(st.sampled_from(["server", "worker"])),
        accept_limit=draw(st.sampled_from([1, 4, math.inf])),
        rate_per_s=draw(st.floats(500, 60000)), concurrency=users,
        keepalive=bool(users) and draw(st.booleans()),
        timeout_s=draw(st.floats(0.3, 5.0)), duration_s=draw(st.floats(0.6, 1.2)),
        warmup_s=draw(st.one_of(st.just(0.0), st.floats(1e-6, 0.4))),
        seed=draw(st.integers(0, 2**32)),
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=several_workers_or_closed_loop())
def test_several_workers_and_closed_loops_keep_every_invariant(config: RunConfig) -> None:
    r = simulate(config)
    c = r["connections"]
    assert c["attempted"] == c["completed"] + c["timed_out"] + c["in_flight_at_end"]
    if config.concurrency:  # a closed loop never has more connections than users
        assert c["in_flight_at_end"] <= config.concurrency
    q = r["queues"]
    assert q["accept_queue_max"] <= q["accept_queue_capacity"]
    assert sum(r["cpu_share"].values()) == pytest.approx(config.cpus, abs=1e-9)
    if r["accept_phases_per_s"]:
        assert r["accepts_per_phase"] <= config.accept_limit
