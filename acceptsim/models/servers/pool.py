"""A pool of workers (processes or kernel threads) that each accept a batch of
connections and serve them one after another.

What Flash's MP and MT servers and the two-class server share:

* **the scheduler** (:meth:`WorkerPool.run`): the runnable workers run one at a
  time on the host's CPU, a context switch each (:meth:`WorkerPool.switch_s`);
  which worker runs next is :meth:`WorkerPool.next_worker`, and what the CPU
  does when none may run is :meth:`WorkerPool.idle` (sleep until a worker is
  made runnable);
* **the worker body** (:meth:`WorkerPool.run_worker`): accept up to
  accept-limit connections with a blocking ``accept()`` (the server's accept
  phase, :class:`~acceptsim.models.servers.base.AcceptPhase`), then serve them one
  after another, blocking in ``read()`` until a connection's request (or
  end-of-file) arrives, and close each at end-of-file before going on to the
  next.  A subclass says how a request is served (:meth:`WorkerPool.serve`: a
  disk read, a reply written a buffer at a time) and which listening socket a
  worker accepts on.

Knot's user-level threads are :class:`PoolWorker` objects too, but Knot is not a
pool: Capriccio polls the kernel where a pool sleeps, and its threads wait for the
listening socket before they accept, so ``Knot.run`` is a loop of its own.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, Final

from mypy_extensions import mypyc_attr

from acceptsim.models.connection import Connection
from acceptsim.models.servers.base import Server, ServerCounters, WorkerWiring
from acceptsim.sim.cpu import BLOCK, Task

if TYPE_CHECKING:
    from acceptsim.models.kernel import ListenSocket
    from acceptsim.models.policies import AcceptPolicy

#: CPU category of context switches
SCHEDULE: Final = "schedule"
WORK: Final = "work"

#: what :meth:`WorkerPool.serve` tells the worker body: it served a step, look at the
#: connection again
NEXT: Final = 1
#: ...or: the worker blocks (in read(), on the disk, on a full socket buffer)
BLOCKED: Final = 2


@mypyc_attr(allow_interpreted_subclasses=True)
class PoolWorker:
    """One worker: the connections it has accepted and not yet reached, and the one it
    serves."""

    def __init__(self) -> None:
        self.batch: deque[Connection] = deque()
        # the batch's two operations, bound once (the compiled build calls a bound method
        # directly, where it looks a deque's method up by name at every call)
        self.add: Callable[[Connection], None] = self.batch.append
        self._next: Callable[[], Connection] = self.batch.popleft
        self.conn: Connection | None = None

    def take(self) -> Connection | None:
        """The connection to serve: the current one, else the next of the batch (which
        becomes the current one); None when the batch is done."""
        conn = self.conn
        if conn is None and self.batch:
            conn = self.conn = self._next()
        return conn


@mypyc_attr(allow_interpreted_subclasses=True)
class WorkerPool(Server):
    """Base of the pool servers (see the module text)."""

    has_select = False

    def __init__(self, host: WorkerWiring, params: Any, policy: AcceptPolicy) -> None:
        super().__init__(host, params, policy)
        # counters (cumulative)
        self.switches = 0
        self.requests = 0  # requests served (each is a work phase of its own)

    # -- what a subclass defines --------------------------------------------------------
    def next_worker(self) -> PoolWorker | None:
        """The worker that runs next (taken off its run queue), or None: :meth:`idle`."""
        raise NotImplementedError

    def idle(self) -> Task:
        """No worker may run now: sleep until one is made runnable (the default)."""
        yield BLOCK

    def switch_s(self, w: PoolWorker) -> float:
        """CPU time of the context switch to ``w``."""
        raise NotImplementedError

    def accept_socket(self, w: PoolWorker) -> ListenSocket:
        """The listening socket ``w`` accepts on."""
        return self.listen

    def block_in_accept(self, w: PoolWorker) -> None:
        """``w`` found no connection to accept: it blocks in ``accept()``."""
        raise NotImplementedError

    def serve(self, w: PoolWorker, conn: Connection) -> Generator[Any, Any, int]:
        """Serve ``conn``'s next step: :data:`NEXT` if it did, :data:`BLOCKED` if ``w``
        blocks, 0 if there is nothing to serve (the body then closes the connection at
        end-of-file, or blocks in ``read()``)."""
        raise NotImplementedError

    def work_category(self, w: PoolWorker) -> str:
        """The CPU category of ``w``'s work (its close)."""
        return WORK

    def make_runnable(self, w: PoolWorker) -> None:
        """The kernel makes ``w`` runnable (it is queued for the CPU)."""
        raise NotImplementedError

    # -- the scheduler and the worker body ------------------------------------------------
    def run(self) -> Task:
        """The scheduler: switch to the next runnable worker (a switch costs
        :meth:`switch_s`) and run its body until it blocks; idle when none is runnable."""
        while True:
            w = self.next_worker()
            if w is None:
                yield from self.idle()
                continue
            yield SCHEDULE, self.switch_s(w)
            self.switches += 1
            yield from self.run_worker(w)

    def run_worker(self, w: PoolWorker) -> Task:
        """Run ``w`` until it blocks: in accept(), in read(), or where :meth:`serve` says."""
        close_s = self.costs.close_s
        acc = self.acceptor
        while True:
            conn = w.take()
            if conn is None:
                # accept up to the accept-limit, then serve them one after the other
                acc.begin(self.accept_socket(w))
                while acc.take():
                    yield acc.burst
                    new = acc.took()
                    if new is None:
                        break
                    w.add(new)
                if not acc.end():
                    self.block_in_accept(w)
                    return
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

    def counters(self) -> ServerCounters:
        """A pool has no getevents; each request served is a work phase of its own."""
        return self.counters_from(0, self.requests, self.requests)

    def own_counters(self) -> dict[str, float]:
        """Context switches between workers."""
        out = super().own_counters()
        out["switches"] = self.switches
        return out

    def readable(self, conn: Connection) -> None:
        """Data or end-of-file on a connection: wake the worker blocked in its read()."""
        w = conn.server
        if isinstance(w, PoolWorker):
            conn.server = None
            self.make_runnable(w)
