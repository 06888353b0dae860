"""A pool of processes (or kernel threads) with blocking I/O, scheduled on the host's CPU.

What Flash's MP and MT servers and the two-class server share: each worker
accepts up to accept-limit connections with a blocking ``accept()``, then
serves them one after another, blocking in ``read()`` until a connection's
request (or end-of-file) arrives, and closes each at end-of-file before it
goes on to the next.  The kernel runs one runnable worker at a time, a
context switch each.  A subclass says how a request is served
(:meth:`WorkerPool.serve`: a disk read, a reply written a buffer at a time),
which worker runs next, what a switch costs, and which listening socket a
worker accepts on.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from acceptsim.models.connection import Connection
from acceptsim.models.servers.base import Server
from acceptsim.sim.cpu import BLOCK

if TYPE_CHECKING:
    from acceptsim.models.kernel import ListenSocket

#: CPU category of context switches
SCHEDULE = "schedule"
WORK = "work"

#: what :meth:`WorkerPool.serve` tells the worker body
NEXT = 1  # it served a step: look at the connection again
BLOCKED = 2  # the worker blocks (in read(), on the disk, on a full socket buffer)


class PoolWorker:
    """One process or thread: the connections it has accepted and the one it serves."""

    __slots__ = ("batch", "conn")

    def __init__(self) -> None:
        self.batch: deque[Connection] = deque()
        self.conn: Connection | None = None


class WorkerPool(Server):
    """Base of the process- and thread-pool servers (see the module text)."""

    has_select = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.switches = 0

    # -- what a subclass defines --------------------------------------------------------
    def next_worker(self) -> PoolWorker | None:
        """The worker the kernel runs next (taken off its run queue), or None: none is
        runnable, the CPU sleeps until a worker is made runnable."""
        raise NotImplementedError

    def switch_s(self, w: PoolWorker) -> float:
        """CPU time of the context switch to ``w``."""
        raise NotImplementedError

    def accept_socket(self, w: PoolWorker) -> ListenSocket:
        """The listening socket ``w`` accepts on."""
        return self.listen

    def block_in_accept(self, w: PoolWorker) -> None:
        """``w`` found no connection to accept: it blocks in ``accept()``."""
        raise NotImplementedError

    def serve(self, w: PoolWorker, conn: Connection) -> Generator[Any, None, int | None]:
        """Serve ``conn``'s next step: :data:`NEXT` if it did, :data:`BLOCKED` if ``w``
        blocks, None if there is nothing to serve (the body then closes the connection at
        end-of-file, or blocks in ``read()``)."""
        raise NotImplementedError

    def work_category(self, w: PoolWorker) -> str:
        """The CPU category of ``w``'s work (its close)."""
        return WORK

    # -- the scheduler and the worker body ------------------------------------------------
    def run(self) -> Generator[Any, Any, None]:
        while True:
            w = self.next_worker()
            if w is None:
                yield BLOCK
                continue
            yield SCHEDULE, self.switch_s(w)
            self.switches += 1
            yield from self.run_worker(w)

    def run_worker(self, w: PoolWorker) -> Generator[Any, Any, None]:
        """Run ``w`` until it blocks: in accept(), in read(), or where :meth:`serve` says."""
        close_s = self.costs.close_s
        while True:
            conn = w.conn
            if conn is None:
                if w.batch:
                    w.conn = w.batch.popleft()
                    continue
                # accept up to the accept-limit, then serve them one after the other
                accepted = yield from self.accept_batch(self.accept_socket(w), w.batch.append)
                if not accepted:
                    self.block_in_accept(w)
                    return
                self.accept_phases += 1
                self.accepts += accepted
                continue
            step = yield from self.serve(w, conn)
            if step == NEXT:
                continue
            if step == BLOCKED:
                return
            if conn.eof:
                yield self.work_category(w), close_s
                self.release(conn)
                w.conn = None
                continue
            conn.server = w  # blocks in read() until data or end-of-file arrive
            return

    def readable(self, conn: Connection) -> None:
        """Data or end-of-file on a connection: wake the worker blocked in its read()."""
        w = conn.server
        if isinstance(w, PoolWorker):
            conn.server = None
            self.make_runnable(w)

    def make_runnable(self, w: PoolWorker) -> None:
        """The kernel makes ``w`` runnable (it is queued for the CPU)."""
        raise NotImplementedError
