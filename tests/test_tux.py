"""TUX: work phases, LIFO work_pending, Equation 1 counters."""

from __future__ import annotations

import math

import pytest

from acceptsim.models.connection import ACCEPTED, Connection
from acceptsim.models.costs import CLUSTER1
from acceptsim.models.experiment import Host, RunConfig
from acceptsim.models.servers.tux import Tux, _TuxConn


def _host(**fields) -> Host:
    base = {"server": "tux", "duration_s": 1.0, "warmup_s": 0.1, "rate_per_s": 1.0}
    base.update(fields)
    return Host(RunConfig.from_dict(base))


def _conn(i: int, host: Host) -> Connection:
    conn = Connection(i, host.env.now, host.env.now + 100.0)
    conn.state = ACCEPTED
    conn.server = _TuxConn()
    conn.pending = 1
    host.client.hold(conn)
    conn.requests_left = 0
    conn.reply_bytes = 1460
    return conn


def test_work_pending_is_lifo():
    host = _host()
    tux: Tux = host.server  # type: ignore[assignment]
    conns = [_conn(i, host) for i in range(5)]
    for c in conns:
        tux.readable(c)
    assert [c.id for c in tux.work_pending] == [4, 3, 2, 1, 0]


def test_work_pending_fifo_option_fills_at_tail():
    host = _host()
    tux: Tux = host.server  # type: ignore[assignment]
    tux._push = tux.work_pending.append  # what work_order="fifo" selects
    conns = [_conn(i, host) for i in range(3)]
    for c in conns:
        tux.readable(c)
    assert [c.id for c in tux.work_pending] == [0, 1, 2]


def test_work_phase_processes_items_that_arrive_during_it():
    """An item queued while a work phase runs is processed in that same phase."""
    host = _host()
    tux: Tux = host.server  # type: ignore[assignment]
    env = host.env
    first = _conn(0, host)
    late = _conn(1, host)
    tux.readable(first)
    # queue `late` half-way through the first item's processing
    env.call_in(CLUSTER1.tux_request_s / 2, lambda _: tux.readable(late))
    env.run(until=80e-6)  # before the first client FIN can arrive (one RTT after a reply)
    assert tux.work_phases == 1
    assert tux.conns_worked >= 4  # request + send for both connections
    assert late.pending == 0 and first.pending == 0


def test_no_select_and_equation1_counters():
    host = _host(rate_per_s=3000.0, duration_s=2.0, warmup_s=0.5)
    r = host.run()
    assert r["select_calls_per_s"] is None
    assert r["accept_rate_per_s"] == pytest.approx(
        r["accept_phases_per_s"] * r["accepts_per_phase"]
    )


def test_conservation_and_queue_capacity(small_run):
    for limit in (1, math.inf):
        r = small_run(server="tux", accept_limit=limit, rate_per_s=30000.0)
        c = r["connections"]
        assert c["attempted"] == c["completed"] + c["timed_out"] + c["in_flight_at_end"]
        q = r["queues"]
        assert q["accept_queue_max"] <= q["accept_queue_capacity"]
        assert q["syn_queue_max"] <= q["syn_queue_capacity"]


def test_without_cache_cost_limit_1_and_inf_have_equal_capacity():
    """The brief's caution: equal per-item costs give TUX the same capacity at 1 and inf."""
    costs = CLUSTER1.replace(cache_refill_s=0.0)
    rates = []
    for limit in (1, math.inf):
        cfg = RunConfig(server="tux", accept_limit=limit, rate_per_s=30000.0, duration_s=2.0,
                        warmup_s=0.7, costs=costs)
        rates.append(Host(cfg).run()["reply_rate_per_s"])
    assert rates[0] == pytest.approx(rates[1], rel=0.03)


@pytest.mark.slow
def test_limit_1_beats_inf_at_overload():
    """The paper's TUX direction, with default (calibrated) costs."""
    rates = {}
    for limit in (1, math.inf):
        cfg = RunConfig(server="tux", accept_limit=limit, rate_per_s=24000.0, duration_s=6.0,
                        warmup_s=2.0)
        rates[limit] = Host(cfg).run()
    assert rates[1]["reply_rate_per_s"] > rates[math.inf]["reply_rate_per_s"] * 1.05
    # Equation 1: lowering the limit raises TUX's accept rate
    assert rates[1]["accept_rate_per_s"] > rates[math.inf]["accept_rate_per_s"]
