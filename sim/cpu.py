"""The host's single processor, shared by interrupt-level work and one task.

The paper's hosts were uniprocessors.  Kernel network processing (a packet
arriving, a timer firing) runs at higher priority than the server and takes
the processor from it; the server is one *task* that gets whatever processor
time the kernel leaves.

Contract
--------
* ``Cpu.interrupt(cost)`` charges ``cost`` seconds of kernel work at the
  current simulated time.  Kernel work is done first-come first-served at the
  highest priority; its *effects* (a connection queued, a socket made
  readable) are applied by the caller at the arrival instant.
* A task is a generator.  It yields ``(category, seconds)`` to use the
  processor for a burst, or :data:`BLOCK` to sleep until :meth:`Cpu.wake` is
  called.  The code after a ``yield`` runs at the simulated instant the burst
  ends (``env.now`` is that instant), so the effects of a system call happen
  when the call completes.
* Bursts are pre-empted by kernel work: every second of kernel work charged
  while a burst is under way (or waiting for the kernel) moves the burst's
  end one second later.  So ``task_end`` is always the exact instant the
  current burst ends given the work charged so far, and the environment
  only compares it with the next event's time.  When ``task_end`` comes
  first, :meth:`sim.engine.Environment.run` steps the task to its next
  yield and sets the next ``task_end`` (inline there: it is the engine's
  hottest path).

CPU time is accounted exactly per category; :meth:`Cpu.usage` reports it as
of ``env.now`` (the unfinished part of the current burst excluded).
"""

from __future__ import annotations

from collections.abc import Generator, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sim.engine import Environment

#: yielded by a task to sleep until woken
BLOCK = object()

#: the category under which kernel (interrupt) time is reported
KERNEL = "kernel"

INF = float("inf")

Task = Generator[Any, None, None]


class Cpu:
    """One processor: interrupt work pre-empts a single task."""

    def __init__(self, env: Environment, categories: Iterable[str]) -> None:
        self.env = env
        #: instant at which the kernel's backlog of charged work is done
        self.kernel_free_at = env.now
        self.kernel_time = 0.0
        #: task seconds per category, each in a one-element list (a cell the event
        #: loop adds a burst's cost to, cheaper than storing into the dict)
        self.task_time: dict[str, list[float]] = {c: [0.0] for c in categories}
        #: instant the task's current burst ends (inf while it sleeps)
        self.task_end = INF
        self._task: Task | None = None
        self._category: str | None = None
        env.attach_cpu(self)

    # -- kernel side ------------------------------------------------------
    def interrupt(self, cost: float) -> None:
        """Charge ``cost`` seconds of kernel work at the current instant."""
        now = self.env._now
        free = self.kernel_free_at
        self.kernel_free_at = (free if free > now else now) + cost
        self.kernel_time += cost
        if self.task_end > now:
            self.task_end += cost

    # -- task side --------------------------------------------------------
    def start(self, task: Task) -> None:
        """Run ``task`` on this processor from the current instant."""
        if self._task is not None:
            raise RuntimeError("this Cpu already runs a task")
        self._task = task
        self._resume_at(self.env.now)

    @property
    def blocked(self) -> bool:
        """The task sleeps (or has ended)."""
        return self.task_end == INF

    def wake(self) -> None:
        """Make a sleeping task runnable now (no effect if it is running)."""
        if self.task_end == INF and self._task is not None:
            now = self.env._now
            free = self.kernel_free_at
            self._category = None
            self.task_end = free if free > now else now

    def _resume_at(self, now: float) -> None:
        free = self.kernel_free_at
        self._category = None
        self.task_end = free if free > now else now

    def usage(self) -> dict[str, float]:
        """CPU seconds used per category up to ``env.now`` (kernel included)."""
        now = self.env.now
        backlog = max(self.kernel_free_at - now, 0.0)
        used = {c: cell[0] for c, cell in self.task_time.items()}
        used[KERNEL] = self.kernel_time - backlog
        if self.task_end != INF and self._category is not None:
            # the part of the current burst still to run after now
            used[self._category] -= self.task_end - now - backlog
        return used
