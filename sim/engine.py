"""The simulation environment: SimPy's event loop plus the host processor.

:class:`Environment` is a ``simpy.Environment`` (events, timeouts, processes
and their deterministic ``(time, priority, sequence)`` ordering all come from
SimPy).  It adds two things:

* ``call_in(delay, callback, value)``: schedule a plain callback.  Packet
  arrivals and timers are callbacks on SimPy ``Timeout`` events rather than
  one SimPy process per connection, which is several times cheaper.
* a :class:`sim.cpu.Cpu` whose task is advanced *between* events:
  before each event is processed, the task runs every burst that ends no
  later than that event.  Ties are deterministic: a burst ending exactly at
  an event's time completes first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import simpy
from simpy.core import Infinity
from simpy.events import Timeout

if TYPE_CHECKING:
    from sim.cpu import Cpu

Callback = Callable[[simpy.Event], None]


class Environment(simpy.Environment):
    """A SimPy environment that also drives one :class:`~sim.cpu.Cpu`."""

    def __init__(self, initial_time: float = 0.0) -> None:
        super().__init__(initial_time)
        self.cpu: Cpu | None = None

    def attach_cpu(self, cpu: Cpu) -> None:
        if self.cpu is not None:
            raise RuntimeError("an Environment drives one Cpu")
        self.cpu = cpu

    def call_in(self, delay: float, callback: Callback, value: Any = None) -> Timeout:
        """Call ``callback(event)`` after ``delay``; ``event.value`` is ``value``."""
        ev = Timeout(self, delay, value)
        ev.callbacks.append(callback)  # type: ignore[union-attr]
        return ev

    def call_at(self, at: float, callback: Callback, value: Any = None) -> Timeout:
        return self.call_in(at - self._now, callback, value)

    def run(self, until: float | simpy.Event | None = None) -> Any:
        """Run until the absolute time ``until`` (a number).

        With no CPU attached this is SimPy's own ``run``.
        """
        if self.cpu is None or until is None or isinstance(until, simpy.Event):
            return super().run(until)
        at = float(until)
        if at < self._now:
            raise ValueError(f"until={at} lies before the current time {self._now}")
        queue = self._queue
        cpu = self.cpu
        step = self.step
        run_until = cpu.run_until
        while True:
            t_next = queue[0][0] if queue else Infinity
            if t_next > at:
                if run_until(at):
                    continue
                self._now = at
                return None
            if run_until(t_next):
                continue
            step()
