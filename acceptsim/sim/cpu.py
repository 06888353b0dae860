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
See :class:`Bandwidth`: one class for a task alone and for a cgroup of several
workers' tasks (one CPU is the case of one task, so the two cannot disagree).
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


class Burst:
    """A CPU burst a task yields, as the tuple ``(category, cost)`` is: ``cost`` seconds of
    ``category``.  A native object that a server keeps and sets again for each burst whose
    cost varies (``yield work.of(cost)``): the engine reads it as it is yielded, and never
    keeps it, where a tuple and its boxed float are made and freed per burst."""

    __slots__ = ("category", "cost")

    def __init__(self, category: str, cost: float = 0.0) -> None:
        self.category = category
        self.cost = cost

    def of(self, cost: float) -> Burst:
        """This burst, costing ``cost`` seconds now."""
        self.cost = cost
        return self


class Account:
    """Processor seconds the task has used under one category."""

    __slots__ = ("used",)

    def __init__(self) -> None:
        self.used = 0.0


def growth(full: float, tau_s: float, t_s: float) -> float:
    """What grows to ``full`` over ``tau_s`` after ``t_s``: ``full * (1 - exp(-t / tau))``
    (all of it after any time when ``tau_s`` is 0, none for ``t_s`` <= 0): a resumption's
    cold cost and a wake-up's latency after an idle of ``t_s``."""
    if full == 0.0 or t_s <= 0.0:
        return 0.0
    if tau_s <= 0.0:
        return full
    return full * (1.0 - math.exp(-t_s / tau_s))


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
        #: the accounts of three categories the event loop looked up (:meth:`account_of`:
        #: a server's bursts name two or three, and a look-up in the dictionary costs
        #: more than the rest of a burst's book-keeping)
        self._category_a: str | None = None
        self._category_b: str | None = None
        self._category_c: str | None = None
        self._account_a = self._account_b = self._account_c = Account()
        #: the CFS bandwidth limit of the task's cgroup, if any (:meth:`limit`), and the
        #: task's place in it (its index in ``Bandwidth.cpus``)
        self.bandwidth: Bandwidth | None = None
        self.bandwidth_slot = 0
        #: how long a sleeping task waits to run once woken (:meth:`wake`): the wake-up's
        #: inter-processor interrupt and the switch in, on an idle processor, after no idle
        #: time (s), and what a long idle adds, growing over ``wake_latency_tau_s``
        #: (:meth:`wake_latency`)
        self.wake_latency_s = 0.0
        self.wake_latency_cold_s = 0.0
        self.wake_latency_tau_s = 1.0
        #: when the task last blocked (the processor's idle time before a wake-up)
        self.blocked_at = 0.0
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

    def limit(
        self, quota_s: float, period_s: float, tick_s: float = 0.0, offset_s: float = 0.0
    ) -> Bandwidth:
        """Limit the task to ``quota_s`` seconds of processor time per ``period_s``
        (CFS bandwidth control), from the current instant, noticed at the scheduler's
        ticks every ``tick_s`` (0: exactly), periods ending ``offset_s`` past multiples
        of ``period_s`` from now (see :class:`Bandwidth`)."""
        if self.bandwidth is not None:
            raise RuntimeError("this Cpu's task is already limited")
        return Bandwidth([self], quota_s, period_s, tick_s, offset_s)

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
            bandwidth = self.bandwidth
            if bandwidth is not None and bandwidth.hold_wake(self.bandwidth_slot):
                return
            now = self.clock.now
            free = self.kernel_free_at
            self._category = None
            self.task_end = (free if free > now else now) + self.wake_latency(
                now - self.blocked_at)

    def idle_since(self, asleep_at: float) -> float:
        """How long the processor stood idle before the task, asleep since ``asleep_at``,
        ran again (now): all of the sleep, on a processor of its own."""
        return self.clock.now - asleep_at

    def wake_latency(self, idle_s: float) -> float:
        """How long a task woken after ``idle_s`` of idle processor waits to run:
        ``wake_latency_s``, and more the longer the idle
        (``wake_latency_cold_s * (1 - exp(-idle / wake_latency_tau_s))``)."""
        return self.wake_latency_s + growth(self.wake_latency_cold_s, self.wake_latency_tau_s,
                                            idle_s)

    def asleep(self) -> bool:
        """The task sleeps (it blocked and nothing woke it yet; a task woken while its
        cgroup is throttled is runnable, not asleep: it runs when the period ends)."""
        if self.task_end != INF or self._task is None:
            return False
        bandwidth = self.bandwidth
        return bandwidth is None or not bandwidth.holds_wake(self.bandwidth_slot)

    def cold_cost(self, idle_s: float) -> float:
        """CPU seconds a task resumed after ``idle_s`` of idle processor is charged
        beyond a warm resumption (the state its processor lost meanwhile)."""
        return growth(self.cold_s, self.cold_tau_s, idle_s)

    def _resume_at(self, now: float) -> None:
        free = self.kernel_free_at
        self._category = None
        self.task_end = free if free > now else now

    def account_of(self, category: str) -> Account:
        """The account of ``category`` (one of the task's), one of three kept at hand; a
        fourth takes the place of the one looked up first."""
        if category is self._category_a:
            return self._account_a
        if category is self._category_b:
            return self._account_b
        if category is self._category_c:
            return self._account_c
        account = self.task_time[category]
        self._category_c, self._account_c = self._category_b, self._account_b
        self._category_b, self._account_b = self._category_a, self._account_a
        self._category_a, self._account_a = category, account
        return account

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
    its defaults ``RUN_TO_PARITY``, ``PLACE_LAG`` and (since 6.12) ``DELAY_DEQUEUE`` and
    ``DELAY_ZERO`` (kernel/sched/fair.c).  Each task has a virtual runtime, which grows
    by the processor time it uses (equal weights), and a virtual deadline a slice past
    the virtual runtime it had when it was placed or last renewed its slice.  A task is
    *eligible* when its virtual runtime is at most the average of the tasks in the run
    queue (its *lag*, that average less its own, is not negative: it has had no more
    than its share), and the scheduler picks the eligible task with the earliest
    deadline.  A task picked keeps the processor until it has used its slice (the
    deadline renewed), so a task woken meanwhile waits for it to block (or end).  The
    kernel notices a used-up slice at its next scheduler tick (no high-resolution tick by
    default), and then picks again, the running task among the others.

    The lag is the scheduler's memory: a task that blocks eligible leaves the run queue
    with its lag (at most ``max(2 x slice, tick)`` either way) and is placed with it
    when it wakes; one that blocks ineligible stays in the run queue, not runnable, until
    it would be picked (then it leaves with none), and wakes where it was if woken
    before.  So a task that used more than its share waits behind the ones that got
    less, however it left the processor: blocked, cut by a throttle, or at a tick.

    A task woken on an idle processor runs after the wake-up latency
    (:attr:`Cpu.wake_latency_s`); one picked when another blocks runs at once.

    Kernel work on the processor (:meth:`Context.interrupt`, charged to its first
    Context) delays whichever task runs.  Under a CFS limit shared by the Contexts
    (a :class:`Bandwidth` holding every task on it, one cgroup) a throttle cuts the
    running task, which stays in the run queue with its virtual runtime and deadline,
    and nothing runs until the period pays what the group owes; then the scheduler
    picks.  The quota is noticed at a tick before the slice is (the slice's check runs
    after the tick's other events: ``Environment.call_late_at``).  Under a limit of its
    own (:meth:`Cpu.limit`, a cgroup per worker) a throttled task's group leaves the run
    queue with its lag, and rejoins it with that lag once a period has paid what it
    overran.
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
        #: the bound of a task's lag either way (``update_entity_lag``: twice the slice,
        #: at least a tick)
        self.lag_limit_s = max(2.0 * slice_s, tick_s)
        #: the Context whose task holds the processor (None: idle, or held by a throttle)
        self.running: Context | None = None
        #: runnable Contexts waiting for the processor, in the order they became
        #: runnable (the tie-break of equal deadlines)
        self.queue: deque[Context] = deque()
        #: a CFS throttle of all its tasks holds the processor (Bandwidth): nothing is
        #: picked
        self.held = False
        #: involuntary switches: a task taken off the processor at a tick
        self.preemptions = 0
        #: the virtual time a task is placed at when the run queue is empty (s)
        self._zero_v = 0.0
        self._idle = True
        self._idle_at = self.env.now
        self._ticking = False
        for c in contexts:
            c.core = self

    # -- virtual time ------------------------------------------------------------------
    def _v(self, ctx: Context) -> float:
        """``ctx``'s virtual runtime now (the running task's grows as it runs)."""
        if ctx is self.running:
            return ctx.vruntime + (ctx.task_seconds() - ctx.v_seconds)
        return ctx.vruntime

    def _sync(self, ctx: Context) -> None:
        """Bring the running task's virtual runtime up to now, and its deadline: a slice
        on if it has used its slice (``update_curr`` at the event that takes it off the
        processor renews it, ``update_deadline``)."""
        ran = ctx.task_seconds()
        ctx.vruntime += ran - ctx.v_seconds
        ctx.v_seconds = ran
        if ctx.vruntime >= ctx.deadline - _QUOTA_EPS_S:
            ctx.deadline = ctx.vruntime + self.slice_s

    def _average(self) -> float:
        """The average virtual runtime of the tasks in the run queue (the running one, the
        waiting ones and the ones that blocked ineligible)."""
        total = 0.0
        n = 0
        for c in self.contexts:
            if c.in_tree:
                total += self._v(c)
                n += 1
        return total / n if n else self._zero_v

    def _place(self, ctx: Context) -> None:
        """``ctx`` joins the run queue: a task that blocked ineligible is runnable again
        where it was (placed afresh if its lag has grown positive: ``DELAY_ZERO``); any
        other is placed its lag before the average (``place_entity``, the lag scaled so
        that it is still its lag with the task counted), its deadline a slice on."""
        if ctx.in_tree:
            if ctx.delayed:
                ctx.delayed = False
                if self._average() - ctx.vruntime > 0.0:
                    ctx.in_tree = False
                    ctx.vlag = 0.0
                    self._place(ctx)
            return
        n = 0
        for c in self.contexts:
            if c.in_tree:
                n += 1
        v = self._average()
        if n:
            v -= ctx.vlag * float(n + 1) / float(n)
        ctx.vruntime = v
        ctx.deadline = v + self.slice_s
        ctx.in_tree = True

    def _leave(self, ctx: Context, sleeping: bool) -> None:
        """``ctx``'s task stopped being runnable (blocked, or its own group throttled):
        it leaves the run queue with its lag, bounded; a task that blocks ineligible
        stays in it, not runnable (``DELAY_DEQUEUE``), until it would be picked."""
        average = self._average()
        lag = average - ctx.vruntime
        if sleeping and lag < -_QUOTA_EPS_S:
            ctx.delayed = True
            return
        limit = self.lag_limit_s
        ctx.vlag = limit if lag > limit else -limit if lag < -limit else lag
        ctx.in_tree = False
        ctx.delayed = False
        self._left_empty(average)

    def _left_empty(self, average: float) -> None:
        """A task left the run queue, whose average was ``average``: if it was the last,
        the next task placed in the empty run queue is placed there."""
        if not any(c.in_tree for c in self.contexts):
            self._zero_v = average

    def _pick(self) -> Context | None:
        """The waiting task to run next: the eligible one with the earliest deadline
        (``pick_eevdf``), among the run queue's tasks.  A task that blocked ineligible and
        would be picked leaves the run queue with no lag instead (``DELAY_ZERO``), and
        the scheduler picks again."""
        while True:
            average = self._average()
            eligible = average + _QUOTA_EPS_S
            best: Context | None = None
            # the waiting tasks in the order they became runnable (equal deadlines: the
            # first inserted is the leftmost), then the ones that blocked ineligible
            for c in self.queue:
                if c.vruntime <= eligible and (best is None or c.deadline < best.deadline):
                    best = c
            for c in self.contexts:
                if (c.delayed and c.vruntime <= eligible
                        and (best is None or c.deadline < best.deadline)):
                    best = c
            if best is None or not best.delayed:
                if best is None and self.queue:
                    best = self.queue[0]  # (none eligible by float noise: the first)
                return best
            best.delayed = False
            best.in_tree = False
            best.vlag = 0.0
            self._left_empty(average)

    # -- the scheduler ---------------------------------------------------------------
    def wake(self, ctx: Context) -> None:
        """``ctx``'s sleeping task became runnable."""
        if self.running is None and not self.held and not self.queue:
            self._place(ctx)
            free = ctx.kernel_free_at
            now = self.env.now
            self._run(ctx, (free if free > now else now)
                      + ctx.wake_latency(now - self._idle_at if self._idle else 0.0))
        else:
            self.enqueue(ctx)

    def enqueue(self, ctx: Context) -> None:
        """``ctx`` waits for the processor (placed in the run queue if it was not in it)."""
        running = self.running
        if not self.queue and running is not None:
            # the running task renewed its slice at the ticks it ran alone
            now = self.env.now
            v_tick = self._v(running) - (now - self._last_tick(now))
            if v_tick >= running.deadline:
                running.deadline = v_tick + self.slice_s
        self._place(ctx)
        ctx.queued = True
        self.queue.append(ctx)
        if running is not None and not self._ticking:
            self._schedule_tick()

    def withdraw(self, ctx: Context) -> None:
        """``ctx`` waiting for the processor stops being runnable (its own group was
        throttled): it leaves the run queue with its lag."""
        self.queue.remove(ctx)
        ctx.queued = False
        self._leave(ctx, False)

    def released(self, ctx: Context) -> None:
        """``ctx``'s task, which held the processor, blocked or ended."""
        if self.running is ctx:
            self._sync(ctx)
            self.running = None
            self._leave(ctx, True)
            self.dispatch()

    def dispatch(self) -> None:
        """Give the free processor to the task the scheduler picks (if any, and not held)."""
        if self.running is not None or self.held:
            return
        ctx = self._pick() if self.queue else None
        if ctx is None:
            if not self._idle:
                self._idle = True
                self._idle_at = self.env.now
            return
        self.queue.remove(ctx)
        ctx.queued = False
        free = ctx.kernel_free_at
        now = self.env.now
        self._run(ctx, free if free > now else now)

    def _run(self, ctx: Context, start: float) -> None:
        """``ctx``'s task holds the processor from ``start``: its cut burst resumes, or
        its task runs on to its next yield."""
        ctx.idle_before = start - self._idle_at if self._idle else 0.0
        self._idle = False
        # its virtual runtime grows by the processor time it uses from ``start``
        ctx.v_seconds = ctx.task_seconds()
        self.running = ctx
        bandwidth = ctx.bandwidth
        if bandwidth is not None:  # it uses its quota from now: a check when it may run out
            bandwidth.started(ctx.bandwidth_slot)
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
        and (``wait``) it waits in the run queue; otherwise (its own cgroup throttled)
        it leaves the run queue until it is enqueued again."""
        if self.running is ctx:
            self._sync(ctx)
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
        else:
            self._leave(ctx, False)

    # -- the tick --------------------------------------------------------------------
    def _last_tick(self, now: float) -> float:
        return math.floor(now / self.tick_s) * self.tick_s

    def _schedule_tick(self) -> None:
        self._ticking = True
        now = self.env.now
        at = self._last_tick(now) + self.tick_s
        if at <= now:  # (now is a tick's instant, which the division put a tick early)
            at += self.tick_s
        # after the tick's other accounting of that instant (a CFS quota noticed used up
        # at the tick throttles the running task before its slice is looked at)
        self.env.call_late_at(at, self._tick)

    def _tick(self, _: object) -> None:
        self._ticking = False
        running = self.running
        if running is None or not self.queue:
            return
        v = self._v(running)
        if v >= running.deadline - _QUOTA_EPS_S:
            # its slice is used: a new deadline, and the scheduler picks, it among others
            running.deadline = v + self.slice_s
            best = self._pick()
            if best is not None and (best.deadline < running.deadline
                                     or v > self._average() + _QUOTA_EPS_S):
                self.preemptions += 1
                self.preempt(running)
                self.dispatch()
                return
        if not self._ticking:
            self._schedule_tick()

    # -- a CFS throttle of every task on the processor (Bandwidth) ----------------------
    def throttle(self) -> None:
        """The cgroup of the processor's tasks is throttled: the running one is cut (it
        stays in the run queue, its deadline kept) and nothing runs until
        :meth:`unthrottle`."""
        if self.held:
            return
        self.held = True
        running = self.running
        if running is not None:
            self.preempt(running)
        if not self._idle:  # the processor stands idle while the group is throttled
            self._idle = True
            self._idle_at = self.env.now

    def unthrottle(self) -> None:
        """The throttle ends: the scheduler picks."""
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
        #: the scheduler's view (:class:`Core`): in its run queue (running, waiting, or
        #: blocked ineligible: ``delayed``), virtual runtime as of ``v_seconds`` of the
        #: task's processor time, virtual deadline, and the lag it left with (s)
        self.in_tree = False
        self.delayed = False
        self.vruntime = 0.0
        self.v_seconds = 0.0
        self.deadline = 0.0
        self.vlag = 0.0

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
            core._place(self)
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
        if bandwidth is not None and bandwidth.hold_wake(self.bandwidth_slot):
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
    at the first scheduler tick from then (ticks every ``tick_s`` from 0; the periods
    run on a grid of their own, :class:`Bandwidth`'s ``offset_s``); ``instant`` itself
    when ``tick_s`` is 0."""
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
    """A cgroup's CFS bandwidth limit (see the module's docstring) on the tasks of
    ``cpus``: one task alone on its processor (:meth:`Cpu.limit`), one worker's cgroup,
    or one cgroup holding several workers (a container's CPU limit), whose ``quota_s``
    seconds per period any of them may use.  One rule for one task and for many: when
    the group has used its quota every task in it is throttled until a period's quota
    has paid what it overran (the kernel hands the global quota to each CPU in slices,
    ``sched_cfs_bandwidth_slice_us``; the group here is one pool).

    The instant the quota runs out is found without touching the event loop's hot
    path: a check is scheduled where the kernel would notice the earliest instant it
    could run out (the quota left shared by the tasks running, were they to run without
    a break from when they can, rounded up to the next scheduler tick); the check
    measures what the tasks really used (interrupts and sleeps make it less) and either
    throttles them or schedules the next check.  A task that starts to run while others
    run makes the quota run out sooner: a new check.  While every task sleeps no check
    is needed until one wakes; a group that used its quota up before its tasks slept is
    throttled at the wake-up (the kernel throttles it at the sleep, which holds the
    wake-up alike).  What a period's use went past its quota is owed: the next period's
    runtime is the quota less the debt, and a group throttled stays throttled through
    every period whose quota does not pay it off.  Runtime left unused at a period's end
    is not carried (the kernel keeps up to ``min_cfs_rq_runtime``, 1 ms, of a cfs_rq's
    own runtime across a refill: not modelled).

    A throttle cuts each running task's burst; what is left of it resumes when the
    throttle ends, on a processor that stood idle meanwhile, so it runs longer by the
    processor's cold cost (:meth:`Cpu.cold_cost`).  Tasks that share a processor
    (:class:`Context`): when the group holds every task on it, the throttle holds its
    :class:`Core` as a whole; otherwise (a cgroup per worker) a throttled task gives the
    processor to the next one and waits for it again, behind the others, when the
    throttle ends.

    The periods end ``offset_s`` past multiples of ``period_s`` counted from the limit's
    start (the period timer's place; a host's limits start at 0), while the ticks fall on
    multiples of ``tick_s`` from 0.  Where a tick falls in the period sets how long a task
    that runs on overruns its quota, and so how long it runs before each throttle: from
    the period's start to the first tick after its quota is used.  The first period, from
    the limit's start to the first of those instants, holds a whole quota.

    Counters as in the cgroup's ``cpu.stat``: ``periods`` (periods that ended),
    ``throttled_periods`` and ``throttled_s`` (time spent throttled).
    """

    def __init__(
        self, cpus: list[Cpu], quota_s: float, period_s: float, tick_s: float = 0.0,
        offset_s: float = 0.0,
    ) -> None:
        if not cpus:
            raise ValueError("a CFS limit needs at least one task's Cpu")
        processors = len({id(cpu.core if cpu.core is not None else cpu) for cpu in cpus})
        if not 0.0 < quota_s <= period_s * processors:
            raise ValueError(f"quota_s={quota_s} must lie in (0, period_s={period_s} x "
                             f"{processors} processors]")
        if tick_s < 0.0:
            raise ValueError(f"tick_s={tick_s} must be at least 0")
        if not 0.0 <= offset_s < period_s:
            raise ValueError(f"offset_s={offset_s} must lie in [0, period_s={period_s})")
        for cpu in cpus:
            if cpu.bandwidth is not None:
                raise RuntimeError("a task of the group is already limited")
        self.cpus = list(cpus)
        self.env = env = cpus[0].env
        self.quota_s = quota_s
        self.period_s = period_s
        #: the scheduler tick at which a used-up quota is noticed (0: at once)
        self.tick_s = tick_s
        self.periods = 0
        self.throttled_periods = 0
        self.throttled_s = 0.0
        self.throttled = False
        self._throttled_at = 0.0
        #: several tasks (one alone needs no count of the others running)
        self._group = len(cpus) > 1
        #: per task (by its ``Cpu.bandwidth_slot``): its cut burst's category and rest, a
        #: wake-up held while throttled, and whether the group holds every task of its
        #: processor (a :class:`Core` then held as a whole by a throttle)
        self._stalled: list[tuple[str, float] | None] = [None] * len(cpus)
        self._wake_pending: list[bool] = [False] * len(cpus)
        members = {id(cpu) for cpu in cpus}
        self._whole_core: list[bool] = [
            cpu.core is not None and all(id(c) in members for c in cpu.core.contexts)
            for cpu in cpus
        ]
        #: the runtime left when a check found every task asleep: the next task to run
        #: arms the next check with it
        self._left_on_wake: float | None = None
        self._generation = 0  # checks scheduled in an earlier period are stale
        #: the runtime of this period: the quota less what the last ones overran (s)
        self._budget = quota_s
        #: the earliest instant the quota could run out, as of the last check scheduled
        self._out_from = INF
        for i, cpu in enumerate(cpus):
            cpu.bandwidth = self
            cpu.bandwidth_slot = i
        self._used_at_start = self._used()
        # the first period ends offset_s from now (a whole period if 0)
        env.call_recurring(offset_s if offset_s > 0.0 else period_s, lambda: period_s,
                           self._refill)
        runners = self._runners()
        self._arm(env.now, quota_s, runners if runners > 0 else 1)

    def counters(self) -> dict[str, float]:
        """``periods``, ``throttled_periods`` and ``throttled_s`` as of now."""
        return cfs_counters(self.periods, self.throttled_periods, self.throttled_s,
                            self.env.now - self._throttled_at if self.throttled else 0.0)

    def _used(self) -> float:
        """Processor seconds the group's tasks have used up to now."""
        if not self._group:
            return self.cpus[0].task_seconds()
        return sum(cpu.task_seconds() for cpu in self.cpus)

    def _left(self) -> float:
        """The runtime left in this period (negative: overrun)."""
        return self._budget - (self._used() - self._used_at_start)

    def _runners(self) -> int:
        """The group's tasks running (in a burst, or runnable on their processor)."""
        return sum(1 for cpu in self.cpus if cpu.task_end != INF)

    def _ready_at(self, slot: int) -> float:
        """When the task in ``slot`` can next run: now, or when its processor's kernel
        backlog is done."""
        return max(self.cpus[slot].kernel_free_at, self.env.now)

    def holds_wake(self, slot: int) -> bool:
        """The task in ``slot`` was made runnable while throttled: it runs when the
        throttle ends."""
        return self._wake_pending[slot]

    def hold_wake(self, slot: int) -> bool:
        """Called when the sleeping task in ``slot`` is woken: True if it must stay
        asleep (the group is throttled; it wakes when a period pays what it owes)."""
        if self.tick_s > 0.0 and not self.throttled:
            left = self._left_on_wake
            if left is None and self.env.now >= self._out_from:
                left = self._left()
            if left is not None and left <= _QUOTA_EPS_S:
                # the group overran its quota, then its tasks slept before a tick
                # noticed: the kernel throttled it at the sleep
                self._left_on_wake = None
                self._throttle()
        if self.throttled:
            cpu = self.cpus[slot]
            if self._whole_core[slot]:  # it waits in its held Core
                core = cpu.core
                assert core is not None
                core.enqueue(cast("Context", cpu))
            else:
                self._wake_pending[slot] = True
            return True
        self.started(slot)
        return False

    def started(self, slot: int) -> None:
        """The task in ``slot`` runs from now (woken, or given its shared processor): a
        check when the quota may run out, if it may run out sooner now."""
        left = self._left_on_wake
        if left is not None:  # every task slept since the last check: the first to run
            self._left_on_wake = None
            self._arm(self._ready_at(slot), left, 1)
        elif self._group:
            others = self._runners()
            if others > 0:  # one more runner: the quota may run out sooner
                self._arm(self.env.now, self._left(), others + 1)

    def _arm(self, start: float, left: float, runners: int) -> None:
        """A check where the kernel notices the quota's end, were ``runners`` tasks to
        run from ``start`` without a break with ``left`` seconds of it between them."""
        self._out_from = out = start + (left / runners if left > 0.0 else 0.0)
        at = noticed_at(out, self.tick_s)
        self.env.call_at(at if at > start else start, self._check, self._generation)

    def _check(self, generation: int) -> None:
        if generation != self._generation or self.throttled:
            return
        left = self._left()
        if left > _QUOTA_EPS_S:
            runners = self._runners()
            if runners == 0:  # all asleep: the quota cannot run out before one wakes
                self._left_on_wake = left
            else:
                self._arm(self.env.now, left, runners)
            return
        self._throttle()

    def _throttle(self) -> None:
        now = self.env.now
        self.throttled = True
        self._throttled_at = now
        self.throttled_periods += 1
        for i, cpu in enumerate(self.cpus):
            core = cpu.core
            if core is not None:  # a task sharing its processor
                if self._whole_core[i]:  # every task on it throttled: the Core is held
                    core.throttle()
                    continue
                ctx = cast("Context", cpu)
                if core.running is ctx:  # cut, and the next task runs
                    core.preempt(ctx, wait=False)
                    core.dispatch()
                    self._wake_pending[i] = True  # it waits for its Core at the end
                elif ctx.queued:  # (a task waiting uses none of the quota: not reached)
                    core.withdraw(ctx)
                    self._wake_pending[i] = True
                continue  # (asleep: a wake-up meanwhile is held, hold_wake)
            if cpu.task_end != INF and cpu._category is not None:
                # cut the running burst: what is left of it runs when the throttle ends
                rest = cpu.task_end - self._ready_at(i)
                cpu.task_time[cpu._category].used -= rest
                self._stalled[i] = (cpu._category, rest)
                cpu.task_end = INF
            elif cpu.task_end != INF:  # runnable, between bursts: it waits for the period
                cpu.task_end = INF
                self._wake_pending[i] = True

    def _refill(self, _: object) -> None:
        now = self.env.now
        self.periods += 1
        self._generation += 1
        self._left_on_wake = None
        self._budget = budget_after(self.quota_s, self._left())
        self._used_at_start = self._used()
        if self.throttled:
            if self._budget <= _QUOTA_EPS_S:  # this quota does not pay the debt off
                self.throttled_periods += 1
                return
            self.throttled = False
            self.throttled_s += now - self._throttled_at
            for i, cpu in enumerate(self.cpus):
                core = cpu.core
                if core is not None:  # it waits for its processor (its cut burst parked)
                    if self._whole_core[i]:
                        core.unthrottle()
                    elif self._wake_pending[i]:
                        self._wake_pending[i] = False
                        core.enqueue(cast("Context", cpu))
                        core.dispatch()
                    continue
                stalled = self._stalled[i]
                if stalled is not None:
                    self._stalled[i] = None
                    category, rest = stalled
                    # the cut burst resumes on a processor that stood idle while throttled
                    rest += cpu.cold_cost(now - self._throttled_at)
                    cpu.task_time[category].used += rest
                    cpu._category = category
                    cpu.task_end = self._ready_at(i) + rest
                elif self._wake_pending[i]:
                    cpu._category = None
                    cpu.task_end = self._ready_at(i)
                self._wake_pending[i] = False
            self._used_at_start = self._used()
        runners = self._runners()
        if runners == 0:
            self._left_on_wake = self._budget
        else:
            start = min(self._ready_at(i) for i, cpu in enumerate(self.cpus)
                        if cpu.task_end != INF)
            self._arm(start, self._budget, runners)
