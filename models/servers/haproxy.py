"""An HAProxy-like event loop: threads that each run an epoll loop, a listener that any
of them accepts from, at most ``maxaccept`` connections a wake-up, and each accepted
connection handed to a thread by the listener's multi-queue.

Facts from HAProxy's ``src/listener.c`` (``listener_accept``) and its configuration
manual (``tune.maxaccept``, ``tune.listener.multi-queue``):

* a wake-up of the listener accepts at most ``maxaccept`` connections in a row
  (``tune.maxaccept``, default 4): in this model that is the run's accept-limit
  (``--accept-limit 4`` for HAProxy's default);
* with the listener bound to several threads, each accepted connection goes to a
  thread's accept ring and that thread's tasklet is woken.  ``multi_queue = "on"``
  (the default) keeps two running thread indexes, one counting up and one down,
  compares the two candidates' load (connections waiting in their ring plus those
  they hold on the listener), takes the less loaded (the first on a tie), moves the
  other index on, and keeps the connection on the accepting thread when that one is
  no more loaded (strictly less on a tie); ``"fair"`` takes the up-counting index in
  turn; ``"off"`` keeps every connection on the accepting thread.
* The listener is in every thread's poller without ``EPOLLEXCLUSIVE``: a connection
  wakes every waiting thread (``RunConfig.wakeup = "all"``), and those that come to
  it after another emptied the queue pay a failed accept.

A thread's loop is nginx's (``epoll_wait``, per-event cost; see
:mod:`acceptsim.models.servers.nginx`); the thread a connection is handed to pays its
``epoll_ctl`` registration with its next ``epoll_wait``, and serves it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from acceptsim.models.connection import Connection
from acceptsim.models.request_cost import RequestCostParams
from acceptsim.models.servers.base import WAKE_ALL, Server
from acceptsim.models.servers.nginx import Nginx
from acceptsim.models.servers.spec import ServerSpec
from acceptsim.models.servers.userver import CATEGORIES
from acceptsim.sim.cpu import INF
from acceptsim.sim.params import param

#: the choices of ``multi_queue`` (``tune.listener.multi-queue``)
MULTI_QUEUE: Final = ("on", "fair", "off")


@dataclass(frozen=True)
class HaproxyParams(RequestCostParams):
    _prefix = "server."

    max_connections: int = param(
        16384, unit="connections", ge=1, doc="connections a thread holds at most",
    )
    backlog: int = param(
        1024, unit="connections", ge=1,
        doc="the bind line's backlog (HAProxy's default: the frontend's maxconn; the "
        "kernel caps it at somaxconn)",
    )
    multi_queue: str = param(
        "on", unit="", choices=MULTI_QUEUE,
        doc="tune.listener.multi-queue: hand each accepted connection to the less loaded "
        "of two rotating threads (on), to each thread in turn (fair), or keep it (off)",
    )
    epoll_events: int = param(
        200, unit="events", ge=1, doc="tune.maxpollevents: the most events one poll returns",
    )


class Dispatch:
    """The listener's multi-queue: the two running thread indexes, shared by the threads."""

    def __init__(self, threads: list[Any], mode: str) -> None:
        self.threads = threads
        self.mode = mode
        self.up = 0  # t1: counts up
        self.down = 0  # t2: counts down

    def pick(self, local: Any) -> Any:
        """The thread the connection ``local`` accepted goes to."""
        threads = self.threads
        n = len(threads)
        if self.mode == "off" or n == 1:
            return local
        first = threads[self.up % n]
        if self.mode == "fair":
            self.up = (self.up + 1) % n
            return first
        second = threads[self.down % n]
        q0, q1, q2 = local.load(), first.load(), second.load()
        if q1 < q2:
            chosen = local if q0 <= q1 else first
            self.down = (self.down - 1) % n
        elif q1 > q2:
            chosen = local if q0 <= q2 else second
            self.up = (self.up + 1) % n
        else:
            chosen = local if q0 < q1 else first
            self.up = (self.up + 1) % n
        return chosen


class Haproxy(Nginx):
    """One HAProxy thread, pinned to its CPU."""

    name = "haproxy"

    def __init__(self, host: Any, params: Any, policy: Any) -> None:
        #: connections handed to this thread and not yet seen by its loop (its ring)
        self.ring = 0
        #: the listener's multi-queue (one per server: set by :meth:`join`)
        self.dispatch = Dispatch([self], params.multi_queue)
        super().__init__(host, params, policy)

    def join(self, dispatch: Dispatch) -> None:
        """Share ``dispatch`` with the server's other threads."""
        self.dispatch = dispatch

    def load(self) -> int:
        """What the multi-queue compares: connections in the ring and held."""
        return self.ring + self.open

    def opened(self) -> float:
        """The accepting thread pays accept() alone; the receiving one registers it."""
        return 0.0

    def hold(self, conn: Connection) -> None:
        """An accepted connection: handed to the thread the multi-queue picks, which holds
        it from now on, registers it with its next ``epoll_wait`` and serves it."""
        target = self.dispatch.pick(self)
        Server.hold(target, conn)
        conn.owner = target
        target.ring += 1
        target.ctl_owed += self.costs.epoll_ctl_s
        if target is not self and target.cpu.task_end == INF:
            target.cpu.wake()  # its tasklet: the ring is processed in its loop

    def readable(self, conn: Connection) -> None:
        owner = conn.owner
        if owner is not self and owner is not None:
            owner.readable(conn)
            return
        super().readable(conn)

    def getevents(self):  # type: ignore[no-untyped-def]
        self.ring = 0  # the loop takes what was handed to it
        return (yield from super().getevents())


def share(threads: list[Any]) -> None:
    """One multi-queue for the server's threads (acceptsim.models.multicore calls it)."""
    dispatch = Dispatch(threads, threads[0].params.multi_queue)
    for thread in threads:
        thread.join(dispatch)


SPECS = (
    ServerSpec(
        "haproxy", Haproxy, HaproxyParams, CATEGORIES,
        "HAProxy-like threads: epoll loops, at most accept-limit (maxaccept) accepts a "
        "wake-up, each connection handed to the less loaded of two rotating threads.",
        wakeups=(WAKE_ALL,), share=share,
    ),
)
