"""Knot-C and Knot-A: thread pool bounds, conservation, threads_busy_mean."""

from __future__ import annotations

import pytest

from models.experiment import Host, RunConfig
from models.servers.knot import Knot


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
