"""Files in memory and on disk: an LRU file cache with a byte budget, and one disk.

Used by the Flash architectures (:mod:`acceptsim.models.servers.flash`).  A request
for a file that is in the cache is served from memory; a miss needs a disk
read first, after which the file is in the cache (evicting the least
recently used files until it fits).

The disk is a resource of its own, apart from the CPU: a first-come
first-served server whose reads take ``seek + bytes / bandwidth`` and
complete as timed callbacks on the simulation's heap, so the CPU keeps
running (interrupts, other processes) while a read is under way.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from acceptsim.sim.params import Params, param

if TYPE_CHECKING:
    from acceptsim.sim.engine import Environment


@dataclass(frozen=True)
class DiskParams(Params):
    """One disk of a late-1990s/early-2000s server."""

    _prefix = "server."

    disk_access_s: float = param(
        8.0e-3, unit="s", gt=0.0,
        doc="positioning time of one read: average seek plus half a rotation of a 7,200-10,000 "
        "rpm disk of the period (about 5 ms + 3 ms); set, not fitted",
    )
    disk_bytes_per_s: float = param(
        40.0e6, unit="bytes/s", gt=0.0,
        doc="sustained transfer rate once positioned (a 2003 SCSI disk: 40-60 MB/s); set",
    )


class FileCache:
    """Files held in memory, least recently used evicted first, within ``capacity_bytes``."""

    def __init__(self, capacity_bytes: float) -> None:
        self.capacity_bytes = capacity_bytes
        self.used_bytes = 0
        self._files: OrderedDict[int, int] = OrderedDict()  # file -> size, LRU first
        self.hits = 0
        self.misses = 0

    def lookup(self, file: int) -> bool:
        """Is ``file`` in memory?  Counts a hit (and refreshes it) or a miss."""
        files = self._files
        if file in files:
            files.move_to_end(file)
            self.hits += 1
            return True
        self.misses += 1
        return False

    def __contains__(self, file: int) -> bool:
        return file in self._files

    def insert(self, file: int, size: int) -> None:
        """Bring ``file`` into memory, evicting the least recently used files to make room.

        A file larger than the whole cache is read but not kept.
        """
        files = self._files
        if file in files:
            files.move_to_end(file)
            return
        if size > self.capacity_bytes:
            return
        while self.used_bytes + size > self.capacity_bytes:
            _, evicted = files.popitem(last=False)
            self.used_bytes -= evicted
        files[file] = size
        self.used_bytes += size

    def __len__(self) -> int:
        return len(self._files)


class Disk:
    """One disk: reads are served first come, first served; completion is a timed callback."""

    def __init__(self, env: Environment, params: DiskParams) -> None:
        self.env = env
        self.access_s = params.disk_access_s
        self.bytes_per_s = params.disk_bytes_per_s
        self._queue: deque[tuple[float, Callable[[Any], None], Any]] = deque()
        self.busy = False
        self.reads = 0
        self.busy_time = 0.0  # completed service time (cumulative)
        self.max_queue = 0

    def service_time(self, nbytes: int) -> float:
        return self.access_s + nbytes / self.bytes_per_s

    def read(self, nbytes: int, done: Callable[[Any], None], value: Any = None) -> None:
        """Read ``nbytes``; ``done(value)`` is called when the data is in memory."""
        self._queue.append((self.service_time(nbytes), done, value))
        if len(self._queue) > self.max_queue:
            self.max_queue = len(self._queue)
        if not self.busy:
            self._start()

    def _start(self) -> None:
        self.busy = True
        self.env.call_in(self._queue[0][0], self._complete)

    def _complete(self, _: Any) -> None:
        service, done, value = self._queue.popleft()
        self.reads += 1
        self.busy_time += service
        if self._queue:
            self._start()
        else:
            self.busy = False
        done(value)

    @property
    def queued(self) -> int:
        """Reads waiting or in service."""
        return len(self._queue)


class Storage:
    """Files in memory backed by the disk: concurrent misses for one file share one read.

    ``fetch(file, size, done, value)`` reads a file that is not in memory:
    if a read of the same file is already under way the request waits for
    it (the page is locked, the second reader sleeps on it), otherwise the
    disk reads it.  When the data is in memory the file enters the cache and
    every waiter's ``done(value)`` is called.
    """

    def __init__(self, env: Environment, capacity_bytes: float, disk: DiskParams) -> None:
        self.cache = FileCache(capacity_bytes)
        self.disk = Disk(env, disk)
        self._reading: dict[int, list[tuple[Callable[[Any], None], Any]]] = {}
        self.joined = 0  # misses that joined a read already under way

    def fetch(self, file: int, size: int, done: Callable[[Any], None], value: Any = None) -> None:
        waiters = self._reading.get(file)
        if waiters is not None:
            waiters.append((done, value))
            self.joined += 1
            return
        self._reading[file] = [(done, value)]
        self.disk.read(size, self._arrived, (file, size))

    def _arrived(self, file_size: tuple[int, int]) -> None:
        file, size = file_size
        self.cache.insert(file, size)
        for done, value in self._reading.pop(file):
            done(value)

    def warm(self, files: list[tuple[int, int]]) -> None:
        """Start with the cache holding the first files of ``files`` (most popular first)
        that fit, the most popular most recently used: the state after a long warm-up."""
        chosen = []
        room = self.cache.capacity_bytes
        for file, size in files:
            if size > room:
                break
            chosen.append((file, size))
            room -= size
        for file, size in reversed(chosen):
            self.cache.insert(file, size)
