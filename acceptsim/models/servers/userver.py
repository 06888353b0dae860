"""The userver: a single-process, event-driven, select()-based web server.

It repeats three phases (the paper, section 3):

1. **getevents**: ``select()`` over the listening socket and every open
   connection.  On Linux 2.4 select registers on and polls every socket's
   wait queue, so it costs a fixed part plus a part per descriptor.  If
   nothing is ready it sleeps, and scans again when woken.
2. **accept**: entered only if select reported the listening socket ready;
   accept up to the accept-limit connections, stopping early when the queue
   is empty (the failing accept costs too).
3. **work**: serve each connection select reported ready: read, parse and
   reply to a request, or read end-of-file and close.  Connections accepted
   in the phase just before are *not* served until a later select reports
   them.

Policy hooks (:mod:`acceptsim.models.policies`): the accept-limit is asked at each
accept phase (0 skips it: not counted as a phase; with nothing else to do
the server just selects again); a work phase ends early when the policy's
work budget is spent, and the connections not yet served stay ready for the
next ``select()``.  The work queue a policy sees is the connections reported
ready and not yet served.

Chandra and Mosberger's "multi-accept" select server is this model with
accept-limit inf; their plain select server is accept-limit 1.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, Final

from mypy_extensions import mypyc_attr

from acceptsim.models.connection import Connection
from acceptsim.models.policies import AcceptPolicy
from acceptsim.models.request_cost import RequestCostParams, request_bursts
from acceptsim.models.servers.base import ACCEPT, WAKE_ALL, Server, WorkerWiring
from acceptsim.models.servers.spec import ServerSpec
from acceptsim.sim.cpu import BLOCK, INF, Burst, Task
from acceptsim.sim.params import param

GETEVENTS: Final = "getevents"
WORK: Final = "work"
CATEGORIES: Final = (GETEVENTS, ACCEPT, WORK)
_EMPTY: Final[list[Connection]] = []


@mypyc_attr(native_class=False)  # a parameter set: a plain frozen dataclass
@dataclass(frozen=True)
class UserverParams(RequestCostParams):
    _prefix = "server."

    max_connections: int = param(
        15000, unit="connections", ge=1, doc="most connections the server holds open at once"
    )
    backlog: int = param(128, unit="connections", ge=1, doc="listen() backlog the server asks for")


@mypyc_attr(allow_interpreted_subclasses=True)
class Userver(Server):
    """The event-driven userver; runs as the task of the host's CPU."""

    name = "userver"
    has_select = True

    def __init__(self, host: WorkerWiring, params: Any, policy: AcceptPolicy) -> None:
        # params: UserverParams, or a subclass server's own
        super().__init__(host, params, policy)
        self.ready: list[Connection] = []  # readable connections, in the order they became so
        self._batch: list[Connection] = _EMPTY  # reported by the last select, being served
        # select()'s costs, read once into native fields (the cost set's are not)
        self._select_base: float = host.costs.select_base_s
        self._select_per_fd: float = host.costs.select_per_fd_s
        self.start()

    # -- what the kernel tells the server ---------------------------------------------
    def readable(self, conn: Connection) -> None:
        if not conn.ready:
            conn.ready = True
            self.ready.append(conn)
            if self.cpu.task_end == INF:  # asleep (a call to wake() only when needed)
                self.cpu.wake()

    # -- the server loop ----------------------------------------------------------------
    def select_cost(self) -> float:
        """CPU of one ``select()`` call: a fixed part, and a part per descriptor (every
        open connection and the listening socket)."""
        return self._select_base + self._select_per_fd * (self.open + 1)

    def getevents(self) -> Generator[Any, None, list[Connection]]:
        """Phase 1, ``select()``: scan every descriptor; sleep and rescan if none is ready.

        Returns the connections reported ready, in the order they became so.
        Subclasses model other event-dispatch mechanisms by overriding this
        (``self.ready`` is kept up to date by :meth:`readable`).
        """
        yield GETEVENTS, self.select_cost()
        while not self.ready and not self.listen_ready():
            yield BLOCK
            yield GETEVENTS, self.select_cost()
        self.select_calls += 1
        ready, self.ready = self.ready, []
        return ready

    @property
    def work_queue_len(self) -> int:
        """Connections select() reported ready and not yet served, plus those ready since."""
        return len(self._batch) + len(self.ready)

    def run(self) -> Task:
        """The three phases, over and over.

        Phase 1 is :meth:`getevents`; where a class keeps the userver's own, its few
        lines are written here (with the same calls of :meth:`select_cost` and of the
        accept phase's ``ready``, which :meth:`listen_ready` is), since delegating to a
        generator per ``select()`` costs the hot path a generator object and two
        resumptions.  Every other step calls the hooks a subclass may redefine
        (``readable``, ``hold`` through the accept phase, ``release``).
        """
        listen = self.listen
        client = self.client
        clock = self.clock
        acc = self.acceptor
        policy = self.policy
        # getevents is the userver's own (the body below), unless a subclass redefines it
        own_getevents = type(self).getevents is Userver.getevents
        # a work_budget() that never bounds, without the calls (the same value)
        bounded_work = policy.bounds_work
        # the close's burst never changes: made once (typed object: the compiled build then
        # yields this one tuple, where it would build a new one per yield)
        close_burst: object = (WORK, self.costs.close_s + self.closing())
        # a request's burst, made again only when the reply's size changes
        # (with the keep-alive wait that follows every reply, unless the requests ask the
        # server to close)
        request_s = self.costs.request_s + (0.0 if client.asks_close else self.costs.keepalive_s)
        bursts = request_bursts(
            WORK, request_s, self.costs.send_per_byte_s, self.params, client.streams,
            self.worker,
        )  # fmt: skip
        # a request that says Connection: close is closed as soon as its reply is written
        # (nginx's ngx_http_finalize_connection), not when the client's FIN comes
        asks_close: bool = client.asks_close
        # a reply of several segments is written through the send buffer (models.tcp)
        tx = client.tx
        mss: int = tx.mss
        write_s: float = self.costs.write_s
        # the bursts whose cost varies, set again for each (sim.cpu.Burst)
        select = Burst(GETEVENTS)
        write = Burst(WORK)
        while True:
            # 1. getevents
            if own_getevents:  # Userver.getevents, in place
                yield select.of(self.select_cost())
                while not self.ready and not acc.ready(listen):
                    yield BLOCK
                    yield select.of(self.select_cost())
                self.select_calls += 1
                ready, self.ready = self.ready, []
            else:
                ready = yield from self.getevents()
            self._batch = ready
            # 2. accept, if select reported the listening socket (the policy may skip it)
            if acc.ready(listen) and acc.begin(listen):
                while acc.take():
                    yield acc.burst
                    conn = acc.took()
                    if conn is None:
                        break
                    if conn.pending or conn.eof:  # its request (or FIN) came before
                        self.readable(conn)
                acc.end()
            # 3. work, until done or the policy's time budget for the phase is spent
            if ready:
                ends_at: float = clock.now + policy.work_budget(self) if bounded_work else INF
                n = len(ready)
                i = 0
                while i < n:
                    if clock.now >= ends_at:  # the rest stays ready for the next select()
                        self.ready[:0] = ready[i:]
                        break
                    conn = ready[i]
                    i += 1
                    conn.ready = False
                    if conn.tx_left:  # select() reported it writable: the reply goes on
                        if conn.eof:  # the client has gone: the rest is dropped
                            tx.abandon(conn)
                            yield close_burst
                            self.release(conn)
                            continue
                        chunk = tx.chunk(conn)
                        yield write.of(write_s + tx.send_cost(chunk, False))
                        if tx.wrote(conn, chunk, False):
                            self.replies_sent += 1
                            if asks_close:  # closed now: a FIN that comes meanwhile is
                                self.release(conn)  # one for a closed socket
                                yield close_burst
                            elif conn.pending or conn.eof:
                                self.readable(conn)
                    elif conn.pending:
                        if not conn.eof and clock.now >= conn.deadline + client.owd:
                            client.check_client_gone(conn)
                        conn.pending -= 1
                        woke = 0.0
                        if conn.reply_bytes > mss and tx.start(conn):  # several segments
                            chunk = tx.chunk(conn)
                            yield bursts.plus(chunk, tx.segments_cost(chunk, True))
                            if not tx.wrote(conn, chunk, True):
                                continue  # in select()'s write set until there is room
                            self.replies_sent += 1
                        else:
                            yield bursts.of(conn.reply_bytes)
                            self.replies_sent += 1
                            woke = client.reply(conn)
                        if asks_close:  # closed now: a FIN that comes meanwhile is one
                            self.release(conn)  # for a closed socket
                            yield close_burst
                        elif conn.pending or conn.eof:
                            self.readable(conn)
                        # the reply woke the client's thread: the wake-up's work, charged
                        # after the socket is closed or watched again (a burst between
                        # the reply and the close would let the client's FIN queue the
                        # connection for a second close)
                        if woke > 0.0:
                            yield write.of(woke)
                    elif conn.eof:
                        yield close_burst
                        self.release(conn)
                self.work_phases += 1
                self.conns_worked += i
                self._batch = _EMPTY


SPECS = (
    ServerSpec(
        "userver", Userver, UserverParams, CATEGORIES,
        "The event-driven userver: select(), then accept up to accept-limit, then work.",
        wakeups=(WAKE_ALL,),
    ),
)
