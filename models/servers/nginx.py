"""nginx with one worker: an epoll event loop, ``multi_accept`` off or on.

The worker's loop has the userver's three phases (see
:mod:`acceptsim.models.servers.userver`), with ``epoll_wait`` in place of ``select``:
the interest set is registered once per connection (``epoll_ctl`` at
accept), so a call costs a fixed part plus a part per *ready* event
returned, not per descriptor held; with nothing ready it sleeps until an
event arrives.  ``multi_accept off`` accepts one connection per readiness
of the listening socket (accept-limit 1); ``multi_accept on`` accepts until
the queue is empty (accept-limit inf).  The accept-limit in the run
configuration says which.
"""

from __future__ import annotations

from dataclasses import dataclass

from acceptsim.models.servers.base import WAKE_ALL, WAKE_EXCLUSIVE
from acceptsim.models.servers.spec import ServerSpec
from acceptsim.models.servers.userver import CATEGORIES, GETEVENTS, Userver
from acceptsim.sim.cpu import BLOCK
from acceptsim.models.request_cost import RequestCostParams
from acceptsim.sim.params import param, summary_of

__all__ = ["CATEGORIES", "Nginx", "NginxParams"]


@dataclass(frozen=True)
class NginxParams(RequestCostParams):
    _prefix = "server."

    max_connections: int = param(
        16384,
        unit="connections",
        ge=1,
        doc="worker_connections (as `acceptsim measure` configures nginx)",
    )
    backlog: int = param(128, unit="connections", ge=1, doc="listen ... backlog=")


class Nginx(Userver):
    """One nginx worker process; runs as the task of the host's CPU."""

    name = "nginx"
    has_select = True  # epoll_wait calls are reported as select_calls_per_s

    def getevents(self):  # type: ignore[no-untyped-def]
        """``epoll_wait``: sleep until something is ready; pay per event returned."""
        while not self.ready and not self.listen_ready():
            yield BLOCK
        events = len(self.ready) + (1 if self.listen_ready() else 0)
        costs = self.costs
        yield GETEVENTS, costs.epoll_base_s + costs.epoll_per_event_s * events
        self.select_calls += 1
        ready, self.ready = self.ready, []
        return ready

    def opened(self) -> float:
        """Extra CPU per accepted connection: register it with ``epoll_ctl``."""
        return self.costs.epoll_ctl_s


SPECS = (
    ServerSpec(
        "nginx", Nginx, NginxParams, CATEGORIES, summary_of(Nginx),
        wakeups=(WAKE_EXCLUSIVE, WAKE_ALL),
    ),
)
