"""HAProxy 2.6's loop (models.servers.haproxy): a scheduler turn of at most
``runqueue_depth`` task runs, then a poll whose listener event accepts up to maxaccept
connections inline."""

from __future__ import annotations

import math

import pytest

from acceptsim.models import RunConfig
from acceptsim.models.runner import run_point


def haproxy(limit: float, rate: float, **more: object) -> dict:
    return run_point(RunConfig.from_dict({
        "server": "haproxy", "accept_limit": limit, "rate_per_s": rate, "duration_s": 4.0,
        "warmup_s": 1.0, "timeout_s": 1.0, "kernel": "linux-modern", "network": "loopback",
        "seed": 3, "cpu_quota": 0.1, "cpu_period_s": 0.01,
        "server_params": {"backlog": 128}, **more}))


def test_a_connection_takes_four_task_runs_below_saturation() -> None:
    """Its tasklet reads the request, its stream replies and ends, its tasklet closes on
    the FIN (HAProxy's show activity: 4.0 context switches per connection); every reply
    is one in time and no turn runs out of budget."""
    record = haproxy(4, 500.0)
    assert record["reply_rate_per_s"] == pytest.approx(500.0, rel=0.05)
    assert record["task_runs_per_s"] == pytest.approx(4 * record["reply_rate_per_s"], rel=0.02)
    assert record["full_turns_per_s"] == 0 and record["wasted_replies_per_s"] == 0


def test_accepting_past_the_turns_budget_builds_a_backlog_whose_work_is_lost() -> None:
    """Past saturation, unlimited accepts take a full accept queue every turn, more than
    a turn of runqueue_depth runs can finish: the surplus waits in the scheduler, its
    replies come after their clients gave up, and fewer are served in time than with
    HAProxy's default limit, whose surplus waits in the kernel's accept queue."""
    default, unlimited = haproxy(4, 9000.0), haproxy(math.inf, 9000.0)
    assert default["full_turns_per_s"] == 0 and default["wasted_replies_per_s"] < 10
    assert unlimited["full_turns_per_s"] > 0
    assert unlimited["open_connections_mean"] > 20 * default["open_connections_mean"]
    assert unlimited["wasted_replies_per_s"] > 0.2 * unlimited["reply_rate_per_s"]
    assert unlimited["reply_rate_per_s"] < 0.8 * default["reply_rate_per_s"]


def test_a_deeper_run_queue_moves_the_collapse() -> None:
    """The mechanism is the budget: with a run queue deep enough to finish every turn's
    accepts (as deep as the accept queue, four runs each), unlimited accepts no longer
    pile up work in the scheduler."""
    deep = haproxy(math.inf, 9000.0, server_params={"backlog": 128, "runqueue_depth": 3000})
    assert deep["full_turns_per_s"] == 0
    assert deep["reply_rate_per_s"] > 1.25 * haproxy(math.inf, 9000.0)["reply_rate_per_s"]


def test_the_collapse_needs_bursts_a_tick_long() -> None:
    """At 1 ms per 10 ms the collapse above comes with the period timer on the ticks (the
    default: a burst runs a whole tick, 4 ms, and its debt holds HAProxy off for three
    periods); with the timer 1 ms past the ticks (bursts of 3 ms) unlimited accepts serve
    within 5% of the default limit (docs/design_log.md, "The period timer's place")."""
    default = haproxy(4, 9000.0)["reply_rate_per_s"]
    assert haproxy(math.inf, 9000.0)["reply_rate_per_s"] < 0.5 * default
    placed = haproxy(math.inf, 9000.0, cpu_period_offset_s=1e-3)
    assert placed["reply_rate_per_s"] > 0.95 * default and placed["wasted_replies_per_s"] == 0


def test_replies_of_many_segments_go_through_the_send_buffer() -> None:
    """A stream writes what the send buffer takes; the rest waits in epoll for the
    socket to be writable and the mux's tasklet sends it: the links never carry more
    than their line rate, and every reply is counted once."""
    record = run_point(RunConfig.from_dict({
        "server": "haproxy", "workload": "specweb99", "accept_limit": 4,
        "rate_per_s": 4000.0, "duration_s": 1.0, "warmup_s": 0.25, "seed": 3}))
    assert max(record["link_utilization"]) <= 1.0  # 1.04 when every reply was one burst
    assert 0 < record["reply_rate_per_s"] <= record["target_request_rate_per_s"]
    assert record["httperf"]["replies"] <= record["httperf"]["requests"]
