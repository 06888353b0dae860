"""Open-loop httperf-style clients.

New connections start at the target rate whatever the server does
(Poisson or evenly spaced), so the server can be overloaded.  Each
connection makes its workload's requests one after another (HTTP/1.1, one
outstanding request), and closes when the last reply arrives.  httperf's
``--timeout`` applies to each step: a connection that makes no progress
within it (no SYN-ACK for its SYNs, no reply to its request) is closed and
counted as ``client-timo``; work the server then does for it is wasted.

Client-side TCP behaviour (Linux 2.4 client):

* a dropped SYN is retransmitted after 3 s, then 6, 12, 24 and 48 s, unless
  the step has timed out first;
* after a ListenOverflow the client believes it is connected; its request
  is not acknowledged, so it retransmits it on the data RTO (200 ms, doubling)
  and each retransmission retries the server's move into the accept queue.
  After the client times out and closes, the socket is orphaned and keeps
  retransmitting until ``orphan_retries`` retransmissions, then it is
  destroyed and any later SYN-ACK from the server draws a RST.

httperf itself is one process per client machine that polls ``select()``
with a zero timeout over every socket it holds (``costs.client_*``): the
client *kernel* answers a SYN-ACK at once, but the *application* writes its
request when its loop next sees the socket writable, and closes the
connection when it next sees the reply; each costs about one scan of all its
sockets (:meth:`Client.reaction_delay`).  Below saturation a client machine
holds a handful of sockets and reacts within microseconds; past it, every
connection whose SYN was dropped stays open on the client until it times
out, the scans slow to milliseconds, and the server holds each connection
open that much longer (a server that pays per open descriptor, as select()
and Capriccio's poll do, then collapses).  With both loop costs 0 the request
leaves right behind the ACK and the FIN one round trip after the reply.

The client's two clocks (``processes_per_cpu`` > 1, with a ticking client kernel): the
kernel retransmits a dropped SYN on its timer wheel (late by up to a bucket), while
httperf, whose processes busy-poll, gives a step up only in its process's turn on the
CPU.  A SYN retransmitted between the deadline and that turn still goes out, and if it
gets in, the handshake completes and httperf closes the connection unused
(:meth:`Client.give_up_at`, :meth:`Client.syn_ack`).

Timeouts are not events: a step's deadline is stored on the connection and
compared with the clock wherever it matters (a late reply, a segment the
server touches, the end of the run), which gives the same outcomes at a
fraction of the events.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from mypy_extensions import mypyc_attr

from acceptsim.models import arrivals
from acceptsim.models.connection import SYN_RECV, SYN_SENT, Connection
from acceptsim.models.costs import CLUSTER1
from acceptsim.models.kernel import (
    BARE_ACK,
    FIN,
    FIRST_REQUEST,
    HANDSHAKE_ACK,
    REQUEST,
    RESET,
    SYN,
    ClientSide,
    ListenPath,
    Segment,
)
from acceptsim.models.tcp import SendPath
from acceptsim.models.workloads import Workload
from acceptsim.sim.cpu import growth
from acceptsim.sim.engine import Draws, DrawsOf, Handler, ItemLine
from acceptsim.sim.params import Params, param
from acceptsim.sim.streams import Streams

if TYPE_CHECKING:
    from acceptsim.models.costs import HostCosts
    from acceptsim.models.kernel import KernelProfile
    from acceptsim.sim.engine import Environment


@mypyc_attr(native_class=False)  # a parameter set: a plain frozen dataclass
@dataclass(frozen=True)
class ClientParams(Params):
    """httperf's load and the network between clients and server."""

    _prefix = "client."

    rate_per_s: float = param(
        20000.0, unit="connections/s", gt=0.0, doc="target rate of new connections (httperf --rate)"
    )
    spacing: str = param(
        "poisson",
        unit="",
        choices=("poisson", "deterministic"),
        doc="spacing of connection starts; the paper's eight client machines make the "
        "aggregate close to Poisson",
    )
    timeout_s: float = param(10.0, unit="s", gt=0.0, doc="httperf --timeout, applied per step")
    rtt_s: float = param(
        100e-6, unit="s", ge=0.0, doc="round-trip time of the client-server LAN (gigabit, "
        "sub-ms); on loopback (RunConfig.network) the run sets it to twice the receive "
        "path's CPU (HostCosts.rx_segment_s), which the sending CPU spends before a "
        "segment reaches its socket"
    )
    rate_profile: str = param(
        "", unit="", doc="time-varying target rate (models.arrivals), e.g. "
        "step:10000@0,30000@20; empty: the constant rate_per_s",
    )
    reply_rate_sample_s: float = param(
        5.0, unit="s", gt=0.0, doc="httperf's reply-rate sampling interval (min/avg/max/stddev)"
    )
    concurrency: int = param(
        0, unit="connections", ge=0, doc="a closed loop of this many users (wrk, ab): each "
        "opens its next connection when its last one ends; 0: httperf's open loop at rate_per_s",
    )
    keepalive: bool = param(
        False, unit="", doc="closed loop: each user keeps its connection and sends its next "
        "request when the reply arrives, until a step times out",
    )
    asks_close: bool = param(
        False, unit="", doc="each request says Connection: close (wrk without keep-alive): "
        "the server closes after the reply instead of waiting for the client's next request "
        "or its FIN, and pays no keep-alive wait (HostCosts.keepalive_s).  False: HTTP/1.1's "
        "default, the server keeps every connection until the client closes it (httperf)",
    )
    connect_threads: int = param(
        0, unit="threads", ge=0, doc="a closed loop opened as wrk opens it: this many threads "
        "each open their share of the users' connections one after another, "
        "costs.client_connect_s apart, and send their first requests when the thread's last "
        "connect is done; 0: every user connects at once, a round trip apart",
    )
    kept_requests: int = param(
        0, unit="requests", ge=0, doc="with keepalive: the requests a kept connection "
        "carries before the server closes it, and its user connects anew (the server's own "
        "limit: nginx's keepalive_requests); 0: the server keeps it for the whole run",
    )
    processes_per_cpu: int = param(
        1, unit="processes", ge=1, doc="httperf processes sharing one client CPU.  httperf "
        "polls in a busy loop, so processes on one CPU take turns of one scheduler tick "
        "(the kernel profile's sched_tick_s) and a process checks its timeouts only in its "
        "turns: a step gives up at its deadline if its process is running then, else at "
        "the start of its next turn (:meth:`Client.give_up_at`).  1: each process has a CPU "
        "of its own (the paper's client machines)",
    )
    turn_order_s: float = param(
        0.0, unit="s", ge=0.0, doc="with processes_per_cpu > 1: how long the processes on "
        "one CPU keep the order of their turns, in the mean (anything else that runs on the "
        "CPU, such as a task waking there, reorders them).  A step whose order lasted until "
        "its deadline, with probability exp(-timeout_s / turn_order_s), finds its process "
        "where that order puts it; any other at a uniformly random place in its round "
        "(:meth:`Client.give_up_at`).  0: no order outlasts a timeout",
    )
    turn_delays: str = param(
        "", unit="", doc="with processes_per_cpu > 1: where a step's deadline finds its "
        "process, as measured: comma-separated probabilities p0,p1,...,pn that its process "
        "is running at the deadline (p0) or next runs on the d-th tick after the deadline's "
        "(pd), summing to 1 (acceptsim measure's traced runs: "
        "acceptsim.measure.switch_trace.KeptShare.delays).  In place of turn_order_s's kept or "
        "uniform place; empty: not given",
    )


def parse_turn_delays(text: str) -> list[float]:
    """The cumulative probabilities of ``ClientParams.turn_delays`` (empty: none given);
    ValueError saying what is wrong."""
    if not text.strip():
        return []
    try:
        probabilities = [float(x) for x in text.split(",")]
    except ValueError:
        raise ValueError("comma-separated numbers") from None
    if not all(math.isfinite(x) and x >= 0.0 for x in probabilities):
        raise ValueError("probabilities of 0 or more")
    if len(probabilities) > MAX_TURN_DELAYS:
        raise ValueError(f"at most {MAX_TURN_DELAYS} probabilities "
                         f"(ticks 0..{MAX_TURN_DELAYS - 1})")
    total = math.fsum(probabilities)
    if abs(total - 1.0) > TURN_DELAYS_TOLERANCE:
        raise ValueError(f"probabilities summing to 1 (within {TURN_DELAYS_TOLERANCE:g}; "
                         f"these sum to {total:.6g})")
    cumulative = []
    running = 0.0
    for x in probabilities:
        running += x / total
        cumulative.append(running)
    cumulative[-1] = 1.0
    return cumulative


#: the most ticks after a deadline ``ClientParams.turn_delays`` may name, plus one
MAX_TURN_DELAYS: Final = 64
#: how far from 1 the probabilities of ``ClientParams.turn_delays`` may sum (rounding)
TURN_DELAYS_TOLERANCE: Final = 1e-3


COMPLETED: Final = "completed"
TIMED_OUT: Final = "timed_out"
#: requests left on a closed-loop user's kept-alive connection that the server never
#: closes: more than any run makes
KEEPALIVE_REQUESTS: Final = 1 << 60
#: slack, in ticks, for instants computed on a tick boundary in floating point
_TICK_EPS: Final = 1e-6
#: Linux 4.8's timer wheel (kernel/time/timer.c): buckets per level (LVL_SIZE) and levels
#: (LVL_DEPTH at HZ > 100): a delay of d ticks is filed at the first level n whose range,
#: up to (LVL_SIZE - 1) << n * LVL_CLK_SHIFT ticks, holds it
_WHEEL_BUCKETS: Final = 64
_WHEEL_LEVELS: Final = 9


def _uniform(gen: np.random.Generator, n: int) -> np.ndarray:
    """``n`` uniform draws on [0, 1) (a block of :meth:`Streams.draws`)."""
    return gen.random(n)


class _Arrivals(Handler):
    """The client's open-loop arrivals: the handler of their recurring call."""

    __slots__ = ("client",)

    def __init__(self, client: Client) -> None:
        self.client = client

    def __repr__(self) -> str:  # what it calls (acceptsim bench --events names it so)
        return "Client._arrival"

    def handle(self, value: object) -> None:
        self.client._arrival(value)


class Client(ClientSide):
    """All client machines together: one open-loop stream of connections."""

    def __init__(
        self,
        env: Environment,
        params: ClientParams,
        profile: KernelProfile,
        workload: Workload,
        streams: Streams,
        costs: HostCosts | None = None,
    ) -> None:
        """``costs``: the testbed's parameter set, for its client machines' event-loop
        costs (``client_*``); without it the clients react at once."""
        self.env = env
        self.clock = env.clock
        self.params = params
        self.profile = profile
        # the SYN retransmission settings, read once (native fields)
        self._syn_rto: float = profile.syn_rto_s
        self._syn_retries: int = profile.syn_retries
        self.streams = streams  # a server may start a client stream of its own from the same run
        self.workload = workload
        #: where this client's segments go: the server's listen socket, or the group of
        #: sockets a SYN's hash picks from (``profile`` is the kernel's settings)
        self.listen_path: ListenPath | None = None
        # optional workload hooks (see models.workloads.Workload)
        self._start_connection = getattr(workload, "start_connection", None)
        #: a think time independent of the connection is drawn by the workload's sampler
        #: itself (``think_draw``, None: no think time); else asked of ``think_time``
        self._think_draw: Callable[[], float] | None = getattr(workload, "think_draw", None)
        self._think_time = (None if hasattr(workload, "think_draw")
                            else getattr(workload, "think_time", None))
        fixed = getattr(workload, "fixed_shape", None)
        #: requests after the first and reply size of every connection, if all are alike
        self._fixed_left: int | None = fixed[0] - 1 if fixed else None
        self._fixed_bytes: int = fixed[1] if fixed else 0
        #: the workload's reply size; its value is kept as it comes (an int that may also
        #: name its file, models.fileset.FileReply), never converted
        self._reply_bytes: Callable[[], Any] = workload.reply_bytes
        self.owd = params.rtt_s / 2
        self.rtt = params.rtt_s
        #: segments that answer a segment just received come back one round trip later
        self._lan = env.delay_line(params.rtt_s)
        #: a first SYN's handshake completes inside connect() (loopback)
        self._in_connect = False
        self.timeout = params.timeout_s
        #: httperf processes taking turns on one client CPU, and the length of a turn
        self._turns: int = params.processes_per_cpu
        self._turn_s: float = profile.sched_tick_s
        #: a SYN timer and a give-up due on the same tick: the tick's timers run before
        #: the process's turn does, so the retransmission goes out (:meth:`syn_dropped`)
        self._timer_first: float = 0.0
        #: the chance that a step's deadline finds its process's turns in the order they
        #: had when the step began (:meth:`give_up_at`)
        self._order_kept: float = 0.0
        if self._turns > 1:
            self._turn_place = streams.draws("client_turns", _uniform)
            self._process_draw = streams.draws("client_processes", _uniform)
            self._timer_first = _TICK_EPS * self._turn_s
            if params.turn_order_s > 0.0:
                self._order_kept = math.exp(-params.timeout_s / params.turn_order_s)
                self._order_draw = streams.draws("client_turn_order", _uniform)
        #: measured places of a deadline in its process's round (turn_delays), cumulative
        self._delay_cdf: list[float] = (parse_turn_delays(params.turn_delays)
                                        if self._turns > 1 else [])
        mean_gap = 1.0 / params.rate_per_s
        self._gap: Draws = (
            streams.draws("arrivals", lambda g, n: g.exponential(mean_gap, n))
            if params.spacing == "poisson" else DrawsOf(lambda: mean_gap)
        )  # fmt: skip
        #: the time-varying target rate, if any (None: constant ``rate_per_s``)
        self.rate_profile = arrivals.parse(params.rate_profile)
        if self.rate_profile is not None:
            self._gap = DrawsOf(arrivals.thinned_gaps(
                self.rate_profile, streams, lambda: env.now - self.owd, params.spacing
            ))
        self._next_id = 0
        #: connections that fell due (deterministic spacing: dealt to the processes in turn)
        self._arrivals = 0
        self._poisson = params.spacing == "poisson"
        #: a closed loop's users (0: the open loop), whether they keep their connections,
        #: and the timers at which they give a step up
        self._users: int = params.concurrency
        self._keepalive: bool = params.keepalive
        #: requests a kept connection has after its first (the server's limit, or none)
        self._kept_left: int = (
            params.kept_requests - 1 if params.kept_requests > 0 else KEEPALIVE_REQUESTS
        )
        #: whether each request says Connection: close (the server keeps no connection)
        self.asks_close: bool = params.asks_close
        #: wrk's connect loop: its threads, each connect's client CPU, and when the last
        #: thread's loop ends (no first request leaves before it)
        self._connect_threads: int = params.connect_threads
        self._connect_s: float = costs.client_connect_s if costs is not None else 0.0
        #: a closed loop's client threads: each one's CPU per reply and per new connection,
        #: and when each is next free (``_thread_done``)
        self._request_cpu: float = costs.client_request_s if costs is not None else 0.0
        self._connection_cpu: float = costs.client_connection_s if costs is not None else 0.0
        self._thread_free: list[float] = [0.0] * max(1, params.connect_threads)
        self._threads_busy = bool(
            self._users and params.connect_threads and (self._request_cpu or self._connection_cpu)
        )
        #: whether the thread that took the last reply (``_thread_done``) was asleep, and
        #: what waking such a thread costs the reply's sender (:meth:`reply` returns it)
        self._thread_slept = False
        #: when that thread began the work (a wrk thread closes a socket then)
        self._thread_start = 0.0
        self._wake_reader_s: float = costs.wake_reader_s if costs is not None else 0.0
        self._wake_latency: float = costs.wakeup_latency_s if costs is not None else 0.0
        self._wake_latency_cold: float = (
            costs.wakeup_latency_cold_s if costs is not None else 0.0)
        self._wake_latency_tau: float = costs.wakeup_latency_tau_s if costs is not None else 0.0
        self._first_request_at: float = 0.0
        self._user_timers = env.timer_lane()
        #: the connections not yet resolved (completed or timed out), in no order: each
        #: knows its place (``Connection.live_at``), and one that resolves gives its place
        #: to the last (:meth:`hold`, ``_let_go``).  A set's table is probed at a
        #: random slot: a long run past saturation holds 131,000 connections, whose table
        #: outgrows the caches (7% of a 60-s run's time in its look-ups)
        self.live: list[Connection] = []
        #: httperf's event loop delays the application's reactions (:meth:`reaction_delay`;
        #: False: it reacts at once)
        self._reacts = False
        self._loop_base = 0.0
        self._loop_per_socket = 0.0
        if costs is not None and (costs.client_loop_base_s or costs.client_poll_per_socket_s):
            self._loop_base = costs.client_loop_base_s
            self._loop_per_socket = costs.client_poll_per_socket_s / costs.client_machines
            self._phase = streams.draws("client_loop", _uniform)
            self._reacts = True
        #: the client kernels' timer tick (0: retransmission timers fire at their exact
        #: instant) and, per client machine, the phase of its ticks
        self._tick = profile.client_timer_tick_s
        self._wheel_shift: int = profile.client_timer_wheel_shift
        self._machines = costs.client_machines if costs is not None else 1
        self._tick_phase: list[float] = []
        if self._tick > 0:
            phases = streams.generator("client_ticks").random(self._machines) * self._tick
            self._tick_phase = phases.tolist()
        #: retransmitted SYNs waiting for their tick (thousands past saturation): one line
        #: per machine and retransmission, each in FIFO order (its connections' first SYNs
        #: were dropped in the order they were sent, and its instants follow that order),
        #: made by :meth:`connect` (they hand the SYNs to the server's listen path)
        self._syn_levels = profile.syn_retries
        self._syn_lines: list[ItemLine] = []
        #: retransmitted requests waiting for their tick
        self._rtx_timers = env.timer_lane()
        #: the server host's send side and its links to the client machines (the run may
        #: replace it: :class:`acceptsim.models.host.Host`)
        self.tx = SendPath(
            env, self, profile, costs if costs is not None else CLUSTER1, self._machines,
            (costs if costs is not None else CLUSTER1).nics,
        )
        self.reaction_delays = 0.0  # sum over the window, with their count
        self.reactions = 0
        #: when the clients start (s), set by the run before it starts: a closed loop's
        #: users all connect at once, and where that falls on the kernel's timer grid
        #: decides the fate of the first connections (:class:`acceptsim.models.host.Host`)
        self.start_s = 0.0
        # measurement window, set by the run before it starts
        self.window_start = 0.0
        self.window_end = float("inf")
        # httperf-style counters over the window
        self.attempted = 0  # connections started in the window
        #: httperf's "Maximum connect burst length": the most connections one process
        #: started at one instant in the window, and the burst under way
        self.max_connect_burst = 0
        self._burst = 0
        self._burst_at = -1.0
        self.completed = 0  # ... of which completed by the end
        self.timed_out = 0  # ... of which timed out by the end
        #: SYNs the server dropped, summed over the window's completed (timed-out)
        #: connections: every SYN but the last of a completed one, every SYN of one that
        #: timed out before its SYN was queued, all but the last of the others
        self.completed_syn_drops = 0
        self.timed_out_syn_drops = 0
        self.in_flight_at_end = 0
        self.replies = 0  # replies received in the window
        self.timeouts = 0  # client timeouts whose instant lies in the window
        self.response_times: list[float] = []  # request sent -> reply received, in window
        self.requests = 0  # requests sent in the window
        self.reply_samples: list[int] = []  # replies per httperf sample interval
        self._sample_s = params.reply_rate_sample_s
        self.wasted_replies = 0  # replies the server sent to a client that had gone
        #: a closed loop's wrk threads woken from epoll_wait (by a reply whose instant
        #: lies in the window)
        self.thread_wakes = 0
        # over the whole run, warm-up included (what accept policies see)
        self.replies_total = 0
        self.timeouts_total = 0
        #: of ``replies_total``, those whose response time exceeded ``slow_bound_s``
        #: (an accept policy sets the bound: ``ServerView.watch_response_time``)
        self.slow_bound_s = float("inf")
        self.slow_replies_total = 0
        # optional: replies received per interval over the whole run (warm-up detection)
        self.series: list[int] | None = None
        self.series_interval_s = 0.0

    def connect(self, listen_path: ListenPath) -> None:
        """Send this client's segments to ``listen_path``, the server's listen socket (or
        the group of sockets a SYN's hash picks from)."""
        self.listen_path = listen_path
        # a handler per kind of segment, made once: segments are handed to them by the
        # thousand, and the engine calls them natively
        self._kernel_syn: Handler = Segment(listen_path, SYN)
        self._kernel_handshake_ack: Handler = Segment(listen_path, HANDSHAKE_ACK)
        self._kernel_bare_ack: Handler = Segment(listen_path, BARE_ACK)
        self._kernel_first_request: Handler = Segment(listen_path, FIRST_REQUEST)
        self._kernel_request: Handler = Segment(listen_path, REQUEST)
        self._kernel_fin: Handler = Segment(listen_path, FIN)
        self._kernel_reset: Handler = Segment(listen_path, RESET)
        self._make_syn_lines()

    def _make_syn_lines(self) -> None:
        """The lines of retransmitted SYNs, handing them to ``_kernel_syn``."""
        self._syn_lines = [ItemLine(self.env, self._kernel_syn)
                           for _ in range(self._machines * max(1, self._syn_levels))]

    def share_one_kernel(self) -> None:
        """Every client process runs on the server's kernel (the clients on the server's
        host, over loopback): their retransmission timers and turns tick with the server's
        scheduler, whose ticks fall on multiples of the tick from time 0 (``sim.cpu``).
        Linux ticks every CPU on the same jiffy grid unless ``skew_tick=1`` is booted
        (kernel/time/tick-sched.c, ``tick_setup_sched_timer``)."""
        if self._tick_phase:
            self._tick_phase = [0.0]

    def handshake_in_connect(self) -> None:
        """The clients connect over loopback: a connect() runs the whole handshake in its
        system call.  Its SYN is received in the softirq that the send raises, the
        listener's SYN-ACK comes back in the same softirq, and the client's ACK, sent as
        connect() releases its socket, reaches the listener before connect() returns
        (Linux: loopback_xmit hands the segment to the sending CPU's backlog, processed
        when the sender re-enables bottom halves).  So between the SYN's check of the
        accept queue and the ACK's move into it nothing else arrives, and a SYN that
        finds room always completes.  A retransmitted SYN leaves from the client's timer
        softirq instead, with the others of its tick: they are all received before any of
        their ACKs, which stay a round trip behind."""
        self._in_connect = True

    def record_series(self, interval_s: float, duration_s: float) -> None:
        """Also count replies per ``interval_s`` over ``duration_s`` from the clients'
        start (:attr:`start_s`)."""
        self.series_interval_s = interval_s
        self.series = [0] * max(1, int(duration_s / interval_s + 1e-9))

    # -- connection starts ------------------------------------------------------
    def start(self) -> None:
        """Schedule the first connections, from :attr:`start_s` on."""
        if self._users and self._connect_threads and self._connect_s > 0.0:
            # wrk: thread t opens users t, t + T, ... one connect after another, and starts
            # its event loop (the first requests) when its last connect is done
            threads = self._connect_threads
            for i in range(self._users):
                self.clock.call_at(self.start_s + self.owd + self._connect_s * float(i // threads),
                                   self._arrival)
            self._first_request_at = (
                self.start_s + self._connect_s * float(-(-self._users // threads))
            )
            return
        if self._users:  # a closed loop: every user connects at once, a round trip apart
            for i in range(self._users):
                self.clock.call_at(self.start_s + self.owd + self.rtt * i / self._users,
                                   self._arrival)
            return
        # each arrival draws the gap to the next before it runs
        self.env.call_recurring(self.start_s + self._gap.draw() + self.owd, self._gap,
                               _Arrivals(self))

    def _arrival(self, _: object) -> None:
        """A new connection's first SYN reaches the server (or, with httperf's processes
        taking turns on a CPU, its time to start comes: :meth:`_turn_start`)."""
        if self._turns > 1 and not self._users:
            due = self.clock.now - self.owd
            process = self._process_of_arrival()
            start = self._turn_start(process, due)
            if start > due:  # its process is waiting for its turn
                self.env.call_late_at(start + self.owd, self._start_now, process)
                return
            self._start_now(process)
            return
        self._start_now(0)

    def _process_of_arrival(self) -> int:
        """The httperf process whose connection falls due now.  Each process makes its
        share on a schedule of its own (``--client=i/k``): with Poisson spacing each is a
        Poisson stream of rate / k, so the process of an arrival of their sum is any of
        them with equal chance; with deterministic spacing they take the arrivals in turn.
        (httperf's "Maximum connect burst length" measures the result: the most
        connections one process started in one turn.)"""
        if self._poisson:
            return min(int(self._process_draw.draw() * float(self._turns)), self._turns - 1)
        process = self._arrivals % self._turns
        self._arrivals += 1
        return process

    def _turn_start(self, process: int, at: float) -> float:
        """When httperf process ``process`` next runs, at or after ``at``.

        Over a few ticks the processes on one CPU take their turns in a fixed round
        (turn m of the CPU's ticks is process m mod ``processes_per_cpu``'s): a
        process starts the connections that fell due while it waited at the start of
        its turn, in one burst, after the tick's timers have run (so a SYN the tick's
        timer retransmits goes first: hence the late priority in :meth:`_arrival`).
        """
        turn = self._turn_s
        phase = self._tick_phase[0] if self._tick_phase else 0.0
        m = math.floor((at - phase) / turn + _TICK_EPS)
        wait = (process - m) % self._turns
        return at if wait == 0 else phase + float(m + wait) * turn

    def _turn_wait(self, conn: Connection, received: float) -> float:
        """How long a reply to ``conn`` received at ``received`` waits for its httperf
        process to read it: until that process's turn (:meth:`_turn_start`) when processes
        take turns on a CPU, else not at all.  What httperf does next on the connection
        (its next request, or its close and FIN) leaves from its loop then."""
        if self._turns == 1 or self._users:
            return 0.0
        return self._turn_start(conn.process, received) - received

    def _start_now(self, process: int) -> None:
        """A new connection of httperf process ``process`` (0 with one per CPU): its first
        SYN reaches the server."""
        started = self.clock.now - self.owd
        conn = Connection(self._next_id, started, 0.0)
        conn.process = process
        conn.deadline = self.give_up_at(conn, started)
        self._next_id += 1
        if started >= self.window_start:
            self.attempted += 1
            # a process's burst: the connections it starts at one instant (its turn's start)
            if started == self._burst_at:
                self._burst += 1
            else:
                self._burst_at = started
                self._burst = 1
            if self._burst > self.max_connect_burst:
                self.max_connect_burst = self._burst
        self.hold(conn)
        if self._users:
            self._user_timers.call_at(conn.deadline, self._user_gives_up, conn)
        self._kernel_syn.handle(conn)

    # -- a closed loop's users --------------------------------------------------------------
    def _user_gives_up(self, conn: Connection) -> None:
        """A closed-loop user's timeout: if its step is still unanswered at the deadline
        (set again by every step), it closes the socket and connects anew."""
        if conn.outcome is None and self.clock.now >= conn.deadline:
            conn.client_dead = True  # nothing more is sent; a SYN-ACK draws a RST
            self.resolve(conn, TIMED_OUT, conn.deadline)

    def _user_next(self, at: float) -> None:
        """A closed-loop user's connection ended at ``at`` (client time): its next one's
        SYN reaches the server a one-way delay later."""
        if at <= self.window_end:
            self.clock.call_at(max(at + self.owd, self.clock.now), self._arrival)

    def _thread_done(self, at: float, cpu: float) -> float:
        """A closed-loop client's thread takes ``cpu`` seconds of work that arrived at
        ``at`` (client time): the thread free first does it, after its earlier work, and
        this returns when it is done.  (wrk keeps each connection on one thread; the
        first free one stands for it, exact with one thread.)"""
        free = self._thread_free
        best = 0
        for i in range(1, len(free)):
            if free[i] < free[best]:
                best = i
        if free[best] > at:
            self._thread_slept = False
            start = free[best]
        else:  # asleep in epoll_wait: the work wakes it, and it runs a wake-up's latency
            self._thread_slept = True  # later (work arriving meanwhile finds it woken),
            start = at + self._wake_latency + growth(  # longer the longer it slept
                self._wake_latency_cold, self._wake_latency_tau, at - free[best])
            if self.window_start <= at <= self.window_end:
                self.thread_wakes += 1
        self._thread_start = start
        done = start + cpu
        free[best] = done
        return done

    def _arm(self, conn: Connection) -> None:
        """A closed-loop step began: its user gives up at ``conn.deadline``."""
        self._user_timers.call_at(max(conn.deadline, self.clock.now), self._user_gives_up, conn)

    # -- handshake --------------------------------------------------------------
    def syn_dropped(self, conn: Connection) -> None:
        """The server dropped this SYN: retransmit after the backed-off RTO, or give up."""
        if conn.outcome is not None:  # a closed-loop user gave it up: no more SYNs
            return
        sent = conn.syn_sent
        # the k-th SYN was sent at started + rto * (2**(k-1) - 1): on a tick of its
        # machine's clock if the timers tick (the timer was armed with the first SYN)
        backoffs = self._syn_rto * float((1 << sent) - 1)
        if self._tick > 0:
            next_send = self.timer_fires(conn, conn.started_at, backoffs)
        else:
            next_send = conn.started_at + backoffs
        if sent > self._syn_retries or next_send - self._timer_first >= conn.deadline:
            self.resolve(conn, TIMED_OUT, conn.deadline)
            return
        conn.syn_sent = sent + 1
        if self._tick > 0:
            line = self._syn_lines[(conn.id % self._machines) * self._syn_levels + sent - 1]
            line.put_at(next_send + self.owd, conn)
            return
        # the retransmission reaches the server one backed-off RTO after this one did
        backoff = self._syn_rto * float(1 << (sent - 1))
        self.env.delay_line(backoff).put(self._kernel_syn, conn)

    def timer_fires(self, conn: Connection, armed_at: float, timeout: float) -> float:
        """When a client retransmission timer of ``conn`` armed at ``armed_at`` for
        ``timeout`` seconds fires, with the client kernels' timers ticking.

        The kernel counts time in ticks (jiffies): a timer armed during a tick
        expires ``timeout`` (rounded up to whole ticks) after that tick began, and
        runs at the tick interrupt; on Linux 4.8's wheel (``client_timer_wheel_shift``),
        at the first boundary of its level's bucket after that.  Every timer of one
        machine that expires in the same tick runs in that interrupt, so their
        segments leave together.  Each client machine's ticks have their own phase
        (one, for clients on the server's host: :meth:`share_one_kernel`); ``conn`` belongs to
        machine ``conn.id % client_machines``.
        """
        tick = self._tick
        phase = self._tick_phase[conn.id % len(self._tick_phase)]
        delay = math.ceil(timeout / tick - _TICK_EPS)
        expires = math.floor((armed_at - phase) / tick + _TICK_EPS) + delay
        shift = self._wheel_shift
        if shift:  # Linux 4.8's wheel: run at the first boundary of its level's bucket after
            level = 0  # it expires (the level whose range holds the delay)
            while level < _WHEEL_LEVELS - 1 and delay >= (_WHEEL_BUCKETS - 1) << (shift * level):
                level += 1
            width = shift * level
            expires = ((expires >> width) + 1) << width
        return phase + expires * tick

    def give_up_at(self, conn: Connection, since: float) -> float:
        """When httperf gives up a step of ``conn`` that began at ``since`` (its timeout's
        deadline, ``since + timeout``, on its process's clock).

        httperf checks its timers at the top of each turn of its event loop.  Its
        processes poll in a busy loop, so ``processes_per_cpu`` of them on one CPU take
        turns of one scheduler tick each, and a process that is not running at the
        deadline gives up at the start of its next turn, on a tick, after that tick's
        timers have run.  Where the deadline falls in its process's round of turns
        depends on whether the round kept its order since the step began (with
        probability exp(-timeout / ``turn_order_s``)): if it did, the order that started
        the step's connection (``_turn_start``) says when its process next runs; if
        not, the place is uniform, so with k processes the step gives up at once with
        probability 1/k and otherwise on the n-th tick after the deadline's, n uniform
        over 1..k-1.  A run that measured where its deadlines fall (``turn_delays``)
        draws the tick from that instead.  Everything the client does for the step
        compares with this instant: a reply arriving after it is not read, and a SYN its
        kernel retransmits before it, or on its tick, still goes out (:meth:`syn_dropped`).
        """
        deadline = since + self.timeout
        if self._turns == 1:
            return deadline
        turn = self._turn_s
        phase = self._tick_phase[0] if self._tick_phase else 0.0
        if self._delay_cdf:  # measured: its process next runs d ticks after the deadline's
            u = self._turn_place.draw()
            d = 0
            while u >= self._delay_cdf[d]:
                d += 1
            if d == 0:
                return deadline
            m = math.floor((deadline - phase) / turn + _TICK_EPS)
            return phase + float(m + d) * turn
        if self._order_kept > 0.0 and self._order_draw.draw() < self._order_kept:
            return self._turn_start(conn.process, deadline)
        place = self._turn_place.draw() * float(self._turns)  # in turns after its own began
        if place < 1.0:
            return deadline
        # the deadline falls in tick m; its process's turn began floor(place) ticks
        # before that, and its next one begins k ticks after that
        m = math.floor((deadline - phase) / turn + _TICK_EPS)
        return phase + float(m + self._turns - math.floor(place)) * turn

    def reaction_delay(self) -> float:
        """How long httperf takes to act on an event on one of its sockets (now).

        httperf is one process per client machine polling ``select()`` with a
        zero timeout over every socket it holds; an iteration costs
        ``client_loop_base_s`` plus ``client_poll_per_socket_s`` per socket.  An
        event lands at a uniformly random point of the iteration under way and is
        acted on after the next scan: the rest of this iteration, then one scan.
        The machine's sockets are the run's open client connections shared
        evenly among ``client_machines``.
        """
        scan = self._loop_base + self._loop_per_socket * float(len(self.live))
        delay = scan * (1.0 + self._phase.draw())
        if self.clock.now >= self.window_start:
            self.reaction_delays += delay
            self.reactions += 1
        return delay

    def syn_ack(self, conn: Connection) -> None:
        """The server queued the request and sent a SYN-ACK (now)."""
        if conn.client_dead:  # a closed-loop user gave it up: its kernel answers with a RST
            self.clock.post_in(self.rtt, self._kernel_reset, conn)
            return
        # a first SYN sent by connect() over loopback: the whole handshake runs in that
        # system call (:meth:`handshake_in_connect`), so the ACK reaches the listener now
        in_connect = self._in_connect and conn.syn_sent == 1
        connected = self.clock.now if in_connect else self.clock.now + self.owd
        if connected >= conn.started_at + self.timeout and conn.outcome is None:
            # a SYN the kernel retransmitted after the deadline, while httperf's process
            # waited for its turn (:meth:`give_up_at`): the kernel completes the
            # handshake, and in that turn httperf's timer check comes before it sees the
            # socket writable, so it closes the connection without a request
            self._lan.put(self._kernel_bare_ack, conn)  # its FIN follows its ACK
            self.clock.post_at(max(conn.deadline + self.owd, self.clock.now + self.rtt),
                               self._close_unused, conn)
            self.resolve(conn, TIMED_OUT, conn.deadline)
            return
        if self._fixed_left is not None:  # every connection alike
            conn.requests_left = self._fixed_left
            conn.reply_bytes = self._fixed_bytes
        elif self._start_connection is not None:  # a workload with per-connection sessions
            self._start_connection(conn)
        else:
            conn.requests_left = self.workload.requests_per_connection() - 1
            conn.reply_bytes = self._reply_bytes()
        if self._keepalive:
            conn.requests_left = self._kept_left
        if not self._reacts and connected >= self._first_request_at:
            # the request leaves right behind the ACK
            conn.request_sent_at = connected
            conn.deadline = self.give_up_at(conn, connected)
            if self._users:
                self._arm(conn)
            if connected >= self.window_start:
                self.requests += 1
            if in_connect:
                self._kernel_handshake_ack.handle(conn)
            else:
                self._lan.put(self._kernel_handshake_ack, conn)
            return
        # the client's kernel ACKs at once; httperf writes the request when its event
        # loop sees the socket writable (wrk: when its connect loop is done)
        sent = (connected + self.reaction_delay() if self._reacts
                else self._first_request_at)
        conn.request_sent_at = sent
        conn.deadline = self.give_up_at(conn, sent)
        if self._users:
            self._arm(conn)
        if sent >= self.window_start:
            self.requests += 1
        if in_connect:  # and the request, written on loopback, is received as it is sent
            self._kernel_bare_ack.handle(conn)
            self.clock.post_at(sent, self._kernel_first_request, conn)
            return
        self._lan.put(self._kernel_bare_ack, conn)
        self.clock.post_at(sent + self.owd, self._kernel_first_request, conn)

    def _close_unused(self, conn: Connection) -> None:
        """httperf's close of a connection it never used (:meth:`syn_ack`) reaches the
        server (now).  If the handshake's ACK overflowed the accept queue, the FIN, which
        acknowledges the SYN-ACK too, is one more try at the move, and the client
        retransmits it on the data RTO until it gets in or the orphaned socket gives up
        (``orphan_retries``)."""
        self._kernel_fin.handle(conn)
        if conn.state == SYN_RECV:
            self._kernel_bare_ack.handle(conn)
            self._fin_unacknowledged(conn, self.clock.now - self.owd)

    def _fin_unacknowledged(self, conn: Connection, sent: float) -> None:
        if conn.state != SYN_RECV or conn.data_rtx >= self.profile.orphan_retries:
            return
        rto = min(self.profile.data_rto_min_s * 2**conn.data_rtx, self.profile.rto_max_s)
        fires = self.timer_fires(conn, sent, rto) if self._tick > 0 else sent + rto
        self._after_syn_timers(fires + self.owd, self._fin_retransmit, conn)

    def _fin_retransmit(self, conn: Connection) -> None:
        if conn.state != SYN_RECV:  # it got in, or was reset
            return
        conn.data_rtx += 1
        self._kernel_bare_ack.handle(conn)
        self._fin_unacknowledged(conn, self.clock.now - self.owd)

    def _after_syn_timers(self, at: float, fn: Callable[[Any], None], conn: Connection) -> None:
        """A retransmission of a request or a FIN, due on a tick at ``at``.  Linux 4.8's
        wheel runs a tick's expired timers from its highest level down
        (kernel/time/timer.c, ``__run_timers``), so on the tick a SYN's 1-s timer (level 1)
        fires before the requests' and FINs' 200-ms ones (level 0): their segments are
        received after the tick's retransmitted SYNs, and still before what a process that
        starts its turn on that tick sends (which runs after the softirq).  The 2.4 wheel
        (``client_timer_wheel_shift`` 0) keeps the order the timers were set in."""
        if self._wheel_shift:
            self._rtx_timers.call_late_at(at, fn, conn)
        else:
            self._rtx_timers.call_at(at, fn, conn)

    def request_unacknowledged(self, conn: Connection) -> None:
        """The final ACK (with the request behind it) overflowed: the request
        segment is retransmitted one minimum RTO after it was sent."""
        rto = self.profile.data_rto_min_s
        if self._tick > 0:  # the timer was armed when the request was sent
            fires = self.timer_fires(conn, conn.request_sent_at, rto)
            self._after_syn_timers(fires + self.owd, self._data_retransmit, conn)
            return
        self.env.delay_line(rto).put(self._data_retransmit, conn)

    def _data_retransmit(self, conn: Connection) -> None:
        if conn.state != SYN_RECV:  # acknowledged, reset or expired
            return
        profile = self.profile
        now = self.clock.now
        closed = now - self.owd >= conn.deadline
        limit = profile.orphan_retries if closed else profile.retries2
        if conn.data_rtx >= limit:
            conn.client_dead = True  # socket destroyed; nothing more is sent
            return
        conn.data_rtx += 1
        self.listen_path.retransmitted_segment(conn)  # type: ignore[union-attr]
        if conn.state == SYN_RECV:
            rto = min(profile.data_rto_min_s * 2**conn.data_rtx, profile.rto_max_s)
            if self._tick > 0:  # re-armed as this retransmission left (on a tick)
                fires = self.timer_fires(conn, now - self.owd, rto)
                self._after_syn_timers(fires + self.owd, self._data_retransmit, conn)
                return
            self.env.delay_line(rto).put(self._data_retransmit, conn)

    # -- replies ------------------------------------------------------------------
    def check_client_gone(self, conn: Connection) -> None:
        """The server touches ``conn``: if the client's FIN has arrived by now, say so."""
        if not conn.eof and self.clock.now >= conn.deadline + self.owd:
            self._kernel_fin.handle(conn)

    def _line_reply(self, conn: Any) -> None:
        """A one-step reply whose frames waited on their link has left it (now)."""
        self.reply(conn, True)

    def reply(self, conn: Connection, streamed: bool = False) -> float:
        """The last byte of the reply to the current request left the server (now): it
        reaches the client a one-way delay later.  ``streamed``: it was sent through the
        send path (:class:`~acceptsim.models.tcp.SendPath`); else the server wrote it in
        one step just now, and its frames are counted on their link here
        (:meth:`~acceptsim.models.tcp.SendPath.whole`).

        Returns the CPU the sender owes beyond its send for waking the client thread that
        reads the reply, if that thread was asleep (``HostCosts.wake_reader_s``; 0.0
        otherwise, and always for a client that busy-polls)."""
        if not streamed:
            late = self.tx.whole(conn)
            if late > 0.0:  # its frame waits on its link behind earlier ones
                self.clock.post_in(late, self._line_reply, conn)
                return 0.0
        now = self.clock.now
        received = now + self.owd
        if received > conn.deadline or conn.outcome is not None:
            self.wasted_replies += 1
            if conn.outcome is None:
                self.resolve(conn, TIMED_OUT, conn.deadline)
            fin_at = conn.deadline + self.owd
            if not conn.eof:
                if fin_at <= now:
                    self._kernel_fin.handle(conn)
                else:
                    self.clock.post_at(fin_at, self._kernel_fin, conn)
            return 0.0
        # httperf reads the reply (and times it) in its process's turn (:meth:`_turn_wait`)
        wait = self._turn_wait(conn, received) if self._turns > 1 else 0.0
        self.replies_total += 1
        if received + wait - conn.request_sent_at > self.slow_bound_s:
            self.slow_replies_total += 1
        if self.series is not None:
            slot = int((received - self.start_s) / self.series_interval_s)
            if slot < len(self.series):
                self.series[slot] += 1
        if self.window_start <= received <= self.window_end:
            self.replies += 1
            self.response_times.append(received + wait - conn.request_sent_at)
            k = int((received - self.window_start) // self._sample_s)
            samples = self.reply_samples
            if k >= len(samples):
                samples.extend([0] * (k + 1 - len(samples)))
            samples[k] += 1
        if conn.requests_left > 0:
            conn.requests_left -= 1
            # the workload's think time, if it has one, passes before the next request
            if self._think_draw is not None:
                think = self._think_draw()
            else:
                think = self._think_time(conn) if self._think_time is not None else 0.0
            if self._reacts:  # httperf issues the next call from its loop
                think += self.reaction_delay()
            think += wait
            woke = 0.0
            if self._threads_busy:  # its thread handles the reply, then writes the next
                think += self._thread_done(received, self._request_cpu) - received
                if self._thread_slept:
                    woke = self._wake_reader_s
            if self._start_connection is None:
                conn.reply_bytes = self._reply_bytes()
            conn.request_sent_at = received + think
            conn.deadline = self.give_up_at(conn, conn.request_sent_at)
            if self._users:
                self._arm(conn)
            if conn.request_sent_at >= self.window_start:
                self.requests += 1
            if think > 0.0:
                self.clock.post_in(self.rtt + think, self._kernel_request, conn)
            else:
                self._lan.put(self._kernel_request, conn)
            return woke
        woke = 0.0
        if received <= self.window_end:  # self.resolve(conn, COMPLETED, received), inline
            conn.outcome = COMPLETED  # (it was None: checked above)
            self._let_go(conn)
            if conn.started_at >= self.window_start:
                self.completed += 1
                self.completed_syn_drops += conn.syn_sent - 1
            if self._threads_busy:  # its thread reads the reply, closes and connects anew
                self._user_next(self._thread_done(
                    received, self._request_cpu + self._connection_cpu))
                if self._thread_slept:
                    woke = self._wake_reader_s
                wait += self._thread_start - received  # its FIN leaves when the thread runs
            elif self._users:
                self._user_next(received)
        # httperf closes the socket when its loop has read the reply
        if self._reacts:
            wait += self.reaction_delay()
        if wait > 0.0:
            self.clock.post_in(self.rtt + wait, self._kernel_fin, conn)
        else:
            self._lan.put(self._kernel_fin, conn)
        return woke

    # -- outcomes ---------------------------------------------------------------------
    def hold(self, conn: Connection) -> None:
        """Count ``conn`` among the connections not yet resolved (:attr:`live`)."""
        conn.live_at = len(self.live)
        self.live.append(conn)

    def _let_go(self, conn: Connection) -> None:
        """``conn`` is resolved: out of :attr:`live`, the last one taking its place."""
        live = self.live
        at = conn.live_at
        if at < 0:
            raise AssertionError(f"{conn!r} is not held")
        last = live.pop()
        if last is not conn:
            live[at] = last
            last.live_at = at
        conn.live_at = -1

    def resolve(self, conn: Connection, outcome: str, at: float) -> None:
        """Record the connection's outcome, which happened at instant ``at``."""
        if at > self.window_end:
            return  # not resolved within the run: counted as in flight at the end
        if conn.outcome is not None:
            raise AssertionError(f"{conn!r} resolved twice ({conn.outcome}, then {outcome})")
        conn.outcome = outcome
        self._let_go(conn)
        if self._users:
            self._user_next(at)
        in_window = conn.started_at >= self.window_start
        if outcome == COMPLETED:
            if in_window:
                self.completed += 1
                self.completed_syn_drops += conn.syn_sent - 1
        else:
            self.timeouts_total += 1
            if in_window:
                self.timed_out += 1
                self.timed_out_syn_drops += conn.syn_sent - (conn.state != SYN_SENT)
            if at >= self.window_start:
                self.timeouts += 1

    def httperf_summary(self) -> dict[str, object]:
        """The window's totals in httperf's own terms."""
        window = self.window_end - self.window_start
        n_full = int(window // self._sample_s + 1e-9)
        samples = self.reply_samples + [0] * n_full  # intervals without replies count 0
        rates = [samples[k] / self._sample_s for k in range(n_full)]
        if rates:
            arr = np.asarray(rates)
            reply_rate: dict[str, float | None] = {
                "min": float(arr.min()),
                "avg": float(arr.mean()),
                "max": float(arr.max()),
                "stddev": float(arr.std(ddof=1)) if len(arr) > 1 else 0.0,
                "samples": len(arr),
            }
        else:
            reply_rate = {"min": None, "avg": None, "max": None, "stddev": None, "samples": 0}
        return {
            "total_connections": self.attempted,
            "requests": self.requests,
            "replies": self.replies,
            "connection_rate_per_s": self.attempted / window,
            "max_connect_burst": self.max_connect_burst,
            "reply_rate_per_s": reply_rate,
            "errors": {
                "total": self.timeouts,
                "client_timo": self.timeouts,
                "socket_timo": 0,
                "connrefused": 0,
                "connreset": 0,
                "fd_unavail": 0,
                "other": 0,
            },
        }

    @property
    def connections_started(self) -> int:
        """Connections started so far, warm-up included (one per connection, whatever its
        retransmissions): the simulator's unit of work."""
        return self._next_id

    def finish(self) -> None:
        """At the end of the run: settle every connection still unresolved."""
        end = self.window_end
        for conn in list(self.live):  # (in any order: each adds to counters)
            if conn.deadline <= end:
                self.resolve(conn, TIMED_OUT, conn.deadline)
            elif conn.started_at >= self.window_start:
                self.in_flight_at_end += 1
