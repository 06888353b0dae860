"""Two service classes on one server (Eggert and Heidemann, 1999).

"Application-level differentiated services for web servers": background
requests (prefetching, bulk transfers) should use only the resources
foreground requests leave idle.  The server is Apache-like: a pool of
processes, each serving one connection at a time with blocking calls, on one
CPU scheduled by the kernel.  Foreground requests arrive at the run's
listening socket from the run's clients; background requests arrive at a
*second* listening socket, with its own SYN and accept queues, from a second
open-loop client stream this server starts itself (``bg_rate_per_s``
connections/s, one reply of ``bg_reply_bytes`` each).

Replies leave through one network link (a :class:`acceptsim.models.tcp.Nic` of
``link_bytes_per_s``, the one link model every server's replies use; here it stands
for the host's links, and the record's ``link_utilization`` is its busy share): a
process writes at most a socket buffer (``send_chunk_bytes``) at a time and blocks
until it has left.  Eggert and Heidemann's three mechanisms,
each a parameter:

* a **limited background pool**: only ``bg_workers`` processes serve the
  background socket (fewer competitors for CPU, disk and link);
* **lower background priority**: the scheduler runs a runnable foreground
  process before any background one (``bg_low_priority``; otherwise one
  first-come first-served run queue);
* a **background send-rate limit**: a background process paces its writes
  to ``bg_send_limit_bytes_per_s`` per connection.

``twoclass`` has all three on; ``twoclass-plain`` has none (the background
pool as large as the foreground one, equal priority, no pacing).  The result
reports the foreground stream as the run's usual fields and the background
stream under ``background``; scenarios normalise foreground response time
by its value without background load.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from mypy_extensions import mypyc_attr

from acceptsim.models.client import Client, ClientParams
from acceptsim.models.connection import Connection
from acceptsim.models.kernel import ListenSocket
from acceptsim.models.latency import ResponseTimes
from acceptsim.models.servers.base import ACCEPT, ServerCounters, WorkerWiring
from acceptsim.models.servers.pool import BLOCKED, NEXT, SCHEDULE, WORK, PoolWorker, WorkerPool
from acceptsim.models.servers.spec import ServerSpec
from acceptsim.models.tcp import Nic
from acceptsim.sim.params import Params, param, summary_of
from acceptsim.sim.streams import Streams

if TYPE_CHECKING:
    from acceptsim.models.policies import AcceptPolicy

BACKGROUND = "background"
CATEGORIES = (SCHEDULE, ACCEPT, WORK, BACKGROUND)
INF = float("inf")


@mypyc_attr(native_class=False)  # a parameter set: a plain frozen dataclass
@dataclass(frozen=True)
class TwoClassParams(Params):
    """Pools, priorities and rate limit of the two classes; the background load."""

    _prefix = "server."

    max_connections: int = param(
        15000, unit="connections", ge=1, doc="most connections the server holds open at once"
    )
    backlog: int = param(128, unit="connections", ge=1, doc="listen() backlog of each socket")
    workers: int = param(
        64, unit="processes", ge=1, doc="foreground processes (an Apache-like pool)"
    )
    bg_workers: int = param(
        4, unit="processes", ge=1, doc="processes serving the background socket"
    )
    bg_low_priority: bool = param(
        True, unit="", doc="run foreground processes before background ones"
    )
    bg_send_limit_bytes_per_s: float = param(
        10.0e6, unit="bytes/s", gt=0.0, allow_inf=True,
        doc="pace each background connection's writes to this rate (inf: no limit)",
    )
    bg_rate_per_s: float = param(
        0.0, unit="connections/s", ge=0.0,
        doc="background connections per second (one request each); 0: no background load",
    )
    bg_reply_bytes: int = param(
        500_000, unit="bytes", ge=1,
        doc="size of a background reply (bulk prefetch of a large file)",
    )
    bg_timeout_s: float = param(
        60.0, unit="s", gt=0.0, doc="background clients' timeout per step (patient)"
    )
    send_chunk_bytes: int = param(
        65536, unit="bytes", ge=1,
        doc="socket send buffer: most bytes a process writes before it blocks (64 KB)",
    )
    link_bytes_per_s: float = param(
        125e6, unit="bytes/s", gt=0.0, doc="the server's link (gigabit Ethernet: 125 MB/s)"
    )
    process_switch_s: float = param(
        5.0e-6, unit="s", ge=0.0,
        doc="switch to another process (new address space, TLB refill); set, not fitted",
    )


@mypyc_attr(native_class=False)  # a parameter set: a plain frozen dataclass
@dataclass(frozen=True)
class PlainTwoClassParams(TwoClassParams):
    """No differentiation: as many background processes, equal priority, no pacing."""

    bg_workers: int = param(
        64, unit="processes", ge=1, doc="processes serving the background socket (as many as "
        "the foreground)"
    )
    bg_low_priority: bool = param(False, unit="", doc="run foreground processes first")
    bg_send_limit_bytes_per_s: float = param(
        INF, unit="bytes/s", gt=0.0, allow_inf=True, doc="background pacing (inf: none)"
    )


class _FixedReply:
    """The background workload: one request for one large file per connection."""

    name = "background"

    def __init__(self, nbytes: int) -> None:
        self._bytes = nbytes

    def requests_per_connection(self) -> int:
        return 1

    def reply_bytes(self) -> int:
        return self._bytes

    def mean_requests_per_connection(self) -> float:
        return 1.0


class _BackgroundStreams(Streams):
    """The run's streams under other names: the background clients' own randomness."""

    def seed_sequence(self, name: str) -> np.random.SeedSequence:
        return super().seed_sequence("background/" + name)


class _Worker(PoolWorker):
    def __init__(self, background: bool) -> None:
        super().__init__()
        self.background = background
        self.left = 0  # bytes of the current reply not yet written
        self.send_from = 0.0  # when the current reply's first write was made
        self.pace_at = 0.0  # pacing: earliest instant of the next write


class _Socket:
    """One class's listening socket and the processes blocked in accept() on it."""

    def __init__(self, listen: ListenSocket, server: TwoClass) -> None:
        self.listen = listen
        self.waiters: deque[_Worker] = deque()
        listen.app = server
        listen.on_queued = self.queued
        self.server = server

    def queued(self, conn: Connection) -> None:
        if self.waiters:
            self.server.make_runnable(self.waiters.popleft())


class TwoClass(WorkerPool):
    """Foreground and background classes with Eggert and Heidemann's mechanisms."""

    name = "twoclass"

    def __init__(self, host: WorkerWiring, params: TwoClassParams, policy: AcceptPolicy) -> None:
        # the listen socket of the base is the foreground's: what an accept policy sees
        super().__init__(host, params, policy)
        env, cpu, listen, client, costs = host.env, host.cpu, host.listen, host.client, host.costs
        # the one link both classes' replies share, in place of the host's links
        self.link = Nic(params.link_bytes_per_s * 8.0)
        client.tx.use_links([self.link])
        self.fg = _Socket(listen, self)
        self.runq_fg: deque[_Worker] = deque()
        self.runq_bg = deque() if params.bg_low_priority else self.runq_fg
        self.fg.waiters.extend(_Worker(False) for _ in range(params.workers))
        # the background class: a second listening socket and its own clients
        self.bg_client: Client | None = None
        self.bg: _Socket | None = None
        if params.bg_rate_per_s > 0:
            bg_params = ClientParams(
                rate_per_s=params.bg_rate_per_s, spacing="poisson",
                timeout_s=params.bg_timeout_s, rtt_s=client.params.rtt_s,
            )
            streams = _BackgroundStreams(client.streams.seed)
            self.bg_client = Client(
                env, bg_params, client.profile, _FixedReply(params.bg_reply_bytes), streams
            )
            bg_listen = ListenSocket(
                env, cpu, costs, client.profile, params.backlog, self.bg_client
            )
            self.bg_client.connect(bg_listen)
            #: its response times, folded into a histogram past a bound (models.latency)
            self.bg_latency = ResponseTimes(self.bg_client)
            self.bg_latency.start_timer(env)
            self.bg = _Socket(bg_listen, self)
            self.bg.waiters.extend(_Worker(True) for _ in range(params.bg_workers))
            env.call_in(0.0, self._start_background)
        self.bg_requests = 0
        self.start()

    @property
    def work_queue_len(self) -> int:
        """Workers runnable (both classes), for an accept policy's view."""
        bg = len(self.runq_bg) if self.runq_bg is not self.runq_fg else 0
        return len(self.runq_fg) + bg

    def _start_background(self, _: Any) -> None:
        bg = self.bg_client
        assert bg is not None
        bg.window_start = self.client.window_start  # the run has set its window by now
        bg.window_end = self.client.window_end
        bg.start()

    # -- the kernel wakes blocked processes ---------------------------------------------
    def make_runnable(self, w: _Worker) -> None:  # type: ignore[override]
        (self.runq_bg if w.background else self.runq_fg).append(w)
        self.cpu.wake()  # no effect if the task is running

    def accept_ready(self) -> None:
        pass  # a waiter is woken per queued connection (_Socket.queued)

    # -- the pool's hooks (models.servers.pool) -----------------------------------------
    def next_worker(self) -> _Worker | None:
        """The foreground's runnable processes first (with a low-priority background)."""
        if self.runq_fg:
            return self.runq_fg.popleft()
        if self.runq_bg:
            return self.runq_bg.popleft()
        return None

    def switch_s(self, w: PoolWorker) -> float:
        return self.params.process_switch_s

    def _socket(self, w: _Worker) -> _Socket:
        return self.bg if w.background else self.fg  # type: ignore[return-value]

    def accept_socket(self, w: _Worker) -> ListenSocket:  # type: ignore[override]
        return self._socket(w).listen

    def block_in_accept(self, w: _Worker) -> None:  # type: ignore[override]
        self._socket(w).waiters.append(w)

    def work_category(self, w: _Worker) -> str:  # type: ignore[override]
        return BACKGROUND if w.background else WORK

    def serve(self, w: _Worker, conn: Connection):  # type: ignore[no-untyped-def,override]
        """Write the reply a socket buffer at a time (blocking while a full buffer drains,
        and while the background's pacing holds it back), or read and parse a request."""
        costs = self.costs
        p = self.params
        work = BACKGROUND if w.background else WORK
        if w.left:  # writing a reply, a socket buffer at a time
            chunk = min(w.left, p.send_chunk_bytes)
            yield work, costs.send_per_byte_s * chunk
            w.left -= chunk
            last = w.left == 0
            if w.background and p.bg_send_limit_bytes_per_s != INF:
                sent = conn.reply_bytes - w.left
                w.pace_at = w.send_from + sent / p.bg_send_limit_bytes_per_s
            leaves = self.link.serialise(self.env.now, chunk)
            self.env.call_at(leaves, self._chunk_sent, (w, conn, last))
            if last:
                if w.pace_at > self.env.now:  # paced: this process's rate stays <= limit
                    self.env.call_at(w.pace_at, self._paced, w)
                    return BLOCKED
                return NEXT  # the reply is all in the buffer: go on to the next read
            return BLOCKED  # the buffer is full: block until it drains (and the pacing allows)
        if conn.pending:
            owner = self.bg_client if w.background else self.client
            owner.check_client_gone(conn)  # type: ignore[union-attr]
            conn.pending -= 1
            yield work, costs.request_s
            if w.background:
                self.bg_requests += 1
            else:
                self.requests += 1
            w.left = conn.reply_bytes
            w.send_from = self.env.now
            return NEXT
        return 0

    def _chunk_sent(self, item: tuple[_Worker, Connection, bool]) -> None:
        w, conn, last = item
        if last:  # the reply's last byte has left: the client has it half a round trip later
            # (streamed: its bytes are on the link already)
            (self.bg_client if w.background else self.client).reply(conn, True)  # type: ignore[union-attr]
            return
        if w.pace_at > self.env.now:
            self.env.call_at(w.pace_at, self._paced, w)
        else:
            self.make_runnable(w)

    def _paced(self, w: _Worker) -> None:
        self.make_runnable(w)

    # -- measures ------------------------------------------------------------------------
    def own_counters(self) -> dict[str, float]:
        """The background's requests (the pool's are the foreground's), the link's busy
        time."""
        out = super().own_counters()
        out.update(bg_requests=self.bg_requests, link_busy_time=self.link.sent_s(self.env.now))
        return out

    def result_extras(self, diff: ServerCounters, window: float) -> dict[str, Any]:
        """``background``: the second class's load, replies, response time and connections;
        ``link_busy_share``: the share of the window the link was sending."""
        p = self.params
        out: dict[str, Any] = {
            "bg_rate_per_s": p.bg_rate_per_s,
            "link_busy_share": diff.own["link_busy_time"] / window,
        }
        bg = self.bg_client
        if bg is None:
            out["background"] = {"reply_rate_per_s": 0.0, "throughput_mb_per_s": 0.0}
            return out
        bg.finish()
        out["background"] = {
            "reply_rate_per_s": bg.replies / window,
            "throughput_mb_per_s": bg.replies * p.bg_reply_bytes / window / 1e6,
            "response_time_ms": self.bg_latency.summary_ms(),
            "connections": {
                "attempted": bg.attempted,
                "completed": bg.completed,
                "timed_out": bg.timed_out,
                "in_flight_at_end": bg.in_flight_at_end,
            },
        }
        return out


class PlainTwoClass(TwoClass):
    """The same server without differentiation (``twoclass-plain``)."""

    name = "twoclass-plain"


#: the property tests run a background class too
_WITH_BACKGROUND = {"bg_rate_per_s": 50}
SPECS = (
    ServerSpec("twoclass", TwoClass, TwoClassParams, CATEGORIES, summary_of(TwoClass),
               test_params=_WITH_BACKGROUND),
    ServerSpec("twoclass-plain", PlainTwoClass, PlainTwoClassParams, CATEGORIES,
               summary_of(PlainTwoClass), test_params=_WITH_BACKGROUND),
)
