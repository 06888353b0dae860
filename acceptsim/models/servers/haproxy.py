"""HAProxy 2.6: threads that each run a poll loop with a task scheduler, a listener
that any of them accepts from, at most ``maxaccept`` connections an event, and each
accepted connection handed to a thread by the listener's multi-queue.

Facts from HAProxy 2.6's sources (``src/haproxy.c`` ``run_poll_loop``,
``src/task.c`` ``process_runnable_tasks``, ``src/ev_epoll.c`` ``_do_poll``,
``src/listener.c`` ``listener_accept``, ``src/mux_h1.c``) and its configuration
manual; what the model takes from each:

* **The loop.**  Each turn runs the scheduler (``process_runnable_tasks``), then the
  poller: pending ``epoll_ctl`` updates, one ``epoll_wait`` of at most
  ``tune.maxpollevents`` (200) events, with a zero timeout while any task is still
  runnable (it sleeps only when none is), and each event's handler called inline.
* **Accepting is the poller's.**  The listening socket's handler
  (``listener_accept``) runs inside the poll: it accepts at most ``tune.maxaccept``
  connections (the run's accept-limit; 4 by default, -1: until EAGAIN), and the
  listener, level-triggered, is reported again by the next ``epoll_wait`` while
  connections wait.  Each accepted connection's session and H1 mux are set up at once
  (``session_accept_fd``, ``h1_init``), and since its socket is marked ready its first
  read is *speculative*: the mux's tasklet is queued, not the socket registered.
* **Working is the scheduler's, with a budget.**  A turn runs at most
  ``tune.runqueue-depth`` (``runqueue_depth``, 280 for one thread) tasks and
  tasklets, shared between the classes that have work by their weights (urgent 64,
  normal 48), each class first in, first out; work woken during the turn runs in it
  while the budget lasts, the rest waits for the next turn.  A connection's work takes
  four runs (HAProxy's own count, ``show activity``: 4.0 context switches and 2.0 task
  switches per connection on the measuring host): its tasklet, urgent (woken from the
  poller or by the accept), reads and parses the request and creates the stream; the
  stream's task, normal, applies ``http-request return`` and sends the reply, then runs
  once more to end; the connection then waits in epoll (keep-alive), and the client's
  FIN wakes its tasklet (urgent) to close it.
* **A client that has gone is served all the same.**  The speculative read does not
  see a FIN behind the request, and nothing checks the client before the reply is
  built: a request accepted after its client gave up costs its full work.

So accepting and serving are paid from different budgets: a listener event may accept
``maxaccept`` connections every turn, while a turn serves at most ``runqueue_depth``
task runs.  When ``maxaccept`` lets a turn take more connections than its budget can
finish, the surplus waits in the scheduler's queues, first in, first out, and grows;
its connections are served later and later, past their clients' timeouts, and the
work spent on them is lost.  With a small ``maxaccept`` the surplus waits in the
kernel's accept queue instead, where a SYN that finds it full is dropped before it
costs the server anything.

CPU: the accept (``accept_s``) in the poll; ``request_s`` split between the tasklet
that reads the request (``1 - stream_share``) and the stream that replies
(``stream_share``, with the per-byte cost); the close (``close_s``) in the last
tasklet; an ``epoll_ctl`` each time a connection starts or stops waiting in epoll,
charged with the next ``epoll_wait``; and each turn of the loop its own bookkeeping
(``haproxy_loop_s``: timers, the clock, signals, the scheduler's entry) with its
``epoll_wait`` (nginx's costs for the poll itself: :mod:`acceptsim.models.servers.nginx`).

With several threads (``RunConfig.cpus``), the listener is in every thread's poller
without ``EPOLLEXCLUSIVE``: a connection wakes every waiting thread
(``RunConfig.wakeup = "all"``), and those that come to it after another emptied the
queue pay a failed accept.  Each accepted connection goes to a thread's accept ring:
``multi_queue = "on"`` (the default) keeps two running thread indexes, one counting up
and one down, compares the two candidates' load (connections waiting in their ring
plus those they hold), takes the less loaded (the first on a tie), moves the other
index on, and keeps the connection on the accepting thread when that one is no more
loaded (strictly less on a tie); ``"fair"`` takes the up-counting index in turn;
``"off"`` keeps every connection on the accepting thread.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Any, Final

from acceptsim.models.connection import Connection
from acceptsim.models.request_cost import RequestCostParams, request_bursts
from acceptsim.models.servers.base import WAKE_ALL, Server
from acceptsim.models.servers.nginx import Nginx
from acceptsim.models.servers.spec import ServerSpec
from acceptsim.models.servers.userver import CATEGORIES, GETEVENTS, WORK
from acceptsim.sim.cpu import BLOCK, INF
from acceptsim.sim.params import param

#: the choices of ``multi_queue`` (``tune.listener.multi-queue``)
MULTI_QUEUE: Final = ("on", "fair", "off")

#: ``conn.server`` of a connection registered in epoll, waiting for data or its FIN
WAITING: Final = "waiting"
#: ``conn.server`` of a connection whose tasklet or stream is queued or running
QUEUED: Final = "queued"
#: ``conn.server`` of a connection whose stream has replied and is queued to end
ENDING: Final = "ending"


#: tune.maxaccept's default: the most connections a listener accepts in a row (HAProxy 2.6's
#: configuration manual, "tune.maxaccept": 4; -1 is no limit, the accept-limit inf)
MAXACCEPT = 4
#: systemd's default hard RLIMIT_NOFILE (DefaultLimitNOFILE=1024:524288, since systemd 240)
SYSTEMD_NOFILE_HARD = 524288
#: the descriptors HAProxy 2.6 kept for itself on the measuring host (its maxconn 9,987 of an
#: open-file limit of 20,000, ``show info``: 20,000 - 2 x 9,987)
OWN_DESCRIPTORS = 26
#: how HAProxy 2.6 derives maxconn when none is set (compute_ideal_maxconn, src/haproxy.c:
#: two descriptors a connection)
MAXCONN_RULE = ("unset, as HAProxy 2.6 derives it: (open_files - own_descriptors) / 2, at "
                f"least DEFAULT_MAXCONN ({(SYSTEMD_NOFILE_HARD - OWN_DESCRIPTORS) // 2:,} with "
                "their defaults)")
#: the least maxconn HAProxy 2.6 derives (DEFAULT_MAXCONN, include/haproxy/defaults.h)
DEFAULT_MAXCONN = 100
#: the bind line's backlog when none is set (HAProxy 2.6's manual, bind "backlog")
BACKLOG_RULE = "unset, the frontend's backlog, which is its maxconn (= max_connections)"


def _maxconn(params: Any) -> int:
    """:data:`MAXCONN_RULE`."""
    return max(DEFAULT_MAXCONN, (params.open_files - params.own_descriptors) // 2)


def _backlog(params: Any) -> int:
    """:data:`BACKLOG_RULE`."""
    return int(params.max_connections)


@dataclass(frozen=True)
class HaproxyParams(RequestCostParams):
    _prefix = "server."

    open_files: int = param(
        SYSTEMD_NOFILE_HARD, unit="descriptors", ge=1,
        doc="the open-file limit HAProxy starts with, the larger of its soft and hard "
        "RLIMIT_NOFILE, from which HAProxy 2.6 derives maxconn when none is set "
        "(compute_ideal_maxconn in src/haproxy.c); 524,288: systemd's default hard limit "
        "(DefaultLimitNOFILE=1024:524288 since systemd 240), which a haproxy.service that "
        "sets no LimitNOFILE runs with",
    )
    own_descriptors: int = param(
        OWN_DESCRIPTORS, unit="descriptors", ge=0,
        doc="the descriptors HAProxy keeps for itself before it derives maxconn (its "
        "listeners, stats socket, pollers and wake-up pipes): 26 as HAProxy 2.6 reported "
        "it on the measuring host for this one-frontend configuration (maxconn 9,987 of an "
        "open-file limit of 20,000)",
    )
    max_connections: int = param(
        0, unit="connections", ge=1, rule=(MAXCONN_RULE, _maxconn),
        doc="maxconn: the connections HAProxy holds at most (global maxconn, which the "
        "frontend inherits)",
    )
    backlog: int = param(
        0, unit="connections", ge=1, rule=(BACKLOG_RULE, _backlog),
        doc="the bind line's backlog (the kernel caps it at somaxconn; `acceptsim measure` "
        "configures 128 and each measured run's run.toml says so)",
    )
    multi_queue: str = param(
        "on", unit="", choices=MULTI_QUEUE,
        doc="tune.listener.multi-queue: hand each accepted connection to the less loaded "
        "of two rotating threads (on), to each thread in turn (fair), or keep it (off)",
    )
    epoll_events: int = param(
        200, unit="events", ge=1,
        doc="tune.maxpollevents: the most events one poll returns (HAProxy 2.6's default, "
        "MAX_POLL_EVENTS)",
    )
    runqueue_depth: int = param(
        280, unit="task runs", ge=1,
        doc="tune.runqueue-depth: the most tasks and tasklets one turn of the loop runs "
        "(HAProxy 2.6's default for one thread, src/task.c)",
    )
    urgent_weight: int = param(
        64, unit="", ge=1,
        doc="the urgent tasklets' weight in a turn's budget (src/task.c default_weights: "
        "TL_URGENT): the I/O tasklets woken from the poller and by accepts",
    )
    normal_weight: int = param(
        48, unit="", ge=1,
        doc="the normal tasks' weight in a turn's budget (src/task.c default_weights: "
        "TL_NORMAL): the streams",
    )
    stream_share: float = param(
        0.5, unit="", ge=0.0, le=1.0,
        doc="the share of request_s the stream's task spends (the rule, the reply built "
        "and sent); the rest goes to the tasklet that reads and parses the request.  Not "
        "measured: it moves when a connection's CPU is spent, not how much",
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
    """One HAProxy thread, pinned to its CPU: the scheduler's turn, then the poll."""

    name = "haproxy"

    def __init__(self, host: Any, params: Any, policy: Any) -> None:
        #: connections handed to this thread and not yet seen by its loop (its ring)
        self.ring = 0
        #: the listener's multi-queue (one per server: set by :meth:`join`)
        self.dispatch = Dispatch([self], params.multi_queue)
        #: the urgent tasklets queued (their connections), first in, first out
        self.urgent: deque[Connection] = deque()
        #: streams woken and not yet picked into a turn (the run queue's tree)
        self.woken: deque[Connection] = deque()
        #: streams picked into the normal class of the turn under way
        self.normal: deque[Connection] = deque()
        #: task and tasklet runs, and turns that ran out of budget with work left
        self.task_runs = 0
        self.full_turns = 0
        super().__init__(host, params, policy)

    def join(self, dispatch: Dispatch) -> None:
        """Share ``dispatch`` with the server's other threads."""
        self.dispatch = dispatch

    def load(self) -> int:
        """What the multi-queue compares: connections in the ring and held."""
        return self.ring + self.open

    def opened(self) -> float:
        """Nothing beyond accept(): the new socket is read before it is registered."""
        return 0.0

    @property
    def work_queue_len(self) -> int:
        """Tasks queued: tasklets, woken streams, and connections epoll reports."""
        return len(self.urgent) + len(self.woken) + len(self.normal) + len(self.ready)

    def hold(self, conn: Connection) -> None:
        """An accepted connection: handed to the thread the multi-queue picks, which holds
        it from now on and queues its tasklet (the speculative first read)."""
        target = self.dispatch.pick(self)
        Server.hold(target, conn)
        conn.owner = target
        conn.server = QUEUED
        target.urgent.append(conn)
        if target is not self:
            target.ring += 1
            if target.cpu.task_end == INF:
                target.cpu.wake()  # its tasklet: the ring is processed in its loop

    def readable(self, conn: Connection) -> None:
        """Data or a FIN arrived: epoll reports it if the connection waits there; else its
        queued tasklet or stream will find it."""
        owner = conn.owner
        if owner is not self and owner is not None:
            owner.readable(conn)
            return
        if conn.server is WAITING:
            super().readable(conn)

    def wait_in_epoll(self, conn: Connection) -> None:
        """The connection subscribes for reads (or, with a reply's rest to send, for
        writes): registered at the next poll."""
        conn.server = WAITING
        self.ctl_owed += self.costs.epoll_ctl_s
        if not conn.tx_left and (conn.pending or conn.eof):  # the next poll reports it
            super().readable(conn)

    def run(self):  # type: ignore[no-untyped-def]
        """The loop: a turn of the scheduler, then the poll (accepts inline)."""
        params = self.params
        costs = self.costs
        urgent, woken, normal = self.urgent, self.woken, self.normal
        depth: int = params.runqueue_depth
        wu: int = params.urgent_weight
        wn: int = params.normal_weight
        share: float = params.stream_share
        parse_burst = (WORK, costs.request_s * (1.0 - share))
        close_burst = (WORK, costs.close_s)
        stream_bursts = request_bursts(
            WORK, costs.request_s * share, costs.send_per_byte_s, params,
            self.client.streams, self.worker,
        )  # fmt: skip
        # a turn's own work beyond the scheduler's runs: the loop's bookkeeping and the
        # fixed part of its epoll_wait
        loop_s = costs.haproxy_loop_s + costs.epoll_base_s
        client = self.client
        tx = client.tx
        mss: int = tx.mss
        write_s: float = costs.write_s
        clock = self.clock
        acc = self.acceptor
        listen = self.listen
        while True:
            # 1. process_runnable_tasks: at most `depth` runs, shared by weight
            budget = depth
            worked = 0
            while budget > 0 and (urgent or woken or normal):
                has_normal = bool(woken or normal)
                total = (wu if urgent else 0) + (wn if has_normal else 0)
                max_u = math.ceil(budget * wu / total) if urgent else 0
                max_n = math.ceil(budget * wn / total) if has_normal else 0
                while woken and len(normal) < max_n:  # picked from the tree
                    normal.append(woken.popleft())
                done = 0
                runs = 0
                while urgent and runs < max_u and done < budget:
                    conn = urgent.popleft()
                    runs += 1
                    done += 1
                    if conn.tx_left:  # writable again: the mux sends the reply's rest
                        if conn.eof:  # the client has gone: the rest is dropped
                            tx.abandon(conn)
                            yield close_burst
                            self.release(conn)
                            continue
                        chunk = tx.chunk(conn)
                        yield WORK, write_s + tx.send_cost(chunk, False)
                        if tx.wrote(conn, chunk, False):
                            self.replies_sent += 1
                            conn.server = ENDING
                            woken.append(conn)  # the stream ends
                        else:
                            self.wait_in_epoll(conn)
                    elif conn.pending:  # recv, parse, stream_new: its task is woken
                        yield parse_burst
                        conn.pending -= 1
                        conn.server = QUEUED
                        woken.append(conn)
                    elif conn.eof:  # recv() returns 0: close
                        yield close_burst
                        self.release(conn)
                    else:  # EAGAIN: subscribe, registered at the next poll
                        self.wait_in_epoll(conn)
                runs = 0
                while normal and runs < max_n and done < budget:
                    conn = normal.popleft()
                    runs += 1
                    done += 1
                    if conn.server is ENDING:  # the stream's second run: it ends, the
                        self.wait_in_epoll(conn)  # connection waits for a request or FIN
                        continue
                    # http-request return: the reply built and sent, whoever reads it;
                    # one of several segments through the send buffer (models.tcp)
                    woke = 0.0
                    if conn.reply_bytes > mss and tx.start(conn):
                        chunk = tx.chunk(conn)
                        yield stream_bursts.plus(chunk, tx.segments_cost(chunk, True))
                        if not tx.wrote(conn, chunk, True):
                            self.wait_in_epoll(conn)  # the rest when it is writable
                            continue
                    else:
                        yield stream_bursts.of(conn.reply_bytes)
                        woke = client.reply(conn)
                    self.replies_sent += 1
                    conn.server = ENDING
                    woken.append(conn)  # the stream wakes itself to end
                    if woke > 0.0:  # it woke the client's thread (HostCosts.wake_reader_s),
                        yield WORK, woke  # charged once the stream is set to end
                budget -= done
                worked += done
            if worked:
                self.task_runs += worked
                self.work_phases += 1
                self.conns_worked += worked
                if budget <= 0 and (urgent or woken or normal):
                    self.full_turns += 1
            # 2. the poll: never asleep while a task is runnable
            busy = bool(urgent or woken or normal)
            slept = False
            asleep_at = clock.now
            while not busy and not self.ready and not acc.ready(listen):
                slept = True
                yield BLOCK
            listener = acc.ready(listen)
            cap = params.epoll_events - (1 if listener else 0)
            ready = self.ready
            if len(ready) > cap:
                events, self.ready = ready[:cap], ready[cap:]
            else:
                events, self.ready = ready, []
            cost = (loop_s + costs.epoll_per_event_s * (len(events) + listener)
                    + self.ctl_owed)
            self.ctl_owed = 0.0
            if slept:
                cost += costs.wakeup_s + self.cpu.cold_cost(self.cpu.idle_since(asleep_at))
                self.sleeps += 1
            yield GETEVENTS, cost
            self.select_calls += 1
            self.ring = 0  # the loop takes what was handed to it
            for conn in events:  # each wakes its tasklet and stops polling (an update)
                conn.ready = False
                conn.server = QUEUED
                urgent.append(conn)
                self.ctl_owed += costs.epoll_ctl_s
            if listener and acc.begin(listen):  # listener_accept, inline
                while acc.take():
                    yield acc.burst
                    if acc.took() is None:
                        break
                acc.end()

    def own_counters(self) -> dict[str, float]:
        """Task runs and turns that ended with their budget spent."""
        out = super().own_counters()
        out["task_runs"] = self.task_runs
        out["full_turns"] = self.full_turns
        return out

    def result_extras(self, diff: Any, window: float) -> dict[str, Any]:
        """``task_runs_per_s`` and ``full_turns_per_s`` (turns of the loop that spent
        their whole ``runqueue_depth`` with work left: the scheduler's backlog)."""
        out = super().result_extras(diff, window)
        out["task_runs_per_s"] = diff.own.get("task_runs", 0) / window
        out["full_turns_per_s"] = diff.own.get("full_turns", 0) / window
        return out


def share(threads: list[Any]) -> None:
    """One multi-queue for the server's threads (acceptsim.models.multicore calls it)."""
    dispatch = Dispatch(threads, threads[0].params.multi_queue)
    for thread in threads:
        thread.join(dispatch)


SPECS = (
    ServerSpec(
        "haproxy", Haproxy, HaproxyParams, CATEGORIES,
        "HAProxy 2.6 threads: a scheduler turn of at most runqueue_depth task runs, then a "
        "poll that accepts at most accept-limit (maxaccept) connections inline.",
        wakeups=(WAKE_ALL,), share=share,
        accept_limit=MAXACCEPT,
        accept_limit_source="tune.maxaccept's default (HAProxy 2.6's configuration manual: "
        "4; -1, no limit, is --accept-limit inf)",
        kernel="linux-modern",
        kernel_source="a server of today runs on today's Linux (the measured HAProxy 2.6 runs: "
        "Linux 6.18)",
    ),
)
