"""What every server model shares: its wiring to the host, its accept phase, and the
counters a run reads.

A server is built on a :class:`WorkerWiring` (environment, CPU, listen socket,
clients, costs) with its own parameters and its accept policy, sets up its
own state, then calls :meth:`Server.start`, which binds the policy to it
(:func:`acceptsim.models.policies.bind`), makes its :class:`AcceptPhase`,
registers it as the listen socket's application and starts :meth:`Server.run`
as the CPU's task.  The contract a subclass fulfils:

* ``run()``: a generator, the server's loop (see :mod:`acceptsim.sim.cpu`), which
  runs every accept phase through ``self.acceptor`` (an :class:`AcceptPhase`);
* ``readable(conn)``: data or end-of-file arrived on a connection it holds;
* ``work_queue_len``: the work waiting for it, for an accept policy's view;
* its own counts of getevents calls, work phases and connections worked
  (``select_calls``, ``work_phases``, ``conns_worked``), which :meth:`Server.counters`
  puts in the run's :class:`ServerCounters`; optionally ``own_counters()`` (counters
  of its own) and ``result_extras(diff, window)`` (measures of its own for the record).

What no server writes again is kept here: the accept phase (:class:`AcceptPhase`:
the limit asked, connections taken and held, the failed accept charged, phases and
accepts counted), and the one account of open connections over time
(:meth:`Server.hold`, :meth:`Server.release`, :meth:`Server.open_area`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, final

from mypy_extensions import mypyc_attr

from acceptsim.models import policies
from acceptsim.models.connection import CLOSED, Connection
from acceptsim.models.kernel import Application
from acceptsim.sim.cpu import INF, Burst, Task

#: the CPU category of accept() calls, for every server
ACCEPT: Final = "accept"

if TYPE_CHECKING:
    from acceptsim.models.client import Client
    from acceptsim.models.costs import HostCosts
    from acceptsim.models.kernel import ListenSocket
    from acceptsim.models.policies import AcceptPolicy
    from acceptsim.sim.cpu import Cpu
    from acceptsim.sim.engine import Environment


class RequestBurst:
    """A request's CPU burst, ``(category, request_s + per_byte * reply bytes)``, kept
    while the reply's size repeats (one-packet: always) and made again when it changes.

    A server loop yields ``bursts.of(conn.reply_bytes)``: the compiled build then
    yields one tuple where it would build a new one per request.  The size is kept as
    the workload gives it (typed ``Any``: any number) and multiplied as a float.
    """

    def __init__(self, category: str, request_s: float, per_byte: float) -> None:
        self.category = category
        self.request_s = request_s
        self.per_byte = per_byte
        self.reply_bytes: Any = None
        self.burst: object = None
        self._plus = Burst(category)

    def of(self, reply_bytes: Any) -> object:
        """The burst of a request whose reply has ``reply_bytes`` bytes."""
        if reply_bytes is not self.reply_bytes and reply_bytes != self.reply_bytes:
            self.reply_bytes = reply_bytes
            self.burst = (self.category, self.request_s + self.per_byte * float(reply_bytes))
        return self.burst

    def plus(self, reply_bytes: Any, extra: float) -> object:
        """The burst of a request that writes ``reply_bytes`` bytes of its reply, with
        ``extra`` seconds more (the segments beyond the first: models.tcp)."""
        return self._plus.of(self.request_s + self.per_byte * float(reply_bytes) + extra)


#: how a worker learns that a listening socket it shares with other workers has a
#: connection (``WorkerWiring.wakeup``; acceptsim.models.multicore applies the rules)
WAKE_ALONE: Final = "alone"  # the socket is the worker's own: it is told of every connection
WAKE_EXCLUSIVE: Final = "exclusive"  # epoll with EPOLLEXCLUSIVE
WAKE_ALL: Final = "all"  # every waiting worker (select, poll, epoll without EPOLLEXCLUSIVE)
WAKE_BLOCKING: Final = "blocking"  # workers blocked in accept(), woken in FIFO order
WAKE_MUTEX: Final = "mutex"  # nginx's accept_mutex: only the holder watches the socket


class DrawnRequestBurst(RequestBurst):
    """A request's CPU burst whose cost is multiplied by a factor drawn per request
    (``factor()``: a sampler of mean 1; :mod:`acceptsim.models.request_cost`), set
    again for each."""

    def __init__(
        self, category: str, request_s: float, per_byte: float, factor: Callable[[], float]
    ) -> None:
        super().__init__(category, request_s, per_byte)
        self.factor = factor

    def of(self, reply_bytes: Any) -> object:
        cost = (self.request_s + self.per_byte * float(reply_bytes)) * self.factor()
        return self._plus.of(cost)

    def plus(self, reply_bytes: Any, extra: float) -> object:
        cost = (self.request_s + self.per_byte * float(reply_bytes)) * self.factor()
        return self._plus.of(cost + extra)


class WorkerWiring:
    """What a server runs on: the run's environment, its CPU (the one it is pinned to)
    and the host's costs, the listening socket, and the client machines that connect to
    it.  On a multi-core host each worker has its own, with its number (``worker``) and
    the rule that tells it of connections on a socket it shares (``wakeup``: ``"alone"``,
    ``"exclusive"``, ``"all"``, ``"blocking"`` or ``"mutex"``, the ``WAKE_*`` constants)."""

    def __init__(
        self, env: Environment, cpu: Cpu, listen: ListenSocket, client: Client, costs: HostCosts,
        worker: int = 0, wakeup: str = WAKE_ALONE,
    ) -> None:
        self.env = env
        self.cpu = cpu
        self.listen = listen
        self.client = client
        self.costs = costs
        self.worker = worker
        self.wakeup = wakeup


class AcceptPhase:
    """A server's accept phases: the one place where accept-limits are asked, connections
    taken off an accept queue and held, failed accepts charged, and phases counted.

    Every server loop runs its accept phase through these plain methods (no generator:
    the CPU bursts stay the server's own ``yield``)::

        if acc.begin(listen):            # the phase's limit (0: the policy skipped it)
            while acc.take():            # a connection (acc.conn), or a charged failed accept
                yield acc.burst          # the CPU of that accept() call
                conn = acc.took()        # the connection, now held; None: the phase is over
                if conn is None:
                    break
                ...                      # the server's own: queue it, hand it to a thread
            acc.end()                    # count the phase, if it accepted any

    A phase ends when it has accepted its limit, when the server holds its
    ``max_open`` connections, or when an accept() finds the queue empty.  A failed
    accept() is charged (``failed_burst``) unless the server declares
    :attr:`Server.failed_accept_charged` false (TUX, in the kernel, looks at the queue
    itself); either way it is counted (:attr:`failed`).  A server that builds its own
    burst per connection (TUX's cache term) yields it instead of :attr:`burst`, with
    the connection :meth:`take` popped in :attr:`conn`.

    Counters are cumulative: :attr:`phases` (a phase that accepted at least one
    connection), :attr:`accepts`, :attr:`failed` and :attr:`skips` (phases the policy
    skipped with a limit of 0); :attr:`skipped` says whether the last one was skipped.
    """

    def __init__(self, server: Server, accept_burst: object, failed_burst: object) -> None:
        self.server = server
        #: the policy bound to the server, and its limit if it never changes (else 0)
        self.policy: Any = server.policy
        self.static_limit: float = server.policy.static_limit
        #: the CPU burst of an accept() that returns a connection, and of one that fails
        #: (None: a failed accept costs nothing)
        self.accept_burst = accept_burst
        self.failed_burst = failed_burst
        #: what the last :meth:`take` asks the server to yield
        self.burst: object = accept_burst
        #: the connection the last :meth:`take` popped (None after a failed accept)
        self.conn: Connection | None = None
        self.listen: ListenSocket = server.listen
        #: the accept-limit of the phase under way
        self.limit = 0.0
        #: the listening socket is on the worker's ready list (a worker sharing it:
        #: :class:`SharedAcceptPhase`; declared here, so that the wake-up rule of a shared
        #: socket sets it on any worker's accept phase as a native field)
        self.notified = False
        #: the connections the phase under way has accepted
        self.accepted = 0
        #: accept phases that accepted at least one connection (cumulative, as below)
        self.phases = 0
        #: connections accepted
        self.accepts = 0
        #: accept() calls that found the queue empty
        self.failed = 0
        #: phases the policy skipped with a limit of 0
        self.skips = 0
        #: whether the last phase was skipped
        self.skipped = False

    def ready(self, listen: ListenSocket) -> bool:
        """Would the server see ``listen`` readable: connections queued, and room to hold
        one more?"""
        server = self.server
        return bool(listen.accept_queue) and server.open < server.max_open

    def begin(self, listen: ListenSocket) -> float:
        """Start an accept phase on ``listen``: its accept-limit (the static one, or the
        bound policy's answer); 0 means the policy skips the phase (counted in
        :attr:`skips`, and not a phase)."""
        limit: float = self.static_limit or self.policy.accept_limit(self.server)
        self.skipped = not limit
        if not limit:
            self.skips += 1
        self.listen = listen
        self.limit = limit
        self.accepted = 0
        return limit

    def take(self) -> bool:
        """The next accept() of the phase, if it has one: True with :attr:`burst` to
        yield, and :attr:`conn` the connection popped (None if the queue was empty and the
        failed call is charged); False when the phase is over."""
        server = self.server
        if self.accepted >= self.limit or server.open >= server.max_open:
            return False
        conn = self.listen.accept()
        self.conn = conn
        if conn is not None:
            conn.owner = server  # (data arriving during the call is the server's)
            self.burst = self.accept_burst
            return True
        self.failed += 1
        if self.failed_burst is None:
            return False
        self.burst = self.failed_burst
        return True

    def took(self) -> Connection | None:
        """The accept() call of :meth:`take` has returned: the server holds its
        connection (:meth:`Server.hold`), which is returned; None after a failed call."""
        conn = self.conn
        if conn is not None:
            self.accepted += 1
            self.server.hold(conn)
        return conn

    def end(self) -> int:
        """End the phase: count it if it accepted any connection.  Returns how many."""
        accepted = self.accepted
        if accepted:
            self.phases += 1
            self.accepts += accepted
        return accepted


class SharedAcceptPhase(AcceptPhase):
    """The accept phase of a worker that watches a listening socket it shares with other
    workers through its own epoll (or select) set.

    The kernel tells a worker of a new connection only by putting the socket on its
    ready list (:attr:`~AcceptPhase.notified`): the wake-up walk over the workers does
    (acceptsim.models.multicore: every worker with the ``all`` rule, the first asleep and
    those before it with ``exclusive``).  The worker's next getevents call polls the
    socket there: with a connection queued it reports the socket (:attr:`reported`, kept
    until the worker's accept phase acts on it, so a worker whose call reported the
    socket calls ``accept()`` even if another worker has emptied the queue meanwhile,
    and pays a failed accept); with the queue empty it drops the socket from the list
    (level triggered).  A worker that was not notified sees nothing, however full the
    queue.

    ``after``, if set, is called with the connections accepted when a phase ends (or is
    skipped): a server's own steps after its accept events (nginx's).
    """

    def __init__(self, server: Server, accept_burst: object, failed_burst: object) -> None:
        super().__init__(server, accept_burst, failed_burst)
        #: the worker's last getevents reported the socket, and no phase has acted on it
        self.reported = False
        self.after: Any = None

    def ready(self, listen: ListenSocket) -> bool:
        server = self.server
        if not self.reported:
            if not self.notified:
                return False
            if not listen.accept_queue:
                self.notified = False  # polled, found empty: off the ready list
                return False
            self.reported = True
        return server.open < server.max_open

    def begin(self, listen: ListenSocket) -> float:
        """Start an accept phase: the worker acts on the socket its getevents reported."""
        self.reported = False
        limit = super().begin(listen)
        if not limit and self.after is not None:
            self.after(0)
        return limit

    def end(self) -> int:
        accepted = super().end()
        if self.after is not None:
            self.after(accepted)
        return accepted


@dataclass(frozen=True)
class ServerCounters:
    """A server's cumulative counters at one instant; the run takes the difference of two
    (:meth:`since`) over its measurement window.

    ``accept_phases``, ``accepts``, ``failed_accepts`` and ``accept_skips`` come from the
    server's :class:`AcceptPhase`; ``select_calls``, ``work_phases`` and
    ``conns_worked`` from the server's loop (what each counts is the server's: TUX's
    work items, Knot's scheduler polls); ``open_area`` is the integral of open
    connections over time (connection-seconds); ``own`` holds counters of the server's
    own (:meth:`Server.own_counters`), which its ``result_extras`` reads.
    """

    select_calls: int
    accept_phases: int
    accepts: int
    failed_accepts: int
    accept_skips: int
    work_phases: int
    conns_worked: int
    open_area: float
    own: dict[str, float]

    def since(self, start: ServerCounters) -> ServerCounters:
        """The counts from ``start`` to these (field by field, ``own`` key by key)."""
        return ServerCounters(
            self.select_calls - start.select_calls,
            self.accept_phases - start.accept_phases,
            self.accepts - start.accepts,
            self.failed_accepts - start.failed_accepts,
            self.accept_skips - start.accept_skips,
            self.work_phases - start.work_phases,
            self.conns_worked - start.conns_worked,
            self.open_area - start.open_area,
            {k: v - start.own[k] for k, v in self.own.items()},
        )


@mypyc_attr(allow_interpreted_subclasses=True)
class Server(Application):
    """Base of the server models."""

    name = "server"
    #: the server calls select() (or another getevents): its calls are reported
    has_select = False
    #: an accept() that finds the queue empty costs the server CPU (``accept_empty_s``);
    #: False for a server that looks at the queue itself (TUX, in the kernel)
    failed_accept_charged = True
    #: the server's accept phase (made by :meth:`start`, with the bound policy)
    acceptor: AcceptPhase

    def __init__(self, host: WorkerWiring, params: Any, policy: AcceptPolicy) -> None:
        self.env = host.env
        self.clock = host.env.clock
        self.cpu = host.cpu
        self.listen = host.listen
        self.client = host.client
        self.costs = host.costs
        self.params = params
        #: the most connections the server holds at once (its parameters' max_connections,
        #: read once: a native field)
        self.max_open: int = params.max_connections
        self._policy = policy
        #: the policy bound to this server (a models.policies.BoundPolicy): start() binds it,
        #: once the subclass has set up the state the policy's view reads
        self.policy: Any = None
        self.open = 0  # connections held
        # integral of open connections over time = _open_sum + open * now
        # (minus each instant a connection was taken, plus each it was closed)
        self._open_sum = 0.0
        # counters of the server's loop (cumulative; what each counts is the server's)
        self.select_calls = 0
        self.work_phases = 0
        self.conns_worked = 0
        #: replies written (cumulative; counted by the servers that run on several workers)
        self.replies_sent = 0
        #: this worker's number, and how it learns of connections on a shared socket
        self.worker: int = host.worker
        self.wakeup: str = host.wakeup

    def start(self) -> None:
        """Bind the accept policy to this server (its view reads the state the subclass has
        set up by now), make its accept phase, take the listen socket's events and start
        the loop on the CPU."""
        self.policy = policies.bind(self._policy, self)  # type: ignore[arg-type]
        accept_s, failed_s = self.accept_call_costs()
        failed_burst = (ACCEPT, failed_s) if self.failed_accept_charged else None
        if self.wakeup in (WAKE_EXCLUSIVE, WAKE_ALL, WAKE_MUTEX):
            self.acceptor = SharedAcceptPhase(self, (ACCEPT, accept_s), failed_burst)
        else:
            self.acceptor = AcceptPhase(self, (ACCEPT, accept_s), failed_burst)
            if self.wakeup == WAKE_ALONE:  # else the socket's workers' rule tells it
                self.listen.app = self
        self.cpu.start(self.run())

    def run(self) -> Task:
        """The server's loop, as a task for the CPU (each server defines its own)."""
        raise NotImplementedError

    # -- the accept phase -------------------------------------------------------------
    @property
    def accepts(self) -> int:
        """Connections accepted so far (cumulative)."""
        return self.acceptor.accepts

    @property
    def accept_phases(self) -> int:
        """Accept phases so far (cumulative; a phase accepted at least one connection)."""
        return self.acceptor.phases

    def opened(self) -> float:
        """Extra CPU per accepted connection beyond ``accept()`` (none by default; nginx
        registers it with ``epoll_ctl``).  A constant of the server: asked once."""
        return 0.0

    def closing(self) -> float:
        """Extra CPU per connection closed beyond ``close_s`` (none by default; nginx's own
        release of it, ``connection_s``).  A constant of the server: asked once."""
        return 0.0

    def accept_call_costs(self) -> tuple[float, float]:
        """The CPU of one ``accept()`` that returns a connection (with :meth:`opened`),
        and of one that finds the queue empty; asked once, by :meth:`start`."""
        costs = self.costs
        return costs.accept_s + self.opened(), costs.accept_empty_s

    @final
    def listen_ready(self) -> bool:
        """Would the server see its listening socket readable (connections queued, and
        room to hold one more)?  The accept phase's :meth:`AcceptPhase.ready`, not a
        hook: loops on the hot path call that directly."""
        return self.acceptor.ready(self.listen)

    # -- the record -------------------------------------------------------------------
    def counters(self) -> ServerCounters:
        """Cumulative counters; the run takes differences over its window."""
        return self.counters_from(self.select_calls, self.work_phases, self.conns_worked)

    def counters_from(
        self, select_calls: int, work_phases: int, conns_worked: int
    ) -> ServerCounters:
        """The counters with the loop's three counts as the server defines them."""
        acc = self.acceptor
        return ServerCounters(
            select_calls, acc.phases, acc.accepts, acc.failed, acc.skips,
            work_phases, conns_worked, self.open_area(), self.own_counters(),
        )  # fmt: skip

    def own_counters(self) -> dict[str, float]:
        """Cumulative counters of the server's own, for its :meth:`result_extras` (none
        here)."""
        return {}

    def hold(self, conn: Connection) -> None:
        """The server now holds ``conn`` (it accepted it)."""
        self.open += 1
        self._open_sum -= self.clock.now

    def hold_idle(self, n: int) -> None:
        """The server now holds ``n`` more connections that are never served (idle ones)."""
        self.open += n
        self._open_sum -= self.clock.now * n

    def release(self, conn: Connection) -> None:
        """The server has closed ``conn``."""
        self.open -= 1
        self._open_sum += self.clock.now
        conn.state = CLOSED

    def result_extras(self, diff: ServerCounters, window: float) -> dict[str, Any]:
        """The server's own measures over the run's window, added to the result record
        under its own keys (``diff``: the differences of :meth:`counters`; none here)."""
        return {}

    def open_area(self) -> float:
        """Integral of open connections over time, up to now (connection-seconds)."""
        return self._open_sum + self.open * self.env.now

    def accept_ready(self) -> None:
        """The accept queue went from empty to non-empty: wake the loop if it sleeps."""
        if self.cpu.task_end == INF:  # asleep (a call to wake() only when needed)
            self.cpu.wake()
