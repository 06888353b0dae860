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
  ends (``env.now`` is that instant), so effects of a system call happen when
  the call completes.
* Bursts are pre-empted by kernel work: a burst of ``c`` seconds that is
  interrupted by ``k`` seconds of kernel work ends ``c + k`` after it started.

The task is advanced by :class:`sim.engine.Environment` between events
rather than by scheduling one event per burst, so a burst costs no heap
operation unless the simulation needs one; this is what makes the engine
fast enough for thousands of runs.  CPU time is accounted exactly per
category; :meth:`Cpu.usage` reports it as of ``env.now``.
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

Task = Generator[Any, None, None]


class Cpu:
    """One processor: interrupt work pre-empts a single task."""

    def __init__(self, env: Environment, categories: Iterable[str]) -> None:
        self.env = env
        #: instant at which the kernel's backlog of charged work is done
        self.kernel_free_at = env.now
        self.kernel_time = 0.0
        self.task_time: dict[str, float] = dict.fromkeys(categories, 0.0)
        self._task: Task | None = None
        self._t = env.now  # the task's progress is accounted up to here
        self._remaining = 0.0  # CPU seconds left in the current burst
        self._category: str | None = None
        self._blocked = True
        env.attach_cpu(self)

    # -- kernel side ------------------------------------------------------
    def interrupt(self, cost: float) -> None:
        """Charge ``cost`` seconds of kernel work at the current instant."""
        now = self.env._now
        free = self.kernel_free_at
        self.kernel_free_at = (free if free > now else now) + cost
        self.kernel_time += cost

    # -- task side --------------------------------------------------------
    def start(self, task: Task) -> None:
        """Run ``task`` on this processor from the current instant."""
        if self._task is not None:
            raise RuntimeError("this Cpu already runs a task")
        self._task = task
        self._blocked = False
        self._remaining = 0.0
        self._category = None
        self._t = self.env.now

    @property
    def blocked(self) -> bool:
        return self._blocked

    def wake(self) -> None:
        """Make a sleeping task runnable now (no effect if it is running)."""
        if self._blocked and self._task is not None:
            self._blocked = False
            self._remaining = 0.0
            self._category = None
            self._t = self.env._now

    def run_until(self, horizon: float) -> bool:
        """Give the task the processor up to ``horizon``.

        Returns True if a burst ended at or before ``horizon`` (the task then
        ran up to its next yield, which may have scheduled new events), and
        False if the task is blocked or its burst is still running at the
        horizon (progress up to the horizon is accounted).
        """
        if self._blocked:
            return False
        start = self._t
        free = self.kernel_free_at
        if free > start:
            start = free
        if start > horizon:
            return False
        end = start + self._remaining
        if end > horizon:
            if horizon > start:
                self._remaining -= horizon - start
                if self._category is not None:
                    self.task_time[self._category] += horizon - start
                self._t = horizon
            return False
        if self._category is not None:
            self.task_time[self._category] += end - start
        self._t = end
        env = self.env
        if end > env._now:
            env._now = end
        try:
            item = next(self._task)  # type: ignore[arg-type]
        except StopIteration:
            self._blocked = True
            self._task = None
            return True
        if item is BLOCK:
            self._blocked = True
        else:
            self._category, self._remaining = item
        return True

    def usage(self) -> dict[str, float]:
        """CPU seconds used per category up to ``env.now`` (kernel included)."""
        now = self.env.now
        backlog = self.kernel_free_at - now
        used = dict(self.task_time)
        used[KERNEL] = self.kernel_time - (backlog if backlog > 0 else 0.0)
        if not self._blocked and self._t > now and self._category is not None:
            # cannot happen while the environment drives the task, kept for safety
            used[self._category] -= self._t - now
        return used
