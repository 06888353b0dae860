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
blocking and blocks on the listening socket only when it has none: so each
accept phase opens with a wait for the listening socket to be readable, a
poll() on that one descriptor through Capriccio's wrapper
(``knot_listen_poll_s + knot_io_s``), which returns at once when connections
are queued; a thread woken by a scheduler poll that reported the socket
skips it.  Then non-blocking accepts, ending early with a failed accept
(EAGAIN) when the queue runs dry.  The thread then serves each connection
to completion, all requests of a persistent connection up to the client's
close (it blocks on the connection until the client's FIN), before it
accepts again.  Connections a thread has accepted but not yet reached stay
open, waiting.

Why the accept-limit matters, in this model: the readiness wait is paid once
per accept phase, like the userver's select(), so once per connection at
limit 1 and once per up to 50 at limit 50, which gives limit 50 more
capacity.  But a thread serves its batch one connection per scheduler round
(each waits for its FIN), so a batch holds connections open, and with
limits of 50-100 and a thousand threads, open connections climb into the
thousands or tens of thousands and the poll cost with them: past its peak
limit 100 falls off.  The other per-connection costs of Capriccio (the
wrapper on accept, read, write, close; one block on the connection; a
context switch) are the same at every limit.

Mechanisms examined with the counters below and not used, because they do
not act at limit 1's peak (docs/design.md, "Knot", has the numbers): failed
accepts and blocks on the listening socket (at and above its peak a limit-1
thread almost always finds a connection queued), a thundering herd (waking
every thread blocked on the listening socket, ``acceptor_wakeups`` = the
pool: it costs CPU below saturation, but at and above the peak every thread
holds a connection and none waits), and reading a request before it has
arrived (at and above the peak a limit-1 thread accepts connections that have
waited milliseconds in the accept queue, far longer than the gap between a
client's ACK and its request).

**Knot-A** (``--server knot-a``): one acceptor thread accepts the
connections in the queue (up to the accept-limit; the paper's Knot-A has no
limit, i.e. inf), spawns a new thread for each
(``knot_thread_create_s``), then yields to them; a new thread serves its
connection and exits.

Policy hooks (:mod:`acceptsim.models.policies`): a thread asks the policy for its
accept-limit each time it has no connection left; 0 (or an empty queue) is
not an accept phase, and the thread blocks on the listening socket until a
poll wakes it.  A work phase is the run of runnable threads between two
polls; the policy's work budget makes the scheduler poll again sooner.  The
work queue a policy sees is the runnable threads.

Threads blocked on the listening socket wait in a FIFO list; a poll that
finds the accept queue non-empty wakes ``acceptor_wakeups`` of them.

Counters (``result_extras``): per accepted connection, waits for the
listening socket and how many blocked, failed accepts, blocks on a
connection, context switches; polls per second and their CPU share.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from mypy_extensions import mypyc_attr

from acceptsim.models.connection import Connection
from acceptsim.models.policies import AcceptPolicy
from acceptsim.models.servers.base import RequestBurst, Server, ServerCounters, WorkerWiring
from acceptsim.models.servers.pool import SCHEDULE, PoolWorker
from acceptsim.models.servers.spec import ServerSpec
from acceptsim.sim.cpu import BLOCK, Burst, Task
from acceptsim.sim.params import Params, param

if TYPE_CHECKING:
    pass

INF: Final = float("inf")
ACCEPT: Final = "accept"
WORK: Final = "work"
CATEGORIES: Final = (SCHEDULE, ACCEPT, WORK)


@mypyc_attr(native_class=False)  # a parameter set: a plain frozen dataclass
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


class _Thread(PoolWorker):
    """One user-level thread: the connections it has accepted and the one it serves."""

    def __init__(self, acceptor: bool = True) -> None:
        super().__init__()
        self.acceptor = acceptor  # Knot-A's per-connection threads are not
        self.listen_ready = False  # woken by a poll that reported the listening socket


class Knot(Server):
    """Knot-C: a fixed pool of threads, each accepting up to accept-limit connections."""

    name = "knot"
    per_connection_threads = False

    def __init__(self, host: WorkerWiring, params: KnotParams, policy: AcceptPolicy) -> None:
        super().__init__(host, params, policy)
        self.runq: deque[_Thread] = deque()  # runnable threads
        self.io_ready: list[_Thread] = []  # their descriptor is ready; the next poll sees it
        self.accept_waiters: deque[_Thread] = deque()  # blocked on the listening socket
        self.threads = 0  # threads in existence
        self.busy = 0  # threads holding at least one connection
        self.max_threads = 0
        # the costs, read once into native fields (the parameter set's are not): the
        # scheduler's, and the threads' calls (each through Capriccio's I/O wrapper)
        costs = host.costs
        self._poll_base: float = costs.knot_poll_base_s
        self._poll_per_conn: float = costs.knot_poll_per_conn_s
        self._switch: float = costs.knot_thread_switch_s
        self._io: float = costs.knot_io_s
        self._listen_poll: float = costs.knot_listen_poll_s
        self._thread_create: float = costs.knot_thread_create_s
        self._request: float = costs.request_s
        self._close: float = costs.close_s
        self._per_byte: float = costs.send_per_byte_s
        # counters (cumulative)
        self.switches = 0  # user-level context switches
        self.requests = 0  # requests served
        self.polls = 0
        self.poll_time = 0.0  # CPU seconds spent in the scheduler's polls
        self.listen_waits = 0  # waits for the listening socket that found it readable
        self._bounded_work = True  # the policy may bound a work phase (set by start())
        self._ends_at = INF  # end of the current work phase (the policy's budget)
        self.listen_blocks = 0  # ... that found it empty: the thread blocked on it
        self.conn_blocks = 0  # a thread blocked on its connection (waiting for data or EOF)
        # integral of busy threads over time = _busy_sum + busy * now (as Server's open_area)
        self._busy_sum = 0.0
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
            if self.cpu.task_end == INF:  # asleep (a call to wake() only when needed)
                self.cpu.wake()

    # -- the user-level scheduler ---------------------------------------------------------
    @property
    def work_queue_len(self) -> int:
        """Runnable threads, and threads whose descriptor is ready for the next poll."""
        return len(self.runq) + len(self.io_ready)

    def start(self) -> None:
        super().start()
        # a work_budget() that never bounds, without the calls (the same value)
        self._bounded_work = self.policy.bounds_work

    def accept_call_costs(self) -> tuple[float, float]:
        """accept() through Capriccio's I/O wrapper, returning a connection or failing."""
        costs = self.costs
        return costs.accept_s + self._io, costs.accept_empty_s + self._io

    # -- the scheduler and the threads' body ------------------------------------------
    def next_worker(self) -> _Thread | None:
        """The next runnable thread, unless the work phase's budget is spent."""
        if self.runq and self.clock.now < self._ends_at:
            return self.runq.popleft()
        return None

    def _pollable(self) -> bool:
        """Does any thread wait for something a poll could report?"""
        return bool(self.runq or self.io_ready or (self.accept_waiters and self.listen_ready()))

    def _polled(self, poll: float) -> None:
        """A scheduler poll that cost ``poll`` CPU seconds has returned: the threads whose
        descriptor is ready become runnable, and a work phase starts."""
        self.polls += 1
        self.poll_time += poll
        runq = self.runq
        for th in self.io_ready:
            th.conn.ready = False  # type: ignore[union-attr]
            th.conn.server = None  # type: ignore[union-attr]
            runq.append(th)
        self.io_ready.clear()
        if self.listen_ready():
            waiters = self.accept_waiters
            for _ in range(min(self.params.acceptor_wakeups, len(waiters))):
                th = waiters.popleft()
                th.listen_ready = True
                runq.append(th)
        # a work phase: the runnable threads run until none is left or the budget ends
        self._ends_at = (
            self.clock.now + self.policy.work_budget(self) if self._bounded_work else INF
        )

    def run(self) -> Task:
        """Capriccio's scheduler and the threads' body, in one loop.

        The next runnable thread runs (a context switch) until it blocks: on the
        listening socket, in ``read()`` on a connection, or (Knot-A) until its
        connection is done.  With no thread to run, the scheduler polls the kernel over
        every descriptor a thread waits on (:meth:`_polled`); with nothing to wait for,
        the process sleeps.  A thread waits for the listening socket through Capriccio
        before it accepts, and every I/O call goes through Capriccio's wrapper.

        (Knot is not a :class:`~acceptsim.models.servers.pool.WorkerPool`: its
        scheduler polls where a pool's sleeps, and its threads wait for the listening
        socket before they accept, so it keeps one loop of its own, which resumes one
        generator per CPU burst where the pool's hooks resumed two and made a generator
        per scheduled thread.  Its threads are the pool's
        :class:`~acceptsim.models.servers.pool.PoolWorker`.)
        """
        client = self.client
        listen = self.listen
        acc = self.acceptor
        runq = self.runq
        io = self._io  # Capriccio's wrapper, per I/O call
        # the bursts whose cost never changes, made once (typed object: the compiled build
        # then yields this one tuple, where it would build a new one per yield)
        switch_burst: object = (SCHEDULE, self._switch)
        listen_poll_burst: object = (ACCEPT, self._listen_poll + io)
        create_burst: object = (SCHEDULE, self._thread_create)
        close_burst: object = (WORK, self._close + io)
        # a request's burst, made again only when the reply's size changes
        request_bursts = RequestBurst(WORK, self._request + 2 * io, self._per_byte)
        # a reply of several segments is written through the send buffer (models.tcp), a
        # further write() through Capriccio's wrapper each
        tx = client.tx
        mss: int = tx.mss
        write_io: float = self.costs.write_s + io
        # the bursts whose cost varies, set again for each (sim.cpu.Burst)
        schedule = Burst(SCHEDULE)
        write = Burst(WORK)
        while True:
            th = self.next_worker()
            if th is None:
                if not self._pollable():
                    yield BLOCK
                    continue
                poll = self._poll_base + self._poll_per_conn * float(self.open)
                yield schedule.of(poll)
                self._polled(poll)
                continue
            yield switch_burst
            self.switches += 1
            while True:  # th runs until it blocks
                conn = th.take()
                if conn is None:
                    if not th.acceptor:  # Knot-A: the connection's thread is done
                        self._idle_thread()
                        self.threads -= 1
                        break
                    # accept phase: wait for the listening socket (at once if a poll has
                    # just reported it), then accept up to accept-limit connections
                    # without blocking
                    if th.listen_ready:
                        th.listen_ready = False
                    else:
                        yield listen_poll_burst
                        if not acc.ready(listen):
                            self.listen_blocks += 1
                            self.accept_waiters.append(th)  # block on the listening socket
                            break
                        self.listen_waits += 1
                    acc.begin(listen)
                    while acc.take():
                        yield acc.burst
                        new = acc.took()
                        if new is None:
                            break
                        if self.per_connection_threads:
                            yield create_burst
                            worker = self._new_thread(acceptor=False)
                            worker.conn = new
                            self._busy_thread()
                            runq.append(worker)
                        else:
                            th.add(new)
                    accepted = acc.end()
                    if self.per_connection_threads and accepted:
                        runq.append(th)  # yield to the new threads, then accept again
                        break
                    if not th.batch:  # none (skipped, or others took them): block on it
                        self.accept_waiters.append(th)
                        break
                    self._busy_thread()
                    continue
                # serve the connection to completion
                if conn.tx_left:  # the socket has room again: the reply goes on
                    if conn.eof:  # the client has gone: the rest is dropped
                        tx.abandon(conn)
                        continue
                    chunk = tx.chunk(conn)
                    yield write.of(write_io + tx.send_cost(chunk, False))
                    if tx.wrote(conn, chunk, False):
                        self.requests += 1
                        continue
                    if conn.tx_queued <= tx.writable_at:  # writable again meanwhile
                        continue
                    conn.server = th  # block until the socket is writable
                    self.conn_blocks += 1
                    break
                if conn.pending:
                    client.check_client_gone(conn)
                    conn.pending -= 1
                    if conn.reply_bytes > mss and tx.start(conn):  # several segments
                        chunk = tx.chunk(conn)
                        yield request_bursts.plus(chunk, tx.segments_cost(chunk, True))
                        if tx.wrote(conn, chunk, True):
                            self.requests += 1
                            continue
                        if conn.tx_queued <= tx.writable_at:  # writable again meanwhile
                            continue
                        conn.server = th  # block until the socket is writable
                        self.conn_blocks += 1
                        break
                    yield request_bursts.of(conn.reply_bytes)
                    self.requests += 1
                    woke = client.reply(conn)
                    if woke > 0.0:  # it woke the client's thread (HostCosts.wake_reader_s)
                        yield write.of(woke)
                    continue
                if conn.eof:
                    yield close_burst
                    self.release(conn)
                    th.conn = None
                    if not th.batch and th.acceptor:
                        self._idle_thread()
                    continue
                conn.server = th  # block until the descriptor is readable
                self.conn_blocks += 1
                break

    def _busy_thread(self) -> None:
        """A thread now holds at least one connection."""
        self.busy += 1
        self._busy_sum -= self.clock.now

    def _idle_thread(self) -> None:
        """A thread holds no connection any more (or a Knot-A thread has exited)."""
        self.busy -= 1
        self._busy_sum += self.clock.now

    def counters(self) -> ServerCounters:
        """Knot's getevents calls and work phases are its scheduler's polls; a
        connection worked is a request served."""
        return self.counters_from(self.polls, self.polls, self.requests)

    def own_counters(self) -> dict[str, float]:
        """The busy threads' integral over time, and where the scheduling time goes."""
        out = super().own_counters()
        out.update(
            switches=self.switches,
            busy_area=self._busy_sum + self.busy * self.clock.now,
            poll_time=self.poll_time,
            listen_waits=self.listen_waits,
            listen_blocks=self.listen_blocks,
            conn_blocks=self.conn_blocks,
        )
        return out

    def result_extras(self, diff: ServerCounters, window: float) -> dict[str, Any]:
        """Where Knot's scheduling time goes, per accepted connection (over the window):
        waits for the listening socket (``knot_listen_waits_per_conn``) and how many of them
        blocked, failed accept() calls, blocks on a connection, user-level context switches,
        and the scheduler's polls (per second, and their share of the CPU)."""
        per = diff.accepts or 1
        own = diff.own
        return {
            "knot_listen_waits_per_conn": (own["listen_waits"] + own["listen_blocks"]) / per,
            "knot_listen_blocks_per_conn": own["listen_blocks"] / per,
            "knot_failed_accepts_per_conn": diff.failed_accepts / per,
            "knot_conn_blocks_per_conn": own["conn_blocks"] / per,
            "knot_switches_per_conn": own["switches"] / per,
            "knot_polls_per_s": diff.select_calls / window,
            "knot_poll_cpu_share": own["poll_time"] / window,
        }


class KnotA(Knot):
    """Knot-A: one acceptor thread, a new thread per connection, no accept-limit."""

    name = "knot-a"
    per_connection_threads = True

    def _make_threads(self) -> None:
        self._new_thread(acceptor=True)


SPECS = (
    ServerSpec(
        "knot", Knot, KnotParams, CATEGORIES,
        "Knot-C: a fixed pool of threads, each accepting up to accept-limit connections.",
    ),
    ServerSpec(
        "knot-a", KnotA, KnotParams, CATEGORIES,
        "Knot-A: one acceptor thread, a new thread per connection, no accept-limit.",
    ),
)
