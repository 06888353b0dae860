"""The simulation environment: SimPy's event loop plus the host processor.

:class:`Environment` is a ``simpy.Environment``: its clock, its event heap
with deterministic ``(time, priority, sequence)`` ordering, its events,
timeouts and processes all work as in SimPy.  For speed it adds:

* ``call_in(delay, fn, value)`` / ``call_at``: schedule a plain callback
  ``fn(value)`` on the event heap as a light :class:`Entry` rather than a
  ``Timeout`` with a callback list (packet arrivals and timers are
  callbacks, not one SimPy process per connection);
* **delay lines** (:meth:`Environment.delay_line`): a first-in first-out
  lane for events that all happen a fixed delay after they are scheduled
  (a packet crossing a LAN with a constant round-trip time, a retransmission
  after a fixed timeout).  Only a line's head is on the event heap, so the
  heap stays small however many packets are in flight;
* ``call_recurring(delay, gap, fn)``: a callback that recurs at instants
  spaced by ``gap()`` draws (a stream of arrivals), whose next instant takes
  the place of the fired one on the heap;
* **timer lanes** (:meth:`Environment.timer_lane`): a population of timers
  at arbitrary instants (one per overflowed connection) in a heap of their
  own, only the earliest on the event heap, so the event heap stays shallow;
* a :class:`Clock` (``env.clock``): the current time (``clock.now``), the
  event heap and its sequence numbers, in one small object that the
  compiled hot path reads as native fields;
* the host's processors (:class:`acceptsim.sim.cpu.Cpu`, one or more), whose tasks
  are advanced *between* events: before each event is processed, every task runs
  each burst that ends no later than that event.

The event heap holds :class:`Entry` objects (SimPy's own events wrapped in
one), ordered by ``(time, priority, sequence)`` as SimPy orders its tuples;
an entry that recurs (a delay line's head, a recurring callback) is the same
object moved to its next instant, not a new one.

Ties are deterministic: at one instant a task burst ending then completes
first (of several processors', the lowest-numbered processor's first), then heap
entries in scheduling order (SimPy's rule).  The event loop is
``Environment._run_until_multi``, which finds the earliest burst end among the
processors before every step; a processor alone (the paper's hosts) runs on
``Environment._run_until``, the same loop specialised to one task, the engine's
hottest path (bit-identical results, fewer instructions: tests/test_engine.py).
"""

from __future__ import annotations

import gc
import heapq
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, cast

import simpy
from mypy_extensions import i64
from simpy.core import EmptySchedule, Infinity, StopSimulation

from acceptsim.sim import interrupts
from acceptsim.sim.cpu import BLOCK, INF, Burst

if TYPE_CHECKING:
    from acceptsim.sim.cpu import Context, Cpu

#: SimPy's priority for ordinary events
NORMAL: Final = 1
#: a priority after every ordinary event of the same instant (the scheduler's slice check
#: at a tick, which sees what the tick's other accounting did: sim.cpu.Core)
LATE: Final = 2


# What an :class:`Entry` does when its instant comes (its ``kind``):

#: call ``fn(value)``
CALL: Final = 0
#: move on by a draw of ``owner`` (the gaps, :class:`Draws`), then call ``fn(value)``
RECURRING: Final = 1
#: the head of the :class:`DelayLine` ``owner`` is due
LINE: Final = 2
#: a timer of the :class:`TimerLane` ``owner``: call ``fn(value)``
LANE: Final = 3
#: a SimPy event (``value``): run its callbacks
EVENT: Final = 4
#: call ``fn(value)``, as :data:`CALL`, from an entry nobody else holds
#: (:meth:`Clock.post_in`): once called, it goes back to its clock's pool for the next
POSTED: Final = 5
#: the head of the :class:`ItemLine` ``owner`` is due
ITEMS: Final = 6


class Handler:
    """A callback that the compiled engine calls natively: an entry's ``fn`` may be one
    (a call through Python's calling convention, with its checks of the arguments and the
    result, costs about as much as the rest of a packet's delivery), and calling it is
    calling :meth:`handle`.  A subclass defines :meth:`handle`; :class:`Calls` wraps a
    plain function."""

    __slots__ = ()

    def handle(self, value: Any) -> None:
        """What happens: ``value`` is the value the call was scheduled with."""
        raise NotImplementedError

    def __call__(self, value: Any) -> None:
        self.handle(value)


class Calls(Handler):
    """A :class:`Handler` that calls ``fn(value)`` (a function where a handler is kept)."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[[Any], None]) -> None:
        self.fn = fn

    def handle(self, value: Any) -> None:
        self.fn(value)


class Entry:
    """A place on the event heap: the instant ``t``, SimPy's priority ``prio`` and
    the sequence number ``seq`` that orders entries of one instant and priority
    in the order they were scheduled; entries compare as SimPy's
    ``(time, priority, sequence)`` tuples do.  ``kind`` says what happens then
    (:data:`CALL`, :data:`POSTED`, :data:`RECURRING`, :data:`LINE`, :data:`ITEMS`,
    :data:`LANE`, :data:`EVENT`),
    with ``fn``, ``value`` and ``owner``.

    One class for every kind: the compiled build then checks an entry's type by
    one comparison (a subclass would cost a walk of its ancestry at every
    comparison on the heap).
    """

    __slots__ = ("t", "prio", "seq", "kind", "fn", "value", "owner", "on_main")

    def __init__(
        self,
        t: float,
        prio: int,
        seq: int,
        kind: int,
        fn: Callable[[Any], None] | None = None,
        value: Any = None,
        owner: Any = None,
    ) -> None:
        self.t = t
        self.prio = prio
        self.seq = seq
        self.kind = kind
        self.fn = fn
        self.value = value
        self.owner = owner
        #: a lane's timer that is also on the event heap
        self.on_main = False

    def __lt__(self, other: Entry) -> bool:
        if self.t != other.t:
            return self.t < other.t
        if self.prio != other.prio:
            return self.prio < other.prio
        return self.seq < other.seq


# The event heap's operations: a binary heap (the functions of heapq.heappush, heappop
# and heapreplace; the replace sifts top-down, heap_replace says why) on Entry objects.
# Compiled, these compare two entries natively: their instants as native floats, and
# only on a tie ``a.__lt__(b)`` (spelled out: the build turns ``a < b`` into Python's
# rich comparison), where heapq calls each comparison through Python (three times the
# instructions).  From source, heapq's own functions are used instead (below).  Every
# entry's key is unique (its sequence
# number), so any correct heap pops the same entries in the same order.


def heap_push(heap: list[Entry], entry: Entry) -> None:
    """Put ``entry`` on ``heap``."""
    heap.append(entry)
    _sift_down(heap, entry, len(heap) - 1)


def heap_pop(heap: list[Entry]) -> Entry:
    """Take the first entry off ``heap`` (not empty) and return it."""
    last = heap.pop()
    if not heap:
        return last
    first = heap[0]
    _sift_up(heap, last)
    return first


def heap_replace(heap: list[Entry], entry: Entry) -> Entry:
    """Take the first entry off ``heap`` (not empty) and put ``entry`` on it, in one
    sift; returns the entry taken off.

    The sift walks down from the root and stops where ``entry`` comes before the
    earlier child (a top-down sift, where :func:`heap_pop` walks to a leaf and back up
    as heapq does): an entry that replaces the first is the next instant of one that
    recurs (a delay line's next head, the next arrival), which lands near the root
    (a level or two down on the userver's heap of about 20, whose leaves are four
    levels down).  Either sift leaves a valid heap, and every key is unique, so the
    entries come off in the same order."""
    first = heap[0]
    end: i64 = len(heap)
    pos: i64 = 0
    child_pos: i64 = 1
    t = entry.t
    while child_pos < end:
        child = heap[child_pos]
        right_pos: i64 = child_pos + 1
        if right_pos < end:
            right = heap[right_pos]
            if child.t > right.t or (child.t == right.t and not child.__lt__(right)):
                child = right
                child_pos = right_pos
        if t < child.t or (t == child.t and entry.__lt__(child)):
            break  # ``entry`` comes before both children: its place
        heap[pos] = child
        pos = child_pos
        child_pos = 2 * pos + 1
    heap[pos] = entry
    return first


def _sift_down(heap: list[Entry], entry: Entry, pos: i64) -> None:
    """Place ``entry``, whose place ``pos`` is free, towards the root while it comes
    before its parent."""
    t = entry.t
    while pos > 0:
        parent_pos: i64 = (pos - 1) >> 1
        parent = heap[parent_pos]
        # (the instants decide nearly every comparison: read natively, before the call)
        if t > parent.t or (t == parent.t and not entry.__lt__(parent)):
            break
        heap[pos] = parent
        pos = parent_pos
    heap[pos] = entry


def _sift_up(heap: list[Entry], entry: Entry) -> None:
    """Place ``entry`` into the heap whose root place is free: walk down to a leaf,
    moving the earlier child up at every level, then sift ``entry`` up from there
    (heapq's ``_siftup``)."""
    end: i64 = len(heap)
    pos: i64 = 0
    child_pos: i64 = 1
    while child_pos < end:
        child = heap[child_pos]
        right_pos: i64 = child_pos + 1
        if right_pos < end:
            right = heap[right_pos]
            if child.t > right.t or (child.t == right.t and not child.__lt__(right)):
                child = right
                child_pos = right_pos
        heap[pos] = child
        pos = child_pos
        child_pos = 2 * pos + 1
    _sift_down(heap, entry, pos)


#: the functions above as written, whichever path runs (the tests compare them with
#: heapq's)
SIFTED_HEAP: Final = (heap_push, heap_pop, heap_replace)

if __file__.endswith(".py"):  # from source: heapq's C functions, the same order, faster
    heap_push = heapq.heappush  # type: ignore[assignment]  # noqa: F811
    heap_pop = heapq.heappop  # type: ignore[assignment]  # noqa: F811
    heap_replace = heapq.heapreplace  # type: ignore[assignment]  # noqa: F811


class Draws:
    """A stream of numbers read one at a time by :meth:`draw`, from blocks that
    ``refill()`` gives (a list each; :meth:`acceptsim.sim.streams.Streams.draws` makes
    them from a run's random stream).  A native class: the compiled models and a
    recurring call's gaps (:meth:`Environment.call_recurring`) read a draw without a
    call through Python's calling convention; calling the object gives a draw too."""

    __slots__ = ("_refill", "_block", "_next")

    def __init__(self, refill: Callable[[], list[float]]) -> None:
        self._refill = refill
        self._block: list[float] = []
        self._next: i64 = 0

    def draw(self) -> float:
        """The next number."""
        i = self._next
        if i == len(self._block):  # the block is used up: the next one
            self._block = self._refill()
            i = 0
        self._next = i + 1
        return self._block[i]

    def __call__(self) -> float:
        return self.draw()


class DrawsOf(Draws):
    """:class:`Draws` whose every number is a call of ``fn()`` (a constant gap, a gap of
    a time-varying rate)."""

    __slots__ = ("_fn",)

    def __init__(self, fn: Callable[[], float]) -> None:
        super().__init__(list)
        self._fn = fn

    def draw(self) -> float:
        return self._fn()


#: places a delay line's ring starts with (a power of two; it doubles when full)
RING_START: Final = 8

#: entries a clock's pool starts with: a list that empties and fills again frees and
#: allocates its storage each time (Python shrinks a list's storage when it falls below
#: half), and the pool of a run below saturation holds only a few
POOL_START: Final = 32


class Clock:
    """The simulated time and the event heap, in one small object of their own.

    ``now`` is the current time (kept equal to ``env.now``: read it, never set
    it); ``heap`` holds the scheduled :class:`Entry` objects; ``seq`` is the next
    sequence number.  The compiled models read these as native fields, where
    attributes of the SimPy environment are look-ups in a dictionary.
    """

    __slots__ = ("now", "heap", "seq", "pool")

    def __init__(self, now: float) -> None:
        self.now = now
        self.heap: list[Entry] = []
        self.seq = 0
        #: entries of :data:`POSTED` calls and of delay lines' calls already made, for the
        #: next ones (an entry used again costs less than one made and freed, and these
        #: calls are a run's commonest); it starts with :data:`POOL_START` of them
        self.pool: list[Entry] = [Entry(0.0, NORMAL, 0, POSTED) for _ in range(POOL_START)]

    def push(self, entry: Entry, at: float) -> None:
        """Put ``entry`` on the heap at instant ``at`` with the next sequence number."""
        entry.t = at
        entry.seq = self.seq
        self.seq += 1
        heap_push(self.heap, entry)

    def call_in(self, delay: float, fn: Callable[[Any], None], value: Any = None) -> Entry:
        """Call ``fn(value)`` after ``delay`` seconds; returns the :data:`CALL` entry."""
        if delay < 0:
            raise ValueError(f"negative delay {delay}")
        call = Entry(self.now + delay, NORMAL, self.seq, CALL, fn, value)
        self.seq += 1
        heap_push(self.heap, call)
        return call

    def call_at(self, at: float, fn: Callable[[Any], None], value: Any = None) -> Entry:
        """Call ``fn(value)`` at the absolute time ``at`` (not in the past)."""
        return self.call_in(at - self.now, fn, value)

    def post_in(self, delay: float, fn: Callable[[Any], None], value: Any = None) -> None:
        """Call ``fn(value)`` after ``delay`` seconds, as :meth:`call_in` does (the same
        instant and order), for a call nobody will move or cancel: its entry is not
        returned, and is used again once the call is made."""
        if delay < 0:
            raise ValueError(f"negative delay {delay}")
        pool = self.pool
        if pool:
            call = pool.pop()
            call.t = self.now + delay
            call.seq = self.seq
            call.fn = fn
            call.value = value
        else:
            call = Entry(self.now + delay, NORMAL, self.seq, POSTED, fn, value)
        self.seq += 1
        heap_push(self.heap, call)

    def post_at(self, at: float, fn: Callable[[Any], None], value: Any = None) -> None:
        """:meth:`post_in` at the absolute time ``at`` (not in the past)."""
        self.post_in(at - self.now, fn, value)

    def pending(self, at: float, fn: Callable[[Any], None], value: Any) -> Entry:
        """An entry from the pool (or a new one) holding the call ``fn(value)`` at ``at``,
        for a delay line to keep (not on the heap: its sequence number is not set)."""
        pool = self.pool
        if pool:
            item = pool.pop()
            item.t = at
            item.fn = fn
            item.value = value
            return item
        return Entry(at, NORMAL, 0, POSTED, fn, value)


class DelayLine:
    """Events that each happen ``delay`` seconds after being put, in FIFO order.

    Only the line's head is on the event heap (one :data:`LINE` entry, moved to
    the next head's instant when the head fires), so however many packets are
    in flight on a line, the heap stays small.  Each pending call is held in an
    :class:`Entry` from the clock's pool (its instant, ``fn`` and ``value``), which
    goes back to the pool when the call is made: a call on a line allocates
    nothing once the pool holds as many entries as are ever pending at once.

    The pending entries sit in a ring: a list whose length is a power of two, the
    first at ``start``, ``count`` of them (the compiled build reads and writes a list's
    places natively, where each operation of a deque is a call through Python).
    """

    __slots__ = ("clock", "delay", "ring", "start", "count", "entry")

    def __init__(self, env: Environment, delay: float) -> None:
        if not delay >= 0:
            raise ValueError(f"delay={delay!r}: must be >= 0")
        self.clock = env.clock
        self.delay = delay
        #: the line's place on the event heap (while it holds anything)
        self.entry = Entry(0.0, NORMAL, 0, LINE, None, None, self)
        self.ring: list[Entry] = [self.entry] * RING_START  # (places not in use: ``entry``)
        self.start: i64 = 0
        self.count: i64 = 0
        env._delay_lines.append(self)  # for Environment.discard

    def __len__(self) -> int:
        return self.count

    def first(self) -> Entry:
        """The pending call that comes next (the line holds one at least)."""
        return self.ring[self.start]

    def clear(self) -> None:
        """Drop every pending call."""
        self.ring = [self.entry] * RING_START
        self.start = 0
        self.count = 0

    def _add(self, item: Entry) -> None:
        ring = self.ring
        size: i64 = len(ring)
        if self.count == size:  # full: twice the places, the calls in order from 0
            first = self.start
            self.ring = ring = ring[first:] + ring[:first] + [self.entry] * size
            self.start = 0
            size = 2 * size
        ring[(self.start + self.count) & (size - 1)] = item
        self.count += 1

    def put(self, fn: Callable[[Any], None], value: Any = None) -> None:
        """Call ``fn(value)`` after this line's delay."""
        clock = self.clock
        at = clock.now + self.delay
        if not self.count:
            clock.push(self.entry, at)
        self._add(clock.pending(at, fn, value))

    def put_at(self, at: float, fn: Callable[[Any], None], value: Any = None) -> None:
        """Call ``fn(value)`` at ``at``, an instant of the caller's own, no earlier than
        now or than the last instant on this line (so the line stays in FIFO order):
        for timers that each know their instant and are set in the order they fire."""
        clock = self.clock
        count = self.count
        ring = self.ring
        if at < clock.now or (
            count and at < ring[(self.start + count - 1) & (len(ring) - 1)].t
        ):
            raise ValueError(f"at={at!r}: earlier than now or than the line's last instant")
        if not count:
            clock.push(self.entry, at)
        self._add(clock.pending(at, fn, value))

    def fire(self) -> None:
        """The head's time has come (the line's entry is at the top of the heap): call
        it, and move the entry to the next head's instant, or off the heap."""
        clock = self.clock
        ring = self.ring
        first = self.start
        head = ring[first]
        # the place holds the line's own entry again, not the call just taken: the put that
        # fills the place next then lets go of an entry it has at hand, where the call's
        # entry, back in the pool and used again since, is most likely out of the cache by
        # then (the long lines of retransmitted SYNs: 6% of a run past saturation)
        ring[first] = self.entry
        self.start = (first + 1) & (len(ring) - 1)
        self.count -= 1
        if self.count:  # the line's next head takes its place: one sift, not two
            entry = self.entry
            entry.t = ring[self.start].t
            entry.seq = clock.seq
            clock.seq += 1
            heap_replace(clock.heap, entry)
        else:
            heap_pop(clock.heap)
        fn = head.fn
        assert fn is not None
        value = head.value
        head.fn = None
        head.value = None
        clock.pool.append(head)  # first: the call may put again
        if isinstance(fn, Handler):
            fn.handle(value)
        else:
            fn(value)


class Timed:
    """An item an :class:`ItemLine` holds: ``due`` is the instant the line hands it on
    (the line's to set, while the item is on it; an item is on one line at a time)."""

    __slots__ = ("due",)

    def __init__(self) -> None:
        self.due = 0.0


class ItemLine:
    """A delay line, as :class:`DelayLine` is (FIFO, its head alone on the event heap, the
    same instants and order of events), whose calls all go to one ``handler`` with an
    item that carries its own instant (:class:`Timed`), instead of an entry each.

    For the long lines of a run past saturation (the clients' retransmitted SYNs: thousands
    pending, each a second or more): the head's next instant is read from the item that
    the call after it reads anyway, so a call costs one item out of the cache, where a
    :class:`DelayLine`'s costs its entry and then the value the entry holds.
    """

    __slots__ = ("clock", "handler", "ring", "start", "count", "entry", "blank")

    def __init__(self, env: Environment, handler: Handler) -> None:
        self.clock = env.clock
        self.handler = handler
        #: the line's place on the event heap (while it holds anything)
        self.entry = Entry(0.0, NORMAL, 0, ITEMS, None, None, self)
        #: what the ring's places not in use hold (as a :class:`DelayLine`'s hold its entry)
        self.blank = Timed()
        self.ring: list[Timed] = [self.blank] * RING_START
        self.start: i64 = 0
        self.count: i64 = 0
        env._item_lines.append(self)  # for Environment.discard

    def __len__(self) -> int:
        return self.count

    def clear(self) -> None:
        """Drop every pending item."""
        self.ring = [self.blank] * RING_START
        self.start = 0
        self.count = 0

    def put_at(self, at: float, item: Timed) -> None:
        """Hand ``item`` to the handler at ``at``, no earlier than now or than the line's
        last instant (:meth:`DelayLine.put_at`)."""
        clock = self.clock
        count = self.count
        ring = self.ring
        size: i64 = len(ring)
        if at < clock.now or (count and at < ring[(self.start + count - 1) & (size - 1)].due):
            raise ValueError(f"at={at!r}: earlier than now or than the line's last instant")
        if not count:
            clock.push(self.entry, at)
        item.due = at
        if count == size:  # full: twice the places, the items in order from 0
            first = self.start
            self.ring = ring = ring[first:] + ring[:first] + [self.blank] * size
            self.start = 0
            size = 2 * size
        ring[(self.start + count) & (size - 1)] = item
        self.count = count + 1

    def fire(self) -> None:
        """The head's time has come: move the line's entry to the next head's instant (or
        off the heap), and hand the head to the handler."""
        clock = self.clock
        ring = self.ring
        first = self.start
        head = ring[first]
        ring[first] = self.blank
        self.start = (first + 1) & (len(ring) - 1)
        self.count -= 1
        if self.count:
            entry = self.entry
            entry.t = ring[self.start].due
            entry.seq = clock.seq
            clock.seq += 1
            heap_replace(clock.heap, entry)
        else:
            heap_pop(clock.heap)
        self.handler.handle(head)


class TimerLane:
    """Many pending timers, each at its own instant, kept off the event heap.

    For a large population of timers (one per connection, say) that would
    otherwise make every heap operation of the run deeper.  The lane keeps its
    own heap of :data:`LANE` entries; its earliest timer is always also on the
    event heap (and the timers that were earliest when set stay there too).
    Each timer keeps the ``(time, priority, sequence)`` key it gets when it is
    set, so events happen in exactly the order they would if every timer were
    on the event heap: the lane's timers on the event heap are always the
    earliest of the lane, so the one that fires there is the lane's head.
    """

    __slots__ = ("clock", "heap")

    def __init__(self, env: Environment) -> None:
        self.clock = env.clock
        self.heap: list[Entry] = []
        env._timer_lanes.append(self)  # for Environment.discard

    def call_at(self, at: float, fn: Callable[[Any], None], value: Any = None) -> None:
        """Call ``fn(value)`` at the instant :meth:`Environment.call_at` would."""
        clock = self.clock
        now = clock.now
        delay = at - now
        if delay < 0:
            raise ValueError(f"negative delay {delay}")
        self._add(Entry(now + delay, NORMAL, clock.seq, LANE, fn, value, self))

    def call_late_at(self, at: float, fn: Callable[[Any], None], value: Any = None) -> None:
        """Call ``fn(value)`` at the instant and in the order
        :meth:`Environment.call_late_at` would (after every ordinary event of ``at``)."""
        clock = self.clock
        if at < clock.now:
            raise ValueError(f"at={at} lies before the current time {clock.now}")
        self._add(Entry(at, LATE, clock.seq, LANE, fn, value, self))

    def _add(self, timer: Entry) -> None:
        """Take ``timer`` (its key set from the clock's next sequence number) into the lane,
        and onto the event heap too if it is the lane's new earliest."""
        clock = self.clock
        clock.seq += 1
        heap = self.heap
        if not heap or timer.__lt__(heap[0]):  # the new earliest: it goes on the event heap too
            timer.on_main = True
            heap_push(clock.heap, timer)
        heap_push(heap, timer)

    def fire(self) -> None:
        """The earliest timer's time has come (its entry was just popped from the event
        heap): take it off the lane, put the lane's next head on the event heap, call it."""
        heap = self.heap
        timer = heap_pop(heap)
        timer.on_main = False
        if heap:
            head = heap[0]
            if not head.on_main:
                head.on_main = True
                heap_push(self.clock.heap, head)
        fn = timer.fn
        assert fn is not None
        if isinstance(fn, Handler):
            fn.handle(timer.value)
        else:
            fn(timer.value)


#: run every host on the general loop (:meth:`Environment._run_until_multi`), one CPU
#: too: set by :func:`general_loop_only`, or by ``ACCEPTSIM_GENERAL_LOOP=1`` in the
#: environment (``tools/instructions.py --general-loop`` counts both loops)
_GENERAL_LOOP_ONLY: list[bool] = [os.environ.get("ACCEPTSIM_GENERAL_LOOP", "") == "1"]


def general_loop_only(on: bool) -> None:
    """Run one-CPU hosts on the general loop as well (``on``), or on their own again."""
    _GENERAL_LOOP_ONLY[0] = on


class Environment(simpy.Environment):
    """A SimPy environment that also drives the host's processors
    (:class:`~acceptsim.sim.cpu.Cpu`, numbered in the order they were attached)."""

    def __init__(self, initial_time: float = 0.0) -> None:
        #: the current time and the event heap (:class:`Clock`)
        self.clock = Clock(float(initial_time))
        super().__init__(initial_time)
        # the clock holds the time, the heap and the sequence numbers: SimPy's own
        # fields would only go stale.  These three names are the one use of SimPy's
        # private interface (pinned in pyproject.toml; tests/test_engine.py checks them)
        del self._now, self._queue, self._eid
        #: the first processor (the only one on a uniprocessor host), or None
        self.cpu: Cpu | None = None
        #: every processor, in the order attached (its index is its number)
        self.cpus: list[Cpu] = []
        self._lines: dict[float, DelayLine] = {}
        #: every delay line, item line and timer lane made for this environment
        #: (:meth:`discard`)
        self._delay_lines: list[DelayLine] = []
        self._item_lines: list[ItemLine] = []
        self._timer_lanes: list[TimerLane] = []

    @property
    def now(self) -> float:
        """The current simulated time."""
        return self.clock.now

    def attach_cpu(self, cpu: Cpu) -> int:
        """Drive ``cpu`` too; returns its number (0 for the first)."""
        if self.cpu is None:
            self.cpu = cpu
        self.cpus.append(cpu)
        return len(self.cpus) - 1

    def discard(self) -> None:
        """Drop every pending event: the heap, and what waits on every delay line and timer
        lane.  For a run that is over: the environment cannot go on from here.

        The pending events hold the model's objects (connections, the bound methods they
        call), and the model's objects hold the environment, so after a run all of it is
        one large reference cycle that only Python's cyclic garbage collector can free,
        by scanning every object in it.  Dropped here, nearly all of it is freed at once
        by reference counting."""
        self.clock.heap.clear()
        self.clock.pool.clear()
        for line in self._delay_lines:
            line.clear()
        for items in self._item_lines:
            items.clear()
        for lane in self._timer_lanes:
            lane.heap.clear()

    def delay_line(self, delay: float) -> DelayLine:
        """The delay line for ``delay`` (one per distinct delay, created on first use)."""
        line = self._lines.get(delay)
        if line is None:
            line = self._lines[delay] = DelayLine(self, delay)
        return line

    def timer_lane(self) -> TimerLane:
        """A new :class:`TimerLane` for a large population of timers."""
        return TimerLane(self)

    def schedule(self, event: simpy.Event, priority: int = NORMAL, delay: float = 0) -> None:
        """Schedule a SimPy ``event`` with ``priority`` after ``delay``, as SimPy does."""
        clock = self.clock
        heap_push(clock.heap, Entry(clock.now + delay, priority, clock.seq, EVENT, None, event))
        clock.seq += 1

    def peek(self) -> float:
        """The time of the next scheduled event (infinity if there is none)."""
        heap = self.clock.heap
        return heap[0].t if heap else Infinity

    def schedule_call(self, call: Entry, delay: float) -> None:
        """Put a :data:`CALL` entry that has fired back on the heap (recurring callbacks
        reuse one)."""
        clock = self.clock
        clock.push(call, clock.now + delay)

    def call_in(self, delay: float, fn: Callable[[Any], None], value: Any = None) -> Entry:
        """Call ``fn(value)`` after ``delay`` seconds."""
        return self.clock.call_in(delay, fn, value)

    def call_recurring(
        self, delay: float, gap: Draws | Callable[[], float], fn: Callable[[Any], None],
        value: Any = None,
    ) -> Entry:
        """Call ``fn(value)`` after ``delay`` seconds, then again after each ``gap()`` draw
        (drawn when the previous call fires, before ``fn`` runs; a :class:`Draws` is read
        natively)."""
        if delay < 0:
            raise ValueError(f"negative delay {delay}")
        clock = self.clock
        gaps = gap if isinstance(gap, Draws) else DrawsOf(gap)
        call = Entry(0.0, NORMAL, 0, RECURRING, fn, value, gaps)
        clock.push(call, clock.now + delay)
        return call

    def call_at(self, at: float, fn: Callable[[Any], None], value: Any = None) -> Entry:
        """Call ``fn(value)`` at the absolute time ``at`` (not in the past)."""
        return self.clock.call_at(at, fn, value)

    def call_late_at(self, at: float, fn: Callable[[Any], None], value: Any = None) -> Entry:
        """Call ``fn(value)`` at the absolute time ``at`` (not in the past), after every
        ordinary event of that instant (priority :data:`LATE`)."""
        clock = self.clock
        if at < clock.now:
            raise ValueError(f"at={at} lies before the current time {clock.now}")
        call = Entry(at, LATE, clock.seq, CALL, fn, value)
        clock.seq += 1
        heap_push(clock.heap, call)
        return call

    def step(self) -> None:
        """Process the next event, as SimPy's ``step`` (also for the engine's own
        entries)."""
        clock = self.clock
        heap = clock.heap
        if not heap:
            raise EmptySchedule()
        entry = heap[0]
        clock.now = entry.t
        fire(clock, entry)

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
        if at < self.clock.now:
            raise ValueError(f"until={at} lies before the current time {self.clock.now}")
        # Python's cyclic garbage collector is paused while the loop runs: it
        # would repeatedly scan the many live connection records and events,
        # and the models create no reference cycles (reference counting frees
        # everything).  Saves about 3% of a run.
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._loop(at)
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
            self._loop(Infinity)
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

    def _loop(self, at: float) -> None:
        """The event loop for this host's processors, to ``at``: the general loop, or on
        one processor of its own the one-CPU loop, which gives bit-identical results
        (tests/test_engine.py) in fewer instructions per event."""
        if _GENERAL_LOOP_ONLY[0] or len(self.cpus) > 1 or self.cpus[0].core is not None:
            self._run_until_multi(at)
        else:
            self._run_until(at)

    def _run_until_multi(self, at: float) -> None:
        """The event loop of :meth:`run` on a host of several processors: before every
        event, the burst that ends first on any of them (the lowest-numbered on a tie)
        completes, and its task runs to its next yield (:func:`step_task`)."""
        clock = self.clock
        heap = clock.heap
        cpus = self.cpus
        countdown: i64 = interrupts.EVENTS_PER_WINDOW
        t: float
        task_end: float
        entry: Entry
        while True:
            if heap:
                entry = heap[0]
                t = entry.t
            else:
                t = INF
            # the processor whose burst ends first (the lowest-numbered on a tie), by index:
            # compiled, ``cpus[i].task_end`` reads each processor without taking a
            # reference to it (a for loop over the list takes and drops one each)
            first: Cpu | None = None
            task_end = INF
            n: i64 = len(cpus)
            best: i64 = -1
            i: i64 = 0
            while i < n:
                ends = cpus[i].task_end
                if ends < task_end:
                    task_end = ends
                    best = i
                i += 1
            if best >= 0:
                first = cpus[best]
            if first is None and t == INF and at == INF:
                return None  # no event left and every task sleeps
            if first is not None and task_end <= t and task_end <= at:
                clock.now = task_end
                step_task(first, task_end)
                if first.task_end == INF:  # it blocked or ended: a task waiting for its
                    core = first.core  # processor, if any, gets it
                    if core is not None:
                        core.released(cast("Context", first))
                continue
            if t > at:
                clock.now = at
                return None
            clock.now = t
            countdown -= 1
            if countdown == 0:
                countdown = interrupts.EVENTS_PER_WINDOW
                interrupts.window()
            fire(clock, entry)

    def _run_until(self, at: float) -> None:
        """The event loop of :meth:`run` on a uniprocessor host, with the CPU's task
        advanced between events (:func:`step_task`, inline: the engine's hottest path)."""
        clock = self.clock
        heap = clock.heap
        cpu = self.cpu
        assert cpu is not None
        block = BLOCK
        # events left before the next window for signals (sim.interrupts)
        countdown: i64 = interrupts.EVENTS_PER_WINDOW
        # declared types (the compiled build keeps these unboxed; no cost in Python)
        t: float
        cost: float
        entry: Entry
        while True:
            if heap:
                entry = heap[0]
                t = entry.t
            else:  # no event left
                t = INF
                if cpu.task_end == INF and at == INF:
                    return None  # and the task sleeps: nothing will happen any more
            task_end = cpu.task_end
            if task_end <= t and task_end <= at:
                # the task's burst ends first: run it to its next yield, and
                # start its next burst when the kernel's backlog is done
                clock.now = task_end
                task = cpu._task
                assert task is not None  # a burst is under way
                # one step of the task: a for loop that stops at the first item is how
                # the compiled build calls the generator's own next-slot directly (a
                # call of next() or of __next__ goes through the interpreter's calls)
                for item in task:  # noqa: B007 (the item is used after the loop)
                    break
                else:  # the task has ended
                    cpu._task = None
                    cpu.task_end = INF
                    continue
                if item is block:
                    cpu.task_end = INF
                    cpu.blocked_at = task_end
                    continue
                # a burst is a Burst, or a (category, seconds) tuple: declared so, the
                # compiled build checks and unpacks it natively
                if isinstance(item, Burst):
                    category = item.category
                    cost = item.cost
                else:
                    category, cost = cast("tuple[str, float]", item)
                cpu._category = category
                cpu.account_of(category).used += cost
                free = cpu.kernel_free_at
                cpu.task_end = (free if free > task_end else task_end) + cost
                continue
            if t > at:
                clock.now = at
                return None
            clock.now = t
            countdown -= 1
            if countdown == 0:
                countdown = interrupts.EVENTS_PER_WINDOW
                interrupts.window()
            fire(clock, entry)


def step_task(cpu: Cpu, task_end: float) -> None:
    """The burst of ``cpu``'s task that ends at ``task_end`` (now) is done: run the task
    to its next yield and start its next burst when the kernel's backlog is done (what
    ``Environment._run_until`` does inline)."""
    task = cpu._task
    assert task is not None  # a burst is under way
    for item in task:  # noqa: B007 (one step of the generator, as in _run_until)
        break
    else:  # the task has ended
        cpu._task = None
        cpu.task_end = INF
        return
    if item is BLOCK:
        cpu.task_end = INF
        cpu.blocked_at = task_end
        return
    if isinstance(item, Burst):
        category = item.category
        cost = item.cost
    else:
        category, cost = cast("tuple[str, float]", item)
    cpu._category = category
    cpu.account_of(category).used += cost
    free = cpu.kernel_free_at
    cpu.task_end = (free if free > task_end else task_end) + cost


def fire(clock: Clock, entry: Entry) -> None:
    """Process ``entry``, the top of ``clock``'s heap, whose instant is now: take it off
    the heap (or move it to its next instant) and do what its kind says."""
    heap = clock.heap
    kind = entry.kind
    if kind == POSTED:  # the call, its entry back in the pool first (the call may post)
        heap_pop(heap)
        posted = entry.fn
        assert posted is not None
        value = entry.value
        entry.fn = None
        entry.value = None
        clock.pool.append(entry)
        if isinstance(posted, Handler):
            posted.handle(value)
        else:
            posted(value)
        return
    if kind == LINE:
        line: DelayLine = entry.owner
        line.fire()
        return
    if kind == ITEMS:
        items: ItemLine = entry.owner
        items.fire()
        return
    if kind == EVENT:
        heap_pop(heap)
        event: Any = entry.value
        callbacks, event.callbacks = event.callbacks, None
        for callback in callbacks:
            callback(event)
        if not event.ok and not event.defused:  # a failure nobody handled
            raise event.value
        return
    if kind == LANE:
        heap_pop(heap)
        lane: TimerLane = entry.owner
        lane.fire()
        return
    if kind == RECURRING:  # its next instant replaces this one
        gaps: Draws = entry.owner
        entry.t = entry.t + gaps.draw()
        entry.seq = clock.seq
        clock.seq += 1
        heap_replace(heap, entry)
    else:
        heap_pop(heap)
    fn = entry.fn
    assert fn is not None
    if isinstance(fn, Handler):
        fn.handle(entry.value)
    else:
        fn(entry.value)
