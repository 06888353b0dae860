"""A processor of the host, shared by interrupt-level work and one task.

The paper's hosts were uniprocessors; a multi-core host has one :class:`Cpu` per
core, each with its own kernel work and its own task (a worker pinned to it), all
driven by one :class:`~acceptsim.sim.engine.Environment`.  Kernel network processing (a packet
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
  first, :meth:`acceptsim.sim.engine.Environment.run` steps the task to its next
  yield and sets the next ``task_end`` (inline there: it is the engine's
  hottest path).

CPU time is accounted exactly per category; :meth:`Cpu.usage` reports it as
of ``env.now`` (the unfinished part of the current burst excluded).

CPU bandwidth limit
-------------------
:meth:`Cpu.limit` puts the task under a CFS bandwidth limit, as a cgroup's
``cpu.max`` (v2) or ``cpu.cfs_quota_us``/``cpu.cfs_period_us`` (v1) does: in
every period the task may run for ``quota`` seconds; when it has used them it
is *throttled* (it neither runs nor wakes) until the period ends, and its
unfinished burst resumes then.  Kernel (interrupt) work is neither limited
nor charged to the quota: on a kernel with IRQ time accounting, softirq time
is taken out of the task's runtime, and packets keep arriving and being
queued while the task is throttled.  The kernel notices a used-up quota at its
next accounting point for the task: a scheduler tick while it runs, or its next
sleep or wake-up (``account_cfs_rq_runtime`` is called from ``update_curr``; there
is no timer for the quota itself).  A task that runs on overruns its quota until
the next tick, and the overrun is a debt: each period's refill first pays what
the task owes (``distribute_cfs_runtime`` gives a throttled cfs_rq
``-runtime_remaining + 1`` from the new quota and unthrottles it only once that
is positive), so a long overrun keeps the task throttled for whole periods.  With
``tick_s`` 0 the limit is enforced exactly, at the instant the quota runs out.
See :class:`Bandwidth`; :class:`SharedBandwidth` is one limit shared by the tasks
of several CPUs (a cgroup holding several workers).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Generator, Iterable
from typing import TYPE_CHECKING, Any, Final, cast

if TYPE_CHECKING:
    from acceptsim.sim.engine import Environment

#: yielded by a task to sleep until woken
BLOCK: Final = object()

#: the category under which kernel (interrupt) time is reported
KERNEL: Final = "kernel"

INF: Final = float("inf")

Task = Generator[Any, None, None]


class Account:
    """Processor seconds the task has used under one category."""

    __slots__ = ("used",)

    def __init__(self) -> None:
        self.used = 0.0


class Cpu:
    """One processor: interrupt work pre-empts a single task."""

    def __init__(self, env: Environment, categories: Iterable[str]) -> None:
        self.env = env
        self.clock = env.clock
        #: instant at which the kernel's backlog of charged work is done
        self.kernel_free_at = env.now
        self.kernel_time = 0.0
        #: task seconds per category, each in an :class:`Account` (the event loop adds a
        #: burst's cost to its field, cheaper than storing into the dict)
        self.task_time: dict[str, Account] = {c: Account() for c in categories}
        #: instant the task's current burst ends (inf while it sleeps)
        self.task_end = INF
        self._task: Task | None = None
        self._category: str | None = None
        #: the task's CFS bandwidth limit, if any (:meth:`limit`)
        self.bandwidth: Bandwidth | None = None
        #: how long a sleeping task waits to run once woken (:meth:`wake`): the wake-up's
        #: inter-processor interrupt and the switch in, on an idle processor (s)
        self.wake_latency_s = 0.0
        #: what a task resumed after its processor stood idle is charged beyond a warm
        #: resumption, for a long idle (s), and the idle time over which it grows (s):
        #: ``cold_s * (1 - exp(-idle / cold_tau_s))`` (:meth:`cold_cost`)
        self.cold_s = 0.0
        self.cold_tau_s = 1.0
        #: the processor this Cpu shares with other workers' tasks (a :class:`Context`'s
        #: :class:`Core`); None: the task has the processor to itself
        self.core: Core | None = None
        #: this processor's number on its host (0 for the first)
        self.number = env.attach_cpu(self)

    def limit(self, quota_s: float, period_s: float, tick_s: float = 0.0) -> Bandwidth:
        """Limit the task to ``quota_s`` seconds of processor time per ``period_s``
        (CFS bandwidth control), from the current instant, noticed at the scheduler's
        ticks every ``tick_s`` (0: exactly; see :class:`Bandwidth`)."""
        if self.bandwidth is not None:
            raise RuntimeError("this Cpu's task is already limited")
        self.bandwidth = Bandwidth(self, quota_s, period_s, tick_s)
        return self.bandwidth

    # -- kernel side ------------------------------------------------------
    def interrupt(self, cost: float) -> None:
        """Charge ``cost`` seconds of kernel work at the current instant."""
        now = self.clock.now
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

    def wake(self) -> None:
        """Make a sleeping task runnable (no effect if it is running): it runs
        ``wake_latency_s`` from now, or when the kernel's backlog is done if that is later
        (kernel work charged meanwhile delays it further).  Under a bandwidth limit
        (:meth:`limit`) a throttled task becomes runnable when its next period starts."""
        if self.task_end == INF and self._task is not None:
            if self.bandwidth is not None and self.bandwidth.hold_wake():
                return
            now = self.clock.now
            free = self.kernel_free_at
            self._category = None
            self.task_end = (free if free > now else now) + self.wake_latency_s

    def idle_since(self, asleep_at: float) -> float:
        """How long the processor stood idle before the task, asleep since ``asleep_at``,
        ran again (now): all of the sleep, on a processor of its own."""
        return self.clock.now - asleep_at

    def asleep(self) -> bool:
        """The task sleeps (it blocked and nothing woke it yet; a task woken while its
        cgroup is throttled is runnable, not asleep: it runs when the period ends)."""
        if self.task_end != INF or self._task is None:
            return False
        bandwidth = self.bandwidth
        return bandwidth is None or not bandwidth.holds_wake()

    def cold_cost(self, idle_s: float) -> float:
        """CPU seconds a task resumed after ``idle_s`` of idle processor is charged
        beyond a warm resumption (the state its processor lost meanwhile)."""
        if self.cold_s == 0.0 or idle_s <= 0.0:
            return 0.0
        if self.cold_tau_s <= 0.0:  # all of it after any idle time
            return self.cold_s
        return self.cold_s * (1.0 - math.exp(-idle_s / self.cold_tau_s))

    def _resume_at(self, now: float) -> None:
        free = self.kernel_free_at
        self._category = None
        self.task_end = free if free > now else now

    def usage(self) -> dict[str, float]:
        """CPU seconds used per category up to ``env.now`` (kernel included)."""
        now = self.env.now
        backlog = max(self.kernel_free_at - now, 0.0)
        used = {c: account.used for c, account in self.task_time.items()}
        # (a Context whose processor's kernel work is charged to another Context has none
        # of its own, and none to take back)
        used[KERNEL] = self.kernel_time - backlog if self.kernel_time else 0.0
        if self.task_end != INF and self._category is not None:
            # the part of the current burst still to run after now
            used[self._category] -= self.task_end - now - backlog
        return used


    def task_seconds(self) -> float:
        """Processor seconds the task has used up to ``env.now``."""
        used = self.usage()
        del used[KERNEL]
        return sum(used.values())


class Core:
    """One processor time-shared by the tasks of several workers pinned to it, each task
    in a :class:`Context` of its own (a host with more workers than CPUs).

    The rule is Linux's fair scheduler since 6.6 (EEVDF) for tasks of equal weight, with
    its default ``RUN_TO_PARITY``: a task picked to run is protected until it has used
    its slice, so a task woken meanwhile waits for the running one to block (or end).
    The kernel notices a used-up slice at its next scheduler tick (no high-resolution
    tick by default), and then, if a task waits, switches to it; otherwise the running
    task starts a new slice.  Waiting tasks run in the order they became runnable (with
    equal weights, the one that waited longest is the eligible one with the earliest
    deadline).  A task woken on an idle processor runs after the wake-up latency
    (:attr:`Cpu.wake_latency_s`); one picked when another blocks runs at once.

    Kernel work on the processor (:meth:`Context.interrupt`, charged to its first
    Context) delays whichever task runs.  Under a CFS limit shared by the Contexts
    (:class:`SharedBandwidth`, one cgroup) a throttle puts the running task back behind
    the waiting ones, and when the period ends the first waiting task runs (the one that
    ran has used more virtual time than the ones that waited).  Under a limit of its
    own (:meth:`Cpu.limit`, a cgroup per worker) a throttled task gives the processor to
    the next one and waits for it again, behind the others, once a period has paid what
    it overran.
    """

    def __init__(self, contexts: list[Context], slice_s: float, tick_s: float) -> None:
        if not contexts:
            raise ValueError("a Core needs at least one Context")
        if slice_s <= 0.0 or tick_s <= 0.0:
            raise ValueError(f"slice_s={slice_s} and tick_s={tick_s} must be positive")
        self.contexts = list(contexts)
        self.env = contexts[0].env
        #: the scheduler's slice (run time a picked task is protected for) and tick (s)
        self.slice_s = slice_s
        self.tick_s = tick_s
        #: the Context whose task holds the processor (None: idle, or held by a throttle)
        self.running: Context | None = None
        #: runnable Contexts waiting for the processor, in the order they will run
        self.queue: deque[Context] = deque()
        #: a CFS throttle holds the processor (SharedBandwidth): nothing is picked
        self.held = False
        #: involuntary switches: a task taken off the processor at a tick
        self.preemptions = 0
        self._idle = True
        self._idle_at = self.env.now
        self._slice_start = 0.0  # the running task's run time when its slice began (s)
        self._ticking = False
        for c in contexts:
            c.core = self

    # -- the scheduler ---------------------------------------------------------------
    def wake(self, ctx: Context) -> None:
        """``ctx``'s sleeping task became runnable."""
        if self.running is None and not self.held and not self.queue:
            free = ctx.kernel_free_at
            now = self.env.now
            self._run(ctx, (free if free > now else now) + ctx.wake_latency_s)
        else:
            self.enqueue(ctx)

    def enqueue(self, ctx: Context) -> None:
        """``ctx`` waits for the processor, behind the Contexts already waiting."""
        if not self.queue and self.running is not None:
            # the running task renewed its slice at the ticks it ran alone
            running = self.running
            ran = running.task_seconds()
            if ran - self._slice_start >= self.slice_s:
                now = self.env.now
                self._slice_start = max(self._slice_start,
                                        ran - (now - self._last_tick(now)))
        ctx.queued = True
        self.queue.append(ctx)
        if self.running is not None and not self._ticking:
            self._schedule_tick()

    def released(self, ctx: Context) -> None:
        """``ctx``'s task, which held the processor, blocked or ended."""
        if self.running is ctx:
            self.running = None
            self.dispatch()

    def dispatch(self) -> None:
        """Give the free processor to the first waiting task (if any, and not held)."""
        if self.running is not None or self.held:
            return
        if not self.queue:
            if not self._idle:
                self._idle = True
                self._idle_at = self.env.now
            return
        ctx = self.queue.popleft()
        ctx.queued = False
        free = ctx.kernel_free_at
        now = self.env.now
        self._run(ctx, free if free > now else now)

    def _run(self, ctx: Context, start: float) -> None:
        """``ctx``'s task holds the processor from ``start``: its cut burst resumes, or
        its task runs on to its next yield."""
        ctx.idle_before = start - self._idle_at if self._idle else 0.0
        self._idle = False
        self.running = ctx
        self._slice_start = ctx.task_seconds()
        if ctx.bandwidth is not None:  # it uses its quota from now: a check when it may
            ctx.bandwidth.started()  # run out
        if ctx.parked:
            ctx.parked = False
            category = ctx.parked_category
            # a burst resumed on a processor that stood idle (after its own cgroup's
            # throttle, or the server's) runs longer by the cold cost, as a task alone on
            # its CPU does (Bandwidth); one resumed as another task stops runs warm
            rest = ctx.parked_rest + ctx.cold_cost(ctx.idle_before)
            if category is not None:
                ctx.task_time[category].used += rest
            ctx._category = category
            ctx.task_end = start + rest
        else:
            ctx._category = None
            ctx.task_end = start
        if self.queue and not self._ticking:
            self._schedule_tick()

    def preempt(self, ctx: Context, wait: bool = True) -> None:
        """Take the processor from ``ctx``'s task: what is left of its burst is parked,
        and (``wait``) it waits behind the others; otherwise (its own cgroup throttled)
        it is not runnable until it is enqueued again."""
        now = self.env.now
        free = ctx.kernel_free_at
        start = free if free > now else now
        if ctx.task_end != INF:
            rest = ctx.task_end - start
            category = ctx._category
            if category is not None:
                ctx.task_time[category].used -= rest
            ctx.parked = True
            ctx.parked_category = category
            ctx.parked_rest = rest
            ctx.task_end = INF
        if self.running is ctx:
            self.running = None
        if wait:
            self.enqueue(ctx)

    # -- the tick --------------------------------------------------------------------
    def _last_tick(self, now: float) -> float:
        return math.floor(now / self.tick_s) * self.tick_s

    def _schedule_tick(self) -> None:
        self._ticking = True
        now = self.env.now
        at = self._last_tick(now) + self.tick_s
        if at <= now:  # (now is a tick's instant, which the division put a tick early)
            at += self.tick_s
        self.env.call_at(at, self._tick)

    def _tick(self, _: object) -> None:
        self._ticking = False
        running = self.running
        if running is None or not self.queue:
            return
        ran = running.task_seconds()
        if ran - self._slice_start >= self.slice_s - _QUOTA_EPS_S:
            self.preemptions += 1
            self.preempt(running)
            self.dispatch()
        elif not self._ticking:
            self._schedule_tick()

    # -- a CFS throttle of the group (SharedBandwidth) ------------------------------------
    def throttle(self) -> None:
        """The cgroup of the processor's tasks is throttled: the running one is cut and
        nothing runs until :meth:`unthrottle`."""
        if self.held:
            return
        self.held = True
        if self.running is not None:
            self.preempt(self.running)
        if not self._idle:  # the processor stands idle while the group is throttled
            self._idle = True
            self._idle_at = self.env.now

    def unthrottle(self) -> None:
        """The throttle ends: the first waiting task runs."""
        if self.held:
            self.held = False
            self.dispatch()


class Context(Cpu):
    """A worker's task on a processor it shares with other workers' tasks: what a
    :class:`Cpu` offers its task, with the processor scheduled by a :class:`Core`."""

    def __init__(self, env: Environment, categories: Iterable[str]) -> None:
        super().__init__(env, categories)
        #: runnable, waiting for the processor (in its Core's queue)
        self.queued = False
        #: a burst cut by a switch: its category (None: a wake-up's latency) and rest (s)
        self.parked = False
        self.parked_category: str | None = None
        self.parked_rest = 0.0
        #: how long the processor stood idle before the task last got it (s)
        self.idle_before = 0.0

    def interrupt(self, cost: float) -> None:
        """Charge ``cost`` seconds of the processor's kernel work at the current instant:
        it delays whichever task runs."""
        core = self.core
        assert core is not None
        now = self.clock.now
        free = self.kernel_free_at
        done = (free if free > now else now) + cost
        for ctx in core.contexts:
            ctx.kernel_free_at = done
        self.kernel_time += cost
        running = core.running
        if running is not None and running.task_end > now:
            running.task_end += cost

    def start(self, task: Task) -> None:
        if self._task is not None:
            raise RuntimeError("this Context already runs a task")
        self._task = task
        core = self.core
        assert core is not None
        if core.running is None and not core.held and not core.queue:
            core._run(self, max(self.kernel_free_at, self.env.now))
        else:
            core.enqueue(self)

    def asleep(self) -> bool:
        return not self.queued and Cpu.asleep(self)

    def wake(self) -> None:
        """Make the sleeping task runnable (no effect if it runs or waits to run): it
        runs when its Core picks it."""
        if self.task_end != INF or self.queued or self._task is None:
            return
        core = self.core
        assert core is not None
        if core.running is self:  # between bursts (cannot sleep while holding it)
            return
        bandwidth = self.bandwidth
        if bandwidth is not None and bandwidth.hold_wake():
            return
        core.wake(self)

    def idle_since(self, asleep_at: float) -> float:
        """How long the processor stood idle before the task, asleep since ``asleep_at``,
        got it again: none if another task ran until then."""
        return min(self.clock.now - asleep_at, self.idle_before)


def cfs_counters(
    periods: int, throttled_periods: int, throttled_s: float, throttled_now_s: float
) -> dict[str, float]:
    """A limit's counters as the cgroup's ``cpu.stat`` names them; ``throttled_now_s``: the
    throttled part of the current period so far (0 when not throttled)."""
    return {
        "periods": periods,
        "throttled_periods": throttled_periods,
        "throttled_s": throttled_s + throttled_now_s,
    }


#: the quota counts as used up when less than this is left (float noise of summed costs)
_QUOTA_EPS_S: Final = 1e-12


#: an instant this close to a tick (in ticks) is on it (float noise of the division)
_TICK_EPS: Final = 1e-9


def noticed_at(instant: float, tick_s: float) -> float:
    """When the kernel notices a quota that runs out at ``instant``, its task running on:
    at the first scheduler tick from then (ticks every ``tick_s`` from 0, the period's
    own grid: both run on the monotonic clock); ``instant`` itself when ``tick_s`` is 0."""
    if tick_s <= 0.0:
        return instant
    tick = math.ceil(instant / tick_s - _TICK_EPS) * tick_s
    return tick if tick >= instant else instant  # (on a tick, within the noise)


def budget_after(quota_s: float, left: float) -> float:
    """A period's runtime after one that ended with ``left`` seconds of its own (negative:
    overrun): the quota, less what is owed (``distribute_cfs_runtime`` pays the debt
    first); runtime left unused is not carried."""
    return quota_s + left if left < -_QUOTA_EPS_S else quota_s


class Bandwidth:
    """A CFS bandwidth limit on a :class:`Cpu`'s task (see the module's docstring).

    The instant the quota runs out is found without touching the event loop's
    hot path: a check is scheduled where the kernel would notice the earliest
    instant it could run out (now plus the quota left, were the task to run
    without a break, rounded up to the next scheduler tick); the check measures
    what the task really used (interrupts and sleeps make it less) and either
    throttles the task or schedules the next check.  A sleeping task needs no
    check until it wakes; one that used its quota up before it slept is
    throttled at its wake-up (the kernel throttles it at the sleep, which holds
    the wake-up alike).  What a period's use went past its quota is owed: the
    next period's runtime is the quota less the debt, and a task throttled
    stays throttled through every period whose quota does not pay it off.  Runtime
    left unused at a period's end is not carried (the kernel keeps up to
    ``min_cfs_rq_runtime``, 1 ms, of a cfs_rq's own runtime across a refill: not
    modelled).

    Counters as in the cgroup's ``cpu.stat``: ``periods`` (periods that
    ended), ``throttled_periods`` and ``throttled_s`` (time spent throttled).
    """

    def __init__(self, cpu: Cpu, quota_s: float, period_s: float, tick_s: float = 0.0) -> None:
        if not 0.0 < quota_s <= period_s:
            raise ValueError(f"quota_s={quota_s} must lie in (0, period_s={period_s}]")
        if tick_s < 0.0:
            raise ValueError(f"tick_s={tick_s} must be at least 0")
        self.cpu = cpu
        self.env = env = cpu.env
        self.quota_s = quota_s
        self.period_s = period_s
        #: the scheduler tick at which a used-up quota is noticed (0: at once)
        self.tick_s = tick_s
        self.periods = 0
        self.throttled_periods = 0
        self.throttled_s = 0.0
        self.throttled = False
        self._throttled_at = 0.0
        self._wake_pending = False  # woken while throttled
        self._left_on_wake: float | None = None  # quota left when the task slept at a check
        self._stalled: tuple[str, float] | None = None  # category and work of the cut burst
        self._generation = 0  # checks scheduled in an earlier period are stale
        #: the runtime of this period: the quota less what the last ones overran (s)
        self._budget = quota_s
        #: the earliest instant the quota could run out, as of the last check scheduled
        self._out_from = INF
        self._used_at_start = cpu.task_seconds()
        env.call_recurring(period_s, lambda: period_s, self._refill)
        self._arm(env.now, quota_s)

    def counters(self) -> dict[str, float]:
        """``periods``, ``throttled_periods`` and ``throttled_s`` as of now."""
        return cfs_counters(self.periods, self.throttled_periods, self.throttled_s,
                            self.env.now - self._throttled_at if self.throttled else 0.0)

    def _ready_at(self) -> float:
        """When the task can next run: now, or when the kernel's backlog is done."""
        return max(self.cpu.kernel_free_at, self.env.now)

    def _left(self) -> float:
        """The runtime left in this period (negative: overrun)."""
        return self._budget - (self.cpu.task_seconds() - self._used_at_start)

    def holds_wake(self) -> bool:
        """The task was made runnable while throttled: it runs when the period ends."""
        return self._wake_pending

    def hold_wake(self) -> bool:
        """Called by :meth:`Cpu.wake` for a sleeping task: True if it must stay
        asleep (throttled; it wakes when a period pays what it owes)."""
        if self.tick_s > 0.0 and not self.throttled:
            left = self._left_on_wake
            if left is None and self.env.now >= self._out_from:
                left = self._left()
            if left is not None and left <= _QUOTA_EPS_S:
                # it overran its quota, then slept before a tick noticed: the kernel
                # throttled it at its sleep
                self._left_on_wake = None
                self._throttle()
        if self.throttled:
            self._wake_pending = True
            return True
        self.started()
        return False

    def started(self) -> None:
        """The task runs from now (woken, or given its shared processor): a check when
        its quota may run out."""
        left = self._left_on_wake
        if left is not None:
            self._left_on_wake = None
            self._arm(self._ready_at(), left)

    def _arm(self, start: float, left: float) -> None:
        """A check where the kernel notices the quota's end, were the task to run from
        ``start`` without a break with ``left`` seconds of it."""
        self._out_from = out = start + (left if left > 0.0 else 0.0)
        at = noticed_at(out, self.tick_s)
        self.env.call_at(at if at > start else start, self._check, self._generation)

    def _check(self, generation: int) -> None:
        if generation != self._generation or self.throttled:
            return
        cpu = self.cpu
        left = self._left()
        if left > _QUOTA_EPS_S:
            if cpu.task_end == INF:  # asleep: the quota cannot run out before it wakes
                self._left_on_wake = left
            else:
                self._arm(self.env.now, left)
            return
        self._throttle()

    def _throttle(self) -> None:
        cpu = self.cpu
        now = self.env.now
        self.throttled = True
        self._throttled_at = now
        self.throttled_periods += 1
        core = cpu.core
        if core is not None:  # a task sharing its processor: cut, and the next one runs
            ctx = cast("Context", cpu)
            if core.running is ctx:
                core.preempt(ctx, wait=False)
                core.dispatch()
                self._wake_pending = True  # it waits for its Core when the period ends
            elif ctx.queued:  # (a task waiting uses none of its quota: not reached)
                core.queue.remove(ctx)
                ctx.queued = False
                self._wake_pending = True
            return  # (asleep: a wake-up meanwhile is held, hold_wake)
        if cpu.task_end != INF and cpu._category is not None:
            # cut the running burst: what is left of it runs when the period ends
            rest = cpu.task_end - self._ready_at()
            cpu.task_time[cpu._category].used -= rest
            self._stalled = (cpu._category, rest)
            cpu.task_end = INF
        elif cpu.task_end != INF:  # runnable, between bursts: it waits for the period
            cpu.task_end = INF
            self._wake_pending = True

    def _refill(self, _: object) -> None:
        cpu = self.cpu
        now = self.env.now
        self.periods += 1
        self._generation += 1
        self._left_on_wake = None
        self._budget = budget_after(self.quota_s, self._left())
        self._used_at_start = cpu.task_seconds()
        if self.throttled:
            if self._budget <= _QUOTA_EPS_S:  # this quota does not pay the debt off
                self.throttled_periods += 1
                return
            self.throttled = False
            self.throttled_s += now - self._throttled_at
            start = self._ready_at()
            if cpu.core is not None:  # it waits for its processor (its cut burst parked)
                if self._wake_pending:
                    self._wake_pending = False
                    cpu.core.enqueue(cast("Context", cpu))
                    cpu.core.dispatch()
            elif self._stalled is not None:
                category, rest = self._stalled
                self._stalled = None
                # the cut burst resumes on a processor that stood idle while throttled
                rest += cpu.cold_cost(now - self._throttled_at)
                cpu.task_time[category].used += rest
                cpu._category = category
                cpu.task_end = start + rest
            elif self._wake_pending:
                cpu._category = None
                cpu.task_end = start
            self._wake_pending = False
            self._used_at_start = cpu.task_seconds()
        if cpu.task_end == INF:
            self._left_on_wake = self._budget
        else:
            self._arm(self._ready_at(), self._budget)


class SharedBandwidth:
    """A CFS bandwidth limit shared by the tasks of several :class:`Cpu` objects: one
    cgroup holding every worker of a server (a container's CPU limit), whose ``quota``
    seconds per period any of them may use.  When the group has used its quota every
    task in it is throttled until a period's quota has paid what it overran (the kernel
    hands the global quota to each CPU in slices, ``sched_cfs_bandwidth_slice_us``; the
    group here is one pool).

    The instant the quota runs out is found as :class:`Bandwidth` finds it: a check
    where the kernel would notice the earliest instant it could (now plus the quota left
    over the tasks running, at the next tick), and again at every wake-up, which adds a
    runner; what the group overran is owed, as there.  Each CPU's :attr:`Cpu.bandwidth`
    is a :class:`SharedBandwidthMember` of the group; :meth:`counters` are the group's."""

    def __init__(
        self, cpus: list[Cpu], quota_s: float, period_s: float, tick_s: float = 0.0
    ) -> None:
        processors = len({id(cpu.core if cpu.core is not None else cpu) for cpu in cpus})
        if not 0.0 < quota_s <= period_s * processors:
            raise ValueError(f"quota_s={quota_s} must lie in (0, period_s x processors]")
        if tick_s < 0.0:
            raise ValueError(f"tick_s={tick_s} must be at least 0")
        self.cpus = cpus
        self.env = env = cpus[0].env
        self.quota_s = quota_s
        self.period_s = period_s
        #: the scheduler tick at which a used-up quota is noticed (0: at once)
        self.tick_s = tick_s
        #: the runtime of this period: the quota less what the last ones overran (s)
        self._budget = quota_s
        self.periods = 0
        self.throttled_periods = 0
        self.throttled_s = 0.0
        self.throttled = False
        self._throttled_at = 0.0
        #: per CPU (by position): the cut burst's category and rest, and a wake-up held
        self._stalled: list[tuple[str, float] | None] = [None] * len(cpus)
        self._wake_pending: list[bool] = [False] * len(cpus)
        self._generation = 0
        self._used_at_start = self._used()
        for i, cpu in enumerate(cpus):
            if cpu.bandwidth is not None:
                raise RuntimeError("a Cpu of the group is already limited")
            cpu.bandwidth = SharedBandwidthMember(self, i)
        env.call_recurring(period_s, lambda: period_s, self._refill)
        self._schedule(0)

    def counters(self) -> dict[str, float]:
        """``periods``, ``throttled_periods`` and ``throttled_s`` as of now."""
        return cfs_counters(self.periods, self.throttled_periods, self.throttled_s,
                            self.env.now - self._throttled_at if self.throttled else 0.0)

    def _used(self) -> float:
        return sum(cpu.task_seconds() for cpu in self.cpus)

    def _left(self) -> float:
        """The group's runtime left in this period (negative: overrun)."""
        return self._budget - (self._used() - self._used_at_start)

    def _schedule(self, extra_runners: int, left: float | None = None) -> None:
        """A check at the earliest instant the quota could run out, if a task runs
        (``left``: the runtime left now, if the caller has it)."""
        runners = extra_runners + sum(1 for cpu in self.cpus if cpu.task_end != INF)
        if runners == 0:  # nothing runs: a wake-up schedules the next check
            return
        if left is None:
            left = self._left()
        now = self.env.now
        at = noticed_at(now + max(left, 0.0) / runners, self.tick_s)
        self.env.call_at(at if at > now else now, self._check, self._generation)

    def hold_wake(self, index: int) -> bool:
        """Called when the task of the group's CPU ``index`` is woken: True if it must
        stay asleep (the group is throttled; it wakes when a period pays what the group
        owes)."""
        left = None
        if not self.throttled and self.tick_s > 0.0:
            left = self._left()
            if left <= _QUOTA_EPS_S:
                self._throttle()  # the group overran, and its tasks slept before a tick
        if self.throttled:
            cpu = self.cpus[index]
            if cpu.core is not None:  # a task sharing a processor waits in its Core
                cpu.core.enqueue(cast("Context", cpu))
            else:
                self._wake_pending[index] = True
            return True
        self._schedule(1, left)  # one more runner: the quota may run out sooner
        return False

    def _check(self, generation: int) -> None:
        if generation != self._generation or self.throttled:
            return
        if self._left() > _QUOTA_EPS_S:
            self._schedule(0)
            return
        self._throttle()

    def _throttle(self) -> None:
        now = self.env.now
        self.throttled = True
        self._throttled_at = now
        self.throttled_periods += 1
        for i, cpu in enumerate(self.cpus):
            if cpu.core is not None:  # tasks sharing a processor: its Core holds it
                cpu.core.throttle()
                continue
            if cpu.task_end != INF and cpu._category is not None:
                free = cpu.kernel_free_at
                rest = cpu.task_end - (free if free > now else now)
                cpu.task_time[cpu._category].used -= rest
                self._stalled[i] = (cpu._category, rest)
                cpu.task_end = INF
            elif cpu.task_end != INF:  # runnable between bursts: waits for the period
                cpu.task_end = INF
                self._wake_pending[i] = True

    def _refill(self, _: object) -> None:
        now = self.env.now
        self.periods += 1
        self._generation += 1
        self._budget = budget_after(self.quota_s, self._left())
        self._used_at_start = self._used()
        if self.throttled:
            if self._budget <= _QUOTA_EPS_S:  # this quota does not pay the debt off
                self.throttled_periods += 1
                return
            self.throttled = False
            self.throttled_s += now - self._throttled_at
            for i, cpu in enumerate(self.cpus):
                if cpu.core is not None:
                    cpu.core.unthrottle()
                    continue
                free = cpu.kernel_free_at
                start = free if free > now else now
                stalled = self._stalled[i]
                if stalled is not None:
                    self._stalled[i] = None
                    category, rest = stalled
                    cpu.task_time[category].used += rest
                    cpu._category = category
                    cpu.task_end = start + rest
                elif self._wake_pending[i]:
                    cpu._category = None
                    cpu.task_end = start
                self._wake_pending[i] = False
        self._used_at_start = self._used()
        self._schedule(0)


class SharedBandwidthMember(Bandwidth):
    """One CPU's place in a :class:`SharedBandwidth` (what :attr:`Cpu.bandwidth` holds)."""

    def __init__(self, group: SharedBandwidth, index: int) -> None:  # noqa: D107
        # (Bandwidth's own state is not used: the group keeps it)
        self.group = group
        self.index = index

    def hold_wake(self) -> bool:
        return self.group.hold_wake(self.index)

    def started(self) -> None:
        self.group._schedule(1)  # one more runner: the quota may run out sooner

    def holds_wake(self) -> bool:
        return self.group._wake_pending[self.index]

    def counters(self) -> dict[str, float]:
        return self.group.counters()
