"""Knot-C and Knot-A: thread pool bounds, conservation, threads_busy_mean."""

from __future__ import annotations

import pytest

from acceptsim.models.costs import CLUSTER2
from acceptsim.models.experiment import Host, RunConfig
from acceptsim.models.servers.knot import Knot


def _run(**fields):
    base = {"server": "knot", "costs": "cluster2", "duration_s": 2.0, "warmup_s": 0.5,
            "rate_per_s": 5000.0}
    base.update(fields)
    host = Host(RunConfig.from_dict(base))
    return host, host.run()


@pytest.mark.parametrize("limit", [1, 50])
def test_threads_never_exceed_the_pool(limit):
    host, r = _run(accept_limit=limit, rate_per_s=20000.0)
    knot: Knot = host.server  # type: ignore[assignment]
    assert knot.max_threads == knot.params.threads
    assert 0 <= r["threads_busy_mean"] <= knot.params.threads
    assert knot.busy <= knot.params.threads


@pytest.mark.parametrize("server,limit", [("knot", 1), ("knot", 100), ("knot-a", "inf")])
def test_conservation_and_queue_capacity(server, limit):
    _, r = _run(server=server, accept_limit=limit, rate_per_s=20000.0)
    c = r["connections"]
    assert c["attempted"] == c["completed"] + c["timed_out"] + c["in_flight_at_end"]
    q = r["queues"]
    assert q["accept_queue_max"] <= q["accept_queue_capacity"]
    assert q["syn_queue_max"] <= q["syn_queue_capacity"]
    assert "threads_busy_mean" in r


def test_below_capacity_every_connection_is_served():
    _, r = _run(accept_limit=1, rate_per_s=3000.0)
    assert r["drops_per_s"]["total"] == 0
    assert r["reply_rate_per_s"] == pytest.approx(3000.0, rel=0.1)


def test_knot_a_creates_a_thread_per_connection():
    host, r = _run(server="knot-a", accept_limit="inf", rate_per_s=3000.0)
    assert host.server.max_threads > 1
    assert r["accept_rate_per_s"] == pytest.approx(3000.0, rel=0.1)


def test_higher_limit_holds_more_open_connections_at_overload():
    _, r1 = _run(accept_limit=1, rate_per_s=20000.0)
    _, r100 = _run(accept_limit=100, rate_per_s=20000.0)
    assert r100["open_connections_mean"] > 5 * r1["open_connections_mean"]


# -- the accept phase's wait for the listening socket (knot_listen_poll_s) -----------------


def test_accept_cpu_is_the_sum_of_its_calls():
    """Closed form: the accept category is exactly accepts, failed accepts and waits for
    the listening socket, each at its cost (Capriccio's wrapper on every call)."""
    host, r = _run(accept_limit=50, rate_per_s=14000.0, warmup_s=0.0, duration_s=1.0)
    knot: Knot = host.server  # type: ignore[assignment]
    c = knot.costs
    io = c.knot_io_s
    expected = (
        knot.accepts * (c.accept_s + io)
        + knot.acceptor.failed * (c.accept_empty_s + io)
        + (knot.listen_waits + knot.listen_blocks) * (c.knot_listen_poll_s + io)
    )
    used = host.cpu.usage()["accept"]
    # the run may end inside an accept phase, whose accepts are counted with the phase
    # (Equation 1): up to accept-limit accepts, and the call under way, not yet counted
    unfinished = c.knot_listen_poll_s + io + 50 * (c.accept_s + io)
    assert expected <= used + 1e-12
    assert used == pytest.approx(expected, abs=unfinished)


@pytest.mark.parametrize("limit", [1, 50])
def test_every_accept_phase_follows_a_wait_or_a_poll_that_reported_the_socket(limit):
    host, r = _run(accept_limit=limit, rate_per_s=16000.0)
    # a wait that found connections opens a phase; the others opened by a poll's wake-up
    per_phase = 1.0 / r["accepts_per_phase"]
    assert r["knot_listen_waits_per_conn"] - r["knot_listen_blocks_per_conn"] <= per_phase + 1e-3
    assert r["knot_conn_blocks_per_conn"] <= 1.0 + 1e-3  # one-packet: one FIN wait each
    if limit == 1:  # overloaded: a thread back from a connection finds the next one queued
        assert r["accepts_per_phase"] == 1.0
        assert r["knot_listen_waits_per_conn"] == pytest.approx(1.0, abs=0.02)
        assert r["knot_failed_accepts_per_conn"] < 0.01
    else:
        assert r["knot_listen_waits_per_conn"] < 0.1


def _overload_rates(costs):
    return {
        limit: _run(accept_limit=limit, rate_per_s=16000.0, costs=costs)[1]["reply_rate_per_s"]
        for limit in (1, 50)
    }


def test_the_wait_is_paid_per_phase_so_it_costs_limit_1_and_hardly_limit_50():
    """Make the wait 5 us dearer: limit 1 pays it on every connection (capacity down by
    about 5 us out of its ~80 us per connection), limit 50 once per up to 50."""
    base = _overload_rates(CLUSTER2)
    wait = CLUSTER2.knot_listen_poll_s
    dearer = _overload_rates(CLUSTER2.replace(knot_listen_poll_s=wait + 5e-6))
    assert dearer[1] / base[1] < 0.96
    assert dearer[50] / base[50] > 0.99
    assert base[50] > base[1] * 1.05  # with the fitted costs limit 50 beats limit 1
