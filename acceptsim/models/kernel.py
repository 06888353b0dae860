"""The kernel's listen path: SYN queue, accept queue and their drop rules.

Profile ``linux-2.4`` follows ``tcp_v4_conn_request`` and ``tcp_check_req``
of Linux 2.4.20, the paper's kernel.  A SYN arriving at the listening socket
is checked in this order:

1. **SynQFull**: the SYN queue holds ``max_syn_backlog`` requests -> drop
   (with syncookies on, answer with a cookie instead and keep no state);
2. **AcceptQFull**: the accept queue is full *and* more than one "young"
   request (SYN-ACK never retransmitted) is in the SYN queue -> drop;
3. **DropRequest**: syncookies off and fewer than a quarter of the SYN
   queue's slots are free -> drop;
4. otherwise the request is queued and a SYN-ACK sent.

The accept queue is full when it holds *more* than the backlog
(``len > backlog``), so with SOMAXCONN 128 it holds 129.  A final ACK that
finds it full is a **ListenOverflow**: the ACK is dropped silently, the
request stays in the SYN queue marked acked, and every later segment of that
connection (the client's retransmitted request, its ACKs of retransmitted
SYN-ACKs) retries the move into the accept queue.  The SYN-ACK timer
retransmits after 3 s, doubling, ``synack_retries`` times, then drops the
request; a SYN-ACK that reaches a client whose socket is gone draws a RST,
which removes the request.  On 2.4 one timer per listening socket does this
every 200 ms over a share of the SYN queue's hash table (a clock hand), so a
retransmission comes up to a lap of the hand after its expiry
(``synq_timer_s``; ``ListenSocket._synack_fires``).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, cast

from mypy_extensions import i64, mypyc_attr, trait

from acceptsim.models.connection import (
    ACCEPTED,
    CLOSED,
    ESTABLISHED,
    SYN_RECV,
    SYN_SENT,
    Connection,
)
from acceptsim.sim.engine import Handler
from acceptsim.sim.params import Params, param

if TYPE_CHECKING:
    from acceptsim.models.costs import HostCosts
    from acceptsim.sim.cpu import Cpu
    from acceptsim.sim.engine import Environment


@mypyc_attr(native_class=False)  # a parameter set: a plain frozen dataclass
@dataclass(frozen=True)
class KernelProfile(Params):
    """TCP listen-path behaviour of one kernel version."""

    _prefix = "kernel."

    name: str = param("linux-2.4", unit="", doc="profile name")
    somaxconn: int = param(128, unit="connections", ge=1, doc="cap on the listen() backlog")
    max_syn_backlog: int = param(
        1024, unit="requests", ge=1, doc="tcp_max_syn_backlog: SYN queue capacity"
    )
    syn_queue_is_backlog: bool = param(
        False, unit="", doc="SYN queue capacity is the listen backlog (modern kernels)"
    )
    syncookies: bool = param(
        False, unit="", doc="answer SYNs with cookies when the SYN queue is full"
    )
    young_rule: bool = param(
        True,
        unit="",
        doc="drop a SYN on a full accept queue only if more than one young request is queued "
        "(2.4); otherwise drop whenever the accept queue is full",
    )
    drop_request_fraction: float = param(
        0.25,
        unit="fraction",
        ge=0.0,
        le=1.0,
        doc="without syncookies, drop a SYN when free SYN-queue slots are fewer than this "
        "fraction of max_syn_backlog",
    )
    syn_rto_s: float = param(
        3.0, unit="s", gt=0.0, doc="client's initial SYN retransmission timeout"
    )
    syn_retries: int = param(5, unit="retransmissions", ge=0, doc="client SYN retransmissions")
    client_timer_tick_s: float = param(
        0.01,
        unit="s",
        ge=0.0,
        doc="client kernel's timer tick (1/HZ; 2.4 on i386: HZ=100).  Its retransmission "
        "timers are set in whole ticks and fire on a tick, so the SYNs a client machine sent "
        "in one tick that were all dropped come back together, as one burst; 0: every timer "
        "fires at its exact instant",
    )
    client_timer_wheel_shift: int = param(
        0,
        unit="bits",
        ge=0,
        le=6,
        doc="the client kernel's timer wheel, with client_timer_tick_s > 0.  0: a timer "
        "fires at the tick it expires (2.4's cascading wheel).  3: Linux 4.8's wheel "
        "(kernel/time/timer.c, LVL_CLK_SHIFT): levels of 64 buckets, each level's buckets "
        "2**3 times wider than the level below's, a timer filed at the level its delay "
        "falls in and run at the first boundary of its bucket after it expires, so it fires "
        "up to a bucket late; at HZ=250 a 1-s SYN timer (250 ticks: level 1, 8-tick "
        "buckets) fires 1.000-1.032 s after its SYN (measured on this project's host: "
        "tests/data/measured/README.md, \"The client's two clocks\")",
    )
    synack_rto_s: float = param(3.0, unit="s", gt=0.0, doc="server's initial SYN-ACK timeout")
    synack_retries: int = param(5, unit="retransmissions", ge=0, doc="tcp_synack_retries")
    synq_timer_s: float = param(
        0.2,
        unit="s",
        ge=0.0,
        doc="period of the listen socket's SYN-queue timer (2.4: TCP_SYNQ_INTERVAL, HZ/5).  "
        "Each run checks only part of the SYN queue's hash table (a clock hand, "
        "2 * synq_hash_buckets / (synack_rto_s / synq_timer_s) buckets), so a request's "
        "SYN-ACK is retransmitted at the first run that reaches its bucket after it expired, "
        "together with the others that run finds; 0: every SYN-ACK timer fires at its exact "
        "instant",
    )
    synq_hash_buckets: int = param(
        512, unit="buckets", ge=1, doc="TCP_SYNQ_HSIZE: the SYN queue's hash table"
    )
    data_rto_min_s: float = param(
        0.2, unit="s", gt=0.0, doc="minimum data retransmission timeout (LAN RTTs give this)"
    )
    rto_max_s: float = param(120.0, unit="s", gt=0.0, doc="TCP_RTO_MAX")
    retries2: int = param(
        15, unit="retransmissions", ge=0, doc="tcp_retries2: data retransmissions of a live socket"
    )
    orphan_retries: int = param(
        8,
        unit="retransmissions",
        ge=0,
        doc="retransmissions after which a closed (orphaned) client socket is destroyed",
    )

    sched_slice_s: float = param(
        0.06,
        unit="s",
        gt=0.0,
        le=1.0,
        doc="the scheduler's slice: run time a task picked to run keeps the processor for "
        "before a task waiting beside it gets it (workers sharing a CPU; sim.cpu.Core).  "
        "2.4: a nice-0 task's timeslice, 6 ticks at HZ=100; EEVDF (6.6+): base_slice_ns, "
        "0.75 ms x (1 + log2 of the online CPUs, at most 8)",
    )
    sched_tick_s: float = param(
        0.01,
        unit="s",
        gt=0.0,
        le=1.0,
        doc="the server kernel's scheduler tick (1/HZ), at which a used-up slice is noticed",
    )
    # -- the send side of an established connection (models.tcp) -----------------------
    mss_bytes: int = param(
        1448, unit="bytes", ge=1,
        doc="payload bytes of one TCP segment: a 1500-byte Ethernet MTU less 20 bytes of IP "
        "and 20 of TCP header and the 12-byte timestamp option (on by default on 2.4 and "
        "today); a reply leaves as ceil(bytes / mss_bytes) segments",
    )
    tcp_wmem_bytes: int = param(
        16384, unit="bytes", ge=1,
        doc="a connection's send buffer (sk_sndbuf: tcp_wmem's default, 16 KB on 2.4): a "
        "non-blocking write() takes what fits, the rest of the reply waits for ACKs; "
        "counted in payload bytes (the kernel's growth of it with the congestion window, "
        "tcp_new_space, is not modelled)",
    )
    ack_every_segments: int = param(
        2, unit="segments", ge=1,
        doc="the client's kernel ACKs every this many full segments it receives (the "
        "delayed-ACK rule of __tcp_ack_snd_check: two)",
    )

    def syn_queue_capacity(self, backlog: int) -> int:
        return backlog if self.syn_queue_is_backlog else self.max_syn_backlog


def flow_hash(conn_id: int, secret: int) -> int:
    """A connection's hash: a fixed mix of its id under ``secret`` (28 bits), standing
    for one of the kernel's hashes of the client's address and port (each with a random
    secret of its own: the SYN queue's, the NIC's RSS hash, reuseport's).  (Every product
    stays below 2**58: the compiled build computes it in a 64-bit word, ``i64``.)"""
    h: i64 = (i64(conn_id) ^ i64(secret)) & 0xFFFFFFF
    h = ((h ^ (h >> 15)) * 0x2C1B3C6D) & 0xFFFFFFF
    h = ((h ^ (h >> 12)) * 0x297A2D39) & 0xFFFFFFF
    return int(h ^ (h >> 15))


#: the secrets of the kernel's three hashes of a connection (:func:`flow_hash`): distinct,
#: so the SYN-queue bucket, the receiving CPU and the reuseport socket are independent
SYNQ_SECRET: Final = 0
RSS_SECRET: Final = 0x5BD1E99
REUSEPORT_SECRET: Final = 0x9E3779B


def synq_bucket(conn_id: int, buckets: int) -> int:
    """The SYN-queue hash bucket of a connection (:func:`flow_hash`)."""
    return flow_hash(conn_id, SYNQ_SECRET) % buckets


LINUX_24 = KernelProfile()
LINUX_MODERN = KernelProfile(
    name="linux-modern",
    somaxconn=4096,
    syn_queue_is_backlog=True,
    syncookies=True,
    young_rule=False,
    syn_rto_s=1.0,
    synack_rto_s=1.0,
    # the clients' timers on Linux 4.8's wheel at HZ=250 (Debian's kernels and the
    # measuring host's): a 1-s SYN timer fires up to one 8-tick bucket late, measured by
    # tools/syn_timer.py (tests/data/measured/README.md, "The client's two clocks")
    client_timer_tick_s=0.004,
    client_timer_wheel_shift=3,
    synq_timer_s=0.0,
    # EEVDF's base slice on 2-3 online CPUs (this project's measuring host) and HZ=250
    # (Debian's kernels and that host's)
    sched_slice_s=0.0015,
    sched_tick_s=0.004,
)
PROFILES: dict[str, KernelProfile] = {p.name: p for p in (LINUX_24, LINUX_MODERN)}
PROFILE_SUMMARIES = {
    "linux-2.4": "Linux 2.4.20, the paper's: 128-entry accept queue, 1,024-entry SYN queue, "
    "the young rule, no syncookies, 3 s initial RTO, clients ticking at HZ=100, SYN-ACKs "
    "retransmitted by a 200 ms clock hand over the SYN queue.",
    "linux-modern": "Today's Linux: somaxconn 4096, SYN queue = backlog, syncookies, every "
    "SYN dropped on a full accept queue, 1 s initial RTO, clients' timers on the 4.8 wheel "
    "at HZ=250.",
}


#: the listen path's drop counters, by kind: every SYN dropped by one of the three rules,
#: and every segment that found the accept queue full (ListenOverflow).  Each is an
#: attribute of :class:`ListenSocket`; run records and the policy view read them from here
DROP_KINDS: Final = ("syn_q_full", "accept_q_full", "drop_request", "listen_overflow")


@mypyc_attr(allow_interpreted_subclasses=True)  # (a test's stand-in)
class ClientSide:
    """What the listen path sends the client machines (:class:`acceptsim.models.client.Client`;
    a test may stand in for them).  A native base class, so that the kernel's calls of
    these are native calls in the compiled build (a compiled trait, as
    :class:`Application` is, cannot be a Python class's base)."""

    def syn_ack(self, conn: Connection) -> None:
        """The request was queued; its SYN-ACK is on its way."""
        raise NotImplementedError

    def syn_dropped(self, conn: Connection) -> None:
        """The SYN was dropped (the client retransmits it, or gives up)."""
        raise NotImplementedError

    def request_unacknowledged(self, conn: Connection) -> None:
        """The segment carrying the request overflowed: the client will retransmit it."""
        raise NotImplementedError

    def check_client_gone(self, conn: Connection) -> None:
        """The server touches ``conn``: deliver the client's FIN if it has closed by now."""
        raise NotImplementedError


class ListenPath:
    """What the client machines send a server's listening port: a :class:`ListenSocket`,
    or a group of them that picks one per connection
    (:class:`acceptsim.models.multicore.ReuseportGroup`).  A native base class, so that a
    :class:`Segment`'s delivery is a native call in the compiled build."""

    def syn(self, conn: Connection) -> None:
        raise NotImplementedError

    def handshake_ack(self, conn: Connection) -> None:
        raise NotImplementedError

    def bare_ack(self, conn: Connection) -> None:
        raise NotImplementedError

    def first_request(self, conn: Connection) -> None:
        raise NotImplementedError

    def retransmitted_segment(self, conn: Connection) -> None:
        raise NotImplementedError

    def fin(self, conn: Connection) -> None:
        raise NotImplementedError

    def request_arrives(self, conn: Connection) -> None:
        raise NotImplementedError

    def reset(self, conn: Connection) -> None:
        raise NotImplementedError


# The segments a client sends (a :class:`Segment`'s ``kind``), each delivered by the
# ListenPath method of its name
SYN: Final = 0
HANDSHAKE_ACK: Final = 1
BARE_ACK: Final = 2
FIRST_REQUEST: Final = 3
REQUEST: Final = 4
FIN: Final = 5
RESET: Final = 6
#: the ListenPath method that delivers each kind
SEGMENT_METHODS: Final = (
    "syn", "handshake_ack", "bare_ack", "first_request", "request_arrives", "fin", "reset",
)


class Segment(Handler):
    """One kind of segment from the client machines to ``path`` (``kind``: ``SYN``,
    ...): ``handle(conn)`` delivers one, now.  The client schedules these on the event
    heap and its delay lines, which call them natively."""

    __slots__ = ("path", "kind")

    def __init__(self, path: ListenPath, kind: int) -> None:
        self.path = path
        self.kind = kind

    def __repr__(self) -> str:  # what it calls (acceptsim bench --events names it so)
        return f"{type(self.path).__name__}.{SEGMENT_METHODS[self.kind]}"

    def handle(self, value: object) -> None:
        conn = cast(Connection, value)
        kind = self.kind
        path = self.path
        if kind == SYN:
            path.syn(conn)
        elif kind == BARE_ACK:
            path.bare_ack(conn)
        elif kind == FIRST_REQUEST:
            path.first_request(conn)
        elif kind == FIN:
            path.fin(conn)
        elif kind == HANDSHAKE_ACK:
            path.handshake_ack(conn)
        elif kind == REQUEST:
            path.request_arrives(conn)
        else:
            path.reset(conn)


@trait
@mypyc_attr(allow_interpreted_subclasses=True)  # (servers a user writes in Python)
class Application:
    """What the listen path tells the server application: a server model, or the rule of
    a socket its workers share.  A native trait, so that the kernel's calls of these,
    several per connection, are native calls in the compiled build."""

    def accept_ready(self) -> None:
        """The accept queue went from empty to non-empty."""

    def readable(self, conn: Connection) -> None:
        """Data or end-of-file arrived on an accepted connection."""
        raise NotImplementedError


class ListenSocket(ListenPath):
    """A listening socket on the server host, with its two queues."""

    def __init__(
        self,
        env: Environment,
        cpu: Cpu,
        costs: HostCosts,
        profile: KernelProfile,
        backlog: int,
        client: ClientSide,
    ) -> None:
        self.env = env
        self.clock = env.clock
        self.cpu = cpu
        self.costs = costs
        self.profile = profile
        self.backlog = min(backlog, profile.somaxconn)
        self.client = client
        self.app: Application | None = None
        #: the processors the kernel's per-packet work is spread over by the flow's hash
        #: (RSS/RPS: :meth:`spread_softirq`); empty: all of it runs on ``cpu``
        self._rss: list[Cpu] = []
        #: optional hook ``fn(conn)`` called for every connection queued for accept()
        #: (a server that is notified per connection, e.g. by a real-time signal)
        self.on_queued: Callable[[Connection], None] | None = None
        self.syn_capacity = profile.syn_queue_capacity(self.backlog)
        # the drop rules' settings, read once (every SYN checks them)
        self._syncookies = profile.syncookies
        self._young_rule = profile.young_rule
        self._max_syn_backlog = profile.max_syn_backlog
        self._drop_request_free = int(profile.max_syn_backlog * profile.drop_request_fraction)
        # per-packet costs, read once (every packet charges one of them)
        self._rx_cost = costs.rx_segment_s
        self._child_cost = costs.child_socket_s
        self._two_segments = 2 * costs.rx_segment_s
        self._fin_cost = costs.rx_segment_s + costs.tx_segment_s  # FIN in, its ACK out
        self._syn_cost = costs.rx_segment_s + costs.syn_queue_s  # SYN in, request queued
        self.accept_queue: deque[Connection] = deque()
        # its two operations, bound once (the compiled build then calls them without a
        # look-up: a deque has no native operations)
        self._accept_append: Callable[[Connection], None] = self.accept_queue.append
        self._accept_popleft: Callable[[], Connection] = self.accept_queue.popleft
        #: first SYN-ACK retransmission timers of overflowed requests (can be thousands)
        self._synack_timers = env.timer_lane()
        # the SYN-queue timer's clock hand (synq_timer_s > 0): buckets checked per run
        self._synq_timer = profile.synq_timer_s
        self._synq_buckets = profile.synq_hash_buckets
        # (at least one bucket a run: the kernel's loop checks one before it counts)
        self._synq_budget = (
            max(1, min(2 * (profile.synq_hash_buckets
                            // max(1, round(profile.synack_rto_s / self._synq_timer))),
                       profile.synq_hash_buckets))
            if self._synq_timer > 0 else 0
        )
        self.syn_len = 0  # open requests in the SYN queue
        self.syn_young = 0  # of which young
        # counters (cumulative; the run takes differences over its window)
        self.syn_q_full = 0
        self.accept_q_full = 0
        self.drop_request = 0
        self.listen_overflow = 0
        self.cookies_sent = 0
        self.requests_expired = 0
        self.requests_reset = 0
        #: retransmitted SYNs that arrived, and SYN-ACKs retransmitted (together what
        #: nstat counts as TcpExtTCPSynRetrans on a host whose clients are local)
        self.syn_retransmits = 0
        self.synack_retransmits = 0
        self.max_accept_len = 0
        self.max_syn_len = 0

    def spread_softirq(self, cpus: list[Cpu]) -> None:
        """Run each connection's packets on one of ``cpus``, chosen by its flow's hash (the
        NIC's receive-side scaling, or RPS), instead of on ``cpu``."""
        self._rss = list(cpus) if len(cpus) > 1 else []

    def cpu_of(self, conn: Connection) -> Cpu:
        """The processor that runs the kernel's work for ``conn``'s packets."""
        rss = self._rss
        if rss:
            return rss[flow_hash(conn.id, RSS_SECRET) % len(rss)]
        return self.cpu

    # -- arrivals from the network ------------------------------------------
    def syn(self, conn: Connection) -> None:
        """A SYN (first or retransmitted) arrives."""
        if conn.syn_sent > 1:
            self.syn_retransmits += 1
        full_accept = len(self.accept_queue) > self.backlog
        cookie = False
        if self.syn_len >= self.syn_capacity:
            if not self._syncookies:
                self.syn_q_full += 1
                return self._drop_syn(conn)
            cookie = True
        if full_accept and (self.syn_young > 1 or not self._young_rule):
            self.accept_q_full += 1
            return self._drop_syn(conn)
        if (
            not cookie
            and not self._syncookies
            and self._max_syn_backlog - self.syn_len < self._drop_request_free
        ):
            self.drop_request += 1
            return self._drop_syn(conn)
        (self.cpu_of(conn) if self._rss else self.cpu).interrupt(self._syn_cost)
        conn.state = SYN_RECV
        conn.synq_at = self.clock.now
        if cookie:
            self.cookies_sent += 1
        else:
            conn.young = True
            self.syn_len += 1
            self.syn_young += 1
            if self.syn_len > self.max_syn_len:
                self.max_syn_len = self.syn_len
        conn.cookie = cookie  # a cookie request keeps no state on the server
        self.client.syn_ack(conn)

    def _drop_syn(self, conn: Connection) -> None:
        (self.cpu_of(conn) if self._rss else self.cpu).interrupt(self._rx_cost)
        conn.state = SYN_SENT
        self.client.syn_dropped(conn)

    def handshake_ack(self, conn: Connection) -> None:
        """The client's final ACK arrives, with its first request right behind it."""
        (self.cpu_of(conn) if self._rss else self.cpu).interrupt(self._two_segments)
        if conn.state == SYN_RECV:
            self._move_to_accept_queue(conn)

    def bare_ack(self, conn: Connection) -> None:
        """The client's final ACK arrives alone: its kernel answered the SYN-ACK, and
        the client application has not written its request yet (see
        :meth:`first_request`).  Like any segment of an open request, it tries the
        move into the accept queue; the connection then has nothing to read."""
        (self.cpu_of(conn) if self._rss else self.cpu).interrupt(self._rx_cost)
        if conn.state == SYN_RECV:
            self._move_to_accept_queue(conn, data=False)

    def first_request(self, conn: Connection) -> None:
        """The client's first request arrives after its bare ACK (:meth:`bare_ack`).

        If the ACK overflowed the accept queue the request is one more try at the
        move (and, if it overflows too, the client will retransmit it); otherwise
        it is data for an established connection.
        """
        (self.cpu_of(conn) if self._rss else self.cpu).interrupt(self._rx_cost)
        state = conn.state
        if state == SYN_RECV:
            self._move_to_accept_queue(conn)
        elif state != CLOSED:
            conn.pending += 1
            if state == ACCEPTED and self.app is not None:
                self.app.readable(conn)

    def retransmitted_segment(self, conn: Connection) -> None:
        """A retransmission of the client's request (after a ListenOverflow)."""
        (self.cpu_of(conn) if self._rss else self.cpu).interrupt(self._rx_cost)
        if conn.state == SYN_RECV:
            self._move_to_accept_queue(conn)

    def _move_to_accept_queue(self, conn: Connection, data: bool = True) -> None:
        """A segment of an open request tries to complete it.  ``data``: the client's
        request has been sent (this segment or an earlier one carries it), so the
        child socket, if created, has a request to read."""
        if len(self.accept_queue) > self.backlog:
            self.listen_overflow += 1
            if not conn.acked:
                conn.acked = True
                if not conn.cookie:  # a real open request: arm the SYN-ACK timer
                    self._synack_timers.call_at(
                        self._synack_fires(conn, conn.synq_at + self.profile.synack_rto_s),
                        self._synack_timer, conn,
                    )
            if data and not conn.request_unacked:
                conn.request_unacked = True  # the client's retransmission timer runs
                self.client.request_unacknowledged(conn)
            return
        (self.cpu_of(conn) if self._rss else self.cpu).interrupt(self._child_cost)
        if not conn.cookie:  # self._unlink_request(conn), inline
            self.syn_len -= 1
            if conn.young:
                conn.young = False
                self.syn_young -= 1
        conn.state = ESTABLISHED
        if data:
            conn.pending += 1
        self._accept_append(conn)
        queued = len(self.accept_queue)
        if queued > self.max_accept_len:
            self.max_accept_len = queued
        if queued == 1 and self.app is not None:
            self.app.accept_ready()
        if self.on_queued is not None:
            self.on_queued(conn)

    def _unlink_request(self, conn: Connection) -> None:
        self.syn_len -= 1
        if conn.young:
            conn.young = False
            self.syn_young -= 1

    def _synack_timer(self, conn: Connection) -> None:
        """The SYN-ACK retransmission timer of an acked (overflowed) request."""
        if conn.state != SYN_RECV:
            return
        profile = self.profile
        costs = self.costs
        if conn.synack_rtx >= profile.synack_retries:
            self.requests_expired += 1
            self._unlink_request(conn)
            conn.state = CLOSED
            return
        conn.synack_rtx += 1
        self.synack_retransmits += 1
        if conn.young:
            conn.young = False
            self.syn_young -= 1
        # SYN-ACK out and the client's answer back (one LAN round trip, folded
        # into this instant)
        cpu = self.cpu_of(conn) if self._rss else self.cpu
        cpu.interrupt(costs.tx_segment_s + costs.rx_segment_s)
        if conn.client_dead:
            self.requests_reset += 1
            self._unlink_request(conn)
            conn.state = CLOSED
            return
        # the client's answer moves the request; its data is there to read only if the
        # request has been sent (and dropped): a bare ACK's request may still be coming
        self._move_to_accept_queue(conn, data=conn.request_unacked)
        if conn.state == SYN_RECV:
            backoff = min(profile.synack_rto_s * 2**conn.synack_rtx, profile.rto_max_s)
            if self._synq_budget:
                at = self._synack_fires(conn, self.clock.now + backoff)
                self._synack_timers.call_at(at, self._synack_timer, conn)
            else:
                self.env.delay_line(backoff).put(self._synack_timer, conn)

    def _synack_fires(self, conn: Connection, expires: float) -> float:
        """When the SYN-ACK timer of ``conn``, expiring at ``expires``, fires: then, or
        with the SYN-queue timer (``synq_timer_s``) at the first of its runs, on a grid of
        its period, whose clock hand reaches the request's bucket at or after ``expires``.
        The bucket is a fixed hash of the connection (the kernel hashes the client's
        address and port with a random secret)."""
        if not self._synq_budget:
            return expires
        period = self._synq_timer
        buckets = self._synq_buckets
        budget = self._synq_budget
        bucket = synq_bucket(conn.id, buckets)
        k = math.ceil(expires / period - 1e-9)
        while (bucket - budget * k) % buckets >= budget:  # the hand passes it within a lap
            k += 1
        return k * period

    def fin(self, conn: Connection) -> None:
        """The client's FIN arrives (it read its reply, or it timed out).

        A FIN for a connection the server has already closed, or one that
        already arrived, changes nothing.
        """
        if conn.state == CLOSED or conn.eof:
            return
        (self.cpu_of(conn) if self._rss else self.cpu).interrupt(self._fin_cost)
        conn.eof = True
        if conn.state == ACCEPTED and self.app is not None:
            self.app.readable(conn)

    def request_arrives(self, conn: Connection) -> None:
        """A further request on a persistent connection arrives."""
        (self.cpu_of(conn) if self._rss else self.cpu).interrupt(self._rx_cost)
        conn.pending += 1
        if conn.state == ACCEPTED and self.app is not None:
            self.app.readable(conn)

    def reset(self, conn: Connection) -> None:
        """A RST from the client for an open request (its socket is gone): the request
        leaves the SYN queue."""
        (self.cpu_of(conn) if self._rss else self.cpu).interrupt(self._rx_cost)
        if conn.state == SYN_RECV:
            self.requests_reset += 1
            if not conn.cookie:
                self._unlink_request(conn)
            conn.state = CLOSED

    def drop_counts(self) -> dict[str, int]:
        """Each counter of :data:`DROP_KINDS`, cumulative since the start."""
        return {kind: getattr(self, kind) for kind in DROP_KINDS}

    # -- the server's side ------------------------------------------------------
    def accept(self) -> Connection | None:
        """accept(): the oldest established connection, or None (EAGAIN)."""
        if not self.accept_queue:
            return None
        conn = self._accept_popleft()
        conn.state = ACCEPTED
        self.client.check_client_gone(conn)
        return conn
