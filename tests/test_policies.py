"""The accept-policy API: contract, validation, built-in policies."""

from __future__ import annotations

import dataclasses
import math
import pickle
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acceptsim.models import policies
from acceptsim.models.experiment import RunConfig, simulate
from acceptsim.models.policies import POLICIES, Policy, PolicyError, ServerView
from acceptsim.sim.errors import ConfigError

SHORT = {"duration_s": 1.5, "warmup_s": 0.0, "rate_per_s": 20000.0}


def short(**fields: object) -> RunConfig:
    return RunConfig.from_dict({**SHORT, **fields})


class Sequence(Policy):
    """Returns the given limits in turn (a scripted policy)."""

    name = "scripted"

    def __init__(self, limits: list[float]) -> None:
        self.limits = limits
        self.calls = 0
        self.seen: list[tuple[int, int]] = []

    def accept_limit(self, view: ServerView) -> float:
        self.seen.append((view.accept_queue_len, view.work_queue_len))
        limit = self.limits[self.calls % len(self.limits)]
        self.calls += 1
        return limit


def equation_1_holds(r: dict) -> bool:
    window = r["duration_s"] - r["warmup_s"]
    if r["accepts_per_phase"] is None:
        return r["accept_rate_per_s"] == 0
    lhs = r["accept_rate_per_s"] * window
    rhs = r["accept_phases_per_s"] * window * r["accepts_per_phase"]
    return math.isclose(lhs, rhs, rel_tol=1e-9)


def test_static_policy_spec_is_the_accept_limit_field() -> None:
    a = simulate(short(accept_limit=10))
    b = simulate(short(policy="static:limit=10"))
    assert a["reply_rate_per_s"] == b["reply_rate_per_s"]
    assert a["accept_limit"] == b["accept_limit"] == 10
    assert b["policy"] == "static:limit=10" and b["policy_name"] == "static"
    assert b["policy_params"] == {"limit": 10}


def test_a_skipped_phase_is_not_an_accept_phase_and_equation_1_stays_exact() -> None:
    policy = Sequence([0, 0, 0, 1])
    r = simulate(short(), policy=policy)
    assert r["accept_phases_skipped"] > 0
    assert r["accepts_per_phase"] <= 1.0
    assert equation_1_holds(r)
    # fewer than one connection per decision on average
    decisions = r["accept_phases_per_s"] * SHORT["duration_s"] + r["accept_phases_skipped"]
    assert r["accept_rate_per_s"] * SHORT["duration_s"] / decisions < 1.0


@settings(max_examples=6, deadline=None)
@given(st.lists(st.sampled_from([0, 1, 2, 5, math.inf]), min_size=1, max_size=6))
def test_any_scripted_policy_keeps_equation_1_and_its_limits(limits: list[float]) -> None:
    if not any(limits):
        limits = [*limits, 1]
    r = simulate(short(duration_s=0.6, rate_per_s=15000.0), policy=Sequence(limits))
    assert equation_1_holds(r)
    if r["accepts_per_phase"] is not None:
        assert r["accepts_per_phase"] <= max(limits)
    assert r["queues"]["accept_queue_max"] <= r["queues"]["accept_queue_capacity"]


def test_the_view_reads_live_state() -> None:
    policy = Sequence([1])
    simulate(short(rate_per_s=26000.0), policy=policy)
    assert max(a for a, _ in policy.seen) > 1  # the accept queue builds up under overload
    assert all(a >= 1 for a, _ in policy.seen)  # the userver asks only when it is readable


@pytest.mark.parametrize(
    ("value", "fragment"),
    [(-1, "returned -1"), (2.5, "returned 2.5"), ("3", "returned '3'"), (None, "returned None")],
)
def test_a_bad_decision_is_a_policy_error_naming_policy_and_decision(
    value: object, fragment: str
) -> None:
    class Bad:
        name = "bad"

        def accept_limit(self, view: ServerView) -> object:
            return value

    with pytest.raises(PolicyError) as info:
        simulate(short(), policy=Bad())
    text = str(info.value)
    assert "'bad'" in text and "accept_limit" in text and fragment in text


def test_a_policy_that_raises_is_a_policy_error() -> None:
    class Raises(Policy):
        name = "raises"

        def accept_limit(self, view: ServerView) -> float:
            raise ZeroDivisionError("oops")

    with pytest.raises(PolicyError, match="'raises', decision accept_limit: raised"):
        simulate(short(), policy=Raises())
    error = PolicyError("p", "work_budget", "x")
    assert str(pickle.loads(pickle.dumps(error))) == str(error)


def test_a_bad_work_budget_is_a_policy_error() -> None:
    class BadBudget(Policy):
        name = "bb"

        def accept_limit(self, view: ServerView) -> float:
            return 1

        def work_budget(self, view: ServerView) -> float:
            return -0.1

    with pytest.raises(PolicyError, match="'bb', decision work_budget"):
        simulate(short(), policy=BadBudget())


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ("nosuch", "policy"),
        ("aimd:nosuch=1", "policy.aimd.nosuch"),
        ("pid:setpoint=1.5", "policy.pid.setpoint"),
        ("hill-climb:step=1", "policy.hill-climb.step"),
        ("hold-open:growth=0", "policy.hold-open.growth"),
        ("hold-open:growth_epochs=0", "policy.hold-open.growth_epochs"),
        ("hold-open:release=1", "policy.hold-open.release"),
        ("static:limit=0", "policy.static.limit"),
        ("aimd:increase", "policy.aimd"),
    ],
)
def test_bad_policy_configuration_is_a_config_error_before_running(spec: str, field: str) -> None:
    with pytest.raises(ConfigError) as info:
        RunConfig(policy=spec)
    assert info.value.field == field


def test_a_duck_typed_policy_class_is_instantiated_per_run() -> None:
    class Halves:  # no base class, no work_budget, no start
        name = "halves"

        def __init__(self) -> None:
            self.calls = 0

        def accept_limit(self, view: ServerView) -> int:
            self.calls += 1
            return max(1, view.accept_queue_len // 2)

    a = simulate(short(), policy=Halves)
    b = simulate(short(), policy=Halves)
    assert a["reply_rate_per_s"] == b["reply_rate_per_s"] > 0
    assert a["policy"] == a["policy_name"] == "halves"


@pytest.mark.parametrize("name", [n for n in POLICIES if n != "static"])
def test_every_built_in_policy_runs_deterministically(name: str) -> None:
    config = short(policy=name, duration_s=1.0, timeseries_interval_s=0.25)
    a, b = simulate(config), simulate(config)
    assert a["reply_rate_per_s"] == b["reply_rate_per_s"] > 0
    assert a["policy"] == name
    assert a["policy_params"] == POLICIES[name].Params().to_dict()
    assert equation_1_holds(a)
    assert len(a["timeseries"]["time_s"]) == 4


def test_a_work_budget_shortens_work_phases() -> None:
    free = simulate(short(rate_per_s=24000.0, accept_limit=math.inf))
    bounded = simulate(short(rate_per_s=24000.0, policy="budget:work_budget_s=0.0002,"
                             "accept_limit=inf"))  # fmt: skip
    assert bounded["conns_per_work_phase"] < free["conns_per_work_phase"]


def test_queue_aware_decides_from_both_queues() -> None:
    p = policies.QueueAware(policies.QueueAwareParams(ratio=1.0, high_water=0.5))

    class View:
        accept_queue_capacity = 129

        def __init__(self, a: int, w: int) -> None:
            self.accept_queue_len, self.work_queue_len = a, w

    assert p.accept_limit(View(2, 10)) == 1
    assert p.accept_limit(View(1, 10)) == 1
    assert p.accept_limit(View(0, 10)) == 0  # nothing waiting: skip
    assert p.accept_limit(View(20, 4)) == 5
    assert p.accept_limit(View(65, 4)) == 64  # above high water: max_limit


class FakeView:
    """What hold-open reads, set by hand."""

    def __init__(self) -> None:
        self.now = 0.0
        self.replies = 0
        self.open_connections = 100


def epoch(p: policies.HoldOpen, view: FakeView, replies: int, open_conns: int) -> float:
    """Hold ``open_conns`` open through one 0.5 s epoch that ends with ``replies`` more
    replies; the decision at its end."""
    view.open_connections = open_conns
    view.now += 0.25
    p.accept_limit(view)
    view.now += 0.25
    view.replies += replies
    return p.accept_limit(view)


def test_hold_open_caps_open_connections_that_climb_without_more_replies() -> None:
    pinned = policies.HoldOpenParams(initial=64, min_limit=64, max_limit=64, growth_epochs=3)
    p = policies.HoldOpen(pinned)
    view = FakeView()
    p.start(view)
    epoch(p, view, 1000, 100)
    epoch(p, view, 1000, 100)
    assert p.cap == math.inf
    for open_conns in (120, 150, 190):  # +20 % an epoch, replies flat
        limit = epoch(p, view, 1000, open_conns)
    assert p.cap == 100  # the level the growth started from
    assert limit == 0  # 190 open, cap 100: the phase is skipped
    view.open_connections = 90
    assert p.accept_limit(view) == 10  # room under the cap
    epoch(p, view, 1200, 95)  # replies rose: the server may hold more
    assert p.cap == pytest.approx(125)
    epoch(p, view, 1200, 20)  # the cap stopped binding: lifted
    assert p.cap == math.inf


def test_hold_open_ignores_growth_that_its_own_climb_explains() -> None:
    p = policies.HoldOpen(policies.HoldOpenParams(initial=4, max_limit=64))
    view = FakeView()
    p.start(view)
    epoch(p, view, 1000, 100)
    for open_conns in (120, 150, 190):  # the limit climbs 8, 16, 32 -> 64; replies flat
        epoch(p, view, 1000, open_conns)
    assert p.limit == 64 and p.cap == math.inf


def test_hold_open_ignores_growth_that_brings_replies() -> None:
    p = policies.HoldOpen()
    view = FakeView()
    p.start(view)
    replies = 1000
    for open_conns in (100, 120, 150, 190, 240, 300):
        replies = int(replies * 1.1)
        epoch(p, view, replies, open_conns)
    assert p.cap == math.inf


class WatchingView(FakeView):
    """FakeView plus the slow-reply count a bounded climb reads."""

    def __init__(self) -> None:
        super().__init__()
        self.slow_replies = 0
        self.bound_s = math.inf

    def watch_response_time(self, bound_s: float) -> None:
        self.bound_s = bound_s


def climb(params: policies.HillClimbParams, epochs: list[tuple[int, int]]) -> list[float]:
    """The limits a hill-climb decides at the ends of 0.5 s epochs with these
    (replies, slow replies) each."""
    p = policies.HillClimb(params)
    view = WatchingView()
    p.start(view)
    limits = []
    for replies, slow in epochs:
        view.now += 0.5
        view.replies += replies
        view.slow_replies += slow
        limits.append(p.accept_limit(view))
    return limits


def test_hill_climb_within_a_bound_prefers_epochs_that_meet_it() -> None:
    # more replies, but 10 % of them slower than the bound (p99 bound: at most 1 %)
    epochs = [(1000, 5), (1100, 110), (1000, 5)]
    assert climb(policies.HillClimbParams(), epochs) == [32, 64, 64]
    bounded = policies.HillClimbParams(within_ms=50.0)
    assert climb(bounded, epochs) == [32, 16, 8]  # 64 missed the bound: reverse
    p, view = policies.HillClimb(bounded), WatchingView()
    p.start(view)
    assert view.bound_s == pytest.approx(0.05)


def test_hill_climb_within_a_bound_compares_rates_when_both_meet_it() -> None:
    bounded = policies.HillClimbParams(within_ms=50.0, quantile=0.9)
    # both epochs meet a p90 bound: the rate decides (900 < 1000: reverse)
    assert climb(bounded, [(1000, 50), (900, 50)]) == [32, 16]
    # both miss it: the share of slow replies decides (30 % > 20 %: reverse)
    assert climb(bounded, [(1000, 200), (2000, 600)]) == [32, 16]
    assert climb(bounded, [(1000, 200), (500, 60)]) == [32, 64]  # a lower share: go on


def test_the_view_counts_replies_slower_than_the_watched_bound() -> None:
    class Watch(Policy):
        def __init__(self, bound_s: float) -> None:
            self.bound_s = bound_s

        def start(self, view: ServerView) -> None:
            self.view = view
            view.watch_response_time(self.bound_s)

        def accept_limit(self, view: ServerView) -> float:
            return 16

    config = short(rate_per_s=26000.0, accept_limit=16)
    r = simulate(config)
    assert r["reply_rate_per_s"] > 0
    fractions = []
    percentiles = r["response_time_ms"]
    for bound_ms in (1e9, percentiles["p50"], percentiles["p99"], 1e-9):
        policy = Watch(bound_ms / 1000.0)
        assert simulate(config, policy=policy)["reply_rate_per_s"] == r["reply_rate_per_s"]
        fractions.append(policy.view.slow_replies / policy.view.replies)
    assert fractions[0] == 0.0 and fractions[3] == 1.0
    assert fractions[1] == pytest.approx(0.5, abs=0.02)
    assert fractions[2] == pytest.approx(0.01, abs=0.005)
    with pytest.raises(ConfigError, match="bound_s"):
        policy.view.watch_response_time(0)


def test_hold_open_errors_name_the_policy_and_the_decision() -> None:
    class State:  # a server state whose open-connection count can break
        name = "fake"
        env = SimpleNamespace(now=0.0)
        listen = client = None
        accepts = accept_phases = 0
        broken = True

        @property
        def open(self) -> int:
            if self.broken:
                raise AttributeError("open")
            return 0

    with pytest.raises(PolicyError, match="'hold-open', decision start: raised"):
        policies.BoundPolicy(policies.HoldOpen(), State())  # type: ignore[arg-type]
    state = State()
    state.broken = False
    bound = policies.BoundPolicy(policies.HoldOpen(), state)  # type: ignore[arg-type]
    state.broken = True
    with pytest.raises(PolicyError, match="'hold-open', decision accept_limit: raised"):
        bound.accept_limit()
    with pytest.raises(ConfigError) as info:
        RunConfig(policy="hold-open:min_open=0")
    assert info.value.field == "policy.hold-open.min_open"


def test_policies_describe_their_parameters() -> None:
    rows = policies.describe()
    assert [r["name"] for r in rows] == list(POLICIES)
    for row in rows:
        assert row["doc"]
        for prm in row["params"]:
            assert prm["doc"] and "allowed" in prm
        for key in POLICIES[row["name"]].TUNE:
            assert key in {p["name"] for p in row["params"]}


class SkipsAndBudget(Sequence):
    def work_budget(self, view: ServerView) -> float:
        return 0.0005


@pytest.mark.parametrize(("server", "costs"), [("tux", "cluster1"), ("knot", "cluster2")])
def test_every_server_honours_skips_and_budgets(server: str, costs: str) -> None:
    policy = SkipsAndBudget([0, 3, 0, math.inf])
    r = simulate(short(server=server, costs=costs, duration_s=1.0), policy=policy)
    assert r["accept_phases_skipped"] > 0
    assert r["reply_rate_per_s"] > 0
    assert equation_1_holds(r)
    assert all(a >= 0 and w >= 0 for a, w in policy.seen)


def test_a_policy_that_always_skips_starves_tux_without_hanging() -> None:
    r = simulate(short(server="tux", duration_s=0.3), policy=Sequence([0]))
    assert r["accept_rate_per_s"] == 0 and r["accept_phases_per_s"] == 0
    assert r["accept_phases_skipped"] > 0


def test_a_policy_that_always_skips_blocks_knot_threads_on_the_socket() -> None:
    """Skipped phases do not spin: the threads block until a poll wakes them."""
    r = simulate(short(server="knot", costs="cluster2", duration_s=0.3), policy=Sequence([0]))
    assert r["accept_rate_per_s"] == 0 and r["accept_phases_per_s"] == 0
    assert r["accept_phases_skipped"] > 0
    assert r["cpu_share"]["accept"] < 0.05


def test_the_readme_policy_example_runs() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    block = next(b for b in text.split("```python")[1:] if "HalfTheQueue" in b)
    code = block.split("```")[0].replace("duration_s=2", "duration_s=0.5")
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102
    assert namespace["result"]["policy"] == "half-the-queue"


class _AskedEveryPhase(Policy):
    """A fixed limit and an unbounded budget, through the checked per-phase calls
    (not a StaticLimit, so the servers' static fast path does not apply)."""

    name = "asked"

    def __init__(self, limit: float) -> None:
        self.limit = limit

    def accept_limit(self, view: ServerView) -> float:
        return self.limit

    def work_budget(self, view: ServerView) -> float:
        return math.inf


@pytest.mark.parametrize("server", ["userver", "tux", "knot", "nginx"])
@pytest.mark.parametrize("limit", [1, 7, math.inf])
def test_the_static_fast_path_decides_as_asking_every_phase(server: str, limit: float) -> None:
    """Servers read a static policy's limit and skip an unbounded work budget;
    a policy asked at every phase for the same values gives the same run."""
    fields = {"server": server, "duration_s": 0.8, "rate_per_s": 26000.0, "accept_limit": limit}
    fast = simulate(short(**fields))
    asked = simulate(short(**fields), policy=_AskedEveryPhase(limit))
    assert fast["accept_limit"] == limit and math.isnan(asked["accept_limit"])  # its own
    for record in (fast, asked):
        for key in ("accept_limit", "policy", "policy_name", "policy_params", "sim_cpu_time_s",
                    "sim_conns_per_cpu_s"):  # fmt: skip
            record.pop(key)
    assert fast == asked


def test_a_userver_subclass_that_redefines_the_inlined_hooks_is_still_called(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The userver's loop writes hold(), release(), readable() and getevents()
    inline only for its own definitions: a subclass's versions are called."""
    from acceptsim.models.servers import registry
    from acceptsim.models.servers.userver import Userver

    calls = {"hold": 0, "release": 0, "readable": 0, "getevents": 0}

    class Counting(Userver):
        def hold(self, conn):  # type: ignore[no-untyped-def]
            calls["hold"] += 1
            super().hold(conn)

        def release(self, conn):  # type: ignore[no-untyped-def]
            calls["release"] += 1
            super().release(conn)

        def readable(self, conn):  # type: ignore[no-untyped-def]
            calls["readable"] += 1
            super().readable(conn)

        def getevents(self):  # type: ignore[no-untyped-def]
            calls["getevents"] += 1
            return (yield from super().getevents())

    spec = registry.SERVERS["userver"]
    monkeypatch.setitem(registry.SERVERS, "userver", dataclasses.replace(spec, cls=Counting))
    sub = simulate(short(server="userver", warmup_s=0.0))
    monkeypatch.undo()
    plain = simulate(short(server="userver", warmup_s=0.0))
    window = sub["duration_s"]
    assert calls["hold"] == round(sub["accept_rate_per_s"] * window) > 0
    assert calls["release"] > 0 and calls["readable"] > calls["release"]
    assert calls["getevents"] >= round(sub["select_calls_per_s"] * window)
    for record in (sub, plain):
        record.pop("sim_cpu_time_s"), record.pop("sim_conns_per_cpu_s")
    assert sub == plain
