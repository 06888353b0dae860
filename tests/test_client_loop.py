"""httperf's event loop: the client application reacts after a scan of all its sockets.

In overload the clients hold every connection whose SYN was dropped until it times
out, so their loop slows, connections stay open longer at the server, and a server
that pays a select() per accepted connection collapses.  The mechanism is switched
off by zero loop costs, which must give exactly the old combined ACK-and-request path.
"""

from __future__ import annotations

import math

import pytest

from acceptsim.models import RunConfig, simulate
from acceptsim.models.costs import CLUSTER1

OFF = CLUSTER1.replace(client_loop_base_s=0.0, client_poll_per_socket_s=0.0)
ON = CLUSTER1.replace(client_loop_base_s=0.0, client_poll_per_socket_s=0.3e-6)


def run(costs, **kw):  # type: ignore[no-untyped-def]
    cfg = dict(server="userver", accept_limit=1, duration_s=8.0, warmup_s=2.0, seed=3)
    cfg.update(kw)
    return simulate(RunConfig(costs=costs, **cfg))


def test_zero_loop_cost_means_no_reaction_delay() -> None:
    r = run(OFF, rate_per_s=15000.0)
    assert r["client_reaction_ms_mean"] == 0.0
    assert r["syn_drops_per_completed"] == 0.0  # no SYN was dropped
    assert r["syn_drops_per_timed_out"] is None  # none timed out


def test_below_saturation_the_client_loop_changes_little() -> None:
    """Few sockets per client machine below saturation: a fast loop, the same replies."""
    off, on = run(OFF, rate_per_s=15000.0), run(ON, rate_per_s=15000.0)
    assert 0.0 < on["client_reaction_ms_mean"] < 0.05
    assert on["reply_rate_per_s"] == pytest.approx(off["reply_rate_per_s"], rel=0.01)


def test_in_overload_the_slow_client_loop_costs_the_limit_1_userver_capacity() -> None:
    """Past saturation the clients hold thousands of failing connections: their loop
    slows to milliseconds, the server holds connections open longer and its select()
    per accepted connection grows; accept-limit inf amortises select and loses little."""
    off, on = run(OFF, rate_per_s=22000.0), run(ON, rate_per_s=22000.0)
    assert on["client_reaction_ms_mean"] > 0.5
    assert on["open_connections_mean"] > 2 * off["open_connections_mean"]
    assert on["reply_rate_per_s"] < 0.9 * off["reply_rate_per_s"]
    assert on["syn_drops_per_completed"] > 0.0


def test_syn_drops_are_counted_per_connection_by_outcome() -> None:
    """With a 4 s timeout a failed connection sends SYNs at 0 and 3 s only: at most two
    drops each; a completed one lost fewer SYNs on average."""
    c = run(ON, rate_per_s=22000.0, timeout_s=4.0)
    assert 1.0 <= c["syn_drops_per_timed_out"] <= 2.0
    assert 0.0 < c["syn_drops_per_completed"] < c["syn_drops_per_timed_out"]
    inf_off = run(OFF, rate_per_s=22000.0, accept_limit=math.inf)
    inf_on = run(ON, rate_per_s=22000.0, accept_limit=math.inf)
    assert inf_on["reply_rate_per_s"] > 0.95 * inf_off["reply_rate_per_s"]
