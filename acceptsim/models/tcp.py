"""A reply on its way out: segments, the send buffer, ACKs and the links to the clients.

A server writes a reply of ``B`` bytes into its connection's socket.  What the kernel
then does, as modelled here (Linux 2.4's ``tcp_sendmsg``, ``tcp_poll`` and the
receiver's delayed ACKs):

* **Segments.**  The reply leaves as ``ceil(B / mss_bytes)`` segments (the kernel
  profile's MSS: 1448 payload bytes with TCP timestamps on a 1500-byte MTU).  Each is
  sent in the writer's context and costs ``costs.tx_segment_s``, except the first
  segment of a reply, whose transmission is part of the server's per-request cost
  (``request_s``, ``tux_send_s``: fitted, or set, with one-segment replies).
* **The send buffer.**  A non-blocking ``write()`` takes what fits in the socket's
  send buffer (``kernel.tcp_wmem_bytes``, ``sk_sndbuf``), in whole segments
  (``tcp_sendmsg`` fills MSS-sized buffers while memory is free); the rest of the
  reply waits.  The written bytes stay in the buffer until the client ACKs them.  The
  socket is writable again (``select()`` reports it in the write set, ``tcp_poll``)
  when its free space is at least half of what is queued
  (``tcp_min_write_space``), i.e. when at most :data:`WRITABLE_SHARE` of the buffer
  is queued: then the server is told (its ``readable`` hook: the connection is ready
  again) and writes the next part, a further ``write()`` (``costs.write_s``).  So a
  reply larger than the buffer costs several rounds of the server's loop.
* **ACKs.**  The client's kernel ACKs every second full segment
  (``kernel.ack_every_segments``, the delayed-ACK rule of ``__tcp_ack_snd_check``);
  each ACK costs the server's kernel ``costs.rx_segment_s`` when it arrives.  A
  write's odd last segment is ACKed on its own when the client reads it (the window
  update of ``cleanup_rbuf``), except at the end of a reply, where its ACK rides on
  the client's next segment (its next request, or its FIN, as the one-packet reply's
  does).  Linux 2.4's delayed-ACK timer (40 ms) would only act on a segment the
  client does not read, which httperf does at once: it is not modelled.
* **The link.**  Each client machine reaches the server through one of the server's
  NICs (``costs.nics``, the machines split evenly: the paper's four per NIC); a
  write's segments are serialised on that link at ``costs.nic_bits_per_s``, each
  frame with ``costs.frame_overhead_bytes`` of headers, preamble and gap, after the
  frames queued before them.  The last byte reaches the client one one-way delay
  after it leaves; the ACKs of a write come back one one-way delay after that.

Replies of one segment keep the path they always had: the server's burst, then
``Client.reply``.  Their frame goes on its link too: on an idle link it is not
delayed (a lone frame's serialisation is part of the LAN's measured round trip); behind
frames queued before it, the reply reaches the client when its frame has left.  The
same holds for servers that write a reply in one step (all but the userver, TUX and
Knot), whose further frames also wait for the first.  So no link sends more than its
line rate: a run that would need more is limited by its link (``acceptsim run`` says
so, ``link_note``).  The
two-class server models one link of its own (Eggert and Heidemann's testbed): a
:class:`Nic` that replaces the host's links (:meth:`SendPath.use_links`), so the
record's ``link_utilization`` is its busy share too.

Timing is kept per write, not per segment: a write's ACKs all arrive (and free its
bytes in the buffer) when its last segment has been ACKed, one event per write.
The congestion window is not modelled (on a LAN without losses slow start opens it
within a few round trips), nor the growth of ``sk_sndbuf`` with it (2.4's
``tcp_new_space``, up to ``tcp_wmem[2]``): the buffer stays at ``tcp_wmem_bytes``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from acceptsim.models.connection import Connection

if TYPE_CHECKING:
    from acceptsim.models.client import Client
    from acceptsim.models.costs import HostCosts
    from acceptsim.models.kernel import KernelProfile
    from acceptsim.sim.engine import Environment

#: a socket is writable when its free space is at least half of what is queued
#: (Linux's ``tcp_min_write_space``, ``tcp_poll``): when at most 2/3 of the buffer is queued
WRITABLE_SHARE: Final = 2.0 / 3.0


#: a link busy for at least this share of a run's window limits the run (``link_note``)
LINK_LIMITED_SHARE: Final = 0.98


def link_note(utilization: list[float]) -> str:
    """What to tell the user when a run's links (its record's ``link_utilization``) were
    busy nearly all the window: its replies waited for the line, not for the server
    (empty otherwise)."""
    busy = [i for i, u in enumerate(utilization) if u >= LINK_LIMITED_SHARE]
    if not busy:
        return ""
    shares = ", ".join(f"NIC {i} {utilization[i]:.0%}" for i in busy)
    return (f"the run is limited by the links to the clients ({shares} of the window "
            "sending): replies waited for the line rate (costs.nic_bits_per_s, costs.nics)")


class Nic:
    """One of the server's links to the clients: frames leave first come, first served
    at the line rate."""

    __slots__ = ("bits_per_s", "free_at", "busy_s", "wire_bytes")

    def __init__(self, bits_per_s: float) -> None:
        self.bits_per_s = bits_per_s
        #: the instant the last frame queued so far has left
        self.free_at = 0.0
        #: seconds the link has spent (or will spend) sending what was queued so far
        self.busy_s = 0.0
        #: bytes on the wire so far, frame overheads included
        self.wire_bytes = 0

    def sent_s(self, now: float) -> float:
        """Seconds the link has spent sending up to ``now`` (what it queued to send later
        not counted yet): its busy share of any span is at most 1."""
        return self.busy_s - (self.free_at - now if self.free_at > now else 0.0)

    def serialise(self, now: float, wire_bytes: int) -> float:
        """Queue ``wire_bytes`` at instant ``now``; the instant their last bit has left."""
        seconds = wire_bytes * 8.0 / self.bits_per_s
        start = self.free_at if self.free_at > now else now
        self.free_at = start + seconds
        self.busy_s += seconds
        self.wire_bytes += wire_bytes
        return self.free_at


class _Write:
    """What one ``write()`` put in flight: its bytes and the ACKs that will free them."""

    __slots__ = ("conn", "nbytes", "acks")

    def __init__(self, conn: Connection, nbytes: int, acks: int) -> None:
        self.conn = conn
        self.nbytes = nbytes
        self.acks = acks


class SendPath:
    """The server host's TCP send side and its links (the module text)."""

    def __init__(
        self,
        env: Environment,
        client: Client,
        profile: KernelProfile,
        costs: HostCosts,
        machines: int,
        nics: int,
    ) -> None:
        """``machines``: the client machines (connection ``i`` is machine
        ``i % machines``); ``nics``: the server's links to them (0: none, the clients are
        local and nothing is serialised)."""
        self.clock = env.clock
        self.client = client
        self.mss: int = profile.mss_bytes
        self.sndbuf: int = profile.tcp_wmem_bytes
        #: a socket is writable when at most this many bytes are queued
        self.writable_at: float = WRITABLE_SHARE * profile.tcp_wmem_bytes
        self.ack_every: int = profile.ack_every_segments
        self.tx_segment: float = costs.tx_segment_s
        self.rx_segment: float = costs.rx_segment_s
        self.per_byte: float = costs.send_per_byte_s
        self.write_s: float = costs.write_s
        self.overhead: int = costs.frame_overhead_bytes
        self.owd: float = client.owd
        self.machines: int = max(1, machines)
        self.nics: list[Nic] = [Nic(costs.nic_bits_per_s) for _ in range(nics)]
        self._n_nics: int = nics
        # counters (cumulative)
        self.segments = 0  # reply segments sent
        self.acks = 0  # ACKs of reply segments received (alone, not piggybacked)
        self.writes = 0  # write() calls that continued a reply
        self.partial_writes = 0  # writes that left part of their reply for later

    # -- what a server asks --------------------------------------------------------------
    def segments_of(self, nbytes: int) -> int:
        """Segments of ``nbytes`` of reply."""
        return (nbytes + self.mss - 1) // self.mss

    def nic_of(self, conn: Connection) -> Nic | None:
        """The link ``conn``'s client machine is on (None: no links)."""
        if not self._n_nics:
            return None
        machine = conn.id % self.machines
        return self.nics[machine * self._n_nics // self.machines]

    def start(self, conn: Connection) -> bool:
        """The server is about to write the reply to ``conn``'s current request: True if it
        takes more than one segment (then :meth:`chunk` and :meth:`wrote` send it; else the
        caller's one-burst path does, and ``Client.reply`` counts its frame)."""
        nbytes: int = conn.reply_bytes
        if nbytes <= self.mss:
            return False
        conn.tx_left = nbytes
        return True

    def chunk(self, conn: Connection) -> int:
        """Bytes the next ``write()`` of ``conn``'s reply takes: all that is left if it
        fits in the send buffer's free space, else the whole segments that fit."""
        left = conn.tx_left
        free = self.sndbuf - conn.tx_queued
        if left <= free:
            return left
        return (free // self.mss) * self.mss if free > 0 else 0

    def segments_cost(self, nbytes: int, first: bool) -> float:
        """The segments of a ``write()`` of ``nbytes``, sent in the writer's context (the
        first write of a reply: all but one, whose cost the request's holds)."""
        segs = self.segments_of(nbytes)
        if first and segs:
            segs -= 1
        return self.tx_segment * float(segs)

    def send_cost(self, nbytes: int, first: bool) -> float:
        """The kernel's part of a ``write()`` of ``nbytes``: the copy and checksum of its
        bytes (``send_per_byte_s``) and its segments (:meth:`segments_cost`)."""
        return self.per_byte * float(nbytes) + self.segments_cost(nbytes, first)

    def wrote(self, conn: Connection, nbytes: int, first: bool) -> bool:
        """A ``write()`` of ``nbytes`` of ``conn``'s reply has returned (now): its segments
        go out on the link; True if the reply is all written (the client is told when its
        last byte arrives), False if the rest waits for the socket to be writable."""
        if not first:
            self.writes += 1
        left = conn.tx_left - nbytes
        conn.tx_left = left
        segs = self.segments_of(nbytes)
        self.segments += segs
        now = self.clock.now
        leaves = now
        if nbytes:
            conn.tx_queued += nbytes
            nic = self.nic_of(conn)
            if nic is not None:
                leaves = nic.serialise(now, nbytes + segs * self.overhead)
            every = self.ack_every
            # ACKs: one per `every` segments; a write's odd tail is ACKed when read,
            # except at the end of the reply, where it rides on the client's next segment
            acks = segs // every if left == 0 else (segs + every - 1) // every
            self.clock.post_at(leaves + 2.0 * self.owd, self._acked, _Write(conn, nbytes, acks))
        if left == 0:
            if leaves > now:
                self.clock.post_at(leaves, self._delivered, conn)
            else:
                self.client.reply(conn, True)
            return True
        self.partial_writes += 1
        return False

    def abandon(self, conn: Connection) -> None:
        """The server gives up the rest of ``conn``'s reply (the client has gone)."""
        conn.tx_left = 0

    # -- what comes back -----------------------------------------------------------------
    def _delivered(self, conn: Any) -> None:
        self.client.reply(conn, True)

    def _acked(self, w: Any) -> None:
        """The ACKs of one write arrive: the kernel handles them, the bytes leave the send
        buffer, and a reply waiting for room is told it may write again."""
        write: _Write = w
        conn = write.conn
        self.acks += write.acks
        if write.acks:
            owner: Any = conn.owner
            if owner is not None:
                owner.listen.cpu_of(conn).interrupt(self.rx_segment * float(write.acks))
        conn.tx_queued -= write.nbytes
        if conn.tx_left and conn.tx_queued <= self.writable_at and conn.owner is not None:
            conn.owner.readable(conn)

    def whole(self, conn: Connection) -> float:
        """A reply written in one step (one segment, or a server that writes it at once):
        its frames go on its link.  Returns how much later than now its last byte
        leaves beyond a lone frame's own serialisation (part of the LAN's measured round
        trip): 0 on an idle link; the wait behind the frames queued before it and its own
        further frames otherwise, so no link sends more than its line rate."""
        nics = self._n_nics
        if not nics:
            return 0.0
        nbytes: int = conn.reply_bytes
        mss = self.mss
        machines = self.machines
        nic = self.nics[(conn.id % machines) * nics // machines]
        now = self.clock.now
        leaves = nic.serialise(now, nbytes + (nbytes + mss - 1) // mss * self.overhead)
        lone = (min(nbytes, mss) + self.overhead) * 8.0 / nic.bits_per_s
        late = leaves - now - lone
        return late if late > 1e-12 else 0.0

    def use_links(self, nics: list[Nic]) -> None:
        """Send on ``nics`` instead of the host's links (a server that models its own:
        the two-class server's one link)."""
        self.nics = list(nics)
        self._n_nics = len(nics)

    def link_busy(self) -> list[float]:
        """Seconds each link has been sending up to now, cumulative (one per NIC; frames
        queued to leave later are not counted yet)."""
        now = self.clock.now
        return [nic.sent_s(now) for nic in self.nics]
