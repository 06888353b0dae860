"""The engine: the CPU shares time between interrupt work and one task exactly."""

from __future__ import annotations

import heapq
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acceptsim.models.connection import Connection
from acceptsim.models.experiment import RunConfig, simulate
from acceptsim.sim import BLOCK, Cpu, Environment, interrupts
from acceptsim.sim.cpu import Burst
from acceptsim.sim.engine import (
    POSTED,
    SIFTED_HEAP,
    Calls,
    DelayLine,
    Entry,
    ItemLine,
)
from acceptsim.sim.streams import BLOCK_SIZE, Streams


def test_burst_ends_after_its_cost_when_nothing_interrupts() -> None:
    env = Environment()
    cpu = Cpu(env, ["work"])
    ends = []

    def task():
        yield "work", 0.25
        ends.append(env.now)
        yield "work", 0.5
        ends.append(env.now)

    cpu.start(task())
    env.run(until=10)
    assert ends == [0.25, 0.75]
    assert cpu.usage()["work"] == pytest.approx(0.75)


def test_kernel_work_preempts_a_burst_and_delays_it_by_its_cost() -> None:
    env = Environment()
    cpu = Cpu(env, ["work"])
    ends = []

    def task():
        yield "work", 1.0
        ends.append(env.now)

    cpu.start(task())
    for at in (0.2, 0.4, 0.4):
        env.call_at(at, lambda _: cpu.interrupt(0.1))
    env.run(until=10)
    assert ends == [pytest.approx(1.3)]
    used = cpu.usage()
    assert used["kernel"] == pytest.approx(0.3)
    assert used["work"] == pytest.approx(1.0)


def test_a_woken_task_waits_for_the_kernel_backlog() -> None:
    env = Environment()
    cpu = Cpu(env, ["work"])
    log = []

    def task():
        yield BLOCK
        log.append(("woke", env.now))
        yield "work", 0.5
        log.append(("done", env.now))

    cpu.start(task())

    def packet(_):
        cpu.interrupt(0.25)
        cpu.wake()

    env.call_at(1.0, packet)
    env.run(until=5)
    assert log == [("woke", 1.25), ("done", 1.75)]


def test_usage_partitions_time_at_any_instant() -> None:
    env = Environment()
    cpu = Cpu(env, ["a", "b"])

    def task():
        while True:
            yield "a", 0.3
            yield "b", 0.2

    cpu.start(task())
    for i in range(10):
        env.call_at(0.05 + i * 0.17, lambda _: cpu.interrupt(0.04))
    seen = []
    env.call_at(1.234, lambda _: seen.append(cpu.usage()))
    env.run(until=3)
    assert sum(seen[0].values()) == pytest.approx(1.234)
    assert sum(cpu.usage().values()) == pytest.approx(3.0)


def test_events_at_the_same_instant_run_in_scheduling_order() -> None:
    env = Environment()
    order = []
    for i in range(5):
        env.call_at(1.0, order.append, i)
    env.run(until=2)
    assert order == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("with_cpu", [False, True])
def test_a_timer_lane_runs_timers_in_the_order_call_at_would(with_cpu: bool) -> None:
    """Timers set out of time order, with ties, interleaved with other events and
    set from callbacks, some of them late (after every ordinary event of their instant:
    ``call_late_at``): the lane gives the order of plain call_at and call_late_at
    exactly."""
    import random

    rng = random.Random(7)
    plan = [(rng.choice([0.5, 1.0, 1.5, rng.random() * 3]), rng.random() < 0.5,
             rng.random() < 0.3) for _ in range(300)]

    def order(use_lane: bool) -> list[tuple[float, int]]:
        env = Environment()
        if with_cpu:
            cpu = Cpu(env, ["work"])

            def task():  # type: ignore[no-untyped-def]
                while True:
                    yield "work", 0.01

            cpu.start(task())
        lane = env.timer_lane()
        seen: list[tuple[float, int]] = []

        def set_timer(at: float, on_lane: bool, late: bool, i: int) -> None:
            if late:
                (lane.call_late_at if on_lane and use_lane else env.call_late_at)(at, fire, i)
            else:
                (lane.call_at if on_lane and use_lane else env.call_at)(at, fire, i)

        def fire(i: int) -> None:
            seen.append((env.now, i))
            if i % 3 == 0:  # a timer that sets another one, maybe earlier than the lane's head
                at, _, late = plan[(i * 7) % len(plan)]
                set_timer(env.now + at / 10, True, late, 1000 + i)

        for i, (at, on_lane, late) in enumerate(plan):
            set_timer(at, on_lane, late, i)
        env.run(until=5)
        return seen

    expected = order(use_lane=False)
    assert len(expected) > 300
    assert order(use_lane=True) == expected


def test_the_loop_pauses_the_cyclic_collector_and_restores_it() -> None:
    import gc

    env = Environment()
    Cpu(env, ["work"])
    seen = []
    env.call_at(1.0, lambda _: seen.append(gc.isenabled()))
    assert gc.isenabled()
    env.run(until=2)
    assert seen == [False]
    assert gc.isenabled()


def test_a_finished_run_leaves_no_large_cycle_for_the_collector() -> None:
    """simulate() drops the run's pending events and connections (Host.discard): they are
    freed by reference counting, and the cyclic collector, which stays off for the whole
    run, finds only the model's own small cycle, not the thousands of connections still
    in flight at the end of an overloaded run."""
    import gc

    config = RunConfig(server="userver", rate_per_s=24000.0, duration_s=1.0, warmup_s=0.2)
    seen: list[str] = []

    def collection(phase: str, info: dict) -> None:
        seen.append(phase)

    gc.collect()
    gc.callbacks.append(collection)
    try:
        record = simulate(config, accept_limit=10)
    finally:
        gc.callbacks.remove(collection)
    assert seen == []  # no collection ran during the run
    assert gc.isenabled()
    # thousands of dropped SYNs were waiting for their retransmission at the end (without
    # Host.discard the collector frees about 9,500 objects here)
    assert record["drops_per_s"]["total"] > 2000
    assert gc.collect() < 2000

def _keep_a_cpu_busy(env: Environment) -> None:
    """A CPU on ``env`` whose task works in 30-ms bursts for ever (the one-CPU loop)."""
    cpu = Cpu(env, ["work"])

    def task():  # type: ignore[no-untyped-def]
        while True:
            yield "work", 0.03

    cpu.start(task())


@pytest.mark.parametrize("with_cpu", [False, True])
def test_recurring_calls_and_delay_lines_keep_the_order_of_plain_calls(with_cpu: bool) -> None:
    """A recurring callback and delay lines (whose heads take their fired
    entries' places on the heap) give exactly the order that self-rescheduling
    plain calls would, ties with other events included, in the CPU's event
    loop and in SimPy's step()."""
    import random

    def order(fast: bool) -> list[tuple[float, str, int]]:
        rng = random.Random(11)
        gaps = iter([rng.choice([0.25, 0.5, rng.random()]) for _ in range(400)])
        env = Environment()
        if with_cpu:
            _keep_a_cpu_busy(env)
        seen: list[tuple[float, str, int]] = []
        line = env.delay_line(0.25)
        count = iter(range(10**6))

        def echoed(i: int) -> None:
            seen.append((env.now, "echo", i))

        def arrive(_: object) -> None:
            if not fast:
                env.call_in(next(gaps), arrive)
            i = next(count)
            seen.append((env.now, "arrive", i))
            if fast:
                line.put(echoed, i)
            else:
                env.call_in(0.25, echoed, i)
            if i % 4 == 0:
                env.call_in(0.5, seen.append, (env.now + 0.5, "tie", i))

        first = 0.5
        if fast:
            env.call_recurring(first, lambda: next(gaps), arrive)
        else:
            env.call_in(first, arrive)
        for k in range(20):
            env.call_at(0.25 * k, seen.append, (0.25 * k, "fixed", k))
        env.run(until=40)
        return seen

    expected = order(fast=False)
    assert len(expected) > 200
    assert order(fast=True) == expected


@pytest.mark.parametrize("with_cpu", [False, True])
def test_posted_calls_keep_the_order_of_plain_calls_and_reuse_their_entries(
    with_cpu: bool,
) -> None:
    """Calls posted (``Clock.post_in``, ``post_at``) happen at the instants and in the
    order that plain calls scheduled at the same moments would, ties included, and their
    entries are used again: the pool never holds more than were pending at once."""
    import random

    def order(posted: bool) -> tuple[list[tuple[float, str, int]], int, int]:
        rng = random.Random(5)
        env = Environment()
        clock = env.clock
        if with_cpu:
            _keep_a_cpu_busy(env)
        seen: list[tuple[float, str, int]] = []
        count = iter(range(10**6))
        made = 0
        peak = 0  # the most posted calls pending at once
        held: list[Entry] = []  # every posted entry seen pending (held: no id is reused)

        def hop(i: int) -> None:
            nonlocal made, peak
            pending = [e for e in clock.heap if e.kind == POSTED]
            peak = max(peak, len(pending))
            held.extend(pending)
            seen.append((env.now, "hop", i))
            for _ in range(2 if i % 3 == 0 and made < 400 else 1):
                made += 1
                delay = rng.choice([0.0, 0.25, 0.5, rng.random()])
                if posted and i % 2:
                    clock.post_at(env.now + delay, hop, next(count))
                elif posted:
                    clock.post_in(delay, hop, next(count))
                else:
                    env.call_in(delay, hop, next(count))

        for k in range(5):
            env.call_at(0.5 * k, hop, next(count))
        env.run(until=60)
        return seen, len({id(e) for e in held}), peak

    expected, _, _ = order(posted=False)
    got, entries, peak = order(posted=True)
    assert len(expected) > 300
    assert got == expected
    # the entries of hundreds of calls: no more than were ever pending at once (and
    # the two a call may post before the next count)
    assert entries <= peak + 2 and len(got) > 3 * entries, (entries, peak, len(got))


def test_a_recurring_call_rejects_a_negative_first_delay() -> None:
    env = Environment()
    with pytest.raises(ValueError, match="negative delay"):
        env.call_recurring(-1.0, lambda: 1.0, print)


def _five_seconds_of_work(env: Environment, cpu: Cpu, ends: list[float]):  # type: ignore[no-untyped-def]
    for _ in range(5):
        yield "work", 1.0
    ends.append(env.now)


def test_run_until_an_event_runs_the_cpu_and_returns_its_value() -> None:
    env = Environment()
    cpu = Cpu(env, ["work"])
    ends: list[float] = []
    cpu.start(_five_seconds_of_work(env, cpu, ends))
    done = env.timeout(7.5, value="seven and a half")
    assert env.run(until=done) == "seven and a half"
    assert env.now == 7.5 and ends == [5.0]
    assert cpu.usage()["work"] == pytest.approx(5.0)  # not 0: the task ran
    assert env.run(until=done) == "seven and a half"  # already processed: at once


def test_run_without_until_runs_the_cpu_until_nothing_is_left() -> None:
    env = Environment()
    cpu = Cpu(env, ["work"])
    ends: list[float] = []
    cpu.start(_five_seconds_of_work(env, cpu, ends))
    env.call_at(2.0, lambda _: cpu.interrupt(0.5))
    assert env.run() is None
    assert ends == [5.5] and cpu.usage()["kernel"] == pytest.approx(0.5)


def test_run_until_an_event_that_never_comes_says_so() -> None:
    env = Environment()
    cpu = Cpu(env, ["work"])
    cpu.start(_five_seconds_of_work(env, cpu, []))
    with pytest.raises(RuntimeError, match="was not triggered"):
        env.run(until=env.event())
    assert env.now == 5.0


@pytest.mark.parametrize("with_cpu", [False, True])
def test_delay_lines_and_posted_calls_share_one_pool_and_keep_the_order_of_plain_calls(
    with_cpu: bool,
) -> None:
    """Delay lines and posted calls take their entries from the clock's pool and give them
    back once called: mixed (each entry used by one, then the other), with timer lanes
    beside them, they give the order of plain calls exactly, and hundreds of calls use a
    few dozen entries."""
    import math
    import random

    def order(pooled: bool) -> tuple[list[tuple[float, int]], int]:
        rng = random.Random(3)
        env = Environment()
        clock = env.clock
        if with_cpu:
            _keep_a_cpu_busy(env)
        # (a line's delay whose instants no other call meets: a line's next head takes
        # its sequence number when the head before it fires, so of two calls due at one
        # instant, one put on a line and one scheduled later with a shorter delay,
        # the line's may come second)
        line = env.delay_line(0.3137)
        lane = env.timer_lane()
        seen: list[tuple[float, int]] = []
        count = iter(range(10**6))
        made = 0
        ids: set[int] = set()

        def hop(i: int) -> None:
            nonlocal made
            seen.append((env.now, i))
            if pooled:
                ids.update(id(e) for e in clock.pool)
            for _ in range(2 if i % 4 == 0 and made < 600 else 1):
                made += 1
                how = rng.randrange(3)
                # an instant of a grid of 0.5 s that many calls share (a kernel's ticks),
                # or one of its own
                grid = (math.floor(env.now * 2) + 1 + rng.randrange(2)) / 2
                at = rng.choice([grid, env.now + rng.random()])
                if how == 0:  # a line's fixed delay
                    (line.put if pooled else lambda f, v: env.call_in(0.3137, f, v))(
                        hop, next(count))
                elif how == 1:
                    (clock.post_at if pooled else env.call_at)(at, hop, next(count))
                else:
                    (lane.call_at if pooled else env.call_at)(at, hop, next(count))

        for k in range(6):
            env.call_at(0.5 * k, hop, next(count))
        env.run(until=80)
        return seen, len(ids)

    expected, _ = order(pooled=False)
    got, entries = order(pooled=True)
    assert len(expected) > 400
    assert got == expected
    assert 0 < entries < len(got) / 4, (entries, len(got))


def test_a_delay_line_takes_instants_of_its_own_in_fifo_order() -> None:
    """``put_at``: each item at its own instant, never earlier than the line's last one
    (a burst at one instant leaves in the order it was put)."""
    env = Environment()
    line = DelayLine(env, 0.0)
    seen: list[tuple[float, str]] = []
    line.put_at(2.0, lambda v: seen.append((env.now, v)), "a")
    line.put_at(2.0, lambda v: seen.append((env.now, v)), "b")
    line.put_at(3.5, lambda v: seen.append((env.now, v)), "c")
    env.call_at(2.5, lambda v: seen.append((env.now, v)), "plain")
    with pytest.raises(ValueError, match="earlier"):
        line.put_at(3.0, print)
    env.run(until=1.0)
    with pytest.raises(ValueError, match="earlier"):
        DelayLine(env, 0.0).put_at(0.5, print)  # in the past
    env.run()
    assert seen == [(2.0, "a"), (2.0, "b"), (2.5, "plain"), (3.5, "c")]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["push", "pop", "replace"]),
            st.integers(0, 6),  # few distinct instants: many ties, broken by priority and sequence
            st.integers(0, 1),
        ),
        max_size=80,
    )
)
def test_the_event_heap_pops_entries_in_heapqs_order(ops: list[tuple[str, int, int]]) -> None:
    """The engine's own heap functions (run compiled in the compiled build) take entries
    off in exactly the order heapq's do, through any mix of pushes, pops and replaces."""
    push, pop, replace = SIFTED_HEAP
    ours: list[Entry] = []
    theirs: list[Entry] = []
    taken_ours, taken_theirs = [], []
    for seq, (op, t, prio) in enumerate(ops):
        entry = Entry(float(t), prio, seq, 0)
        if op == "push" or not ours:
            push(ours, entry)
            heapq.heappush(theirs, entry)
        elif op == "pop":
            taken_ours.append(pop(ours).seq)
            taken_theirs.append(heapq.heappop(theirs).seq)
        else:
            taken_ours.append(replace(ours, entry).seq)
            taken_theirs.append(heapq.heapreplace(theirs, entry).seq)
        assert ours[0] is theirs[0] if ours else not theirs
    while ours:
        taken_ours.append(pop(ours).seq)
        taken_theirs.append(heapq.heappop(theirs).seq)
    assert taken_ours == taken_theirs
    assert not theirs


def test_native_draws_are_the_values_of_the_streams_block_sampler() -> None:
    """httperf's loop phase and the arrivals' gaps, drawn natively (Streams.draws), take
    the stream's own values, across block refills; a recurring call's gaps are read as
    they are drawn."""
    n = 2 * BLOCK_SIZE + 3
    native = Streams(7).draws("client_loop", lambda g, k: g.random(k))
    sampler = Streams(7).sampler("client_loop", lambda g, k: g.random(k))
    assert [native.draw() for _ in range(n)] == [sampler() for _ in range(n)]
    gaps = Streams(7).draws("arrivals", lambda g, k: g.exponential(0.5, k))
    expected = Streams(7).exponential("arrivals", 0.5)
    assert [gaps() for _ in range(n)] == [expected() for _ in range(n)]
    env = Environment()
    times: list[float] = []
    env.call_recurring(0.0, Streams(7).draws("arrivals", lambda g, k: g.exponential(0.5, k)),
                       lambda _: times.append(env.now))
    env.call_recurring(0.0, lambda: 0.25, lambda _: None)  # a plain function's gaps too
    env.run(until=5000.0)  # about 10,000 draws
    assert len(times) > n
    expected = Streams(7).exponential("arrivals", 0.5)
    at = 0.0
    for t in times[:n]:
        assert t == at
        at += expected()


def test_the_event_loop_opens_a_window_for_signals(monkeypatch: pytest.MonkeyPatch) -> None:
    """Compiled, the loop may run no interpreted code of its own: it calls
    sim.interrupts.window every EVENTS_PER_WINDOW events, where a pending signal's
    handler runs and what it raises leaves the run."""
    calls = []

    def window() -> None:
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(interrupts, "window", window)
    config = RunConfig.from_dict({"rate_per_s": 20000.0, "duration_s": 30.0, "warmup_s": 0.0})
    with pytest.raises(KeyboardInterrupt):
        simulate(config)
    assert len(calls) == 3


def test_simpy_private_fields_the_engine_replaces() -> None:
    """The one use of SimPy's private interface: Environment removes SimPy's clock, heap
    and sequence fields (its Clock holds them).  An upgrade of SimPy that renames them
    fails here, not silently in a run (pyproject.toml pins the minor version)."""
    import simpy

    plain = simpy.Environment()
    assert {"_now", "_queue", "_eid"} <= set(vars(plain))
    env = Environment()
    assert not {"_now", "_queue", "_eid"} & set(vars(env))


def test_a_failed_simpy_event_nobody_handles_stops_the_run_and_a_defused_one_does_not() -> None:
    """The engine reads an event's outcome through SimPy's public ``ok``, ``defused`` and
    ``value``."""
    env = Environment()
    env.event().fail(ValueError("unhandled"))
    with pytest.raises(ValueError, match="unhandled"):
        env.run()
    env = Environment()
    failed = env.event()
    failed.fail(ValueError("handled"))
    failed.defused = True
    env.run()
    assert not failed.ok and isinstance(failed.value, ValueError)


@pytest.mark.parametrize("fields", [
    {"server": "userver", "rate_per_s": 24000.0},
    {"server": "tux", "workload": "specweb99", "rate_per_s": 4000.0},
    {"server": "knot", "rate_per_s": 24000.0, "accept_limit": 50},
    {"server": "nginx", "kernel": "linux-modern", "rate_per_s": 5000.0, "cpu_quota": 0.05,
     "cpu_period_s": 0.02, "costs": {"wakeup_cold_s": 2e-4}},
    {"server": "haproxy", "kernel": "linux-modern", "rate_per_s": 3000.0, "cpu_quota": 0.05,
     "cpu_period_s": 0.02, "accept_limit": "inf"},
], ids=lambda f: f["server"])
def test_the_one_cpu_loop_gives_the_general_loops_records(fields: dict) -> None:
    """A processor alone runs on the event loop specialised to one task
    (Environment._run_until); the general loop (_run_until_multi) gives the very same
    record, field for field, to the last bit (only the simulator's own timing differs)."""
    from acceptsim.sim import engine

    config = RunConfig.from_dict({"duration_s": 0.5, "warmup_s": 0.1, "seed": 5, **fields})
    timing = ("sim_cpu_time_s", "sim_conns_per_cpu_s")
    one = simulate(config)
    engine.general_loop_only(True)
    try:
        general = simulate(config)
    finally:
        engine.general_loop_only(False)
    for record in (one, general):
        for name in timing:
            record.pop(name, None)
    assert json.dumps(general, default=repr) == json.dumps(one, default=repr)


@pytest.mark.parametrize("general", [False, True], ids=["one-cpu loop", "general loop"])
def test_a_burst_object_set_again_is_the_tuple_it_stands_for(general: bool) -> None:
    """A task may yield a Burst it keeps and sets again (Burst.of) instead of a tuple: the
    same ends, the same accounts, on both event loops; with more categories than the
    one-CPU loop keeps accounts of at hand (three), each still charged its own."""
    from acceptsim.sim import engine

    def run(as_objects: bool) -> tuple[list[float], dict[str, float]]:
        env = Environment()
        categories = ["a", "b", "c", "d", "e"]
        cpu = Cpu(env, categories)
        bursts = {c: Burst(c) for c in categories}
        ends: list[float] = []

        def task():  # type: ignore[no-untyped-def]
            for i in range(40):
                category = categories[(i * i + i // 3) % 5]
                cost = 0.001 * (i % 7 + 1)
                yield bursts[category].of(cost) if as_objects else (category, cost)
                ends.append(env.now)

        cpu.start(task())
        env.call_recurring(0.0005, lambda: 0.003, lambda _: cpu.interrupt(0.0002))
        env.run(until=1.0)
        return ends, cpu.usage()

    engine.general_loop_only(general)
    try:
        assert run(True) == run(False)
        ends, usage = run(True)
    finally:
        engine.general_loop_only(False)
    assert len(ends) == 40
    expected = {c: 0.0 for c in "abcde"}
    for i in range(40):
        expected["abcde"[(i * i + i // 3) % 5]] += 0.001 * (i % 7 + 1)
    for c, used in expected.items():
        assert usage[c] == pytest.approx(used, abs=1e-12), c


def test_a_handler_is_called_natively_where_a_function_would_be() -> None:
    """An entry's fn may be a Handler (the client's segments are): called with its value,
    at the instant and in the order a plain function would be, on the heap, a delay line
    and a timer lane alike; Calls wraps a function as one."""
    def run(wrap: bool) -> list[tuple[str, float, object]]:
        env = Environment()
        seen: list[tuple[str, float, object]] = []

        def fn(tag: str):  # type: ignore[no-untyped-def]
            def call(value: object) -> None:
                seen.append((tag, env.now, value))
            return Calls(call) if wrap else call

        line = env.delay_line(0.5)
        lane = env.timer_lane()
        env.call_in(1.0, fn("call"), 1)
        env.clock.post_in(0.5, fn("posted"), 2)
        line.put(fn("line"), 3)
        lane.call_at(0.5, fn("lane"), 4)
        env.call_recurring(0.25, lambda: 0.25, fn("recurring"), 5)
        env.run(until=1.1)
        return seen

    handled = run(True)
    assert handled == run(False)
    assert [tag for tag, _, _ in handled].count("recurring") == 4
    assert ("line", 0.5, 3) in handled and ("lane", 0.5, 4) in handled


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20), st.floats(0.01, 0.3)), min_size=1, max_size=40))
def test_a_delay_line_keeps_any_number_pending_in_fifo_order(
    steps: list[tuple[int, float]],
) -> None:
    """A line's ring of pending calls grows when full, from wherever its first call sits:
    bursts of puts between runs of the clock (up to hundreds pending) come out at their
    instants and in the order they were put, as plain calls do, and the line counts what
    it holds.  A place the line is not using holds the line's own entry, never the entry
    of a call it has made (back in the clock's pool, given out again later, and out of
    the cache by the time a put would let go of it)."""
    def run(on_line: bool) -> list[tuple[float, int]]:
        env = Environment()
        line = env.delay_line(0.5)
        seen: list[tuple[float, int]] = []
        n = 0
        for puts, advance in steps:
            for _ in range(puts):
                if on_line:
                    line.put(lambda v: seen.append((env.now, v)), n)
                else:
                    env.call_in(0.5, lambda v: seen.append((env.now, v)), n)
                n += 1
            env.run(until=env.now + advance)
            if on_line:
                assert len(line) == n - len(seen)
                size = len(line.ring)
                in_use = {(line.start + k) & (size - 1) for k in range(len(line))}
                assert all(line.ring[i] is line.entry for i in range(size) if i not in in_use)
        env.run()
        assert not on_line or len(line) == 0
        return seen

    assert run(True) == run(False)


def _item(tag: int) -> Connection:
    """An item for an :class:`ItemLine` (a connection: the one kind the model puts on one;
    a compiled :class:`Timed` takes no subclass the interpreter defines)."""
    return Connection(tag, 0.0, 1.0)


def _records(env: Environment, seen: list[tuple[float, str, int]]) -> Calls:
    """A handler that records the instant and the connection's id of each call."""
    return Calls(lambda conn: seen.append((env.now, "line", conn.id)))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 12), st.sampled_from([0.0, 0.25, 0.4]),
                          st.floats(0.05, 0.6)), min_size=1, max_size=30))
def test_an_item_line_makes_a_delay_lines_calls_at_the_same_instants_in_the_same_order(
    steps: list[tuple[int, float, float]],
) -> None:
    """An :class:`ItemLine` (items that carry their instants, one handler) in place of a
    :class:`DelayLine`'s ``put_at``: bursts of puts on a grid of instants other calls meet
    too, the ring grown from wherever its head sits, give the same calls at the same
    instants in the same order among the plain calls beside them; the line counts what it
    holds, and a place not in use holds the line's blank, never an item it handed on."""
    def run(items: bool) -> list[tuple[float, str, int]]:
        env = Environment()
        seen: list[tuple[float, str, int]] = []
        handler = _records(env, seen)
        line: ItemLine | DelayLine = ItemLine(env, handler) if items else DelayLine(env, 0.0)
        n = last = 0.0
        for puts, gap, advance in steps:
            at = max(last, math.floor(env.now * 4 + 1) / 4 + gap)  # on a grid, in order
            for _ in range(puts):
                if isinstance(line, ItemLine):
                    line.put_at(at, _item(int(n)))
                else:
                    line.put_at(at, handler, _item(int(n)))
                env.call_at(at, lambda v: seen.append((env.now, "plain", v)), int(n))
                n += 1
            last = at
            env.run(until=env.now + advance)
            if isinstance(line, ItemLine):
                assert len(line) == n - sum(1 for _, kind, _ in seen if kind == "line")
                size = len(line.ring)
                in_use = {(line.start + k) & (size - 1) for k in range(len(line))}
                assert all(line.ring[i] is line.blank for i in range(size) if i not in in_use)
        env.run()
        return seen

    assert run(True) == run(False)


def test_an_item_line_refuses_an_instant_before_now_or_its_last_and_is_discarded() -> None:
    env = Environment()
    seen: list[tuple[float, str, int]] = []
    line = ItemLine(env, _records(env, seen))
    line.put_at(2.0, _item(1))
    with pytest.raises(ValueError, match="earlier"):
        line.put_at(1.5, _item(2))
    env.run(until=2.5)
    with pytest.raises(ValueError, match="earlier"):
        line.put_at(2.0, _item(3))  # in the past
    line.put_at(4.0, _item(4))
    env.discard()
    assert len(line) == 0 and seen == [(2.0, "line", 1)]
