"""Knot: a thread-per-connection server on Capriccio user-level threads.

Capriccio runs every user-level thread on one kernel thread, so to the host
Knot is *one* task: its own user-level scheduler.  Every I/O call goes
through Capriccio's wrapper (``knot_io_s`` on top of the system call's own
cost: accept, read, write, close).  The scheduler runs the
runnable threads one after another (a context switch each); a thread runs
until it would block.  When no thread is runnable the scheduler polls the
kernel for I/O readiness over every descriptor a thread waits on, which
costs ``knot_poll_base_s + knot_poll_per_conn_s * open connections`` (on 2.4
Capriccio polls all of them), and makes runnable the threads whose
descriptor is ready.

**Knot-C** (``--server knot``): a fixed pool of threads (1,000 in the
paper).  Each thread accepts up to accept-limit connections without
blocking (it blocks on the listening socket only when it got none), then
serves each of them to completion, all requests of a persistent connection
up to the client's close, before it accepts again.  Connections a thread has
accepted but not yet reached stay open, waiting; with limits of 50-100 and a
thousand threads, open connections climb into the tens of thousands and the
poll cost with them.

**Knot-A** (``--server knot-a``): one acceptor thread accepts the
connections in the queue (up to the accept-limit; the paper's Knot-A has no
limit, i.e. inf), spawns a new thread for each
(``knot_thread_create_s``), then yields to them; a new thread serves its
connection and exits.

Policy hooks (:mod:`models.policies`): a thread asks the policy for its
accept-limit each time it has no connection left; 0 (or an empty queue) is
not an accept phase, and the thread blocks on the listening socket until a
poll wakes it.  A work phase is the run of runnable threads between two
polls; the policy's work budget makes the scheduler poll again sooner.  The
work queue a policy sees is the runnable threads.

Threads blocked on the listening socket wait in a FIFO list; a poll that
finds the accept queue non-empty wakes ``acceptor_wakeups`` of them.

Known gap: with these mechanisms accept-limit 100 holds tens of thousands
of connections open and falls off past its peak as in the paper, but limit
50 does not beat limit 1 (the paper: about 14,000 against 12,000); neither
waking one acceptor per poll nor waking all of them (a thundering herd)
produces the gain, because Knot at limit 1 is bound by per-connection CPU,
not by how fast it accepts.  See models/calibration_results.toml.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

from models.connection import CLOSED, Connection
from models.policies import AcceptPolicy
from models.servers.base import Server
from sim.cpu import BLOCK, Cpu
from sim.params import Params, param

if TYPE_CHECKING:
    from models.client import Client
    from models.costs import HostCosts
    from models.kernel import ListenSocket
    from sim.engine import Environment

INF = float("inf")
SCHEDULE = "schedule"
ACCEPT = "accept"
WORK = "work"
CATEGORIES = (SCHEDULE, ACCEPT, WORK)


@dataclass(frozen=True)
class KnotParams(Params):
    _prefix = "server."

    threads: int = param(
        1000, unit="threads", ge=1, doc="Knot-C's fixed thread pool (the paper: 1,000)"
    )
    max_connections: int = param(
        100000, unit="connections", ge=1, doc="most connections the process holds open at once"
    )
    backlog: int = param(128, unit="connections", ge=1, doc="listen() backlog the server asks for")
    acceptor_wakeups: int = param(
        1,
        unit="threads",
        ge=1,
        doc="threads blocked on the listening socket that one poll reporting it readable "
        "wakes (Capriccio resumes the head of the descriptor's wait list)",
    )


class _Thread:
    """One user-level thread: the connections it has accepted and the one it serves."""

    __slots__ = ("batch", "conn", "acceptor")

    def __init__(self, acceptor: bool = True) -> None:
        self.batch: deque[Connection] = deque()
        self.conn: Connection | None = None
        self.acceptor = acceptor  # Knot-A's per-connection threads are not


class Knot(Server):
    """Knot-C: a fixed pool of threads, each accepting up to accept-limit connections."""

    name = "knot"
    has_select = False
    per_connection_threads = False

    def __init__(
        self,
        env: Environment,
        cpu: Cpu,
        listen: ListenSocket,
        client: Client,
        costs: HostCosts,
        params: KnotParams,
        policy: AcceptPolicy,
    ) -> None:
        super().__init__(env, cpu, listen, client, costs, params, policy)
        self.runq: deque[_Thread] = deque()  # runnable threads
        self.io_ready: list[_Thread] = []  # their descriptor is ready; the next poll sees it
        self.accept_waiters: deque[_Thread] = deque()  # blocked on the listening socket
        self.threads = 0  # threads in existence
        self.busy = 0  # threads holding at least one connection
        self.max_threads = 0
        # counters (cumulative)
        self.polls = 0
        self.switches = 0
        self.requests = 0
        self._open_area = 0.0
        self._busy_area = 0.0
        self._since = env.now
        self._make_threads()
        self.start()

    def _make_threads(self) -> None:
        for _ in range(self.params.threads):
            self._new_thread(acceptor=True)

    def _new_thread(self, acceptor: bool) -> _Thread:
        th = _Thread(acceptor)
        self.threads += 1
        if self.threads > self.max_threads:
            self.max_threads = self.threads
        if acceptor:
            self.accept_waiters.append(th)
        return th

    # -- what the kernel tells the server ---------------------------------------------
    def readable(self, conn: Connection) -> None:
        th = conn.server
        if th is not None and not conn.ready:
            conn.ready = True
            self.io_ready.append(th)  # type: ignore[arg-type]
            self.cpu.wake()  # no effect if the task is running

    # -- the user-level scheduler ---------------------------------------------------------
    def _listen_ready(self) -> bool:
        return bool(self.listen.accept_queue) and self.open < self.params.max_connections

    @property
    def work_queue_len(self) -> int:
        """Runnable threads, and threads whose descriptor is ready for the next poll."""
        return len(self.runq) + len(self.io_ready)

    def run(self):  # type: ignore[no-untyped-def]
        costs = self.costs
        runq = self.runq
        env = self.env
        ends_at = INF  # end of the current work phase (the policy's budget)
        while True:
            if not runq or env._now >= ends_at:
                if not runq and not self.io_ready and not (
                    self.accept_waiters and self._listen_ready()
                ):
                    yield BLOCK
                    continue
                yield SCHEDULE, costs.knot_poll_base_s + costs.knot_poll_per_conn_s * self.open
                self.polls += 1
                for th in self.io_ready:
                    th.conn.ready = False  # type: ignore[union-attr]
                    th.conn.server = None  # type: ignore[union-attr]
                    runq.append(th)
                self.io_ready.clear()
                if self._listen_ready():
                    waiters = self.accept_waiters
                    for _ in range(min(self.params.acceptor_wakeups, len(waiters))):
                        runq.append(waiters.popleft())
                # a work phase: the runnable threads run until none is left or the budget ends
                ends_at = env._now + self.policy.work_budget(self)
                continue
            th = runq.popleft()
            yield SCHEDULE, costs.knot_thread_switch_s
            self.switches += 1
            yield from self._run_thread(th)

    def _run_thread(self, th: _Thread):  # type: ignore[no-untyped-def]
        """Run ``th`` until it blocks (or, for a Knot-A connection thread, exits)."""
        costs = self.costs
        client = self.client
        listen = self.listen
        per_byte = costs.send_per_byte_s
        io = costs.knot_io_s  # Capriccio's wrapper, per I/O call
        while True:
            conn = th.conn
            if conn is None:
                if th.batch:
                    th.conn = th.batch.popleft()
                    continue
                if not th.acceptor:  # Knot-A: the connection's thread is done
                    self._account()
                    self.busy -= 1
                    self.threads -= 1
                    return
                # accept phase: up to accept-limit connections without blocking
                limit = self.policy.accept_limit(self)
                accepted = 0
                while accepted < limit and self.open < self.params.max_connections:
                    new = listen.accept()
                    if new is None:
                        yield ACCEPT, costs.accept_empty_s + io
                        break
                    yield ACCEPT, costs.accept_s + io
                    accepted += 1
                    self._account()
                    self.open += 1
                    if self.per_connection_threads:
                        yield SCHEDULE, costs.knot_thread_create_s
                        worker = self._new_thread(acceptor=False)
                        worker.conn = new
                        self.busy += 1
                        self.runq.append(worker)
                    else:
                        th.batch.append(new)
                if accepted:
                    self.accept_phases += 1
                    self.accepts += accepted
                if self.per_connection_threads and accepted:
                    self.runq.append(th)  # yield to the new threads, then accept again
                    return
                if not th.batch:
                    self.accept_waiters.append(th)  # block on the listening socket
                    return
                self._account()
                self.busy += 1
                continue
            # serve the connection to completion
            if conn.pending:
                client.check_client_gone(conn)
                conn.pending -= 1
                yield WORK, costs.request_s + 2 * io + per_byte * conn.reply_bytes
                self.requests += 1
                client.reply(conn)
                continue
            if conn.eof:
                yield WORK, costs.close_s + io
                self._account()
                self.open -= 1
                conn.state = CLOSED
                th.conn = None
                if not th.batch and th.acceptor:
                    self.busy -= 1
                continue
            conn.server = th  # block until the descriptor is readable
            return

    def _account(self) -> None:
        now = self.env._now
        dt = now - self._since
        self._open_area += self.open * dt
        self._busy_area += self.busy * dt
        self._since = now

    def counters(self) -> dict[str, float]:
        """Cumulative counters; the run takes differences over its window."""
        self._account()
        return {
            "select_calls": self.polls,
            "accept_phases": self.accept_phases,
            "accepts": self.accepts,
            "work_phases": self.polls,
            "conns_worked": self.requests,
            "open_area": self._open_area,
            "busy_area": self._busy_area,
            "switches": self.switches,
        }


class KnotA(Knot):
    """Knot-A: one acceptor thread, a new thread per connection, no accept-limit."""

    name = "knot-a"
    per_connection_threads = True

    def _make_threads(self) -> None:
        self._new_thread(acceptor=True)
