"""Accept policies: how a server divides its time between accepting and working.

The contract
------------
A server consults its policy at two decision points:

``accept_limit(view) -> int | inf``
    at the start of every accept phase (userver: after ``select()`` reported
    the listening socket readable; TUX: before each work phase; Knot: when a
    thread has no connection left): the most connections to accept
    consecutively in this phase.  A whole number >= 0, or ``math.inf`` to
    accept until the accept queue is empty.  **0 skips the phase**: nothing
    is accepted and the phase is *not* counted as an accept phase, so the
    paper's Equation 1 (accept rate = phases * accepts per phase / T) stays
    exact and a policy can accept fewer than one connection per phase on
    average.  A server with nothing else to do after a skip waits in its own
    way (userver: one more ``select()``; TUX: sleeps ``skip_wait_s``; Knot:
    the thread blocks on the listening socket until the next poll).

``work_budget(view) -> seconds``  (optional)
    at the start of every work phase: the phase ends at the first item
    boundary after this much time; ``math.inf`` keeps the server's own rule
    (userver: every connection select reported; TUX: until work_pending is
    empty; Knot: until no thread is runnable).  Unfinished work stays queued
    for a later phase.  A policy without this method never bounds a phase.

``start(view)``  (optional)
    once, when the run starts, before any decision: reset per-run state here.

``view`` is the server's :class:`ServerView`, created once per server: its
properties read the live state (queue lengths, open connections, the clock,
cumulative counters); nothing is allocated per decision.  Counters are
cumulative from the start of the run; a policy that wants rates keeps the
previous value and differences it.  A policy must not change the server.

Any object with an ``accept_limit`` method (and optionally ``work_budget``,
``start`` and a ``name``) is a policy: subclass :class:`Policy` or write a
duck-typed class.  Run it with ``simulate(config, policy=obj)`` (or a
zero-argument class/factory, called once per run so that every run starts
fresh).  The built-in ones are named in :data:`POLICIES` and run from a
configuration with ``RunConfig(policy="aimd:decrease=0.7")`` or ``acceptsim
run --policy aimd --policy-param decrease=0.7``.  A policy class of your own runs
from a configuration too, so that sweeps, searches and scenarios take it like a
built-in one (parallel runs, replications, resume): ``RunConfig(policy=MyPolicy)``
(held as ``"module:MyPolicy@digest"``, the digest of its source) or the spec
``"module:MyPolicy:key=value,..."`` (``__main__:MyPolicy`` for a class defined in a
notebook, whose sweep workers are forked from it).  With a ``Params`` class of its
own the class is built as ``MyPolicy(MyPolicy.Params.from_dict(values))``, else as
``MyPolicy(**values)``.

Errors: an unknown policy or parameter, or a parameter out of range, is a
:class:`~acceptsim.sim.errors.ConfigError` naming the policy and the parameter (before
anything runs); a decision that raises, or returns a negative, fractional or
non-numeric value, stops the run with a :class:`PolicyError` naming the
policy and the decision.
"""

from __future__ import annotations

import hashlib
import inspect
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from acceptsim.sim.errors import ConfigError
from acceptsim.sim.params import (
    Params,
    ascii_number,
    param,
    parse_value,
    split_assignment,
    summary_of,
)

if TYPE_CHECKING:
    from acceptsim.models.client import Client
    from acceptsim.models.kernel import ListenSocket
    from acceptsim.sim.engine import Environment

INF = math.inf


# -- errors -----------------------------------------------------------------------------------
class PolicyError(RuntimeError):
    """A policy's decision failed: it raised, or returned something not allowed."""

    def __init__(self, policy: str, decision: str, detail: str) -> None:
        self.policy = policy
        self.decision = decision
        self.detail = detail
        super().__init__(f"policy {policy!r}, decision {decision}: {detail}")

    def __reduce__(self) -> tuple[type, tuple[str, str, str]]:
        return (type(self), (self.policy, self.decision, self.detail))


# -- what a policy sees ----------------------------------------------------------------------
class ServerState(Protocol):
    """What a server exposes to its :class:`ServerView` (every server model has these)."""

    name: str
    env: Environment
    listen: ListenSocket
    client: Client
    open: int
    accepts: int
    accept_phases: int

    @property
    def work_queue_len(self) -> int:
        """Work waiting for the server (userver: connections ready to serve; TUX:
        work_pending; Knot: runnable threads)."""


class ServerView:
    """A read-only, live view of one server, its listen socket and its clients.

    Created once per server; every property reads the current value.
    Counters are cumulative since the start of the run.
    """

    __slots__ = ("_server", "_listen", "_client", "_env", "_peers")

    def __init__(self, server: ServerState) -> None:
        self._server = server
        self._listen = server.listen
        self._client = server.client
        self._env = server.env
        #: every worker's view on a host of several (acceptsim.models.multicore sets it)
        self._peers: tuple[ServerView, ...] | None = None

    # the clock and the server
    @property
    def now(self) -> float:
        """Simulated time (s)."""
        return self._env.now

    @property
    def server(self) -> str:
        """Server architecture name (``userver``, ``tux``, ``knot``, ...)."""
        return self._server.name

    # the other workers
    @property
    def worker(self) -> int:
        """This worker's number (0 on a host of one CPU; worker i runs on CPU i)."""
        return getattr(self._server, "worker", 0)

    @property
    def workers(self) -> tuple[ServerView, ...]:
        """The views of every worker of the server, this one included, in worker order:
        a policy may read the others' state (their queues, open connections, counters).
        One on a uniprocessor.  Complete once every worker is built: read it when
        deciding, not in ``start``."""
        return self._peers if self._peers is not None else (self,)

    # queues
    @property
    def accept_queue_len(self) -> int:
        """Completed connections waiting in the accept queue."""
        return len(self._listen.accept_queue)

    @property
    def accept_queue_capacity(self) -> int:
        """Most connections the accept queue holds (backlog + 1 on Linux)."""
        return self._listen.backlog + 1

    @property
    def syn_queue_len(self) -> int:
        """Half-open requests in the SYN queue."""
        return self._listen.syn_len

    @property
    def syn_queue_capacity(self) -> int:
        return self._listen.syn_capacity

    @property
    def work_queue_len(self) -> int:
        """Work waiting for the server (see :class:`ServerState`)."""
        return self._server.work_queue_len

    @property
    def open_connections(self) -> int:
        return self._server.open

    # cumulative counters
    @property
    def accepts(self) -> int:
        return self._server.accepts

    @property
    def accept_phases(self) -> int:
        return self._server.accept_phases

    @property
    def replies(self) -> int:
        """Replies received by the clients in time (not wasted ones)."""
        return self._client.replies_total

    @property
    def client_timeouts(self) -> int:
        return self._client.timeouts_total

    def watch_response_time(self, bound_s: float) -> None:
        """Count, from now on, the replies whose response time (request sent to reply
        received, at the client) exceeds ``bound_s`` seconds: :attr:`slow_replies`.

        Call it from ``start``.  It sets what the clients measure, not how the
        model behaves; a later call sets a new bound and restarts the count."""
        if isinstance(bound_s, bool) or not isinstance(bound_s, (int, float)) or not bound_s > 0:
            raise ConfigError("watch_response_time.bound_s", bound_s, "a number of seconds > 0")
        self._client.slow_bound_s = float(bound_s)
        self._client.slow_replies_total = 0

    @property
    def slow_replies(self) -> int:
        """Of :attr:`replies`, those slower than the bound of :meth:`watch_response_time`
        (counted since that call; 0 without it)."""
        return self._client.slow_replies_total

    @property
    def syn_q_full_drops(self) -> int:
        return self._listen.syn_q_full

    @property
    def accept_q_full_drops(self) -> int:
        return self._listen.accept_q_full

    @property
    def drop_request_drops(self) -> int:
        return self._listen.drop_request

    @property
    def listen_overflows(self) -> int:
        return self._listen.listen_overflow

    @property
    def drops(self) -> int:
        """All SYN drops and ListenOverflows together."""
        return sum(self._listen.drop_counts().values())

    def drop_counts(self) -> dict[str, int]:
        """Every drop counter by kind (``models.kernel.DROP_KINDS``), cumulative."""
        return self._listen.drop_counts()


# -- the policy protocol -----------------------------------------------------------------------
class AcceptPolicy(Protocol):
    """The hook a server calls (see the module docstring for the contract)."""

    def accept_limit(self, view: ServerView) -> float:
        """Most connections to accept in the accept phase that is starting (0 skips it)."""


class Policy:
    """Convenient base class: no work-phase bound, nothing to reset.  Override
    ``accept_limit()`` (and optionally ``work_budget()``, ``start()``).

    Built-in policies also declare ``Params`` (their parameter set) and ``TUNE``
    (``{parameter: (low, high, log_scale)}``: what ``acceptsim search --policy``
    tunes by default)."""

    name = "custom"
    TUNE: ClassVar[dict[str, tuple[float, float, bool]]] = {}

    def start(self, view: ServerView) -> None:  # noqa: B027 (an optional hook)
        """Called once at the start of a run."""

    def accept_limit(self, view: ServerView) -> float:
        raise NotImplementedError

    def work_budget(self, view: ServerView) -> float:
        return INF


def check_limit(value: Any, field: str = "accept_limit") -> float:
    """An accept-limit is an integer >= 1 or inf."""
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("inf", "infinity"):
            return math.inf
        try:
            value = ascii_number(text, int)
        except ValueError:
            raise ConfigError(field, value, "an integer >= 1 or inf") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ConfigError(field, value, "an integer >= 1 or inf")
    if value == math.inf:
        return math.inf
    if value < 1 or value != int(value):
        raise ConfigError(field, value, "an integer >= 1 or inf")
    return int(value)


class Every:
    """Helper for policies that act once per control interval: ``due(now)`` is
    true once every ``interval_s`` seconds of simulated time."""

    __slots__ = ("interval_s", "next_at")

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self.next_at = interval_s

    def due(self, now: float) -> bool:
        if now < self.next_at:
            return False
        # skip whole intervals that passed without a decision
        self.next_at = now + self.interval_s - (now - self.next_at) % self.interval_s
        return True


# -- built-in policies -----------------------------------------------------------------------
@dataclass(frozen=True)
class StaticParams(Params):
    _prefix = "policy.static."
    limit: int = param(
        1, unit="connections", ge=1, allow_inf=True,
        doc="accept-limit per phase (the paper's knob); defaults to the run's accept_limit",
    )  # fmt: skip


class StaticLimit(Policy):
    """Accept at most ``limit`` connections per phase, every phase (the paper's knob)."""

    name = "static"
    Params = StaticParams
    TUNE = {"limit": (1.0, 1024.0, True)}

    def __init__(self, limit: float | StaticParams = 1) -> None:
        if isinstance(limit, StaticParams):
            limit = limit.limit
        self.limit = check_limit(limit)

    def accept_limit(self, view: ServerView) -> float:
        return self.limit

    def __repr__(self) -> str:
        return f"StaticLimit({self.limit})"


@dataclass(frozen=True)
class QueueAwareParams(Params):
    _prefix = "policy.queue-aware."
    ratio: float = param(
        1.0, unit="connections per queued work item", gt=0.0,
        doc="accept about ratio * accept-queue length / work-queue length per phase: "
        "the longer the work queue relative to the accept queue, the fewer accepts",
    )  # fmt: skip
    high_water: float = param(
        0.75, unit="fraction of the accept queue", gt=0.0, le=1.0,
        doc="at or above this occupancy, accept max_limit (avoid overflow drops)",
    )  # fmt: skip
    min_limit: int = param(
        0, unit="connections", ge=0,
        doc="least accepted in a phase below high water (0: a phase may be skipped)",
    )  # fmt: skip
    max_limit: int = param(
        64, unit="connections", ge=1, allow_inf=True,
        doc="most accepted in a phase (half the accept queue by default: draining all of it "
        "makes long, cache-unfriendly phases for TUX and holds connections open in Knot)",
    )  # fmt: skip


class QueueAware(Policy):
    """Decide from both queue lengths, as the paper's conclusion proposes.

    With ``a`` connections in the accept queue and ``w`` items of work queued,
    accept ``ceil(ratio * a / max(w, 1))`` (clamped to ``min_limit..max_limit``),
    and ``max_limit`` once the accept queue reaches ``high_water`` of its
    capacity.  With lots of queued work and a short accept queue this is 0: the
    phase is skipped, so on average fewer than one connection per phase.
    """

    name = "queue-aware"
    Params = QueueAwareParams
    TUNE = {"ratio": (0.1, 10.0, True), "high_water": (0.2, 1.0, False)}

    def __init__(self, params: QueueAwareParams | None = None) -> None:
        self.p = params or QueueAwareParams()

    def accept_limit(self, view: ServerView) -> float:
        p = self.p
        a = view.accept_queue_len
        if a >= p.high_water * view.accept_queue_capacity:
            return p.max_limit
        w = view.work_queue_len
        want = math.ceil(p.ratio * a / (w if w > 1 else 1))
        return min(max(want, p.min_limit), p.max_limit)


@dataclass(frozen=True)
class BudgetParams(Params):
    _prefix = "policy.budget."
    work_budget_s: float = param(
        0.01, unit="s", gt=0.0, allow_inf=True,
        doc="longest work phase; the rest of the work waits for the next phase",
    )  # fmt: skip
    accept_limit: int = param(
        16, unit="connections", ge=1, allow_inf=True, doc="accept-limit per phase"
    )


class PhaseBudget(Policy):
    """Bound each work phase to ``work_budget_s`` and each accept phase to
    ``accept_limit`` connections, so neither side waits long for the other."""

    name = "budget"
    Params = BudgetParams
    TUNE = {"work_budget_s": (0.0005, 0.05, True), "accept_limit": (1.0, 256.0, True)}

    def __init__(self, params: BudgetParams | None = None) -> None:
        self.p = params or BudgetParams()

    def accept_limit(self, view: ServerView) -> float:
        return self.p.accept_limit

    def work_budget(self, view: ServerView) -> float:
        return self.p.work_budget_s


@dataclass(frozen=True)
class AimdParams(Params):
    _prefix = "policy.aimd."
    interval_s: float = param(0.1, unit="s", gt=0.0, doc="control interval")
    initial: float = param(8.0, unit="connections", ge=1.0, doc="limit at the start of the run")
    increase: float = param(
        2.0, unit="factor", gt=1.0,
        doc="multiply the limit by this after an interval with drops or overflows "
        "(the accept queue overflowed: accept more per phase)",
    )  # fmt: skip
    decrease: float = param(
        1.0, unit="connections", gt=0.0,
        doc="subtract this from the limit after an interval without drops "
        "(smaller batches: shorter phases, smaller cache footprint)",
    )  # fmt: skip
    min_limit: float = param(1.0, unit="connections", ge=1.0, doc="least limit")
    max_limit: float = param(
        64.0, unit="connections", ge=1.0, allow_inf=True,
        doc="largest limit (half the accept queue: see queue-aware's max_limit)",
    )  # fmt: skip


class Aimd(Policy):
    """AIMD on the accept-limit, driven by drops and overflows: every
    ``interval_s``, a multiplicative increase if the interval saw any SYN drop
    or ListenOverflow, else an additive decrease (the mirror image of TCP's
    AIMD: here drops ask for *more* accepting)."""

    name = "aimd"
    Params = AimdParams
    TUNE = {"increase": (1.1, 4.0, True), "decrease": (0.25, 16.0, True)}

    def __init__(self, params: AimdParams | None = None) -> None:
        self.p = params or AimdParams()
        self.start_state()

    def start_state(self) -> None:
        self.limit = self.p.initial
        self.every = Every(self.p.interval_s)
        self.last_drops = 0

    def start(self, view: ServerView) -> None:
        self.start_state()

    def accept_limit(self, view: ServerView) -> float:
        p = self.p
        if self.every.due(view.now):
            drops = view.drops
            if drops > self.last_drops:
                self.limit = min(self.limit * p.increase, p.max_limit)
            else:
                self.limit = max(self.limit - p.decrease, p.min_limit)
            self.last_drops = drops
        return math.inf if math.isinf(self.limit) else int(self.limit)


@dataclass(frozen=True)
class HillClimbParams(Params):
    _prefix = "policy.hill-climb."
    interval_s: float = param(
        0.5, unit="s", gt=0.0, doc="measurement epoch: reply rate is compared epoch to epoch"
    )
    initial: float = param(16.0, unit="connections", ge=1.0, doc="limit at the start")
    step: float = param(
        2.0, unit="factor", gt=1.0, doc="multiplicative step of the limit (log-scale climbing)"
    )
    tolerance: float = param(
        0.01, unit="fraction", ge=0.0,
        doc="an epoch counts as worse only if its reply rate drops by more than this fraction",
    )  # fmt: skip
    min_limit: float = param(1.0, unit="connections", ge=1.0, doc="least limit")
    max_limit: float = param(
        64.0, unit="connections", ge=1.0,
        doc="largest limit (half the accept queue: see queue-aware's max_limit)",
    )  # fmt: skip
    within_ms: float = param(
        INF, unit="ms", gt=0.0, allow_inf=True,
        doc="response-time bound: climb to the most replies among the limits that answer "
        "quantile of them within it (inf: no bound, the most replies)",
    )  # fmt: skip
    quantile: float = param(
        0.99, unit="fraction", gt=0.0, le=1.0,
        doc="the share of an epoch's replies that must be within within_ms (0.99: its "
        "99th percentile)",
    )  # fmt: skip


class HillClimb(Policy):
    """Online hill-climbing of the accept-limit on the reply rate.

    Every ``interval_s`` compare the epoch's replies with the previous epoch's;
    keep moving the limit (by a factor ``step``) in the same direction while
    the epoch is not worse, reverse otherwise.  Without a bound an epoch is
    worse if its reply rate fell by more than ``tolerance``.

    With ``within_ms`` the climb seeks the most throughput subject to a
    response-time bound: an epoch *meets* the bound if at most ``1 - quantile``
    of its replies took longer than ``within_ms`` (request sent to reply
    received); an epoch that misses it is worse than one that meets it; of two
    that meet it, the one with fewer replies (by more than ``tolerance``) is
    worse; of two that miss it, the one with the larger share of slow replies
    (by more than ``tolerance`` of the replies) is worse.
    """

    name = "hill-climb"
    Params = HillClimbParams
    TUNE = {"interval_s": (0.1, 2.0, True), "step": (1.2, 4.0, True)}

    def __init__(self, params: HillClimbParams | None = None) -> None:
        self.p = params or HillClimbParams()
        self.bounded = self.p.within_ms != INF
        self.start_state()

    def start_state(self) -> None:
        self.limit = self.p.initial
        self.every = Every(self.p.interval_s)
        self.direction = 1
        self.last_replies = 0
        self.last_rate = -1.0
        self.last_slow = 0
        self.last_share = 1.0  # the previous epoch's share of slow replies
        self.last_met = False  # ... and whether it met the bound

    def start(self, view: ServerView) -> None:
        self.start_state()
        if self.bounded:
            view.watch_response_time(self.p.within_ms / 1000.0)

    def worse(self, view: ServerView, rate: int) -> bool:
        """Is the epoch that just ended, with ``rate`` replies, worse than the one before?"""
        p = self.p
        if not self.bounded:
            return rate < self.last_rate * (1.0 - p.tolerance)
        slow = view.slow_replies
        share = (slow - self.last_slow) / rate if rate > 0 else 1.0
        self.last_slow = slow
        met = share <= 1.0 - p.quantile
        last_share, last_met = self.last_share, self.last_met
        self.last_share, self.last_met = share, met
        if met != last_met:
            return last_met
        if met:
            return rate < self.last_rate * (1.0 - p.tolerance)
        return share > last_share + p.tolerance

    def accept_limit(self, view: ServerView) -> float:
        p = self.p
        if self.every.due(view.now):
            replies = view.replies
            rate = replies - self.last_replies
            self.last_replies = replies
            if self.worse(view, rate):
                self.direction = -self.direction
            self.last_rate = rate
            factor = p.step if self.direction > 0 else 1.0 / p.step
            limit = min(max(self.limit * factor, p.min_limit), p.max_limit)
            if limit in (p.min_limit, p.max_limit):
                self.direction = -1 if limit == p.max_limit else 1
            self.limit = limit
        return int(self.limit)


@dataclass(frozen=True)
class HoldOpenParams(HillClimbParams):
    _prefix = "policy.hold-open."
    growth: float = param(
        0.05, unit="fraction per epoch", gt=0.0,
        doc="an epoch whose mean open connections exceed the previous epoch's by more than "
        "this fraction counts as a growing one",
    )  # fmt: skip
    growth_epochs: int = param(
        3, unit="epochs", ge=1,
        doc="consecutive growing epochs without a reply-rate gain (more than tolerance) that "
        "make the policy cap open connections at the level the growth started from",
    )  # fmt: skip
    min_open: float = param(
        16.0, unit="connections", ge=1.0,
        doc="least cap on open connections (and growth below this level is ignored)",
    )  # fmt: skip
    release: float = param(
        1.25, unit="factor", gt=1.0,
        doc="after an epoch whose reply rate rose by more than tolerance, the cap is "
        "multiplied by this (the server may hold more); it is lifted when it stops binding",
    )  # fmt: skip


class HoldOpen(HillClimb):
    """Hill-climbing of the accept-limit, plus a cap that holds open connections
    near the level where the reply rate stopped rising.

    The accept-limit climbs as in ``hill-climb``.  Every epoch the policy also
    compares the epoch's mean open connections with the previous epoch's: when
    they grew by more than ``growth`` for ``growth_epochs`` epochs in a row while
    neither the accept-limit nor the reply rate (by more than ``tolerance``)
    rose, the server is
    accumulating connections it does not turn into replies (their poll or
    select cost grows with them), so open connections are capped at the level
    the growth started from: a phase accepts at most ``cap - open`` (0 skips
    it).  A reply-rate gain raises the cap by ``release``; a cap that no
    longer binds (open connections below half of it for an epoch) is lifted.
    """

    name = "hold-open"
    Params = HoldOpenParams
    TUNE = {"interval_s": (0.1, 2.0, True), "growth": (0.01, 0.5, True)}

    def __init__(self, params: HoldOpenParams | None = None) -> None:
        super().__init__(params or HoldOpenParams())

    def start_state(self) -> None:
        super().start_state()
        self.cap = INF
        self.open_area = 0.0
        self.open_since = 0.0
        self.open_last = 0
        self.epoch_started = 0.0
        self.last_open_mean = -1.0
        self.growing = 0
        self.growth_from = 0.0
        self.last_epoch_limit = self.limit

    def start(self, view: ServerView) -> None:
        super().start(view)
        self.open_since = self.epoch_started = view.now
        self.open_last = view.open_connections

    def accept_limit(self, view: ServerView) -> float:
        now = view.now
        open_now = view.open_connections
        # time-weighted mean of open connections over the epoch (sampled at decisions)
        self.open_area += self.open_last * (now - self.open_since)
        self.open_since = now
        self.open_last = open_now
        if now >= self.every.next_at:
            span = now - self.epoch_started
            open_mean = self.open_area / span if span > 0 else float(open_now)
            self.open_area = 0.0
            self.epoch_started = now
            rate_before = self.last_rate
            replies_before = self.last_replies
            epoch_limit = self.limit  # the limit in force during the epoch that ended
            raised = epoch_limit > self.last_epoch_limit
            self.last_epoch_limit = epoch_limit
            limit = super().accept_limit(view)  # the climb (also advances the epoch)
            rate = view.replies - replies_before
            self.guard(open_mean, rate, rate_before, raised)
        else:
            limit = int(self.limit)
        if self.cap == INF:
            return limit
        room = int(self.cap) - open_now
        return min(limit, room) if room > 0 else 0

    def guard(self, open_mean: float, rate: float, rate_before: float, raised: bool) -> None:
        """The end-of-epoch update of the open-connection cap (``raised``: the epoch ran
        with a higher accept-limit than the one before, which explains its growth)."""
        p = self.p
        gained = rate_before > 0 and rate > rate_before * (1.0 + p.tolerance)
        last = self.last_open_mean
        grew = last >= p.min_open and open_mean > last * (1.0 + p.growth)
        if grew and not gained and not raised:
            if self.growing == 0:
                self.growth_from = last
            self.growing += 1
            if self.growing >= p.growth_epochs:
                self.cap = max(min(self.cap, self.growth_from), p.min_open)
                self.growing = 0
        else:
            self.growing = 0
        if self.cap != INF:
            if gained:
                self.cap *= p.release
            elif open_mean < self.cap / 2.0:
                self.cap = INF
        self.last_open_mean = open_mean


@dataclass(frozen=True)
class PidParams(Params):
    _prefix = "policy.pid."
    setpoint: float = param(
        0.5, unit="fraction of the accept queue", ge=0.0, le=1.0,
        doc="target accept-queue occupancy",
    )  # fmt: skip
    kp: float = param(64.0, unit="connections per unit occupancy", ge=0.0, doc="proportional gain")
    ki: float = param(
        20.0, unit="connections per unit occupancy per s", ge=0.0, doc="integral gain"
    )
    kd: float = param(0.0, unit="connections s per unit occupancy", ge=0.0, doc="derivative gain")
    bias: float = param(1.0, unit="connections", ge=0.0, doc="limit at zero error")
    min_limit: float = param(0.0, unit="connections", ge=0.0, doc="least limit (0: may skip)")
    max_limit: float = param(
        64.0, unit="connections", ge=1.0, doc="largest limit (also bounds the integral)"
    )


class Pid(Policy):
    """A PID controller on accept-queue occupancy: the accept-limit is
    ``bias + kp*e + ki*integral(e) + kd*de/dt`` with ``e`` the occupancy above
    ``setpoint``; the integral is clamped so the limit stays in range
    (anti-windup)."""

    name = "pid"
    Params = PidParams
    TUNE = {"setpoint": (0.05, 0.95, False), "kp": (1.0, 512.0, True)}

    def __init__(self, params: PidParams | None = None) -> None:
        self.p = params or PidParams()
        self.start_state()

    def start_state(self) -> None:
        self.integral = 0.0
        self.last_error = 0.0
        self.last_at = 0.0

    def start(self, view: ServerView) -> None:
        self.start_state()
        self.last_at = view.now

    def accept_limit(self, view: ServerView) -> float:
        p = self.p
        now = view.now
        dt = now - self.last_at
        error = view.accept_queue_len / view.accept_queue_capacity - p.setpoint
        derivative = 0.0
        if dt > 0:
            if p.ki > 0:
                self.integral += error * dt
                bound = p.max_limit / p.ki
                self.integral = min(max(self.integral, -bound), bound)
            derivative = (error - self.last_error) / dt
            self.last_error = error
            self.last_at = now
        out = p.bias + p.kp * error + p.ki * self.integral + p.kd * derivative
        return int(round(min(max(out, p.min_limit), p.max_limit)))


#: the built-in policies by name
POLICIES: dict[str, Any] = {
    cls.name: cls
    for cls in (StaticLimit, QueueAware, PhaseBudget, Aimd, HillClimb, HoldOpen, Pid)
}


# -- building a policy from a configuration --------------------------------------------------
def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"aimd:decrease=0.5,interval_s=0.2"`` -> ``("aimd", {"decrease": 0.5, ...})``;
    a custom policy's spec (:func:`custom_spec`) -> ``("MODULE:CLASS", {...})``."""
    if not isinstance(spec, str):
        raise ConfigError("policy", spec, "a policy name, optionally NAME:key=value,...")
    custom = custom_spec(spec)
    if custom is not None:
        return f"{custom[0]}:{custom[1]}", custom[2]
    name, _, rest = spec.partition(":")
    name = name.strip()
    if name not in POLICIES:
        raise ConfigError(
            "policy", name, "one of " + ", ".join(POLICIES) + ", or MODULE:CLASS (a policy "
            "class of yours, importable: acceptsim policies says more)",
        )
    return name, _spec_values(name, rest)


def _spec_values(name: str, rest: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for item in filter(None, (s.strip() for s in rest.split(","))):
        key, text = split_assignment(f"policy.{name}", item, "key=value")
        values[key] = parse_value(text)
    return values


# -- policies of the user's, named by where they live ------------------------------------------
#: ``MODULE:CLASS``, optionally ``@DIGEST`` of its source, then optionally ``:key=value,...``
_CUSTOM = re.compile(
    r"\s*(?P<module>[A-Za-z_][\w.]*)\s*:\s*(?P<qualname>[A-Za-z_][\w.]*)"
    r"(?:@(?P<digest>[0-9a-f]+))?\s*(?::(?P<rest>.*))?",
    re.S,
)


def custom_spec(spec: str) -> tuple[str, str, dict[str, Any]] | None:
    """``(module, qualname, values)`` when ``spec`` names a policy class of the user's,
    ``"MODULE:CLASS[@DIGEST][:key=value,...]"`` (``"mypolicies:Backoff"``,
    ``"__main__:Backoff"`` for a class defined in a notebook); None for a built-in
    policy's spec.  The optional digest is of the class's source (:func:`spec_of` adds
    it), so that a sweep's run keys change when the code does."""
    head = spec.partition(":")[0].strip()
    if head in POLICIES:
        return None
    match = _CUSTOM.fullmatch(spec)
    if match is None or "=" in match["qualname"]:
        return None
    name = f"{match['module']}:{match['qualname']}"
    return match["module"], match["qualname"], _spec_values(name, match["rest"] or "")


def import_named(field: str, module: str, qualname: str, what: str) -> Any:
    """The object ``module:qualname`` names (a class of the user's: a policy, a server);
    a ConfigError naming ``field`` and the spec when the module cannot be imported, fails
    on import, or does not define it (``what``: what it should be, for the message)."""
    spec = f"{module}:{qualname}"
    try:
        obj: Any = _import_noting_sigint(module)
    except _RaisedByModule as exc:  # KeyboardInterrupt raised by the module, not by a SIGINT
        raise ConfigError(field, spec, "a module that imports without an error (it raised "
                          f"KeyboardInterrupt: {exc.__cause__})") from None
    except ImportError as exc:
        raise ConfigError(field, spec, f"an importable module ({exc})") from None
    except (Exception, SystemExit) as exc:  # noqa: BLE001 (the user's module failed: say how)
        raise ConfigError(field, spec, f"a module that imports without an error (it "
                          f"raised {type(exc).__name__}: {exc})") from None
    for part in qualname.split("."):
        if not hasattr(obj, part):
            raise ConfigError(field, spec, f"{what} defined in {module}")
        obj = getattr(obj, part)
    return obj


class _RaisedByModule(Exception):
    """A KeyboardInterrupt that a module raised itself while imported (no SIGINT came)."""


def _import_noting_sigint(module: str) -> Any:
    """``importlib.import_module(module)``; a KeyboardInterrupt the module raises itself
    becomes :class:`_RaisedByModule` (a SIGINT during the import still stops the command as
    SIGINT does).  Off the main thread, where signals cannot be handled, the import as is."""
    import importlib
    import signal

    came: list[int] = []

    def note(signum: int, frame: Any) -> None:
        came.append(signum)
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGINT, note)
    except ValueError:  # not the main thread
        return importlib.import_module(module)
    try:
        return importlib.import_module(module)
    except KeyboardInterrupt as exc:
        if came:
            raise
        raise _RaisedByModule() from exc
    finally:
        signal.signal(signal.SIGINT, previous)


def source_digest(obj: Any) -> str:
    """``"@DIGEST"``: a digest of a class's (or function's) source, which a spec of the
    user's carries so that the configuration changes when the code does; ``""`` when it
    has no source (built in C, compiled, or typed at a bare prompt)."""
    try:
        source = inspect.getsource(obj)
    except (OSError, TypeError):
        return ""
    return f"@{hashlib.sha256(source.encode()).hexdigest()[:12]}"


def load_custom(module: str, qualname: str) -> Any:
    """The class (or zero-argument factory) ``module:qualname`` names; a ConfigError
    naming the policy when it cannot be imported."""
    obj = import_named("policy", module, qualname, "a class or factory")
    if not callable(obj):
        raise ConfigError("policy", f"{module}:{qualname}",
                          "a policy class or zero-argument factory")
    return obj


def _make_custom(cls: Any, values: dict[str, Any], spec: str) -> Any:
    """An instance of a custom policy: ``cls(cls.Params.from_dict(values))`` when it has
    a parameter class (as the built-in policies do), else ``cls(**values)``."""
    params_cls = getattr(cls, "Params", None)
    try:
        if isinstance(params_cls, type) and issubclass(params_cls, Params):
            policy = cls(params_cls.from_dict(values))
        else:
            policy = cls(**values)
    except TypeError as exc:
        raise ConfigError("policy", spec, f"arguments {cls.__name__} takes ({exc})") from None
    except (Exception, SystemExit) as exc:  # noqa: BLE001 (the user's class failed: say how)
        raise ConfigError("policy", spec, f"a class that can be made ({cls.__name__} raised "
                          f"{type(exc).__name__}: {exc})") from None
    if not callable(getattr(policy, "accept_limit", None)):
        raise ConfigError("policy", spec, "a policy: an object with an accept_limit method")
    return policy


def spec_of(policy: Any) -> str:
    """The spec of a policy class or factory of the user's: ``"MODULE:CLASS@DIGEST"``, what
    a configuration, a sweep's table and a resumed sweep hold in its place.  The class
    must be importable by that name (defined at a module's top level, or in a notebook's
    ``__main__``: a sweep's worker processes are forked from the notebook)."""
    module = getattr(policy, "__module__", None)
    qualname = getattr(policy, "__qualname__", None)
    if not module or not qualname or "<" in qualname:
        raise ConfigError(
            "policy", policy, "a policy class or factory defined at a module's top level "
            "(a sweep's workers and a resumed sweep find it by its name)",
        )
    if load_custom(module, qualname) is not policy:
        raise ConfigError("policy", policy, f"the object named {module}:{qualname}")
    return f"{module}:{qualname}{source_digest(policy)}"


def format_spec(name: str, values: dict[str, Any]) -> str:
    """The inverse of :func:`parse_spec` (for records and command lines)."""
    if not values:
        return name
    items = ",".join(f"{k}={'inf' if v == INF else v}" for k, v in values.items())
    return f"{name}:{items}"


def policy_params(spec: str, accept_limit: float = 1) -> Any:
    """The validated parameter set of a policy spec (unknown or out-of-range keys
    raise a ConfigError naming the policy and the parameter); for a custom policy, a
    fresh instance is made once to check the class and its arguments, and its
    parameter set (``p``) or its arguments are returned."""
    custom = custom_spec(spec) if isinstance(spec, str) else None
    if custom is not None:
        policy = _make_custom(load_custom(custom[0], custom[1]), custom[2], spec)
        params = getattr(policy, "p", None)
        return params if isinstance(params, Params) else dict(custom[2])
    name, values = parse_spec(spec)
    params_cls = POLICIES[name].Params
    if name == "static" and "limit" not in values:
        values["limit"] = accept_limit
    return params_cls.from_dict(values)


def reads_accept_limit(spec: Any) -> bool:
    """Whether a run under this policy reads the configuration's static ``accept_limit``:
    only the built-in ``static`` without its own ``limit=`` does; every other policy sets
    its limit itself, so a sweep does not cross it with a list of static limits."""
    if not isinstance(spec, str) or custom_spec(spec) is not None:
        return False
    name, values = parse_spec(spec)
    return name == StaticLimit.name and "limit" not in values


def build(spec: str, accept_limit: float = 1) -> Any:
    """A fresh policy object for a spec: a built-in policy, or a class of the user's."""
    custom = custom_spec(spec)
    if custom is not None:
        return _make_custom(load_custom(custom[0], custom[1]), custom[2], spec)
    name, _ = parse_spec(spec)
    return POLICIES[name](policy_params(spec, accept_limit))


def describe() -> list[dict[str, Any]]:
    """Every built-in policy: its name, summary and parameter table."""
    out = []
    for name, cls in POLICIES.items():
        out.append({"name": name, "doc": summary_of(cls), "params": cls.Params.describe()})
    return out


# -- the server side: one bound policy per server --------------------------------------------
class BoundPolicy:
    """A policy bound to one server: what the server model calls.

    It turns the user's policy into checked decisions: the view is built once,
    every returned value is validated (:class:`PolicyError` otherwise), and the
    last decisions are kept for time series (``last_limit``, ``last_budget_s``).
    """

    __slots__ = (
        "policy", "name", "view", "last_limit", "last_budget_s", "_budget", "bounds_work"
    )

    #: the accept-limit of every phase if it never changes, else 0 (a server may
    #: then skip asking :meth:`accept_limit`, which would return it)
    static_limit: float = 0

    def __init__(self, policy: Any, server: ServerState) -> None:
        self.policy = policy
        self.name = str(getattr(policy, "name", type(policy).__name__))
        if not callable(getattr(policy, "accept_limit", None)):
            raise ConfigError("policy", self.name, "an object with an accept_limit(view) method")
        self.view = ServerView(server)
        self.last_limit = math.nan
        self.last_budget_s = INF
        self._budget = getattr(policy, "work_budget", None)
        if getattr(type(policy), "work_budget", None) is Policy.work_budget:
            self._budget = None  # Policy's default: no bound, nothing to ask or check
        #: False: :meth:`work_budget` is always inf (a server may skip asking)
        self.bounds_work = self._budget is not None
        start = getattr(policy, "start", None)
        if start is not None:
            try:
                start(self.view)
            except Exception as exc:
                raise PolicyError(self.name, "start", f"raised {exc!r}") from exc

    def accept_limit(self, server: Any = None) -> float:
        """The checked accept-limit for the phase that is starting (0 = skip it)."""
        try:
            value = self.policy.accept_limit(self.view)
        except PolicyError:
            raise
        except Exception as exc:
            raise PolicyError(self.name, "accept_limit", f"raised {exc!r}") from exc
        if value.__class__ is not int:
            value = self._check_limit(value)
        elif value < 0:
            raise PolicyError(self.name, "accept_limit", f"returned {value!r}; {_LIMIT_RULE}")
        self.last_limit = value
        return value

    def _check_limit(self, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            try:  # numpy scalars and the like
                import numbers

                if isinstance(value, numbers.Real) and not isinstance(value, bool):
                    value = float(value)
                else:
                    raise TypeError
            except TypeError:
                raise PolicyError(
                    self.name, "accept_limit", f"returned {value!r}; {_LIMIT_RULE}"
                ) from None
        if math.isnan(value) or value < 0 or (value != INF and value != int(value)):
            raise PolicyError(self.name, "accept_limit", f"returned {value!r}; {_LIMIT_RULE}")
        return INF if value == INF else int(value)

    def work_budget(self, server: Any = None) -> float:
        """The checked time budget (s) of the work phase that is starting."""
        if self._budget is None:
            return INF
        try:
            value = self._budget(self.view)
        except Exception as exc:
            raise PolicyError(self.name, "work_budget", f"raised {exc!r}") from exc
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or math.isnan(value)
            or value <= 0
        ):
            raise PolicyError(
                self.name, "work_budget", f"returned {value!r}; must be a number of seconds > 0 "
                "or inf",
            )  # fmt: skip
        self.last_budget_s = value
        return value


class StaticBound(BoundPolicy):
    """A :class:`StaticLimit` bound to a server: the same decisions as
    :class:`BoundPolicy` gives it, without asking and checking per phase (the
    limit was checked when the policy was made, and it never changes).  The
    servers read :attr:`static_limit` instead of calling :meth:`accept_limit`."""

    __slots__ = ("static_limit",)

    def __init__(self, policy: StaticLimit, server: ServerState) -> None:
        super().__init__(policy, server)
        self.static_limit = self.last_limit = policy.limit

    def accept_limit(self, server: Any = None) -> float:
        return self.static_limit


def is_factory(policy: Any) -> bool:
    """Is ``policy`` a class or a zero-argument factory (called for a fresh policy per
    run, or per worker), rather than a policy object?"""
    return isinstance(policy, type) or (callable(policy) and not hasattr(policy, "accept_limit"))


def bind(policy: Any, server: ServerState) -> BoundPolicy:
    """``policy`` bound to ``server``: what the server model calls."""
    if type(policy) is StaticLimit:  # exactly: a subclass may decide otherwise
        return StaticBound(policy, server)
    return BoundPolicy(policy, server)


_LIMIT_RULE = "must be a whole number >= 0 (0 skips the accept phase) or inf"
