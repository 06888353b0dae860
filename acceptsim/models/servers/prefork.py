"""prefork: worker processes that each block in ``accept()`` and serve one connection at
a time.

The classic pre-forked server (Apache's prefork MPM without its accept mutex, a
thread-per-connection server with a fixed pool of threads).  Each worker, pinned to a
CPU of its own on a multi-core host (``RunConfig.workers``):

1. calls ``accept()``; with the accept queue empty it sleeps in the listening socket's
   wait queue, where a blocked ``accept()`` waits exclusively and at the tail, so a new
   connection wakes the one worker that has waited longest (the ``blocking`` wake-up
   rule, :mod:`acceptsim.models.multicore`); a worker that is woken and finds the queue
   emptied by another waits again, at the tail, without leaving the kernel (no failed
   accept is paid).  With an accept-limit above 1 (the classic server's is 1) it then
   accepts without blocking up to the limit, stopping at an empty queue (that failed
   call is paid), as Knot-C's threads do;
2. serves its connections one after another: reads a request, sleeping until it
   arrives; serves it (``request_s`` plus ``send_per_byte_s`` per byte, with the spread
   of ``request_cost``) and writes the reply; after the connection's last request (the
   client said ``Connection: close``) or its end-of-file closes it;
3. accepts again.

A policy's limit of 0 skips the phase: the worker then waits for the next connection
queued.  With every kernel and loop cost at zero, Poisson arrivals and exponential
request costs, k workers (accept-limit 1) on one shared socket are the M/M/k queue, and
k workers each on a ``reuseport`` socket of its own are k M/M/1 queues at a k-th of the
rate: the tests check both against their closed forms.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Final

from acceptsim.models.connection import Connection
from acceptsim.models.policies import AcceptPolicy
from acceptsim.models.request_cost import RequestCostParams, request_bursts
from acceptsim.models.servers.base import (
    ACCEPT,
    WAKE_BLOCKING,
    Server,
    ServerCounters,
    WorkerWiring,
)
from acceptsim.models.servers.spec import ServerSpec
from acceptsim.sim.cpu import BLOCK, INF, Task
from acceptsim.sim.params import param

WORK: Final = "work"
CATEGORIES: Final = (ACCEPT, WORK)


@dataclass(frozen=True)
class PreforkParams(RequestCostParams):
    _prefix = "server."

    backlog: int = param(511, unit="connections", ge=1, doc="listen() backlog (Apache's "
                         "ListenBacklog default; the kernel caps it at somaxconn)")

    max_connections: int = param(
        15000, unit="connections", ge=1,
        doc="most connections a worker holds at once (it serves them one at a time)",
    )


class Prefork(Server):
    """One prefork worker; runs as the task of its CPU."""

    name = "prefork"

    def __init__(self, host: WorkerWiring, params: Any, policy: AcceptPolicy) -> None:
        super().__init__(host, params, policy)
        #: the workers blocked in accept() on this worker's listening socket, longest
        #: waiting first (shared by the workers of a shared socket: :meth:`share_waiters`)
        self.waiters: deque[Prefork] = deque()
        #: the connection whose read() this worker sleeps in, if any
        self.reading: Connection | None = None
        #: the connections accepted and not yet served
        self.batch: deque[Connection] = deque()
        #: requests served (cumulative)
        self.requests = 0
        self.start()

    def share_waiters(self, waiters: deque[Prefork]) -> None:
        """Wait in ``waiters``, the wait queue of a listening socket this worker shares."""
        self.waiters = waiters

    # -- what the kernel tells the worker -------------------------------------------------
    def accept_ready(self) -> None:
        """A connection is queued on this worker's own socket: wake the longest waiter."""
        if self.waiters:
            self.waiters.popleft().cpu.wake()

    def readable(self, conn: Connection) -> None:
        if conn is self.reading and self.cpu.task_end == INF:
            self.cpu.wake()

    @property
    def work_queue_len(self) -> int:
        """Connections accepted and not yet served."""
        return len(self.batch)

    def counters(self) -> ServerCounters:
        """No getevents; each request served is a work phase of its own."""
        return self.counters_from(0, self.requests, self.requests)

    # -- the worker's loop ------------------------------------------------------------------
    def run(self) -> Task:
        listen = self.listen
        client = self.client
        clock = self.clock
        acc = self.acceptor
        close_burst: object = (WORK, self.costs.close_s)
        bursts = request_bursts(
            WORK, self.costs.request_s, self.costs.send_per_byte_s, self.params,
            client.streams, self.worker,
        )  # fmt: skip
        batch = self.batch
        while True:
            # 1. accept(), blocking: sleep in the socket's wait queue until a connection
            while not acc.ready(listen):
                self.waiters.append(self)
                yield BLOCK
            if not acc.begin(listen):  # the policy skips: wait for the next connection
                self.waiters.append(self)
                yield BLOCK
                continue
            while acc.take():  # the first cannot fail; the others do not block
                yield acc.burst
                conn = acc.took()
                if conn is None:
                    break
                batch.append(conn)
            acc.end()
            # 2. serve each: read and answer its requests, until the last one or end-of-file
            while batch:
                conn = batch.popleft()
                while True:
                    while not conn.pending and not conn.eof:
                        self.reading = conn
                        yield BLOCK
                    self.reading = None
                    if not conn.pending:  # end-of-file: the client closed (or timed out)
                        break
                    if not conn.eof and clock.now >= conn.deadline + client.owd:
                        client.check_client_gone(conn)
                    conn.pending -= 1
                    last = conn.requests_left == 0  # the client's "Connection: close"
                    yield bursts.of(conn.reply_bytes)
                    self.requests += 1
                    self.replies_sent += 1
                    woke = client.reply(conn)
                    if woke > 0.0:  # it woke the client's thread (HostCosts.wake_reader_s)
                        yield WORK, woke
                    if last:
                        break
                yield close_burst
                self.release(conn)


SPECS = (
    ServerSpec(
        "prefork", Prefork, PreforkParams, CATEGORIES,
        "Worker processes blocked in accept(), each serving its connections one at a time "
        "(Apache prefork, thread per connection: accept-limit 1).",
        wakeups=(WAKE_BLOCKING,),
    ),
)
