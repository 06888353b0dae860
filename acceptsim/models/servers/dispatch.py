"""Event-dispatch mechanisms for the event-driven server (Chandra and Mosberger, USENIX 2001).

Each server here is the userver (:mod:`acceptsim.models.servers.userver`: getevents,
accept, work) with another way of learning which descriptors are ready; only
the getevents phase differs.  Chandra and Mosberger compared them on Linux
2.4 with a few hundred or thousands of *idle* persistent connections held
open while the request rate varies (``RunConfig.idle_connections``; those
connections are established and registered before the run starts and
never become readable).

``userver-select`` and ``userver-poll``: scan the whole interest set
    Every call passes every descriptor, idle or not, to the kernel, which
    calls each socket's poll routine (``scan_per_fd_s``).  Linux 2.4's
    ``do_select``/``do_poll`` also register the caller on each socket's wait
    queue (and remove it on return, ``register_per_fd_s``), *until the first
    ready descriptor is found*: after that, the pass stops registering.  If
    no descriptor is ready the caller sleeps, and when woken scans every
    descriptor a second time (without registering).  The listening socket
    has the lowest descriptor and the idle connections, opened first, come
    next, so a call that finds the accept queue non-empty registers
    nothing, a call that finds only a busy connection ready registers the
    listening socket and every idle connection, and a call that finds
    nothing registers everything, sleeps and scans again.  That is why, with
    many idle connections, a busier server pays *less* per call.  ``poll``
    also copies the 8-byte ``pollfd`` array in and out (``poll_copy_per_fd_s``).

``userver-devpoll`` and ``userver-epoll``: an interest set kept in the kernel
    Descriptors are registered incrementally: ``/dev/poll`` batches the
    changes into one ``write()`` per loop, ``epoll`` makes one
    ``epoll_ctl()`` system call per new connection (a closed descriptor
    leaves the set by itself).  A wait costs a fixed part plus a part per
    *ready* descriptor returned; idle descriptors cost nothing.

``userver-rtsig``: POSIX real-time signals
    Each new connection is registered (``fcntl`` F_SETOWN, F_SETSIG and
    O_ASYNC).  The kernel queues one signal per event (a connection queued
    on the listening socket, a request or end-of-file on a connection), at
    interrupt level.  The server dequeues them one at a time
    (``sigwaitinfo``, ``sigwait_s`` each).  The queue is finite
    (``rtsig_max``, the 2.4 default ``/proc/sys/kernel/rtsig-max`` = 1024):
    a signal that finds it full is lost and SIGIO is raised instead; the
    server then flushes the queue and falls back to one ``poll()`` over
    every descriptor to find what it missed.

``userver-sigfd``: signal-per-fd (Chandra and Mosberger's proposal)
    As ``rtsig``, but at most one signal per descriptor is queued; further
    events on a descriptor whose signal is still queued are coalesced into
    it.  The queue is bounded by the number of descriptors, so it never
    overflows.

Cost defaults are set, not fitted: system calls of the order of a
microsecond on the paper's 2.4 GHz Xeon (the same order as
``HostCosts.accept_empty_s``, a failing system call), and a select pass
split so that a full registering pass costs the userver's calibrated
``select_per_fd_s`` (1 us per descriptor).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mypy_extensions import mypyc_attr

from acceptsim.models.connection import ACCEPTED, Connection
from acceptsim.models.kernel import Application
from acceptsim.models.servers.base import ServerCounters, WorkerWiring
from acceptsim.models.servers.spec import ServerSpec
from acceptsim.models.servers.userver import ACCEPT, CATEGORIES, GETEVENTS, Userver, UserverParams
from acceptsim.sim.cpu import BLOCK
from acceptsim.sim.params import param, summary_of

if TYPE_CHECKING:
    from acceptsim.models.policies import AcceptPolicy

_SYSCALL = "set, not fitted: of the order of one system call on the paper's 2.4 GHz Xeon"


@mypyc_attr(native_class=False)  # a parameter set: a plain frozen dataclass
@dataclass(frozen=True)
class DispatchParams(UserverParams):
    """The userver's parameters plus the costs of every event-dispatch mechanism."""

    # -- select() and poll(): scan the whole interest set --------------------------------
    scan_per_fd_s: float = param(
        0.4e-6, unit="s/descriptor", ge=0.0,
        doc="select/poll: call one socket's poll routine and handle its bit in user space; "
        "with register_per_fd_s it makes the userver's calibrated 1 us per descriptor of a "
        "registering pass (split set, not fitted)",
    )
    register_per_fd_s: float = param(
        0.6e-6, unit="s/descriptor", ge=0.0,
        doc="select/poll: add the caller to one socket's wait queue (poll_wait) and remove it "
        "on return (poll_freewait); 2.4 skips it after the first ready descriptor",
    )
    poll_copy_per_fd_s: float = param(
        0.05e-6, unit="s/descriptor", ge=0.0,
        doc="poll only: copy one 8-byte pollfd into and out of the kernel (set, not fitted)",
    )
    # -- /dev/poll ------------------------------------------------------------------------
    devpoll_write_s: float = param(
        1.5e-6, unit="s", ge=0.0, doc="/dev/poll: one write() of interest-set changes; " + _SYSCALL
    )
    devpoll_change_s: float = param(
        0.3e-6, unit="s/descriptor", ge=0.0,
        doc="/dev/poll: add or remove one descriptor in the kernel's hashed interest set",
    )
    devpoll_wait_s: float = param(
        2.5e-6, unit="s", ge=0.0, doc="/dev/poll: one DP_POLL ioctl, fixed part; " + _SYSCALL
    )
    # -- epoll ----------------------------------------------------------------------------
    epoll_ctl_s: float = param(
        1.5e-6, unit="s", ge=0.0,
        doc="epoll: one epoll_ctl(EPOLL_CTL_ADD) per new connection; " + _SYSCALL,
    )
    epoll_wait_s: float = param(
        2.0e-6, unit="s", ge=0.0, doc="epoll: one epoll_wait(), fixed part; " + _SYSCALL
    )
    per_ready_s: float = param(
        0.3e-6, unit="s/descriptor", ge=0.0,
        doc="/dev/poll and epoll: per ready descriptor returned (copy out, dispatch)",
    )
    # -- real-time signals ---------------------------------------------------------------
    rtsig_register_s: float = param(
        3.0e-6, unit="s", ge=0.0,
        doc="RT signals: register a new connection (three fcntl calls: F_SETOWN, F_SETSIG, "
        "O_ASYNC); " + _SYSCALL + " each",
    )
    rtsig_queue_s: float = param(
        0.5e-6, unit="s", ge=0.0,
        doc="RT signals: the kernel allocates and queues one siginfo (interrupt level); "
        "set, not fitted",
    )
    sigwait_s: float = param(
        1.5e-6, unit="s", ge=0.0, doc="RT signals: dequeue one signal (sigwaitinfo); " + _SYSCALL
    )
    rtsig_max: int = param(
        1024, unit="signals", ge=1,
        doc="RT signals: queue capacity (Linux 2.4 /proc/sys/kernel/rtsig-max default)",
    )
    rtsig_flush_s: float = param(
        5.0e-6, unit="s", ge=0.0,
        doc="RT signals, on overflow: flush the queue (set the signal to SIG_DFL and back)",
    )


class SelectServer(Userver):
    """The userver with select()'s cost split as Linux 2.4's do_select spends it."""

    name = "userver-select"
    mechanism = "select"
    copy_per_fd_s = 0.0

    def __init__(self, host: WorkerWiring, params: DispatchParams, policy: AcceptPolicy) -> None:
        self.idle = 0
        self.blocking_calls = 0  # calls that found nothing ready and slept
        self.registered = 0  # wait-queue registrations made
        self.dispatch_events = 0  # ready descriptors reported
        super().__init__(host, params, policy)
        self.params = params

    def adopt_idle(self, n: int) -> None:
        """Hold ``n`` idle persistent connections, established and registered before the
        run starts: held open and in the interest set, never readable."""
        self.idle += n
        self.hold_idle(n)

    def scan_base_s(self) -> float:
        return self.costs.select_base_s

    def getevents(self):  # type: ignore[no-untyped-def]
        """One select()/poll() call over every descriptor (see the module text)."""
        p = self.params
        n = self.open + 1
        per_fd = p.scan_per_fd_s + self.copy_per_fd_s
        if self.listen_ready():
            registered = 0  # the listening socket (first descriptor) is ready
        elif self.ready:
            registered = 1 + self.idle  # up to the first busy connection
        else:
            registered = n
        self.registered += registered
        yield GETEVENTS, self.scan_base_s() + per_fd * n + p.register_per_fd_s * registered
        if registered == n:  # nothing was ready: sleep, then scan every descriptor again
            self.blocking_calls += 1
            while not self.ready and not self.listen_ready():
                yield BLOCK
            yield GETEVENTS, p.scan_per_fd_s * n
        self.select_calls += 1
        ready, self.ready = self.ready, []
        self.dispatch_events += len(ready) + (1 if self.listen_ready() else 0)
        return ready

    def own_counters(self) -> dict[str, float]:
        """Calls that slept, wait-queue registrations, ready descriptors reported."""
        out = super().own_counters()
        out.update(
            blocking_calls=self.blocking_calls,
            registered=self.registered,
            dispatch_events=self.dispatch_events,
        )
        return out

    def result_extras(self, diff: ServerCounters, window: float) -> dict[str, Any]:
        """Measures of the dispatch mechanism over the run's window.

        ``dispatch`` holds the mechanism's name, its calls per second
        (``calls_per_s``: select/poll/wait calls, or signals dequeued),
        ``events_per_call`` (ready descriptors reported per call), the share
        of calls that slept (``blocking_share``), and for RT signals the
        overflows and fall-back scans.  ``server_cpu_per_reply_us`` is the
        server's (non-kernel) CPU time per reply.
        """
        calls = diff.select_calls
        own = diff.own
        return {
            "dispatch": {
                "mechanism": self.mechanism,
                "calls_per_s": calls / window,
                "events_per_call": own["dispatch_events"] / calls if calls else None,
                "blocking_share": own["blocking_calls"] / calls if calls else None,
                **self._extra_dispatch(diff, window),
            }
        }

    def _extra_dispatch(self, diff: ServerCounters, window: float) -> dict[str, Any]:
        return {}


class PollServer(SelectServer):
    """poll(): as select, plus copying the pollfd array in and out."""

    name = "userver-poll"
    mechanism = "poll"

    def __init__(self, host: WorkerWiring, params: DispatchParams, policy: AcceptPolicy) -> None:
        super().__init__(host, params, policy)
        self.copy_per_fd_s = self.params.poll_copy_per_fd_s


class DevPollServer(SelectServer):
    """/dev/poll: the interest set lives in the kernel; changes go in one write() per loop."""

    name = "userver-devpoll"
    mechanism = "/dev/poll"

    def __init__(self, host: WorkerWiring, params: DispatchParams, policy: AcceptPolicy) -> None:
        super().__init__(host, params, policy)
        self._accepts_registered = 0
        self._closes_registered = 0

    def _closes(self) -> int:
        return self.accepts + self.idle - self.open

    def register_changes(self):  # type: ignore[no-untyped-def]
        """Tell the kernel about connections accepted and closed since the last wait."""
        adds = self.accepts - self._accepts_registered
        removes = self._closes() - self._closes_registered
        if adds or removes:
            p = self.params
            yield ACCEPT, p.devpoll_write_s + p.devpoll_change_s * (adds + removes)
            self.registered += adds
            self._accepts_registered = self.accepts
            self._closes_registered += removes

    def wait_base_s(self) -> float:
        return self.params.devpoll_wait_s

    def getevents(self):  # type: ignore[no-untyped-def]
        yield from self.register_changes()
        yield GETEVENTS, self.wait_base_s()
        if not self.ready and not self.listen_ready():
            self.blocking_calls += 1
            while not self.ready and not self.listen_ready():
                yield BLOCK
        ready, self.ready = self.ready, []
        k = len(ready) + (1 if self.listen_ready() else 0)
        yield GETEVENTS, self.params.per_ready_s * k
        self.select_calls += 1
        self.dispatch_events += k
        # events that arrived while the results were copied out wait for the next call
        return ready


class EpollServer(DevPollServer):
    """epoll: one epoll_ctl() per new connection; close() removes a descriptor by itself."""

    name = "userver-epoll"
    mechanism = "epoll"

    def register_changes(self):  # type: ignore[no-untyped-def]
        adds = self.accepts - self._accepts_registered
        if adds:
            yield ACCEPT, self.params.epoll_ctl_s * adds
            self.registered += adds
            self._accepts_registered = self.accepts

    def wait_base_s(self) -> float:
        return self.params.epoll_wait_s


class _SignalNotifier(Application):
    """The kernel's side of RT signals: turns socket events into queued signals."""

    def __init__(self, server: RtSignalServer) -> None:
        self.server = server

    def accept_ready(self) -> None:
        pass  # the listening socket signals every queued connection (ListenSocket.on_queued)

    def readable(self, conn: Connection) -> None:
        self.server.signal(conn)


#: the signal of the listening socket in the signal queue
LISTEN = None


class RtSignalServer(SelectServer):
    """POSIX RT signals: one queued signal per event, a finite queue, poll() on overflow."""

    name = "userver-rtsig"
    mechanism = "rtsig"
    #: at most one queued signal per descriptor (signal-per-fd)
    coalesce = False

    def __init__(self, host: WorkerWiring, params: DispatchParams, policy: AcceptPolicy) -> None:
        super().__init__(host, params, policy)
        self.sigq: deque[Connection | None] = deque()
        self.overflow = False  # SIGIO raised: some signal was lost
        self._lost: list[Connection | None] = []
        self._listen_queued = False
        self._accepts_registered = 0
        self.signals_queued = 0
        self.signals_lost = 0
        self.overflows = 0
        self.fallback_polls = 0
        self.listen.app = _SignalNotifier(self)
        self.listen.on_queued = self._listen_signal

    # -- kernel side ----------------------------------------------------------------
    def _listen_signal(self, conn: Connection) -> None:
        self.signal(LISTEN)

    def signal(self, target: Connection | None) -> None:
        """An event on ``target`` (a connection, or the listening socket): queue a signal."""
        if target is not LISTEN and target.state != ACCEPTED:
            return  # not yet accepted: no owner registered for its descriptor
        if self.coalesce:
            if target is LISTEN:
                if self._listen_queued:
                    return
                self._listen_queued = True
            else:
                if target.server is True:
                    return
                target.server = True
        self.cpu.interrupt(self.params.rtsig_queue_s)
        if not self.coalesce and len(self.sigq) >= self.params.rtsig_max:
            self.signals_lost += 1
            self.overflow = True
            self._lost.append(target)
        else:
            self.sigq.append(target)
            self.signals_queued += 1
        self.cpu.wake()  # no effect if the task is running

    # -- the server's side -------------------------------------------------------------
    def _take(self, target: Connection | None) -> None:
        """Handle one dequeued signal: note the descriptor as ready if it has work."""
        if target is LISTEN:
            self._listen_queued = False
            return
        if self.coalesce:
            target.server = None
        if (
            target.state == ACCEPTED
            and not target.ready
            and (target.pending or target.eof)
        ):
            self.readable(target)

    def getevents(self):  # type: ignore[no-untyped-def]
        p = self.params
        adds = self.accepts - self._accepts_registered
        if adds:
            yield ACCEPT, p.rtsig_register_s * adds
            self.registered += adds
            self._accepts_registered = self.accepts
        while (
            not self.sigq
            and not self.ready
            and not self.overflow
            and (self.acceptor.skipped or not self.listen_ready())
        ):
            self.blocking_calls += 1
            yield BLOCK
        if self.overflow:
            # SIGIO: flush the queue and poll() every descriptor for what was missed
            yield GETEVENTS, p.rtsig_flush_s
            missed = list(self.sigq) + self._lost
            self.sigq.clear()
            self._lost = []
            self.overflow = False
            self.overflows += 1
            self.fallback_polls += 1
            n = self.open + 1
            registered = 0 if self.listen_ready() else 1 + self.idle
            yield GETEVENTS, (
                self.costs.select_base_s
                + (p.scan_per_fd_s + p.poll_copy_per_fd_s) * n
                + p.register_per_fd_s * registered
            )
            before = len(self.ready)
            for target in missed:
                self._take(target)
            self.select_calls += 1
            self.dispatch_events += len(self.ready) - before
        else:
            # dequeue the signals queued so far, one system call each
            for _ in range(len(self.sigq)):
                target = self.sigq.popleft()
                yield GETEVENTS, p.sigwait_s
                self.select_calls += 1
                self.dispatch_events += 1
                self._take(target)
        ready, self.ready = self.ready, []
        return ready

    def own_counters(self) -> dict[str, float]:
        """Signals queued and lost, queue overflows, fall-back polls."""
        out = super().own_counters()
        out.update(
            signals_queued=self.signals_queued,
            signals_lost=self.signals_lost,
            overflows=self.overflows,
            fallback_polls=self.fallback_polls,
        )
        return out

    def _extra_dispatch(self, diff: ServerCounters, window: float) -> dict[str, Any]:
        own = diff.own
        return {
            "signals_queued_per_s": own["signals_queued"] / window,
            "signals_lost_per_s": own["signals_lost"] / window,
            "overflows_per_s": own["overflows"] / window,
        }


class SignalPerFdServer(RtSignalServer):
    """Signal-per-fd: at most one queued signal per descriptor, so the queue cannot overflow."""

    name = "userver-sigfd"
    mechanism = "sigfd"
    coalesce = True


#: ``--server`` names of the mechanisms, for ``acceptsim.models.experiment.SERVERS``
#: (the names spelled out: a compiled class's attribute is read on an instance)
SPECS = tuple(
    ServerSpec(name, cls, DispatchParams, CATEGORIES, summary_of(cls), idle_connections=True)
    for name, cls in (
        ("userver-select", SelectServer), ("userver-poll", PollServer),
        ("userver-devpoll", DevPollServer), ("userver-epoll", EpollServer),
        ("userver-rtsig", RtSignalServer), ("userver-sigfd", SignalPerFdServer),
    )
)
