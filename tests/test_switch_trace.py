"""The client CPU's traced switches (acceptsim.measure.switch_trace): the trace's lines
read, the order of the turns read from them, and a run's own order given to its
simulation (issue 47)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acceptsim.measure.parse_errors import ParseError
from acceptsim.measure.switch_trace import (
    KeptShare,
    Switch,
    SwitchTrace,
    cpumask,
    kept_share,
    parse_switches,
    read_turns,
    turns_rows,
)

TICK = 0.004

_HEAD = "# tracer: nop\n#\n#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n"
_LINE = ("{task:>16s} [001] d..2.  {t}: sched_switch: prev_comm={prev} prev_pid={pp} "
         "prev_prio=120 prev_state=R ==> next_comm={comm} next_pid={pid} next_prio=120\n")
#: a tracefs trace file's head and three switches on CPU 1, as Linux 6.18 writes them
TRACE = _HEAD + "".join(_LINE.format(task=f"{prev}-{pp}", t=t, prev=prev, pp=pp, comm=comm,
                                     pid=pid) for t, prev, pp, comm, pid in (
    ("9523.311977", "httperf", 411, "ksoftirqd/1", 20),
    ("9523.312030", "ksoftirqd/1", 20, "httperf", 412),
    ("9523.315977", "httperf", 412, "my task, 2", 77)))


def test_a_traces_switch_lines_are_read_and_the_rest_skipped() -> None:
    assert parse_switches(TRACE) == [
        Switch(0.0, 1, 20, "ksoftirqd/1"),
        Switch(0.000053, 1, 412, "httperf"),
        Switch(0.004, 1, 77, "my task, 2"),
    ]
    assert parse_switches("# tracer: nop\n") == []


def test_the_turns_file_reads_back_what_was_written(tmp_path: Path) -> None:
    switches = parse_switches(TRACE)
    path = tmp_path / "client-turns.csv"
    path.write_text(turns_rows(switches))
    assert read_turns(path) == switches  # a comm with a comma and a space survives


@pytest.mark.parametrize("text, line", [
    ("time,cpu\n", 1),
    ("time_s,cpu,pid,comm\n0.1,1,x,httperf\n", 2),
    ("time_s,cpu,pid,comm\n0.1,1,5,httperf\n0.05,1,6,httperf\n", 3),
    ("time_s,cpu,pid,comm\n-1,1,5,httperf\n", 2),
    ("time_s,cpu,pid,comm\nnan,1,5,httperf\n", 2),
])
def test_a_bad_turns_file_is_refused_with_its_line(tmp_path: Path, text: str, line: int
                                                   ) -> None:
    path = tmp_path / "client-turns.csv"
    path.write_text(text)
    with pytest.raises(ParseError) as err:
        read_turns(path)
    assert err.value.line == line


def test_the_cpumask_is_tracefs_words_of_32_cpus() -> None:
    assert cpumask([1]) == "00000002"
    assert cpumask([0, 1]) == "00000003"
    assert cpumask([0, 33]) == "00000002,00000001"


def rounds(k: int, seconds: float, reorders_per_s: float, seed: int,
           softirq: bool = True) -> list[Switch]:
    """k busy-polling processes taking turns of a tick on CPU 1, a ksoftirqd run
    between some turns, their round put in a new random order at the events of a
    Poisson process of ``reorders_per_s``."""
    rng = np.random.default_rng(seed)
    order = list(range(100, 100 + k))
    switches = []
    next_reorder = rng.exponential(1 / reorders_per_s) if reorders_per_s else math.inf
    turn = 0
    t = 0.0
    while t < seconds:
        while t >= next_reorder:
            rng.shuffle(order)
            next_reorder += rng.exponential(1 / reorders_per_s)
        switches.append(Switch(round(t, 6), 1, order[turn % k], "httperf"))
        if softirq and turn % 3 == 0:  # between turns, from the tick, briefly
            switches.append(Switch(round(t + TICK - 50e-6, 6), 1, 20, "ksoftirqd/1"))
        turn += 1
        t = turn * TICK
    return switches


@settings(max_examples=20, deadline=None)
@given(k=st.integers(2, 12))
def test_a_round_that_keeps_its_order_is_kept_in_full(k: int) -> None:
    share = kept_share(rounds(k, 4.0, 0.0, 1), "httperf", TICK, 1.0, samples=2000)
    assert share.share == pytest.approx(1.0) and share.processes == {1: k}
    assert share.samples == 2000  # ksoftirqd between turns: still the last turn


@settings(max_examples=20, deadline=None)
@given(k=st.integers(2, 12))
def test_a_round_reordered_every_few_turns_keeps_nothing(k: int) -> None:
    """Nothing kept, and no one place for a deadline: the places' shares sum to 1 and
    none holds most (a round reordered between two turns of a process can make it wait
    more than k ticks, so they are not the uniform 1/k each)."""
    share = kept_share(rounds(k, 6.0, 100.0, 2), "httperf", TICK, 1.0, samples=4000)
    assert share.share < 0.08
    assert sum(share.delays) == pytest.approx(1.0) and max(share.delays) < 0.6


@settings(max_examples=20, deadline=None)
@given(k=st.integers(2, 12))
def test_a_kept_round_puts_every_deadline_where_its_order_does(k: int) -> None:
    """A round kept for good: a deadline 250 ticks after an instant of a process's turn
    finds it 250 mod k turns on, so it runs again (k - 250 mod k) mod k ticks after the
    deadline's tick (0: it is running), every time; ``delays_text`` gives it as
    ``RunConfig.client_turn_delays`` takes it."""
    share = kept_share(rounds(k, 4.0, 0.0, 1), "httperf", TICK, 1.0, samples=2000)
    d = (k - 250 % k) % k
    assert share.delays == tuple(1.0 if i == d else 0.0 for i in range(d + 1))
    assert share.delays_text().split(",")[-1] == "1.0000"


@pytest.mark.parametrize("k, rate", [(5, 0.7), (8, 0.7), (10, 2.0), (9, 0.3)])
def test_the_kept_share_is_exp_of_minus_the_reorders_over_the_lag(k: int, rate: float
                                                                    ) -> None:
    """With reorders at a rate r, a round keeps its order over the lag with probability
    exp(-r T): the share read is within 0.07 of it (120 s of turns, 0.7-2 reorders a
    second: about a hundred reorders or more)."""
    share = kept_share(rounds(k, 120.0, rate, 3), "httperf", TICK, 1.0)
    assert share.share == pytest.approx(math.exp(-rate), abs=0.07)


def test_one_process_on_a_cpu_or_no_steady_load_tells_nothing() -> None:
    one = kept_share(rounds(1, 4.0, 0.0, 1), "httperf", TICK, 1.0)
    assert (one.share, one.samples, one.processes) == (0.0, 0, {1: 1})
    short = kept_share(rounds(5, 1.5, 0.0, 1), "httperf", TICK, 1.0)  # settle + lag > 1.5 s
    assert short.samples == 0


def test_without_a_tracefs_the_trace_says_why_and_runs_its_body(tmp_path: Path) -> None:
    ran = []
    with SwitchTrace([1], root=tmp_path / "nothing") as trace:
        ran.append(True)
    assert ran and trace.text == "" and "no tracefs instance" in trace.failed
    (tmp_path / "plain" / "instances").mkdir(parents=True)  # a directory, not a tracefs
    with SwitchTrace([1], root=tmp_path / "plain") as trace:
        pass
    assert "tracefs refused" in trace.failed and trace.text == ""


MEASURED = Path(__file__).resolve().parent / "data" / "measured"
TRACED = MEASURED / "nginx-loopback-turns-traced"


def test_a_traced_run_gives_its_simulation_its_own_order(tmp_path: Path) -> None:
    """``calibrate.turn_order_s``: the share e kept over the run's timeout T gives
    tau = -T / ln(e) (the testbed's mean is for runs without a trace, the sampler's rate
    included in what the trace saw); a round that kept nothing gives 0, one that kept
    everything the share 1 - 1/(2n) of its n instants."""
    import shutil

    from acceptsim.measure import load_run
    from acceptsim.measure.calibrate import config_for, turn_order_s
    from acceptsim.measure.testbed import CLIENT_TURN_ORDER_S
    from acceptsim.models.costs import CLUSTER1

    source = next(iter(sorted((TRACED / "sampler").glob("*rate-007000-rep-1"))))
    run = load_run(source)
    assert run.info.timeseries.interval_s > 0 and run.turns is not None
    assert 0 < run.turns.share < 1 and run.turns.processes == {1: 10}
    tau = -run.info.load.timeout_s / math.log(run.turns.share)
    assert turn_order_s(run) == pytest.approx(tau)
    assert turn_order_s(run, 5.0) == pytest.approx(tau)  # the trace, not the mean given
    config = config_for(run, CLUSTER1)  # the places themselves, in place of a mean
    assert config.client_turn_order_s == 0.0
    assert config.client_turn_delays == run.turns.delays_text() != ""
    copy = tmp_path / "run"
    shutil.copytree(source, copy)
    (copy / "client-turns.csv").write_text(turns_rows(rounds(10, 9.0, 100.0, 4)))
    shuffled = load_run(copy)
    assert shuffled.turns is not None and shuffled.turns.share < 0.08
    assert turn_order_s(shuffled) < 0.4
    shuffled.__dict__["turns"] = KeptShare(0.0, 100, {1: 10})  # none kept at all
    assert turn_order_s(shuffled) == 0.0
    (copy / "client-turns.csv").write_text(turns_rows(rounds(10, 9.0, 0.0, 4)))
    kept = load_run(copy)
    assert kept.turns is not None and kept.turns.share == 1.0
    assert turn_order_s(kept) == pytest.approx(
        -run.info.load.timeout_s / math.log(1 - 0.5 / kept.turns.samples))
    (copy / "client-turns.csv").unlink()  # untraced: the testbed's, the sampler's added
    untraced = load_run(copy)
    assert turn_order_s(untraced) == pytest.approx(
        1 / (1 / CLIENT_TURN_ORDER_S + 1 / run.info.timeseries.interval_s))
    assert config_for(untraced, CLUSTER1).client_turn_delays == ""


def test_a_turns_file_that_links_out_of_its_run_is_refused(tmp_path: Path) -> None:
    import shutil

    from acceptsim.measure import load_run
    from acceptsim.sim.errors import ConfigError

    source = next(iter(sorted((TRACED / "sampler").glob("*rate-003000-rep-1"))))
    copy = tmp_path / "run"
    shutil.copytree(source, copy)
    outside = tmp_path / "elsewhere.csv"
    outside.write_text((copy / "client-turns.csv").read_text())
    (copy / "client-turns.csv").unlink()
    (copy / "client-turns.csv").symlink_to(outside)
    with pytest.raises(ConfigError, match="outside"):
        load_run(copy).turns  # noqa: B018 (the property reads the file)
