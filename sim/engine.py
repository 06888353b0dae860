"""The simulation environment: SimPy's event loop plus the host processor.

:class:`Environment` is a ``simpy.Environment``: its clock, its event heap
with deterministic ``(time, priority, sequence)`` ordering, its events,
timeouts and processes all work as in SimPy.  For speed it adds:

* ``call_in(delay, fn, value)`` / ``call_at``: schedule a plain callback
  ``fn(value)`` on SimPy's heap as a light :class:`Call` entry rather than a
  ``Timeout`` with a callback list (packet arrivals and timers are callbacks,
  not one SimPy process per connection);
* **delay lines** (:meth:`Environment.delay_line`): a first-in first-out
  lane for events that all happen a fixed delay after they are scheduled
  (a packet crossing a LAN with a constant round-trip time, a retransmission
  after a fixed timeout).  Only a line's head sits on SimPy's heap, so the
  heap stays small however many packets are in flight;
* ``call_recurring(delay, gap, fn)``: a callback that recurs at instants
  spaced by ``gap()`` draws (a stream of arrivals), whose next entry takes
  the place of the fired one on the heap;
* **timer lanes** (:meth:`Environment.timer_lane`): a population of timers
  at arbitrary instants (one per overflowed connection) in a heap of their
  own, only the earliest on SimPy's heap, so the main heap stays shallow;
* a :class:`Clock` (``env.clock.now``): the current time as a small object
  of its own, which the compiled hot path reads faster than ``env._now``;
* a :class:`sim.cpu.Cpu` whose task is advanced *between* events: before
  each event is processed, the task runs every burst that ends no later than
  that event.

Ties are deterministic: at one instant a task burst ending then completes
first, then heap entries in scheduling order (SimPy's rule).
"""

from __future__ import annotations

import gc
from collections import deque
from collections.abc import Callable
from heapq import heappop, heappush, heapreplace
from typing import TYPE_CHECKING, Any

import simpy
from simpy.core import EmptySchedule, Infinity, StopSimulation

from acceptsim.sim.cpu import BLOCK

if TYPE_CHECKING:
    from acceptsim.sim.cpu import Cpu

#: SimPy's priority for ordinary events
NORMAL = 1


class Clock:
    """The simulated time, held by a small object of its own: the compiled models read
    ``clock.now`` as a native field, where ``env._now`` is a look-up in a Python object's
    dictionary.  The environment keeps the two equal (it sets both at every event)."""

    __slots__ = ("now",)

    def __init__(self, now: float) -> None:
        self.now = now


class Call:
    """A scheduled plain callback ``fn(value)``; lighter than a SimPy event."""

    __slots__ = ("fn", "value")

    def __init__(self, fn: Callable[[Any], None], value: Any) -> None:
        self.fn = fn
        self.value = value


class Recurring:
    """A callback ``fn(value)`` that recurs at instants spaced by ``gap()`` draws.

    When it fires, its next instant is drawn first, then ``fn`` is called
    (as if ``fn`` had first scheduled its own next call).  Cheaper than a
    :class:`Call` that reschedules itself: the next entry replaces the fired
    one on the heap.
    """

    __slots__ = ("fn", "value", "gap")

    def __init__(self, fn: Callable[[Any], None], value: Any, gap: Callable[[], float]) -> None:
        self.fn = fn
        self.value = value
        self.gap = gap


class DelayLine:
    """Events that each happen ``delay`` seconds after being put, in FIFO order.

    Only the line's head is on SimPy's heap (one reused entry), so however
    many packets are in flight on a line, the heap stays small.
    """

    __slots__ = ("env", "delay", "queue")

    def __init__(self, env: Environment, delay: float) -> None:
        if not delay >= 0:
            raise ValueError(f"delay={delay!r}: must be >= 0")
        self.env = env
        self.delay = delay
        self.queue: deque[tuple[float, Callable[[Any], None], Any]] = deque()

    def put(self, fn: Callable[[Any], None], value: Any = None) -> None:
        """Call ``fn(value)`` after this line's delay."""
        env = self.env
        at = env.clock.now + self.delay
        if not self.queue:
            # the line itself is its head's entry on the heap
            heappush(env._queue, (at, NORMAL, next(env._eid), self))  # type: ignore[misc]
        self.queue.append((at, fn, value))

    def put_at(self, at: float, fn: Callable[[Any], None], value: Any = None) -> None:
        """Call ``fn(value)`` at ``at``, an instant of the caller's own, no earlier than
        now or than the last instant on this line (so the line stays in FIFO order):
        for timers that each know their instant and are set in the order they fire."""
        queue = self.queue
        if at < self.env.clock.now or (queue and at < queue[-1][0]):
            raise ValueError(f"at={at!r}: earlier than now or than the line's last instant")
        if not queue:
            env = self.env
            heappush(env._queue, (at, NORMAL, next(env._eid), self))  # type: ignore[misc]
        queue.append((at, fn, value))

    def fire(self) -> None:
        """The head's time has come: call it, and put the next head on the heap."""
        queue = self.queue
        _, fn, value = queue.popleft()
        if queue:
            env = self.env
            heappush(env._queue, (queue[0][0], NORMAL, next(env._eid), self))  # type: ignore[misc]
        fn(value)


class TimerLane:
    """Many pending timers, each at its own instant, kept off SimPy's heap.

    For a large population of timers (one per connection, say) that would
    otherwise make every heap operation of the run deeper.  The lane keeps
    its own heap; only its earliest timer is also on SimPy's heap.  Each
    timer keeps the ``(time, priority, sequence)`` key it gets when it is
    set, so events happen in exactly the order they would if every timer
    were on SimPy's heap.
    """

    __slots__ = ("env", "heap", "_on_main")

    def __init__(self, env: Environment) -> None:
        self.env = env
        self.heap: list[tuple[float, int, int, Call]] = []
        #: sequence numbers of this lane's timers that have an entry on SimPy's heap
        self._on_main: set[int] = set()

    def call_at(self, at: float, fn: Callable[[Any], None], value: Any = None) -> None:
        """Call ``fn(value)`` at the instant :meth:`Environment.call_at` would."""
        env = self.env
        now = env.clock.now
        delay = at - now
        if delay < 0:
            raise ValueError(f"negative delay {delay}")
        entry = (now + delay, NORMAL, next(env._eid), Call(fn, value))
        heap = self.heap
        if not heap or entry < heap[0]:  # the new earliest: it goes on SimPy's heap too
            self._on_main.add(entry[2])
            heappush(env._queue, (entry[0], NORMAL, entry[2], self))  # type: ignore[misc]
        heappush(heap, entry)

    def fire(self) -> None:
        """The earliest timer's time has come: call it (its entry was just popped)."""
        heap = self.heap
        _, _, eid, call = heappop(heap)
        on_main = self._on_main
        on_main.discard(eid)
        if heap:
            head = heap[0]
            if head[2] not in on_main:
                on_main.add(head[2])
                heappush(self.env._queue, (head[0], NORMAL, head[2], self))  # type: ignore[misc]
        call.fn(call.value)


class Environment(simpy.Environment):
    """A SimPy environment that also drives one :class:`~sim.cpu.Cpu`."""

    def __init__(self, initial_time: float = 0.0) -> None:
        super().__init__(initial_time)
        #: the current time, as :attr:`now` (kept equal to it: read it, never set it)
        self.clock = Clock(float(initial_time))
        self.cpu: Cpu | None = None
        self._lines: dict[float, DelayLine] = {}

    def attach_cpu(self, cpu: Cpu) -> None:
        if self.cpu is not None:
            raise RuntimeError("an Environment drives one Cpu")
        self.cpu = cpu

    def delay_line(self, delay: float) -> DelayLine:
        """The delay line for ``delay`` (one per distinct delay, created on first use)."""
        line = self._lines.get(delay)
        if line is None:
            line = self._lines[delay] = DelayLine(self, delay)
        return line

    def timer_lane(self) -> TimerLane:
        """A new :class:`TimerLane` for a large population of timers."""
        return TimerLane(self)

    def schedule_call(self, call: Call, delay: float) -> None:
        """Put an existing :class:`Call` back on the heap (recurring callbacks reuse one)."""
        heappush(self._queue, (self._now + delay, NORMAL, next(self._eid), call))  # type: ignore[misc]

    def call_in(self, delay: float, fn: Callable[[Any], None], value: Any = None) -> Call:
        """Call ``fn(value)`` after ``delay`` seconds."""
        if delay < 0:
            raise ValueError(f"negative delay {delay}")
        call = Call(fn, value)
        heappush(self._queue, (self._now + delay, NORMAL, next(self._eid), call))  # type: ignore[misc]
        return call

    def call_recurring(
        self, delay: float, gap: Callable[[], float], fn: Callable[[Any], None], value: Any = None
    ) -> Recurring:
        """Call ``fn(value)`` after ``delay`` seconds, then again after each ``gap()`` draw
        (drawn when the previous call fires, before ``fn`` runs)."""
        if delay < 0:
            raise ValueError(f"negative delay {delay}")
        call = Recurring(fn, value, gap)
        heappush(self._queue, (self._now + delay, NORMAL, next(self._eid), call))  # type: ignore[misc]
        return call

    def call_at(self, at: float, fn: Callable[[Any], None], value: Any = None) -> Call:
        """Call ``fn(value)`` at the absolute time ``at`` (not in the past)."""
        return self.call_in(at - self._now, fn, value)

    def step(self) -> None:
        """Process the next event, as SimPy's ``step`` (also for :class:`Call` entries)."""
        event: Any
        try:
            self._now, _, _, event = heappop(self._queue)
        except IndexError:
            raise EmptySchedule() from None
        self.clock.now = self._now
        if event.__class__ is Call:
            event.fn(event.value)
            return
        if event.__class__ is Recurring:
            heappush(self._queue, (self._now + event.gap(), NORMAL, next(self._eid), event))  # type: ignore[misc]
            event.fn(event.value)
            return
        if event.__class__ is DelayLine or event.__class__ is TimerLane:
            event.fire()
            return
        callbacks, event.callbacks = event.callbacks, None
        for callback in callbacks:
            callback(event)
        if not event._ok and not hasattr(event, "_defused"):
            raise event._value

    def run(self, until: float | simpy.Event | None = None) -> Any:
        """Run until the absolute time ``until`` (a number), until the event ``until`` has
        been processed (returning its value), or with ``None`` until nothing is left to do,
        as SimPy's ``run``; the CPU's task runs between events in every case.

        Without a CPU this is SimPy's ``run``.
        """
        if self.cpu is None:
            return super().run(until)
        if until is None or isinstance(until, simpy.Event):
            return self._run_to_event(until)
        at = float(until)
        if at < self._now:
            raise ValueError(f"until={at} lies before the current time {self._now}")
        # Python's cyclic garbage collector is paused while the loop runs: it
        # would repeatedly scan the many live connection records and events,
        # and the models create no reference cycles (reference counting frees
        # everything).  Saves about 3% of a run.
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._run_until(at)
        finally:
            if collecting:
                gc.enable()

    def _run_to_event(self, until: simpy.Event | None) -> Any:
        """:meth:`run` until the event ``until`` is processed, or while anything is left."""
        if until is not None:
            if until.processed:
                return until.value
            until.callbacks.append(StopSimulation.callback)
        collecting = gc.isenabled()
        gc.disable()
        try:
            self._run_until(Infinity)
        except StopSimulation as stop:
            return stop.args[0]
        finally:
            if collecting:
                gc.enable()
        if until is not None:
            raise RuntimeError(
                f'No scheduled events left but "until" event was not triggered: {until}'
            )
        return None

    def _run_until(self, at: float) -> None:
        """The event loop of :meth:`run`, with the CPU's task advanced between events."""
        queue: list[Any] = self._queue
        cpu = self.cpu
        assert cpu is not None
        task_time = cpu.task_time
        call_cls = Call
        line_cls = DelayLine
        recurring_cls = Recurring
        lane_cls = TimerLane
        eid = self._eid
        clock = self.clock
        block = BLOCK
        # declared types (the compiled build keeps these unboxed; no cost in Python)
        t: float
        cost: float
        line: DelayLine
        recurring: Recurring
        call: Call
        while True:
            try:
                t = queue[0][0]
            except IndexError:  # no event left
                t = Infinity
                if cpu.task_end == Infinity and at == Infinity:
                    return None  # and the task sleeps: nothing will happen any more
            task_end = cpu.task_end
            if task_end <= t and task_end <= at:
                # the task's burst ends first: run it to its next yield, and
                # start its next burst when the kernel's backlog is done
                self._now = clock.now = task_end
                try:
                    item = next(cpu._task)  # type: ignore[arg-type]
                except StopIteration:
                    cpu._task = None
                    cpu.task_end = Infinity
                    continue
                if item is block:
                    cpu.task_end = Infinity
                    continue
                category, cost = item
                cpu._category = category
                task_time[category][0] += cost
                free = cpu.kernel_free_at
                cpu.task_end = (free if free > task_end else task_end) + cost
                continue
            if t > at:
                self._now = clock.now = at
                return None
            event: Any = queue[0][3]
            if type(event) is line_cls:  # DelayLine.fire, inlined
                self._now = clock.now = t
                line = event
                lq = line.queue
                _, fn, value = lq.popleft()
                if lq:  # the line's next head takes its place: one sift, not two
                    heapreplace(queue, (lq[0][0], NORMAL, next(eid), line))
                else:
                    heappop(queue)
                fn(value)
                continue
            if type(event) is recurring_cls:  # its next entry replaces this one
                self._now = clock.now = t
                recurring = event
                heapreplace(queue, (t + recurring.gap(), NORMAL, next(eid), recurring))
                recurring.fn(recurring.value)
                continue
            heappop(queue)  # the entry read above
            self._now = clock.now = t
            cls = type(event)
            if cls is call_cls:
                call = event
                call.fn(call.value)
                continue
            if cls is lane_cls:
                event.fire()
                continue
            callbacks, event.callbacks = event.callbacks, None
            for callback in callbacks:
                callback(event)
            if not event._ok and not hasattr(event, "_defused"):
                raise event._value
