"""TUX: Red Hat's kernel-mode, event-driven web server (the paper, section 3).

TUX runs inside the kernel, so it has no getevents phase (no ``select()``)
and no system-call crossings: each step of a request is cheaper than the
userver's.  It keeps two queues, the listen socket's accept queue and its own
``work_pending`` list, and alternates two phases:

1. **accept**: take up to accept-limit connections off the accept queue
   (original TUX drains it: accept-limit inf);
2. **work**: process *every* item on ``work_pending``, including items that
   arrive while the phase runs, so a phase can grow.

A connection passes through ``work_pending`` several times: when its request
can be read (pass 1: read, parse, look up the file), when its reply is to be
sent (pass 2), and when the client's FIN arrives (pass 3: close).  Network
events that arrive during a work phase re-queue connections into the same
phase.  As in TUX's source (``add_tux_atom``/``__add_req_to_workqueue``),
``work_pending`` is filled at its head, LIFO (``work_order = "fifo"`` fills
it at its tail, for comparison).

Policy hooks (:mod:`acceptsim.models.policies`): the accept-limit is asked before each
phase when the accept queue is non-empty (0 skips the accept phase: not
counted; with no work pending TUX then sleeps ``skip_wait_s``); a work phase
ends early when the policy's work budget is spent, the rest staying on
work_pending.  The work queue a policy sees is work_pending.

What large batches cost
-----------------------
With equal per-item costs at every batch size TUX has the same capacity at
accept-limit 1 and inf (``acceptsim/scenarios/tux_mechanisms.toml``,
``tests/test_tux.py``): bursty overflow drops and retransmissions hit both
limits alike, and LIFO starvation causes no client timeouts because work
phases last milliseconds against httperf's 10 s timeout.  The mechanism
modelled here is the processor cache:
every item of a phase touches its connection's kernel state (socket, TUX
request, sk_buffs: ``costs.conn_footprint_bytes``), and the longer the phase
the more of that state has been evicted from the L2 cache
(``costs.l2_cache_bytes``, shared with the rest of the kernel's data) by the
time the phase comes back to it.  The L2 is set-associative and shared, so
it starts missing gradually as the phase's footprint grows (conflict misses
long before capacity): taking each line the phase brings in as evicting a
random resident line, a connection's line survives the phase's footprint
with probability ``exp(-footprint / l2)``.  Each item therefore pays
``costs.cache_refill_s`` times the evicted fraction
``1 - exp(-touched * conn_footprint_bytes / l2_cache_bytes)``, ``touched``
being the connections the phase has touched so far: it rises smoothly from
about 1% for a phase of one connection to 78% for the 129 of a full accept
queue, so every extra connection per phase costs a little and accept-limit 1
(the fewest per phase) is strictly cheapest.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Final

from mypy_extensions import mypyc_attr

from acceptsim.models.connection import Connection
from acceptsim.models.policies import AcceptPolicy
from acceptsim.models.servers.base import Server, WorkerWiring
from acceptsim.models.servers.spec import ServerSpec
from acceptsim.sim.cpu import BLOCK, INF, Burst, Task
from acceptsim.sim.params import Params, param

#: math.expm1 as a constant of this module (the compiled build then calls it without a look-up)
expm1: Final = math.expm1

ACCEPT: Final = "accept"
WORK: Final = "work"
CATEGORIES: Final = (ACCEPT, WORK)


@mypyc_attr(native_class=False)  # a parameter set: a plain frozen dataclass
@dataclass(frozen=True)
class TuxParams(Params):
    _prefix = "server."

    max_connections: int = param(
        15000, unit="connections", ge=1, doc="most connections TUX holds open at once"
    )
    backlog: int = param(128, unit="connections", ge=1, doc="listen backlog (the paper's runs)")
    work_order: str = param(
        "lifo",
        unit="",
        choices=("lifo", "fifo"),
        doc="where work_pending is filled: at its head (lifo, TUX's source) or tail (fifo)",
    )
    skip_wait_s: float = param(
        50e-6, unit="s", gt=0.0,
        doc="after its policy skipped an accept phase with no work pending, TUX sleeps this "
        "long (or until work arrives) before asking again",
    )  # fmt: skip


class _TuxConn:
    """TUX's per-connection state (kept in ``Connection.server``)."""

    __slots__ = ("send", "phase")

    def __init__(self) -> None:
        self.send = False  # the next pass sends the reply
        self.phase = -1  # the last phase that touched this connection


class Tux(Server):
    """The kernel-mode TUX server; runs as the task of the host's CPU."""

    name = "tux"
    has_select = False
    # TUX looks at the accept queue itself, in the kernel: no failed accept() to pay
    failed_accept_charged = False

    def __init__(self, host: WorkerWiring, params: TuxParams, policy: AcceptPolicy) -> None:
        super().__init__(host, params, policy)
        costs = host.costs
        self.work_pending: deque[Connection] = deque()
        queue = self.work_pending
        self._push = queue.appendleft if params.work_order == "lifo" else queue.append
        self._phase = 0
        self._touched = 0  # distinct connections touched in the current phase
        # the phase's footprint per connection touched, as a share of the L2 cache
        self._footprint_share = (
            costs.conn_footprint_bytes / costs.l2_cache_bytes if costs.l2_cache_bytes else math.inf
        )
        self._refill_s = costs.cache_refill_s
        #: the refill cost by connections touched so far in the phase (index), each
        #: computed the first time a phase reaches it (the same value every phase)
        self._refill_by_touched: list[float] = [0.0]
        self.start()

    # -- what the kernel tells the server ---------------------------------------------
    def readable(self, conn: Connection) -> None:
        if not conn.ready:  # queue it on work_pending
            conn.ready = True
            self._push(conn)
            if self.cpu.task_end == INF:  # asleep (a call to wake() only when needed)
                self.cpu.wake()

    # -- the cache ----------------------------------------------------------------------
    def _touch(self, conn: Connection) -> float:
        """Mark ``conn`` touched in this phase; the cache-refill cost of this item."""
        state: _TuxConn = conn.server  # type: ignore[assignment]
        if state.phase != self._phase:
            state.phase = self._phase
            self._touched += 1
        touched = self._touched
        table = self._refill_by_touched
        if touched == len(table):  # the first phase to touch this many
            table.append(self._refill_s * -expm1(-touched * self._footprint_share))
        return table[touched]

    # -- the server loop ----------------------------------------------------------------
    def accept_call_costs(self) -> tuple[float, float]:
        """Taking a connection off the queue (before the phase's cache term, which
        :meth:`run` adds per connection); finding it empty costs nothing."""
        return self.costs.tux_accept_s, 0.0

    def run(self) -> Task:
        costs = self.costs
        listen = self.listen
        client = self.client
        pending = self.work_pending
        popleft = pending.popleft  # (bound once: no look-up per item)
        per_byte = costs.send_per_byte_s
        send_s = costs.tux_send_s
        request_s = costs.tux_request_s
        close_s = costs.tux_close_s
        accept_s = self.accept_call_costs()[0]
        # a reply of several segments is sent through the send buffer (models.tcp)
        tx = client.tx
        mss: int = tx.mss
        clock = self.clock
        policy = self.policy
        acc = self.acceptor
        # a work_budget() that never bounds, without the calls (the same value)
        bounded_work = policy.bounds_work
        # the bursts (each costs its connection's cache term too), set again for each
        accept = Burst(ACCEPT)
        work = Burst(WORK)
        while True:
            if not pending and not acc.ready(listen):
                yield BLOCK
                continue
            self._phase += 1
            self._touched = 0
            # 1. accept (the policy may skip the phase: a limit of 0)
            if acc.ready(listen):
                if acc.begin(listen):
                    while acc.take():  # (an empty queue ends the phase: nothing to yield)
                        conn: Connection = acc.conn  # type: ignore[assignment]
                        conn.server = _TuxConn()
                        yield accept.of(accept_s + self._touch(conn))
                        acc.took()
                        if conn.pending or conn.eof:
                            self.readable(conn)
                    acc.end()
                elif not pending:
                    self.env.call_in(self.params.skip_wait_s, self._wake)
                    yield BLOCK
                    continue
            # 2. work: every item, including those queued while the phase runs,
            #    unless the policy's time budget for the phase runs out first
            if pending:
                ends_at: float = clock.now + policy.work_budget(self) if bounded_work else INF
                items = 0
                while pending and clock.now < ends_at:
                    conn = popleft()
                    conn.ready = False
                    items += 1
                    state: _TuxConn = conn.server
                    if state.send and (conn.tx_left or conn.reply_bytes > mss):
                        # a reply of several segments, through the send buffer: this pass
                        # sends what fits; the connection comes back to work_pending when
                        # its socket has room again (models.tcp)
                        first = not conn.tx_left
                        if first:
                            tx.start(conn)
                        elif conn.eof:  # the client has gone: the rest is dropped
                            tx.abandon(conn)
                            state.send = False
                            self.readable(conn)
                            continue
                        chunk = tx.chunk(conn)
                        yield work.of(send_s + tx.send_cost(chunk, first) + self._touch(conn))
                        if tx.wrote(conn, chunk, first):
                            state.send = False
                            if conn.pending or conn.eof:
                                self.readable(conn)
                    elif state.send:
                        state.send = False
                        yield work.of(
                            send_s + per_byte * float(conn.reply_bytes) + self._touch(conn)
                        )
                        woke = client.reply(conn)
                        if woke > 0.0:  # it woke the client's thread (wake_reader_s)
                            yield work.of(woke)
                        if conn.pending or conn.eof:
                            self.readable(conn)
                    elif conn.pending:
                        client.check_client_gone(conn)
                        conn.pending -= 1
                        yield work.of(request_s + self._touch(conn))
                        state.send = True
                        self.readable(conn)
                    elif conn.eof:
                        yield work.of(close_s + self._touch(conn))
                        self.release(conn)
                self.work_phases += 1
                self.conns_worked += items

    def _wake(self, _: object) -> None:
        self.cpu.wake()  # no effect if the task is running

    @property
    def work_queue_len(self) -> int:
        """Items on work_pending."""
        return len(self.work_pending)


SPECS = (
    ServerSpec(
        "tux", Tux, TuxParams, CATEGORIES,
        "Kernel-mode TUX: no select() or syscalls; accept phase, then the work_pending queue.",
    ),
)
