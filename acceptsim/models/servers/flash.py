"""Flash's four server architectures (Pai, Druschel and Zwaenepoel, USENIX 1999).

Every architecture serves files from a memory cache of ``cache_bytes``
(:class:`acceptsim.models.filecache.FileCache`, LRU); a request for a file not in
memory needs a read from the disk (:class:`acceptsim.models.filecache.Disk`, a
resource apart from the CPU).  They differ in what waits while the disk
reads.  Requests carry their file when the workload names one
(``fileset``); other workloads' files are always in memory.

**SPED** (``flash-sped``, single-process event-driven): the userver's loop
(select, accept, work).  On a miss the process issues a blocking ``read``:
the *whole* loop stalls until the disk delivers, however many cached
requests are ready meanwhile.

**AMPED** (``flash-amped``, asymmetric multi-process event-driven): the same
loop, but a miss is handed over a pipe to one of ``helpers`` helper
processes, which does the blocking read; the main loop carries on serving
other connections.  When the read completes the helper answers over its
pipe, which ``select`` reports like any readable descriptor, and the
request is served from memory.  Each round trip costs ``helper_ipc_s``.

**MP** (``flash-mp``, multi-process): ``workers`` processes, each handling
one connection at a time with blocking calls.  On one CPU the task is the
kernel's scheduler choosing among runnable processes (a context switch,
``process_switch_s``, each time another runs).  A process blocks in
``accept`` (woken one per queued connection), in ``read`` until its
client's data or end-of-file arrive, and on the disk; the others run
meanwhile.  Processes share nothing, so each caches files in its own
memory: ``cache_bytes / workers`` each.

**MT** (``flash-mt``, multi-threaded): as MP with kernel threads in one
address space: one shared cache of ``cache_bytes``, cheaper switches
(``thread_switch_s``) and a lock around the shared cache per request
(``cache_lock_s``).

MP and MT processes accept up to the accept-limit connections at a time
and serve them one after the other, each to completion.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, cast

from mypy_extensions import mypyc_attr

from acceptsim.models.connection import CLOSED, Connection
from acceptsim.models.filecache import DiskParams, Storage
from acceptsim.models.servers.base import ServerCounters, WorkerWiring
from acceptsim.models.servers.pool import BLOCKED, NEXT, SCHEDULE, PoolWorker, WorkerPool
from acceptsim.models.servers.spec import ServerSpec
from acceptsim.models.servers.userver import ACCEPT, CATEGORIES, WORK, Userver
from acceptsim.sim.cpu import BLOCK, Task
from acceptsim.sim.errors import ConfigError
from acceptsim.sim.params import param, summary_of

if TYPE_CHECKING:
    from acceptsim.models.client import Client
    from acceptsim.models.policies import AcceptPolicy
    from acceptsim.sim.engine import Environment

MP_CATEGORIES = (SCHEDULE, ACCEPT, WORK)

#: a step of a server's loop that may yield bursts and returns nothing, or a value
Steps = Generator[Any, None, None]


@mypyc_attr(native_class=False)  # a parameter set: a plain frozen dataclass
@dataclass(frozen=True)
class FlashParams(DiskParams):
    """The memory, disk and process costs of the Flash architectures."""

    max_connections: int = param(
        15000, unit="connections", ge=1, doc="most connections the server holds open at once"
    )
    backlog: int = param(128, unit="connections", ge=1, doc="listen() backlog the server asks for")
    cache_bytes: float = param(
        100e6, unit="bytes", gt=0.0,
        doc="memory for cached files and the server's processes (the Flash paper's server had "
        "128 MB of RAM in all); what the processes take is not available to the cache",
    )
    warm_cache: bool = param(
        True, unit="",
        doc="start with the most popular files in memory (the state after a long warm-up)",
    )
    process_bytes: float = param(
        1.0e6, unit="bytes", ge=0.0,
        doc="MP: private memory of one server process (its own caches of mappings, headers "
        "and path names, stack, heap); set, not fitted",
    )
    thread_bytes: float = param(
        64e3, unit="bytes", ge=0.0, doc="MT: memory of one thread (its stack)"
    )
    helper_bytes: float = param(
        200e3, unit="bytes", ge=0.0, doc="AMPED: memory of one (small) helper process"
    )
    read_issue_s: float = param(
        5.0e-6, unit="s", ge=0.0,
        doc="CPU to issue one disk read (system call, page-cache and block-layer work); set",
    )
    read_per_byte_s: float = param(
        1.0e-9, unit="s/byte", ge=0.0,
        doc="CPU per byte brought in from disk (page-cache fill, mapping); set, of the order "
        "of the send path's per-byte cost",
    )
    helpers: int = param(
        16, unit="processes", ge=1, doc="AMPED: helper processes doing disk reads"
    )
    helper_ipc_s: float = param(
        15.0e-6, unit="s", ge=0.0,
        doc="AMPED: CPU of one helper round trip: pipe write and read in the main process, two "
        "context switches and the helper's own system calls; set, not fitted",
    )
    workers: int = param(
        32, unit="processes", ge=1, doc="MP and MT: processes (or threads) serving connections"
    )
    process_switch_s: float = param(
        5.0e-6, unit="s", ge=0.0,
        doc="MP: switch to another process (new address space, TLB refill); set, not fitted",
    )
    thread_switch_s: float = param(
        2.5e-6, unit="s", ge=0.0, doc="MT: switch to another kernel thread of the same process"
    )
    cache_lock_s: float = param(
        0.5e-6, unit="s", ge=0.0, doc="MT: take and release the shared cache's lock per request"
    )


    def __post_init__(self) -> None:
        super().__post_init__()
        for name, overhead in (
            ("workers", self.workers * max(self.process_bytes, self.thread_bytes)),
            ("helpers", self.helpers * self.helper_bytes),
        ):
            if overhead >= self.cache_bytes:
                raise ConfigError(
                    f"server.{name}", getattr(self, name),
                    f"few enough that their memory ({overhead:g} bytes) leaves room in "
                    f"cache_bytes ({self.cache_bytes:g})",
                )


class FileServing:
    """What every architecture shares, held by each: the cache, the disk and their
    measures."""

    def __init__(self, params: FlashParams, env: Environment, client: Client,
                 process_bytes: float) -> None:
        """``process_bytes``: memory the architecture's own processes take from the file
        cache."""
        self.client = client
        self.storage = Storage(env, params.cache_bytes - process_bytes, params)
        self.cache = self.storage.cache
        self.disk = self.storage.disk
        popular = getattr(client.workload, "by_popularity", None)
        if params.warm_cache and popular is not None:
            self.storage.warm(popular)

    def counters(self, server: dict[str, float]) -> dict[str, float]:
        """``server``'s own counters, with the cache's hits and misses, reads joined to one
        under way, the disk's reads and busy time (cumulative) after them."""
        server.update({
            "cache_hits": self.cache.hits,
            "cache_misses": self.cache.misses,
            "reads_joined": self.storage.joined,
            "disk_reads": self.disk.reads,
            "disk_busy_time": self.disk.busy_time,
        })
        return server

    def extras(self, diff: ServerCounters, window: float) -> dict[str, Any]:
        """``files``: the cache's hit ratio and size, the disk's reads/s and busy share."""
        own = diff.own
        lookups = own["cache_hits"] + own["cache_misses"]
        workload = self.client.workload
        return {
            "files": {
                "dataset_mb": round(getattr(workload, "dataset_bytes", 0) / 1e6, 1),
                "cache_mb": self.cache.capacity_bytes / 1e6,
                "hit_ratio": own["cache_hits"] / lookups if lookups else None,
                "disk_reads_per_s": own["disk_reads"] / window,
                "disk_busy_share": own["disk_busy_time"] / window,
            }
        }


def file_of(conn: Connection) -> int | None:
    """The file the current request names (None: a workload without files, in memory)."""
    return getattr(conn.reply_bytes, "file", None)


class Sped(Userver):
    """SPED: the event loop; a miss blocks the whole process while the disk reads."""

    name = "flash-sped"

    def __init__(self, host: WorkerWiring, params: FlashParams, policy: AcceptPolicy) -> None:
        self.flash = params
        self.files = FileServing(params, host.env, host.client, self.process_memory(params))
        self.cache = self.files.cache
        self.storage = self.files.storage
        self._reading = False
        super().__init__(host, params, policy)

    def process_memory(self, params: FlashParams) -> float:
        """Memory the architecture's own processes take from the file cache."""
        return 0.0

    def own_counters(self) -> dict[str, float]:
        return self.files.counters(super().own_counters())

    def result_extras(self, diff: ServerCounters, window: float) -> dict[str, Any]:
        return self.files.extras(diff, window)

    def run(self) -> Task:
        """The userver's three phases; the work phase goes through :meth:`handle`, until
        done or the policy's work budget for the phase is spent (the connections not yet
        served stay ready for the next select())."""
        clock = self.clock
        while True:
            ready = yield from self.getevents()
            self._batch = ready
            yield from self.accept_phase()
            if ready:
                ends_at = clock.now + self.policy.work_budget(self)
                served = 0
                for conn in ready:
                    if clock.now >= ends_at:
                        self.ready[:0] = ready[served:]
                        break
                    served += 1
                    conn.ready = False
                    yield from self.handle(conn)
                self.work_phases += 1
                self.conns_worked += served
                self._batch = []

    def accept_phase(self) -> Steps:
        """Accept up to the policy's accept-limit (0 skips the phase: not counted), if
        select reported the listening socket."""
        acc = self.acceptor
        listen = self.listen
        if not (acc.ready(listen) and acc.begin(listen)):
            return
        while acc.take():
            yield acc.burst
            conn = acc.took()
            if conn is None:
                break
            if conn.pending or conn.eof:  # its request (or FIN) came before the accept
                self.readable(conn)
        acc.end()

    def handle(self, conn: Connection) -> Steps:
        """Serve the next request of ``conn``, or close it after end-of-file."""
        costs = self.costs
        client = self.client
        if conn.pending:
            if not conn.eof and self.env.now >= conn.deadline + client.owd:
                client.check_client_gone(conn)
            served = yield from self.serve(conn)
            if served and (conn.pending or conn.eof):
                self.readable(conn)
        elif conn.eof and conn.server is None:
            yield WORK, costs.close_s
            self.release(conn)

    def serve(self, conn: Connection) -> Generator[Any, None, bool]:
        """SPED: read a missing file with a blocking read (the loop stalls), then reply."""
        file = file_of(conn)
        if file is not None and not self.cache.lookup(file):
            yield from self.blocking_read(conn, file)
        yield from self.reply(conn)
        return True

    def blocking_read(self, conn: Connection, file: int) -> Steps:
        p = self.flash
        size = int(conn.reply_bytes)
        yield WORK, p.read_issue_s
        self._reading = True
        self.storage.fetch(file, size, self._read_done)
        while self._reading:  # kernel events may wake the task: it is still in read()
            yield BLOCK
        yield WORK, p.read_per_byte_s * size

    def _read_done(self, _: Any) -> None:
        self._reading = False
        self.cpu.wake()

    def reply(self, conn: Connection) -> Steps:
        costs = self.costs
        conn.pending -= 1
        yield WORK, costs.request_s + costs.send_per_byte_s * conn.reply_bytes
        woke = self.client.reply(conn)
        if woke > 0.0:  # it woke the client's thread (HostCosts.wake_reader_s)
            yield WORK, woke



#: ``conn.server`` of a connection whose file a helper is reading
AT_HELPER: Final = "helper"
#: ``conn.server`` of a connection whose file a helper has just read
READ_DONE: Final = "read"


class Amped(Sped):
    """AMPED: misses go to helper processes; the loop keeps serving cached requests."""

    name = "flash-amped"

    def __init__(self, host: WorkerWiring, params: FlashParams, policy: AcceptPolicy) -> None:
        super().__init__(host, params, policy)
        self.idle_helpers = params.helpers
        self.helper_queue: deque[Connection] = deque()

    def process_memory(self, params: FlashParams) -> float:
        return params.helpers * params.helper_bytes

    def serve(self, conn: Connection) -> Generator[Any, None, bool]:
        if conn.server == AT_HELPER:
            return False  # its helper has not answered yet (an end-of-file woke it)
        file = file_of(conn)
        if conn.server == READ_DONE:
            # the helper's answer: the file is in memory (its page-cache fill is CPU too)
            conn.server = None
            yield WORK, self.flash.read_per_byte_s * conn.reply_bytes
        elif file is not None and not self.cache.lookup(file):
            yield WORK, self.flash.helper_ipc_s
            conn.server = AT_HELPER
            self.helper_queue.append(conn)
            self._start_helpers()
            return False
        yield from self.reply(conn)
        return True

    def _start_helpers(self) -> None:
        while self.idle_helpers and self.helper_queue:
            conn = self.helper_queue.popleft()
            file = file_of(conn)
            assert file is not None  # only a miss of a named file goes to a helper
            if file in self.cache:  # read in meanwhile: the helper finds it in memory
                self._answer(conn)
                continue
            self.idle_helpers -= 1
            self.storage.fetch(file, int(conn.reply_bytes), self._helper_done, conn)

    def _helper_done(self, conn: Connection) -> None:
        """A helper's read is done: the file is in memory; the helper is free again."""
        self.idle_helpers += 1
        self._answer(conn)
        self._start_helpers()

    def _answer(self, conn: Connection) -> None:
        """The helper writes to its pipe: select() reports the connection's request ready."""
        conn.server = READ_DONE
        if conn.state != CLOSED:
            self.readable(conn)

    def handle(self, conn: Connection) -> Steps:
        if conn.pending and conn.server == AT_HELPER:
            return  # the request waits for its helper; end-of-file is handled after
        yield from super().handle(conn)


class _Worker(PoolWorker):
    """One MP process or MT thread."""

    def __init__(self) -> None:
        super().__init__()
        self.file_read = False  # the current request's file has just come from disk


class MultiProcess(WorkerPool):
    """MP: a pool of processes with blocking I/O, scheduled by the kernel on one CPU."""

    name = "flash-mp"
    shared_cache = False

    def __init__(self, host: WorkerWiring, params: FlashParams, policy: AcceptPolicy) -> None:
        super().__init__(host, params, policy)
        self.flash = params
        self.files = FileServing(params, host.env, host.client, self.process_memory(params))
        self.cache = self.files.cache
        self.storage = self.files.storage
        if self.shared_cache:
            self._switch_s = params.thread_switch_s
            self.lock_s = params.cache_lock_s
        else:
            self._switch_s = params.process_switch_s
            self.lock_s = 0.0
        self.runq: deque[PoolWorker] = deque()
        self.accept_waiters: deque[PoolWorker] = deque(_Worker() for _ in range(params.workers))
        host.listen.on_queued = self._connection_queued
        self.start()

    def process_memory(self, params: FlashParams) -> float:
        return params.workers * params.process_bytes

    def own_counters(self) -> dict[str, float]:
        return self.files.counters(super().own_counters())  # the pool's, then the files'

    def result_extras(self, diff: ServerCounters, window: float) -> dict[str, Any]:
        return self.files.extras(diff, window)

    @property
    def work_queue_len(self) -> int:
        """Processes (threads) runnable, for an accept policy's view."""
        return len(self.runq)

    # -- the kernel wakes blocked processes -------------------------------------------
    def make_runnable(self, w: PoolWorker) -> None:
        self.runq.append(w)
        self.cpu.wake()  # no effect if the task is running

    def accept_ready(self) -> None:
        pass  # one waiter is woken per queued connection (_connection_queued)

    def _connection_queued(self, conn: Connection) -> None:
        if self.accept_waiters and self.open < self.max_open:
            self.make_runnable(self.accept_waiters.popleft())

    def _read_done(self, w: _Worker) -> None:
        w.file_read = True
        self.make_runnable(w)

    # -- the pool's hooks (models.servers.pool) -----------------------------------------------
    def next_worker(self) -> PoolWorker | None:
        if self.runq:
            return self.runq.popleft()
        if self.accept_waiters and self.listen_ready():
            return self.accept_waiters.popleft()
        return None

    def switch_s(self, w: PoolWorker) -> float:
        return self._switch_s

    def block_in_accept(self, w: PoolWorker) -> None:
        self.accept_waiters.append(w)

    def serve(self, w: PoolWorker, conn: Connection) -> Generator[Any, Any, int]:
        """A request: look its file up (a miss blocks in read() until the disk delivers),
        then reply."""
        if not conn.pending:
            return 0
        costs = self.costs
        p = self.flash
        file = file_of(conn)
        worker = cast(_Worker, w)
        if worker.file_read:
            worker.file_read = False
            yield WORK, p.read_per_byte_s * conn.reply_bytes
        elif file is not None:
            if self.lock_s:
                yield WORK, self.lock_s
            if not self.cache.lookup(file):
                yield WORK, p.read_issue_s
                self.storage.fetch(file, int(conn.reply_bytes), self._read_done, w)
                return BLOCKED
        self.client.check_client_gone(conn)
        conn.pending -= 1
        yield WORK, costs.request_s + costs.send_per_byte_s * conn.reply_bytes
        self.requests += 1
        woke = self.client.reply(conn)
        if woke > 0.0:  # it woke the client's thread (HostCosts.wake_reader_s)
            yield WORK, woke
        return NEXT



class MultiThreaded(MultiProcess):
    """MT: kernel threads sharing one cache; cheaper switches, a lock per request."""

    name = "flash-mt"
    shared_cache = True

    def process_memory(self, params: FlashParams) -> float:
        return params.workers * params.thread_bytes


#: ``--server`` names, for ``acceptsim.models.experiment.SERVERS``
#: the property tests use a 50 MB cache, so that short runs miss and reach the disk
_SMALL_CACHE = {"cache_bytes": 50e6}
SPECS = (
    ServerSpec("flash-sped", Sped, FlashParams, CATEGORIES, summary_of(Sped),
               test_params=_SMALL_CACHE),
    ServerSpec("flash-amped", Amped, FlashParams, CATEGORIES, summary_of(Amped),
               test_params=_SMALL_CACHE),
    ServerSpec("flash-mp", MultiProcess, FlashParams, MP_CATEGORIES, summary_of(MultiProcess),
               test_params=_SMALL_CACHE),
    ServerSpec("flash-mt", MultiThreaded, FlashParams, MP_CATEGORIES, summary_of(MultiThreaded),
               test_params=_SMALL_CACHE),
)
