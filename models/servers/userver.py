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

Policy hooks (:mod:`models.policies`): the accept-limit is asked at each
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
from typing import TYPE_CHECKING, Any, Final

from mypy_extensions import mypyc_attr

from acceptsim.models.connection import CLOSED, Connection
from acceptsim.models.policies import AcceptPolicy
from acceptsim.models.servers.base import ACCEPT, RequestBurst, Server, ServerHost
from acceptsim.models.servers.spec import ServerSpec
from acceptsim.sim.cpu import BLOCK, INF, Task
from acceptsim.sim.params import Params, param

if TYPE_CHECKING:
    pass

GETEVENTS: Final = "getevents"
WORK: Final = "work"
CATEGORIES: Final = (GETEVENTS, ACCEPT, WORK)
_EMPTY: Final[list[Connection]] = []


@mypyc_attr(native_class=False)  # a parameter set: a plain frozen dataclass
@dataclass(frozen=True)
class UserverParams(Params):
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

    def __init__(self, host: ServerHost, params: Any, policy: AcceptPolicy) -> None:
        # params: UserverParams, or a subclass server's own
        super().__init__(host, params, policy)
        self.ready: list[Connection] = []  # readable connections, in the order they became so
        self._batch: list[Connection] = _EMPTY  # reported by the last select, being served
        #: the policy skipped the last accept phase (an edge-triggered dispatch
        #: mechanism then waits for a new event rather than report the queue again)
        self.accept_skipped = False
        # counters (cumulative)
        self.select_calls = 0
        self.work_phases = 0
        self.conns_worked = 0
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
        return self.costs.select_base_s + self.costs.select_per_fd_s * (self.open + 1)

    def listen_ready(self) -> bool:
        """Would getevents report the listening socket readable?"""
        return bool(self.listen.accept_queue) and self.open < self.max_open

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

    def opened(self) -> float:
        """Extra CPU per accepted connection beyond ``accept()`` (none for select).

        A constant of the server: :meth:`run` asks once.
        """
        return 0.0

    @property
    def work_queue_len(self) -> int:
        """Connections select() reported ready and not yet served, plus those ready since."""
        return len(self._batch) + len(self.ready)

    def inline_hooks(self) -> tuple[bool, bool, bool]:
        """Which of the hot path's own calls :meth:`run` may write inline: (getevents with
        select_cost and listen_ready, readable of a connection just accepted, hold and
        release).  Each is inline only where this class has not redefined it: an override
        is always called.  A subclass that returns ``(False, False, False)`` runs the
        general loop, with the same results (``tests/test_server_properties.py`` compares
        the two paths run by run)."""
        cls = type(self)
        plain_select = (
            cls.getevents is Userver.getevents
            and cls.select_cost is Userver.select_cost
            and cls.listen_ready is Userver.listen_ready
        )
        plain_readable = cls.readable is Userver.readable
        plain_hold = cls.hold is Server.hold and cls.release is Server.release
        return plain_select, plain_readable, plain_hold

    def run(self) -> Task:
        costs = self.costs
        listen = self.listen
        accept_queue = listen.accept_queue
        max_open = self.max_open
        client = self.client
        clock = self.clock
        accept_cost = costs.accept_s + self.opened()
        policy = self.policy
        plain_select, plain_readable, plain_hold = self.inline_hooks()
        select_base = costs.select_base_s
        select_per_fd = costs.select_per_fd_s
        accept_empty = costs.accept_empty_s
        close_s = costs.close_s
        # a static policy's accept_limit() and a work_budget() that never bounds, without
        # the calls (the same values)
        static_limit = policy.static_limit
        bounded_work = policy.bounds_work
        # the bursts whose cost never changes, made once (typed object: the compiled
        # build then yields this one tuple, where it would build a new one per yield)
        accept_burst: object = (ACCEPT, accept_cost)
        close_burst: object = (WORK, close_s)
        # a request's burst, made again only when the reply's size changes
        request_bursts = RequestBurst(WORK, costs.request_s, costs.send_per_byte_s)
        while True:
            # 1. getevents
            if plain_select:
                yield GETEVENTS, select_base + select_per_fd * (self.open + 1)
                while not self.ready and not (accept_queue and self.open < max_open):
                    yield BLOCK
                    yield GETEVENTS, select_base + select_per_fd * (self.open + 1)
                self.select_calls += 1
                ready, self.ready = self.ready, []
            else:
                ready = yield from self.getevents()
            self._batch = ready
            # 2. accept (the policy may skip the phase: a limit of 0)
            if accept_queue and self.open < max_open:
                limit: float = static_limit or policy.accept_limit(self)
                self.accept_skipped = not limit
                if limit:
                    accepted = 0
                    while accepted < limit and self.open < max_open:
                        conn = listen.accept()
                        if conn is None:
                            yield ACCEPT, accept_empty
                            break
                        yield accept_burst
                        accepted += 1
                        if plain_hold:
                            self.open += 1  # self.hold(conn), inline
                            self._open_sum -= clock.now
                        else:
                            self.hold(conn)
                        if conn.pending or conn.eof:
                            if plain_readable and not conn.ready:
                                conn.ready = True  # self.readable(conn), inline (the task
                                self.ready.append(conn)  # runs: nothing to wake)
                            else:
                                self.readable(conn)
                    self.accept_phases += 1
                    self.accepts += accepted
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
                    if conn.pending:
                        if not conn.eof and clock.now >= conn.deadline + client.owd:
                            client.check_client_gone(conn)
                        conn.pending -= 1
                        yield request_bursts.of(conn.reply_bytes)
                        client.reply(conn)
                        if conn.pending or conn.eof:
                            self.readable(conn)
                    elif conn.eof:
                        yield close_burst
                        if plain_hold:
                            self.open -= 1  # self.release(conn), inline
                            self._open_sum += clock.now
                            conn.state = CLOSED
                        else:
                            self.release(conn)
                self.work_phases += 1
                self.conns_worked += i
                self._batch = _EMPTY

    def counters(self) -> dict[str, float]:
        """Cumulative counters; the run takes differences over its window."""
        return {
            "select_calls": self.select_calls,
            "accept_phases": self.accept_phases,
            "accepts": self.accepts,
            "work_phases": self.work_phases,
            "conns_worked": self.conns_worked,
            "open_area": self.open_area(),
        }


SPECS = (
    ServerSpec(
        "userver", Userver, UserverParams, CATEGORIES,
        "The event-driven userver: select(), then accept up to accept-limit, then work.",
    ),
)
