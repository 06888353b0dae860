"""What every server model shares: its wiring to the host, and the counters a run reads.

A server is built on a :class:`ServerHost` (environment, CPU, listen socket,
clients, costs) with its own parameters and its accept policy, sets up its
own state, then calls :meth:`Server.start`, which binds the policy to it
(:func:`models.policies.bind`), registers it as the listen socket's
application and starts :meth:`run` as the CPU's task.  The contract a
subclass fulfils:

* ``run()``: a generator, the server's loop (see :mod:`sim.cpu`);
* ``readable(conn)``: data or end-of-file arrived on a connection it holds;
* ``counters()``: cumulative counters (``accept_phases``, ``accepts``,
  ``select_calls``, ``work_phases``, ``conns_worked``, ``open_area``), of
  which the run takes differences over its window;
* ``work_queue_len``: the work waiting for it, for an accept policy's view;
* optionally ``result_extras(diff, window)``: measures of its own for the record.

``open``, ``accept_phases`` and ``accepts`` are kept here, since the run
and the policies read them from every server alike; so is the one account
of open connections over time (:meth:`Server.hold`, :meth:`Server.release`,
:meth:`Server.open_area`), which every server keeps through those methods.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, Final

from mypy_extensions import mypyc_attr

from acceptsim.models import policies
from acceptsim.models.connection import CLOSED, Connection
from acceptsim.sim.cpu import INF, Task

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

    def of(self, reply_bytes: Any) -> object:
        """The burst of a request whose reply has ``reply_bytes`` bytes."""
        if reply_bytes != self.reply_bytes:
            self.reply_bytes = reply_bytes
            self.burst = (self.category, self.request_s + self.per_byte * float(reply_bytes))
        return self.burst


class ServerHost:
    """What a server runs on: the run's environment, the host's CPU and costs, the
    listening socket, and the client machines that connect to it."""

    def __init__(
        self, env: Environment, cpu: Cpu, listen: ListenSocket, client: Client, costs: HostCosts
    ) -> None:
        self.env = env
        self.cpu = cpu
        self.listen = listen
        self.client = client
        self.costs = costs


@mypyc_attr(allow_interpreted_subclasses=True)
class Server:
    """Base of the server models."""

    name = "server"
    #: the server calls select() (or another getevents): its calls are reported
    has_select = False

    def __init__(self, host: ServerHost, params: Any, policy: AcceptPolicy) -> None:
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
        # counters (cumulative)
        self.accept_phases = 0
        self.accepts = 0

    def start(self) -> None:
        """Bind the accept policy to this server (its view reads the state the subclass has
        set up by now), take the listen socket's events and start the loop on the CPU."""
        self.policy = policies.bind(self._policy, self)  # type: ignore[arg-type]
        self.listen.app = self  # type: ignore[assignment]
        self.cpu.start(self.run())

    def run(self) -> Task:
        raise NotImplementedError

    def accept_batch(
        self, listen: ListenSocket, taken: Callable[[Connection], Any], limit: float
    ) -> Generator[Any, None, int]:
        """One accept phase: accept() from ``listen`` up to ``limit`` (the policy's
        accept-limit for this phase, asked by the caller: a required argument, since
        with a default value the compiled pool's calls never saw the policy's limit).

        Each call is a burst (``accept_s``); one that finds the queue empty costs
        ``accept_empty_s`` and ends the phase.  Each connection is held, then handed
        to ``taken``.  Returns how many were accepted; the caller counts the phase.
        """
        costs = self.costs
        max_open = self.max_open
        accepted = 0
        while accepted < limit and self.open < max_open:
            conn = listen.accept()
            if conn is None:
                yield ACCEPT, costs.accept_empty_s
                break
            yield ACCEPT, costs.accept_s
            accepted += 1
            self.hold(conn)
            taken(conn)
        return accepted

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

    def result_extras(self, diff: dict[str, float], window: float) -> dict[str, Any]:
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
