"""nginx: epoll event loops, one per worker process, ``multi_accept`` off or on.

A worker's loop has the userver's three phases (see
:mod:`acceptsim.models.servers.userver`), with ``epoll_wait`` in place of ``select``:
the interest set is registered once per connection (``epoll_ctl`` at
accept), so a call costs a fixed part plus a part per *ready* event
returned (at most ``epoll_events`` a call; the rest stay ready), not per descriptor
held; with nothing ready it sleeps until an event arrives, and a call that slept
costs ``wakeup_s`` more, and more again the longer its CPU stood idle
(``wakeup_cold_s``).  ``multi_accept off`` accepts one connection per readiness of
the listening socket (accept-limit 1); ``multi_accept on`` accepts until the queue is
empty (accept-limit inf).  The accept-limit in the run configuration says which.

With several workers (``RunConfig.workers``) on one shared listening socket, the
wake-up rule is nginx's configuration (facts from ``ngx_event.c`` and
``ngx_event_accept.c``):

* ``exclusive`` (``accept_mutex off``, the default since 1.11.3): the socket is in
  every worker's epoll set with ``EPOLLEXCLUSIVE``.  From 1.21.6 a worker re-adds it
  (``epoll_ctl`` DEL, then ADD: to the tail of the socket's wait queue) after the
  first and every ``reorder_accept_every``-th accept event it handles
  (``ngx_reorder_accept_events``), so the first-registered worker does not keep
  taking most connections; ``reorder_accept_every = 0`` is nginx before 1.21.6.
* ``all``: the socket in every worker's set without ``EPOLLEXCLUSIVE`` (the
  thundering herd).
* ``mutex`` (``accept_mutex on``): at the start of each loop a worker tries the
  mutex; the one that gets it adds the socket to its set (if it lacks it) and holds
  the mutex through its ``epoll_wait`` and its accepts, and releases it before
  serving its connections; one that fails removes the socket from its set if it had
  it, and caps its ``epoll_wait`` at ``accept_mutex_delay_s`` (500 ms).  A worker
  holding more than 7/8 of its ``worker_connections`` does not try for that many loops
  (``ngx_accept_disabled``).  Every ``epoll_ctl`` costs ``epoll_ctl_s``, charged with
  the worker's next ``epoll_wait``.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from mypy_extensions import mypyc_attr

from acceptsim.models.connection import Connection
from acceptsim.models.request_cost import RequestCostParams
from acceptsim.models.servers.base import WAKE_ALL, WAKE_EXCLUSIVE, WAKE_MUTEX, SharedAcceptPhase
from acceptsim.models.servers.spec import ServerSpec
from acceptsim.models.servers.userver import CATEGORIES, GETEVENTS, Userver
from acceptsim.sim.cpu import BLOCK, Burst
from acceptsim.sim.engine import DelayLine
from acceptsim.sim.params import param, summary_of

__all__ = ["CATEGORIES", "Nginx", "NginxParams"]


@mypyc_attr(native_class=False)  # a parameter set: a plain frozen dataclass
@dataclass(frozen=True)
class NginxParams(RequestCostParams):
    _prefix = "server."

    max_connections: int = param(
        512,
        unit="connections",
        ge=1,
        doc="worker_connections: the connections a worker holds at most (nginx's default, "
        "DEFAULT_CONNECTIONS in src/event/ngx_event.c; `acceptsim measure` configures "
        "16384 and each measured run's run.toml says so)",
    )
    backlog: int = param(
        511, unit="connections", ge=1,
        doc="listen ... backlog= (nginx's default on Linux, NGX_LISTEN_BACKLOG in "
        "src/os/unix/ngx_linux_config.h; the kernel caps it at somaxconn; `acceptsim "
        "measure` configures 128 and each measured run's run.toml says so)",
    )
    keepalive_requests: int = param(
        1000, unit="requests", ge=1,
        doc="keepalive_requests: the requests nginx serves on one kept connection; it closes "
        "the connection with the last reply, and a closed-loop user connects anew (nginx's "
        "default since 1.19.10, src/http/ngx_http_core_module.c; 100 before)",
    )
    epoll_events: int = param(
        512, unit="events", ge=1,
        doc="epoll_events: the most events one epoll_wait returns (nginx's default, "
        "src/event/modules/ngx_epoll_module.c)",
    )
    accept_mutex_delay_s: float = param(
        0.5, unit="s", gt=0.0, le=60.0,
        doc="accept_mutex_delay: the longest epoll_wait of a worker without the accept "
        "mutex (--wakeup mutex; nginx's default 500ms, src/event/ngx_event.c)",
    )
    reorder_accept_every: int = param(
        16, unit="accept events", ge=0,
        doc="with EPOLLEXCLUSIVE, re-add the listening socket after the first and every "
        "n-th accept event (nginx 1.21.6+, ngx_reorder_accept_events in "
        "src/event/ngx_event_accept.c; 0: never, as before 1.21.6)",
    )


@mypyc_attr(allow_interpreted_subclasses=True)  # HAProxy's model is one
class Nginx(Userver):
    """One nginx worker process; runs as the task of its CPU."""

    name = "nginx"
    has_select = True  # epoll_wait calls are reported as select_calls_per_s

    def __init__(self, host: Any, params: Any, policy: Any) -> None:
        #: epoll_ctl CPU owed, charged with the next epoll_wait (s)
        self.ctl_owed = 0.0
        #: epoll_wait calls that slept (a real worker's voluntary context switches)
        self.sleeps = 0
        #: accept events handled (ngx_reorder_accept_events' count)
        self.accept_events = 0
        #: the accept mutex (--wakeup mutex): the socket is in this worker's epoll set,
        #: loops left before it tries again (ngx_accept_disabled), and the wake-up that
        #: ends its capped epoll_wait
        self.watching = host.wakeup != WAKE_MUTEX
        self.accept_disabled = 0
        self._wait_id = 0
        self._timed_out = False
        self.mutex: Any = None  # set by the shared socket's rule (models.multicore)
        #: moves this worker's entry to the tail of the shared socket's wait queue
        #: (set by the socket's rule, acceptsim.models.multicore)
        self.reorder: Any = None
        super().__init__(host, params, policy)
        # read once, as native fields: the parameters and costs are plain dataclasses,
        # each of whose reads is a dictionary look-up on the hot path
        costs = self.costs
        self.epoll_events: int = params.epoll_events
        self.epoll_base_s: float = costs.epoll_base_s
        self.epoll_per_event_s: float = costs.epoll_per_event_s
        self.wakeup_s: float = costs.wakeup_s
        #: epoll_wait's burst, set again for each call (sim.cpu.Burst)
        self._epoll_burst = Burst(GETEVENTS)
        self.epoll_ctl_s: float = costs.epoll_ctl_s
        #: accept events between two re-adds of the shared socket (nginx's own parameter:
        #: read with the rule that uses it)
        self.reorder_every: int = (
            params.reorder_accept_every if self.wakeup == WAKE_EXCLUSIVE else 0
        )
        #: the ends of capped waits (accept_mutex_delay after each): one delay for every
        #: wait, so a line of them, whose head alone is on the event heap.  Most waits end
        #: early, and their ends stay pending until they come (about 8,000 at a time at
        #: 80,000 connections/s on 4 workers)
        self._capped_waits: DelayLine | None = (
            self.env.delay_line(params.accept_mutex_delay_s) if self.wakeup == WAKE_MUTEX
            else None
        )
        if isinstance(self.acceptor, SharedAcceptPhase):
            self.acceptor.after = self.after_accept_phase

    def getevents(self) -> Generator[Any, None, list[Connection]]:
        """``epoll_wait``: sleep until something is ready; pay per event returned."""
        held = False
        if self.mutex is not None:
            held = self.try_accept_mutex()
        if self.mutex is not None and not held:
            # capped wait: wake at the delay if nothing comes first
            self._wait_id += 1
            waits = self._capped_waits
            assert waits is not None  # (the mutex is the wake-up rule)
            waits.put(self._wait_expired, self._wait_id)
        slept = False
        asleep_at = self.env.now
        while not self.ready and not self.listen_ready() and not self._timed_out:
            slept = True
            yield BLOCK
        # the capped wait, if any, is over: a later call waits anew (one whose worker holds
        # the mutex, uncapped: ngx_process_events_and_timers caps only a worker without it)
        self._wait_id += 1
        self._timed_out = False
        # the events it returns, at most epoll_events (those ready while it ran come too)
        listening = 1 if self.listen_ready() else 0
        cap = self.epoll_events - listening
        events = min(len(self.ready), cap) + listening
        cost = self.epoll_base_s + self.epoll_per_event_s * events
        if slept:  # the switch out, the wake-up and the switch back in, on a CPU that
            # stood idle meanwhile (unless another worker's task ran on it)
            cost += self.wakeup_s + self.cpu.cold_cost(self.cpu.idle_since(asleep_at))
            self.sleeps += 1
        if self.ctl_owed:
            cost += self.ctl_owed
            self.ctl_owed = 0.0
        yield self._epoll_burst.of(cost)
        self.select_calls += 1
        if len(self.ready) <= cap:
            ready, self.ready = self.ready, []
        else:  # the rest stay ready for the next call
            ready, self.ready = self.ready[:cap], self.ready[cap:]
        if held and not self.listen_ready():  # no accept events: release it now
            self.mutex.release(self)
        return ready

    def own_counters(self) -> dict[str, float]:
        """epoll_wait calls that slept."""
        out = super().own_counters()
        out["epoll_sleeps"] = self.sleeps
        return out

    def result_extras(self, diff: Any, window: float) -> dict[str, Any]:
        """``epoll_sleeps_per_s``: epoll_wait calls that slept per second (what a real
        worker's voluntary context switches count; ``acceptsim measure-costs`` measures
        them per reply)."""
        out = super().result_extras(diff, window)
        out["epoll_sleeps_per_s"] = diff.own.get("epoll_sleeps", 0) / window
        return out

    def _wait_expired(self, wait_id: int) -> None:
        if wait_id == self._wait_id:
            self._timed_out = True
            self.cpu.wake()

    def opened(self) -> float:
        """Extra CPU per accepted connection: register it with ``epoll_ctl``."""
        return self.costs.epoll_ctl_s

    def closing(self) -> float:
        """Extra CPU per connection closed: nginx's own work for it (``connection_s``)."""
        return self.costs.connection_s

    # -- several workers on a shared socket --------------------------------------------------
    def try_accept_mutex(self) -> bool:
        """``ngx_trylock_accept_mutex`` at the start of a loop: True if this worker holds
        the mutex for this loop."""
        if self.accept_disabled > 0:
            self.accept_disabled -= 1
            return False
        if self.mutex.try_lock(self):
            if not self.watching:  # ngx_enable_accept_events: an ADD polls the socket
                self.watching = True
                self.acceptor.notified = bool(self.listen.accept_queue)
                self.ctl_owed += self.epoll_ctl_s
            return True
        if self.watching:  # ngx_disable_accept_events
            self.watching = False
            self.acceptor.notified = False
            self.ctl_owed += self.epoll_ctl_s
        return False

    def after_accept_phase(self, accepted: int) -> None:
        """After the accept events of a loop (``ngx_event_accept``): nginx's own steps."""
        free = self.max_open - self.open
        self.accept_disabled = self.max_open // 8 - free
        if self.mutex is not None:
            if self.mutex.owner is self:
                self.mutex.release(self)
            return
        if self.reorder is None or self.wakeup != WAKE_EXCLUSIVE:
            return
        every = self.reorder_every
        if every:
            reorder = self.accept_events % every == 0 or self.accept_disabled > 0
            self.accept_events += 1
            if reorder:  # ngx_reorder_accept_events: DEL, then ADD at the tail
                self.reorder(self)
                self.ctl_owed += 2 * self.epoll_ctl_s


#: nginx's own default of ``multi_accept`` (off: one accept per readiness of the listening
#: socket, accept-limit 1; on: until the queue is empty, inf)
MULTI_ACCEPT = False
#: the accept-limit of ``multi_accept`` off and on
ACCEPT_LIMITS = {False: 1, True: math.inf}

SPECS = (
    ServerSpec(
        "nginx", Nginx, NginxParams, CATEGORIES, summary_of(Nginx),
        # accept_mutex off (nginx's default since 1.11.3): EPOLLEXCLUSIVE first
        wakeups=(WAKE_EXCLUSIVE, WAKE_ALL, WAKE_MUTEX),
        accept_limit=ACCEPT_LIMITS[MULTI_ACCEPT],
        accept_limit_source="multi_accept off, nginx's default (ngx_event.c; on is "
        "--accept-limit inf)",
        kernel="linux-modern",
        kernel_source="a server of today runs on today's Linux (the measured nginx 1.22 runs: "
        "Linux 6.18)",
    ),
)
