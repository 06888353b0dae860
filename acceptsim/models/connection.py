"""One TCP connection, seen from both ends.

A simulation can keep a single record per connection: the client's view
(when it connected, when its current step times out) and the server host's
view (where the connection is in the kernel, what is waiting to be read)
share one object.  Follow a connection's ``state`` through models/ top-down:

    SYN_SENT      client sent a SYN that was dropped; it will retransmit
    SYN_RECV      an open request in the listen socket's SYN queue
    ESTABLISHED   a child socket in the accept queue
    ACCEPTED      held by the server application
    CLOSED        gone from the server host (closed, reset or expired)
"""

from __future__ import annotations

from typing import Any, Final

from acceptsim.sim.engine import Timed

SYN_SENT: Final = 0
SYN_RECV: Final = 1
ESTABLISHED: Final = 2
ACCEPTED: Final = 3
CLOSED: Final = 4

STATE_NAMES: Final = ("SYN_SENT", "SYN_RECV", "ESTABLISHED", "ACCEPTED", "CLOSED")


class Connection(Timed):
    """Plain record; every field is read and written by models/ directly.  ``due``
    (:class:`~acceptsim.sim.engine.Timed`) is the instant a line of retransmitted SYNs
    hands it on (:class:`~acceptsim.sim.engine.ItemLine`)."""

    __slots__ = (
        "id",
        "state",
        # client side
        "started_at",  # connect() called (first SYN sent)
        "deadline",  # the client gives up its current step at this instant
        "syn_sent",  # SYNs sent so far
        "request_sent_at",  # current request written to the socket
        "requests_left",  # requests still to make on this connection
        "reply_bytes",  # size of the reply to the current request
        "data_rtx",  # retransmissions of the request segment (after ListenOverflow)
        "client_dead",  # the client's socket is gone (further segments get RST)
        "outcome",  # None while unresolved, then "completed" or "timed_out"
        "process",  # the client process that made it (httperf's processes taking turns)
        # kernel side
        "synq_at",  # when the open request was queued
        "young",  # SYN-ACK never retransmitted
        "acked",  # the final ACK overflowed the accept queue at least once
        "request_unacked",  # the request overflowed: the client retransmits it
        "synack_rtx",  # SYN-ACK retransmissions
        "cookie",  # answered with a SYN cookie: no open request is kept
        # server side
        "pending",  # requests received and not yet read by the server
        "eof",  # the client's FIN has arrived
        "ready",  # listed in the server's ready set
        "tx_left",  # bytes of the current reply not yet written (models.tcp)
        "tx_queued",  # bytes written and not yet acknowledged: in the send buffer
        "server",  # server-private slot (a server may keep per-connection state here)
        "owner",  # the server (worker) that accepted it, for a socket several workers share
        "session",  # workload-private slot (e.g. the rest of a wsesslog session)
        "live_at",  # its place in its client's list of unresolved connections (-1: none)
    )

    def __init__(self, conn_id: int, started_at: float, deadline: float) -> None:
        self.due = 0.0
        self.id = conn_id
        self.state = SYN_SENT
        self.started_at = started_at
        self.deadline = deadline
        self.syn_sent = 1
        self.request_sent_at = 0.0
        self.requests_left = 0
        self.reply_bytes: Any = 0  # an int, or an int that also names its file (fileset)
        self.data_rtx = 0
        self.client_dead = False
        self.outcome: str | None = None
        self.process = 0
        self.synq_at = 0.0
        self.young = False
        self.acked = False
        self.request_unacked = False
        self.synack_rtx = 0
        self.cookie = False
        self.pending = 0
        self.eof = False
        self.ready = False
        self.tx_left = 0
        self.tx_queued = 0
        self.server: Any = None
        self.owner: Any = None
        self.session: Any = None
        self.live_at = -1

    def __repr__(self) -> str:
        return f"<Connection {self.id} {STATE_NAMES[self.state]}>"
