"""A multi-core host's listen path and workers: which worker hears of a connection, and
the sum of the workers for the run's record.

On a host of several CPUs (``RunConfig.cpus``) the server runs as ``workers``
processes, worker ``i`` pinned to CPU ``i mod cpus``, each running the server's own
loop with its own accept phase and its own bound accept policy.  Workers that
outnumber the CPUs share them: each worker's task is a
:class:`~acceptsim.sim.cpu.Context` and a CPU's tasks are scheduled by its
:class:`~acceptsim.sim.cpu.Core`, as Linux's fair scheduler does (:func:`processors`).
The kernel's per-packet work runs on the CPU the flow's hash picks (receive-side
scaling or RPS; ``softirq = "rss"``) or all on CPU 0 (``"cpu0"``), and takes that CPU
from the worker running there only.

Two layouts of listening sockets (``RunConfig.listen``):

* ``shared``: one listening socket, one SYN queue and one accept queue, watched by
  every worker.  Who hears of a new connection is the wake-up rule
  (``RunConfig.wakeup``; every connection queued is announced, as the kernel's
  ``sk_data_ready`` is called per connection):

  - ``exclusive``: epoll with ``EPOLLEXCLUSIVE`` (Linux 4.5+).  Each worker's epoll
    entry sits on the socket's wait queue as an exclusive entry, appended at
    registration (``add_wait_queue_exclusive``), so in worker order.  A connection
    walks the queue from its head: each worker's entry puts the socket on that
    worker's ready list (:class:`~acceptsim.models.servers.base.SharedAcceptPhase`),
    and the walk stops at the first worker that is asleep in ``epoll_wait``, which it
    wakes (``ep_poll_callback`` reports an exclusive wake-up only when its epoll has a
    waiter; a worker woken and waiting for its CPU has left the epoll's wait queue).
    Busy workers before it have the readiness queued: they accept at their next
    ``epoll_wait``, or find the queue emptied and pay a failed accept.
  - ``all``: every worker watching the socket is told, and every one asleep is woken
    (``select``/``poll``, or epoll without ``EPOLLEXCLUSIVE``: the thundering herd);
    all but one may find the queue empty.
  - ``blocking``: workers blocked in ``accept()`` wait in the socket's wait queue in
    FIFO order (``prepare_to_wait_exclusive`` appends at the tail); a connection wakes
    the longest waiting (the ``prefork`` server, :mod:`acceptsim.models.servers.prefork`).
  - ``mutex``: nginx's ``accept_mutex`` (:class:`AcceptMutex`): only the workers whose
    set holds the socket (the mutex's holder, and a former holder until its next loop)
    are told, all of them (no ``EPOLLEXCLUSIVE``); the others cap their wait
    (``acceptsim.models.servers.nginx``).

  A server may move a worker's entry to the tail of the wait queue
  (:meth:`SharedListen.move_to_tail`: nginx re-adding the socket with ``epoll_ctl``).

* ``reuseport``: one socket per worker (``SO_REUSEPORT``), each with its own SYN and
  accept queues of the configured backlog and its own worker.  A SYN goes to the
  socket a hash of its 4-tuple picks over the group's sockets
  (``reuseport_select_sock``), without a look at the queues' lengths, and every later
  segment of the connection to the same socket (:class:`ReuseportGroup`).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from acceptsim.models import policies
from acceptsim.models.kernel import (
    REUSEPORT_SECRET,
    Application,
    ListenPath,
    ListenSocket,
    flow_hash,
)
from acceptsim.models.servers.base import (
    WAKE_ALL,
    WAKE_ALONE,
    WAKE_BLOCKING,
    WAKE_EXCLUSIVE,
    WAKE_MUTEX,
    Server,
    ServerCounters,
    WorkerWiring,
)
from acceptsim.sim.cpu import Context, Core, Cpu
from acceptsim.sim.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Iterable

    from acceptsim.models.config import RunConfig
    from acceptsim.models.connection import Connection
    from acceptsim.models.host import Host
    from acceptsim.models.servers.spec import ServerSpec
    from acceptsim.sim.engine import Environment

#: the listening-socket layouts (``RunConfig.listen``)
LAYOUTS = ("shared", "reuseport")
#: where the kernel's per-packet work runs (``RunConfig.softirq``)
SOFTIRQ = ("rss", "cpu0")


class SharedListen(Application):
    """The application side of a listening socket its workers share: it applies the
    wake-up rule to every connection queued, and hands data on a connection to the
    worker that accepted it."""

    def __init__(self, listen: ListenSocket, workers: list[Server], wakeup: str) -> None:
        self.listen = listen
        #: the workers' entries in the socket's wait queue, in its order
        self.workers: list[Server] = list(workers)
        self.wakeup = wakeup
        #: workers blocked in accept(), longest waiting first (the ``blocking`` rule)
        self.waiters: deque[Any] = deque()
        #: the accept mutex (the ``mutex`` rule)
        self.mutex = AcceptMutex() if wakeup == WAKE_MUTEX else None
        for worker in workers:
            w: Any = worker  # (the hooks of the servers that have them)
            if wakeup == WAKE_BLOCKING:
                w.share_waiters(self.waiters)
            if hasattr(w, "reorder"):  # a server that re-adds the socket (nginx)
                w.reorder = self.move_to_tail
                w.mutex = self.mutex
        listen.app = self
        listen.on_queued = self.queued

    def move_to_tail(self, worker: Server) -> None:
        """``worker`` removed the socket from its epoll set and added it again: its entry
        is now the wait queue's last, and the socket is on its ready list again if a
        connection is queued (an ADD polls the socket)."""
        self.workers.remove(worker)
        self.workers.append(worker)
        worker.acceptor.notified = bool(self.listen.accept_queue)

    def readable(self, conn: Connection) -> None:
        owner = conn.owner
        # (None: accept() is delivering the client's FIN as it takes the connection; the
        # accepting worker looks at it once the call returns)
        if owner is not None:
            owner.readable(conn)

    def accept_ready(self) -> None:
        """(Every connection queued is announced by :meth:`queued`.)"""

    def queued(self, conn: Connection) -> None:
        """A connection was queued for accept(): tell the workers the rule says."""
        wakeup = self.wakeup
        if wakeup == WAKE_EXCLUSIVE:
            for w in self.workers:  # the wait queue, in registration order
                w.acceptor.notified = True
                cpu = w.cpu
                if cpu.asleep():  # asleep in epoll_wait: woken, the walk ends
                    cpu.wake()
                    return
        elif wakeup == WAKE_ALL:
            for w in self.workers:
                w.acceptor.notified = True
                cpu = w.cpu
                if cpu.asleep():
                    cpu.wake()
        elif wakeup == WAKE_MUTEX:  # every worker whose set holds the socket
            for w in self.workers:
                nginx: Any = w  # (a server with the accept mutex: nginx's own field)
                if nginx.watching:
                    w.acceptor.notified = True
                    cpu = w.cpu
                    if cpu.asleep():
                        cpu.wake()
        elif self.waiters:  # WAKE_BLOCKING
            self.waiters.popleft().cpu.wake()


class AcceptMutex:
    """nginx's accept mutex (``ngx_accept_mutex``): one worker at a time may hold it."""

    def __init__(self) -> None:
        #: the worker holding it (None: free)
        self.owner: Any = None

    def try_lock(self, worker: Any) -> bool:
        if self.owner is None:
            self.owner = worker
            return True
        return self.owner is worker

    def release(self, worker: Any) -> None:
        if self.owner is worker:
            self.owner = None


class ReuseportGroup(ListenPath):
    """Listening sockets bound with ``SO_REUSEPORT`` to one port: what the clients send
    to, each connection's segments going to the socket its hash picks."""

    def __init__(self, sockets: list[ListenSocket]) -> None:
        self.sockets = sockets

    def socket_of(self, conn: Connection) -> ListenSocket:
        """The socket ``conn``'s 4-tuple hashes to (``reuseport_select_sock``)."""
        sockets = self.sockets
        return sockets[flow_hash(conn.id, REUSEPORT_SECRET) % len(sockets)]

    def syn(self, conn: Connection) -> None:
        self.socket_of(conn).syn(conn)

    def handshake_ack(self, conn: Connection) -> None:
        self.socket_of(conn).handshake_ack(conn)

    def bare_ack(self, conn: Connection) -> None:
        self.socket_of(conn).bare_ack(conn)

    def first_request(self, conn: Connection) -> None:
        self.socket_of(conn).first_request(conn)

    def retransmitted_segment(self, conn: Connection) -> None:
        self.socket_of(conn).retransmitted_segment(conn)

    def fin(self, conn: Connection) -> None:
        self.socket_of(conn).fin(conn)

    def request_arrives(self, conn: Connection) -> None:
        self.socket_of(conn).request_arrives(conn)

    def reset(self, conn: Connection) -> None:
        self.socket_of(conn).reset(conn)


def sum_counters(counters: list[ServerCounters]) -> ServerCounters:
    """The workers' counters added up, field by field (``own`` key by key)."""
    first = counters[0]
    return ServerCounters(
        sum(c.select_calls for c in counters),
        sum(c.accept_phases for c in counters),
        sum(c.accepts for c in counters),
        sum(c.failed_accepts for c in counters),
        sum(c.accept_skips for c in counters),
        sum(c.work_phases for c in counters),
        sum(c.conns_worked for c in counters),
        sum(c.open_area for c in counters),
        {k: sum(c.own[k] for c in counters) for k in first.own},
    )


class Workers:
    """The server's workers seen as one server, for the run's record and snapshots: its
    counters are the sums of theirs; what is per worker is read from ``workers``."""

    def __init__(self, workers: list[Server]) -> None:
        self.workers = workers
        first = workers[0]
        self.name = first.name
        self.has_select = first.has_select

    def counters(self) -> ServerCounters:
        return sum_counters([w.counters() for w in self.workers])

    def result_extras(self, diff: ServerCounters, window: float) -> dict[str, Any]:
        """The server's own measures are per worker: none for the sum."""
        return {}


def sum_dicts(dicts: list[dict[str, Any]]) -> dict[str, Any]:
    """Dictionaries of numbers with the same keys, added key by key."""
    return {k: sum(d[k] for d in dicts) for k in dicts[0]}


def processors(env: Environment, categories: Iterable[str], config: RunConfig) -> list[Cpu]:
    """What the workers of a run configured by ``config`` run on, worker i on the i-th:
    one :class:`~acceptsim.sim.cpu.Cpu` per CPU when every worker has a CPU of its own;
    with more workers than CPUs, a :class:`~acceptsim.sim.cpu.Context` per worker, worker i
    on CPU ``i mod cpus``, the tasks of each CPU scheduled by a
    :class:`~acceptsim.sim.cpu.Core` (the kernel profile's ``sched_slice_s`` and
    ``sched_tick_s``).  The first ``cpus`` of the list are the CPUs' first tasks, to which
    each CPU's kernel work is charged."""
    if config.workers <= config.cpus:
        return [Cpu(env, categories) for _ in range(config.cpus)]
    contexts = [Context(env, categories) for _ in range(config.workers)]
    for c in range(config.cpus):
        Core(contexts[c :: config.cpus], config.kernel.sched_slice_s, config.kernel.sched_tick_s)
    return list(contexts)


def build(host: Host, spec: ServerSpec, server_params: Any, policy: Any) -> tuple[
    list[ListenSocket], list[Server]
]:
    """The listening sockets and the workers of ``host`` (its ``cpus`` made, its clients
    not yet connected), for any number of CPUs and workers (the paper's uniprocessor host
    is one CPU, one worker, one socket): returns the sockets (one, or one per worker) and
    the workers, worker i on CPU i.  ``policy``: the run's own policy (a
    class or factory, called once per worker), or None for ``config.policy``."""
    config = host.config
    env, client, cpus = host.env, host.client, host.cpus
    kernel_cpus = cpus[: config.cpus]  # (a CPU's first task's, when tasks share it)
    n = config.workers
    if n > 1 and policy is not None and not policies.is_factory(policy):
        raise ConfigError("policy", policy, "a policy class or factory with several workers "
                          "(each worker binds a policy of its own)")

    def socket() -> ListenSocket:
        listen = ListenSocket(env, kernel_cpus[0], config.listen_costs(), config.kernel,
                              server_params.backlog, client)
        if config.softirq == "rss":
            listen.spread_softirq(kernel_cpus)
        return listen

    reuseport = config.listen == "reuseport" and n > 1
    listens = [socket() for _ in range(n if reuseport else 1)]
    wakeup = WAKE_ALONE if reuseport or n == 1 else config.wakeup
    workers: list[Server] = []
    for i in range(n):
        listen = listens[i] if reuseport else listens[0]
        worker_host = WorkerWiring(env, cpus[i], listen, client, config.costs, i, wakeup)
        workers.append(spec.cls(worker_host, server_params, host.policy_for_worker(policy)))
    if wakeup != WAKE_ALONE:
        SharedListen(listens[0], workers, wakeup)
    if spec.share is not None:  # state the server's workers share (haproxy's listener)
        spec.share(workers)
    views = tuple(w.policy.view for w in workers)  # each policy may read the others
    for view in views:
        view._peers = views
    client.connect(ReuseportGroup(listens) if reuseport else listens[0])  # type: ignore[arg-type]
    return listens, workers
