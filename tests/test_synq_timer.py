"""The listen socket's SYN-queue timer: SYN-ACKs are retransmitted by a clock hand.

Linux 2.4 runs one timer per listening socket every TCP_SYNQ_INTERVAL (HZ/5, 200 ms)
while its SYN queue is not empty; each run checks a fixed number of the hash table's
buckets (2 * 512 / (3 s / 200 ms) = 68 of 512) and retransmits the SYN-ACK of every
expired request it finds there.  A request's retransmission therefore comes at the
first run, on the timer's grid, whose hand reaches its bucket at or after it expired:
up to a lap of the hand (eight runs) late, and together with the other requests that
run finds.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acceptsim.models.connection import Connection
from acceptsim.models.experiment import Host, RunConfig
from acceptsim.models.kernel import LINUX_24, synq_bucket

# the paper's profile's timer (a period of 0 would make every test below fail)
PERIOD = LINUX_24.synq_timer_s
BUCKETS = LINUX_24.synq_hash_buckets
BUDGET = 2 * (BUCKETS // round(LINUX_24.synack_rto_s / PERIOD))  # buckets a run checks
LAP = math.ceil(BUCKETS / BUDGET) * PERIOD  # the longest a request waits past its expiry


def listen_socket(kernel: str = "linux-2.4"):
    return Host(RunConfig(rate_per_s=1000, duration_s=1.0, warmup_s=0.0, kernel=kernel)).listen


@settings(max_examples=300, deadline=None)
@given(conn_id=st.integers(min_value=0, max_value=10**9),
       expires=st.floats(min_value=3.0, max_value=500.0))
def test_a_retransmission_comes_at_the_first_run_whose_hand_reaches_its_bucket(
    conn_id: int, expires: float
) -> None:
    listen = listen_socket()
    fires = listen._synack_fires(Connection(conn_id, 0.0, 10.0), expires)
    k = round(fires / PERIOD)
    assert math.isclose(fires, k * PERIOD, abs_tol=1e-9)  # on the timer's grid
    assert fires >= expires - 1e-9
    assert fires < expires + LAP + PERIOD  # within a lap of the hand
    bucket = synq_bucket(conn_id, BUCKETS)
    assert (bucket - BUDGET * k) % BUCKETS < BUDGET  # this run's hand covers the bucket
    earlier = [j for j in range(math.ceil(expires / PERIOD - 1e-9), k)
               if (bucket - BUDGET * j) % BUCKETS < BUDGET]
    assert not earlier  # and no earlier run after the expiry did


def test_buckets_spread_evenly() -> None:
    counts = [0] * BUCKETS
    for i in range(BUCKETS * 100):
        counts[synq_bucket(i, BUCKETS)] += 1
    assert max(counts) < 160 and min(counts) > 50  # 100 each on average


def test_the_hand_spreads_retransmissions_over_a_lap() -> None:
    listen = listen_socket()
    delays = [listen._synack_fires(Connection(i, 0.0, 10.0), 3.0) - 3.0 for i in range(5000)]
    assert 0.0 <= min(delays) and max(delays) <= LAP + 1e-9
    assert 0.4 * LAP < sum(delays) / len(delays) < 0.6 * LAP  # about half a lap on average


@pytest.mark.parametrize("kernel", ["linux-modern"])
def test_without_the_timer_a_retransmission_comes_at_its_expiry(kernel: str) -> None:
    listen = listen_socket(kernel)
    assert listen._synack_fires(Connection(7, 0.0, 10.0), 3.123) == 3.123


def test_a_small_table_still_has_its_hand_move_a_bucket_a_run() -> None:
    listen = Host(RunConfig(rate_per_s=1000, duration_s=1.0, warmup_s=0.0,
                            kernel=LINUX_24.replace(synq_hash_buckets=8))).listen
    fires = [listen._synack_fires(Connection(i, 0.0, 10.0), 3.0) for i in range(64)]
    assert all(3.0 <= f <= 3.0 + 8 * PERIOD + 1e-9 for f in fires)  # a lap: 8 buckets
    assert len({round(f / PERIOD) for f in fires}) > 1  # one bucket a run: a lap of 8 runs
