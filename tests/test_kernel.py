"""The listen path's drop rules, exercised one by one with hand-built packet sequences."""

from __future__ import annotations

import pytest

from acceptsim.models.connection import CLOSED, ESTABLISHED, SYN_RECV, SYN_SENT, Connection
from acceptsim.models.costs import CLUSTER1
from acceptsim.models.kernel import (
    LINUX_24,
    LINUX_MODERN,
    ClientSide,
    KernelProfile,
    ListenSocket,
)
from acceptsim.sim import Cpu, Environment


class RecordingClient(ClientSide):
    """Stands in for the client machines: records what the server host sends them."""

    def __init__(self) -> None:
        self.synacks: list[int] = []
        self.dropped: list[int] = []
        self.unacked: list[int] = []

    def syn_ack(self, conn: Connection) -> None:
        self.synacks.append(conn.id)

    def syn_dropped(self, conn: Connection) -> None:
        self.dropped.append(conn.id)

    def request_unacknowledged(self, conn: Connection) -> None:
        self.unacked.append(conn.id)

    def check_client_gone(self, conn: Connection) -> None:
        pass


class Host:
    def __init__(self, profile: KernelProfile = LINUX_24, backlog: int = 128) -> None:
        self.env = Environment()
        self.cpu = Cpu(self.env, ["work"])
        self.client = RecordingClient()
        self.listen = ListenSocket(self.env, self.cpu, CLUSTER1, profile, backlog, self.client)
        self._ids = 0

    def syn(self) -> Connection:
        conn = Connection(self._ids, self.env.now, self.env.now + 10)
        self._ids += 1
        self.listen.syn(conn)
        return conn

    def handshake(self) -> Connection:
        conn = self.syn()
        self.listen.handshake_ack(conn)
        return conn


def test_accept_queue_holds_one_more_than_the_backlog() -> None:
    host = Host(backlog=4)
    conns = [host.handshake() for _ in range(5)]
    assert [c.state for c in conns] == [ESTABLISHED] * 5
    assert len(host.listen.accept_queue) == 5
    extra = host.handshake()
    assert extra.state == SYN_RECV and extra.acked
    assert host.listen.listen_overflow == 1


def test_listen_overflow_keeps_the_request_and_a_later_segment_moves_it() -> None:
    host = Host(backlog=1)
    host.handshake()
    host.handshake()  # queue now holds 2 = backlog + 1
    late = host.handshake()
    assert late.state == SYN_RECV and host.listen.syn_len == 1
    assert host.client.unacked == [late.id]
    host.listen.retransmitted_segment(late)  # still full: overflows again
    assert host.listen.listen_overflow == 2
    host.listen.accept()
    host.listen.retransmitted_segment(late)
    assert late.state == ESTABLISHED and host.listen.syn_len == 0


def test_syn_on_full_accept_queue_is_dropped_only_with_more_than_one_young_request() -> None:
    host = Host(backlog=1)
    host.handshake()
    host.handshake()  # accept queue full
    first = host.syn()  # one young request (this one) is fine: young count was 0
    assert first.state == SYN_RECV
    second = host.syn()  # young count 1: still not more than one
    assert second.state == SYN_RECV
    third = host.syn()  # young count 2 > 1: AcceptQFull
    assert third.state == SYN_SENT
    assert host.listen.accept_q_full == 1
    assert host.client.dropped == [third.id]


def test_without_the_young_rule_a_full_accept_queue_drops_every_syn() -> None:
    host = Host(LINUX_24.replace(young_rule=False), backlog=1)
    host.handshake()
    host.handshake()
    assert host.syn().state == SYN_SENT
    assert host.listen.accept_q_full == 1


def test_drop_request_above_three_quarters_of_the_syn_queue() -> None:
    host = Host(LINUX_24.replace(max_syn_backlog=8))
    queued = [host.syn() for _ in range(6)]  # free 8-6=2, not < 2
    assert all(c.state == SYN_RECV for c in queued)
    seventh = host.syn()
    assert seventh.state == SYN_RECV  # queued with 6 in the queue: free 2 >= 2
    eighth = host.syn()  # free 8-7 = 1 < 2: DropRequest
    assert eighth.state == SYN_SENT
    assert host.listen.drop_request == 1
    assert host.listen.syn_len == 7


def test_syn_queue_full_is_checked_first() -> None:
    host = Host(LINUX_24.replace(max_syn_backlog=4, drop_request_fraction=0.0))
    for _ in range(4):
        host.syn()
    host.syn()
    assert host.listen.syn_q_full == 1 and host.listen.drop_request == 0
    assert host.listen.syn_len == 4


def test_syncookies_answer_a_full_syn_queue_without_keeping_state() -> None:
    host = Host(LINUX_MODERN, backlog=2)
    for _ in range(2):
        host.syn()
    cookie = host.syn()
    assert cookie.state == SYN_RECV and cookie.cookie
    assert host.listen.cookies_sent == 1 and host.listen.syn_len == 2
    host.listen.handshake_ack(cookie)
    assert cookie.state == ESTABLISHED and host.listen.syn_len == 2


#: by when the first SYN-ACK retransmission has come: its expiry, plus at most a lap of
#: the SYN-queue timer's clock hand (test_synq_timer.py), plus a run for rounding
FIRST_SYNACK_RETRY_BY = LINUX_24.synack_rto_s + LINUX_24.synq_timer_s * (
    2 + LINUX_24.synq_hash_buckets
    // (2 * (LINUX_24.synq_hash_buckets // round(LINUX_24.synack_rto_s / LINUX_24.synq_timer_s)))
)


def test_synack_timer_ages_young_requests_then_expires_them() -> None:
    host = Host(backlog=1)
    host.handshake()
    host.handshake()
    stuck = host.handshake()
    assert host.listen.syn_young == 1
    host.env.run(until=FIRST_SYNACK_RETRY_BY)  # the first SYN-ACK retransmission
    assert stuck.synack_rtx == 1 and not stuck.young and host.listen.syn_young == 0
    host.env.run(until=1000)
    assert stuck.state == CLOSED
    assert stuck.synack_rtx == LINUX_24.synack_retries
    assert host.listen.requests_expired == 1 and host.listen.syn_len == 0


def test_synack_to_a_client_whose_socket_is_gone_draws_a_reset() -> None:
    host = Host(backlog=1)
    host.handshake()
    host.handshake()
    stuck = host.handshake()
    stuck.client_dead = True
    host.env.run(until=FIRST_SYNACK_RETRY_BY)
    assert stuck.state == CLOSED and host.listen.requests_reset == 1


@pytest.mark.parametrize("profile", [LINUX_24, LINUX_MODERN])
def test_dropped_packets_still_cost_kernel_time(profile: KernelProfile) -> None:
    host = Host(profile.replace(young_rule=False), backlog=1)
    host.handshake()
    host.handshake()
    before = host.cpu.kernel_time
    host.syn()
    assert host.cpu.kernel_time - before == pytest.approx(CLUSTER1.rx_segment_s)


def test_a_bare_ack_completes_the_handshake_and_the_later_request_is_data() -> None:
    """The client application writes its request after its kernel's ACK (httperf's
    event loop): the ACK creates the child with nothing to read, the request adds one."""
    host = Host(backlog=4)
    conn = host.syn()
    host.listen.bare_ack(conn)
    assert conn.state == ESTABLISHED and conn.pending == 0
    host.listen.first_request(conn)
    assert conn.pending == 1 and host.client.unacked == []


def test_a_request_behind_an_overflowed_bare_ack_retries_the_move() -> None:
    host = Host(backlog=1)
    host.handshake()
    host.handshake()  # accept queue full (backlog + 1)
    late = host.syn()
    host.listen.bare_ack(late)
    assert late.state == SYN_RECV and late.acked and late.pending == 0
    assert host.client.unacked == []  # no data sent yet: nothing for the client to retransmit
    host.listen.first_request(late)  # still full: the request itself is unacknowledged
    assert host.listen.listen_overflow == 2 and host.client.unacked == [late.id]
    host.listen.accept()
    host.listen.retransmitted_segment(late)
    assert late.state == ESTABLISHED and late.pending == 1 and host.listen.syn_len == 0


def test_a_synack_retransmission_moves_an_overflowed_bare_ack_without_data() -> None:
    """The SYN-ACK timer's answer creates the child; the request, not yet sent when the
    ACK overflowed, is read only when it arrives (never counted twice)."""
    host = Host(backlog=1)
    host.handshake()
    host.handshake()
    late = host.syn()
    host.listen.bare_ack(late)  # overflows; the client application has not written yet
    host.listen.accept()  # room again
    host.env.run(until=FIRST_SYNACK_RETRY_BY)
    assert late.state == ESTABLISHED and late.pending == 0 and late.synack_rtx == 1
    host.listen.first_request(late)
    assert late.pending == 1


def test_drop_kinds_are_declared_once_and_read_by_the_record_and_the_policy_view() -> None:
    from acceptsim.models import RunConfig, simulate
    from acceptsim.models.kernel import DROP_KINDS

    host = Host()
    for _ in range(131):  # fill the accept queue; the rest of the SYNs overflow or drop
        host.handshake()
    counts = host.listen.drop_counts()
    assert tuple(counts) == DROP_KINDS
    assert counts["listen_overflow"] >= 1
    seen: dict[str, int] = {}

    class Recording:
        """Accept-limit 1, recording what the view reports of the drops."""

        def accept_limit(self, view):  # type: ignore[no-untyped-def]
            seen.update(view.drop_counts(), total=view.drops)
            return 1

    r = simulate(RunConfig(rate_per_s=30000.0, duration_s=4.0, warmup_s=0.0), policy=Recording())
    assert tuple(r["drops_per_s"]) == (*DROP_KINDS, "total")
    assert seen["total"] == sum(seen[k] for k in DROP_KINDS) > 0
