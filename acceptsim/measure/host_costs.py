"""Costs measured on the host: microbenchmarks of the operations the model charges.

``acceptsim measure costs`` runs each operation many times in a process pinned to
one CPU and reads that thread's CPU time (``CLOCK_THREAD_CPUTIME_ID``: the
scheduler's exact runtime of the thread, nanoseconds, not tick samples).  The
cost of one operation is the time of a loop of operations minus the time of the
same loop calling a Python stand-in that does no system call, divided by the
count, so the interpreter's loop is taken out; what remains is the system call
with its entry and exit and, on loopback, the kernel's receive processing of
whatever the call sends (see below), plus the few tens of nanoseconds Python's
wrapper spends building the call's result (the method's resolution).

Where the kernel's work lands on loopback
-----------------------------------------
A segment sent over ``lo`` is handed to ``netif_rx`` and queued on the backlog of
the CPU that sent it (``enqueue_to_backlog`` on the current CPU; ``lo`` has no RPS
by default, ``/sys/class/net/lo/queues/rx-0/rps_cpus`` is 0), and the receive
softirq runs there when the sender re-enables bottom halves, still inside its
system call.  So the receive side of every segment runs on the *sender's* CPU:
the client's SYNs, final ACKs, requests and FINs on the client's CPU, nginx's
replies and FINs (and the ACKs the client's kernel sends back from that softirq)
on nginx's.  On a kernel without ``CONFIG_IRQ_TIME_ACCOUNTING`` that softirq time
is charged to the running task, hence to its cgroup's CFS quota.  The benchmarks
therefore measure each operation as nginx pays it on this host: ``close_s``
includes the FIN's receive processing and the ACK it triggers, ``send`` the
receive processing of the segment sent.

Every value is written with its measurement (mean, spread over repeats, count,
method) and the host (kernel, CPU model, date), so a parameter file says where
each number came from; :func:`~acceptsim.measure.host_costs.to_toml` writes the cost
fields at top level (a file ``--params`` reads) and the measurements beside them
under ``[measured]``.
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
import socket
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acceptsim.measure.harness import HarnessError, limit_text
from acceptsim.sim.errors import ConfigError

#: the loopback address every benchmark uses
ADDRESS = "127.0.0.1"

#: default operations per repeat and repeats per benchmark
DEFAULT_OPERATIONS = 20_000
DEFAULT_REPEATS = 5

#: epoll_wait's ready-event counts the base and per-event costs are fitted over
EPOLL_READY_COUNTS = (1, 8, 32, 64)

#: reply sizes (bytes) the per-byte send cost is fitted over: one segment to many
SEND_SIZES = (128, 4096, 16384, 65536)

#: connections accepted per repeat of the accept/epoll_ctl/close benchmark (below the
#: listen backlog asked for, so that none is dropped, and well below the usual limit of
#: 1,024 open descriptors)
ACCEPT_BATCH = 500

#: idle gaps (s) before a sleeper is woken, over which a sleep's cost is measured: from
#: a busy server's gaps between events to a CFS throttle's stall
WAKEUP_GAPS_S = (0.2e-3, 1e-3, 3e-3, 10e-3)
#: seconds each gap's benchmark runs per repeat (its count: this over the gap)
WAKEUP_SECONDS = 1.0
#: idle gaps (s) before a wake-up over which its latency is measured: from a reader
#: woken between a busy server's replies to a CFS throttle's stall
WAKE_LATENCY_GAPS_S = (0.03e-3, 0.2e-3, 1e-3, 3e-3, 10e-3)
#: what waking a sleeping reader costs its sender: the gap between sends (the reader,
#: woken and done, is asleep again well before the next) and the sends per sample
WAKE_READER_GAP_S = 0.2e-3
WAKE_READER_SENDS = 2000

#: the load of the server benchmark (nginx's or HAProxy's CPU per reply): one-packet
#: requests well below saturation
NGINX_RATE_PER_S = 1000.0
NGINX_DURATION_S = 5.0


@dataclass(frozen=True)
class Measurement:
    """One measured cost: its samples (one per repeat, seconds per operation)."""

    name: str
    samples: tuple[float, ...]
    unit: str
    method: str
    operations: int  # per repeat
    #: the cost field of :class:`~acceptsim.models.costs.HostCosts` it sets; None: a
    #: figure beside them (a total, or work that lands on another CPU)
    field: str | None = None

    @property
    def mean(self) -> float:
        return statistics.fmean(self.samples)

    @property
    def spread(self) -> float:
        """Sample standard deviation over the repeats (0 for one repeat)."""
        return statistics.stdev(self.samples) if len(self.samples) > 1 else 0.0


@dataclass
class HostInfo:
    """The machine the costs were measured on."""

    date: str
    kernel: str
    cpu_model: str
    cpus: int
    irq_time_accounting: bool | None  # None: the kernel's config is not readable
    python: str

    @classmethod
    def here(cls) -> HostInfo:
        return cls(
            date=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            kernel=platform.release(),
            cpu_model=_cpu_model(),
            cpus=os.cpu_count() or 1,
            irq_time_accounting=_kernel_config("CONFIG_IRQ_TIME_ACCOUNTING"),
            python=platform.python_version(),
        )


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _kernel_config(option: str) -> bool | None:
    """Whether the running kernel was built with ``option`` (from /proc/config.gz or
    /boot/config-RELEASE); None if neither is readable."""
    import gzip

    candidates: list[tuple[Path, Callable[[Path], str]]] = [
        (Path("/proc/config.gz"), lambda p: gzip.decompress(p.read_bytes()).decode()),
        (Path(f"/boot/config-{platform.release()}"), lambda p: p.read_text()),
    ]
    for path, read in candidates:
        try:
            text = read(path)
        except OSError:
            continue
        return re.search(rf"^{option}=y$", text, re.MULTILINE) is not None
    return None


# -- measuring -------------------------------------------------------------------------


def pin(cpu: int) -> None:
    """Run the calling thread on ``cpu`` only."""
    os.sched_setaffinity(0, {cpu})


def _per_op(loop: Callable[[int], None], baseline: Callable[[int], None], n: int) -> float:
    """CPU seconds per operation of ``loop(n)`` minus those of ``baseline(n)``."""
    t0 = time.thread_time_ns()
    loop(n)
    t1 = time.thread_time_ns()
    baseline(n)
    t2 = time.thread_time_ns()
    return ((t1 - t0) - (t2 - t1)) / n / 1e9


def _noop(*_: object) -> None:
    return None


def _raise_blocking(*_: object) -> None:
    raise BlockingIOError


def bench_accept_empty(n: int) -> float:
    """accept4() on an empty non-blocking listening socket (EAGAIN)."""
    with socket.socket() as lsock:
        lsock.bind((ADDRESS, 0))
        lsock.listen(16)
        lsock.setblocking(False)
        accept = lsock._accept  # type: ignore[attr-defined]

        def loop(k: int) -> None:
            for _ in range(k):
                try:
                    accept()
                except BlockingIOError:
                    pass

        def baseline(k: int) -> None:
            for _ in range(k):
                try:
                    _raise_blocking()
                except BlockingIOError:
                    pass

        return _per_op(loop, baseline, n)


def bench_epoll(n: int, ready: int) -> float:
    """epoll_wait() with a zero timeout returning ``ready`` level-triggered events, then
    clock_gettime(CLOCK_REALTIME): nginx updates its clock after every return of
    epoll_wait (``ngx_time_update``, unless ``timer_resolution`` is set), which is a
    vDSO read with a TSC clock source and a system call with some others."""
    import select

    pairs = [socket.socketpair() for _ in range(ready)]
    ep = select.epoll()
    try:
        for a, b in pairs:
            b.send(b"x")
            ep.register(a.fileno(), select.EPOLLIN)
        poll = ep.poll
        events = [(a.fileno(), select.EPOLLIN) for a, _ in pairs]
        gettime, realtime = time.clock_gettime, time.CLOCK_REALTIME

        def loop(k: int) -> None:
            for _ in range(k):
                poll(0, ready)
                gettime(realtime)

        def baseline(k: int) -> None:  # the result list built in Python, no system call
            for _ in range(k):
                list(events)
                _noop(realtime)

        return _per_op(loop, baseline, n)
    finally:
        ep.close()
        for a, b in pairs:
            a.close()
            b.close()


def line_fit(samples: dict[Any, float]) -> tuple[float, float]:
    """(intercept, slope) of the least-squares line through cost per call against a count
    (ready events, bytes sent, or turns of a loop per reply)."""
    xs = list(samples)
    ys = [samples[x] for x in xs]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    return my - slope * mx, slope


def _peer(target: Callable[..., None], *args: Any) -> Any:
    """Start ``target(*args)`` in a forked process (peers are processes, not threads: a
    thread would hold the interpreter's lock the measured loop needs)."""
    import multiprocessing

    proc = multiprocessing.get_context("fork").Process(target=target, args=args, daemon=True)
    proc.start()
    return proc


def _stop(proc: Any) -> None:
    proc.join(10)
    if proc.is_alive():
        proc.kill()
        proc.join(5)


def _connect_all(port: int, count: int, cpu: int, conn: Any) -> None:
    """Peer: open ``count`` loopback connections, send the CPU seconds per connect()
    (the whole loopback handshake: SYN, SYN-ACK, final ACK and the child socket queued,
    all of it on this CPU), hold them until told to go, then close them."""
    pin(cpu)
    socks = []
    try:
        t0 = time.thread_time_ns()
        for _ in range(count):
            s = socket.socket()
            s.connect((ADDRESS, port))
            socks.append(s)
        conn.send((time.thread_time_ns() - t0) / count / 1e9)
    except OSError as exc:
        conn.send(str(exc))
    conn.poll(60)
    for s in socks:
        s.close()


def bench_accept_register_close(
    count: int, client_cpu: int
) -> tuple[float, float, float, float]:
    """Per connection: accept4() that returns one, epoll_ctl(ADD), close() of the
    established connection (its FIN received and acknowledged by the client's socket
    in the same softirq, on loopback), and the client's connect() (the handshake)."""
    import select

    with socket.socket() as lsock:
        lsock.bind((ADDRESS, 0))
        lsock.listen(count + 16)
        port = lsock.getsockname()[1]
        import multiprocessing

        ours, theirs = multiprocessing.get_context("fork").Pipe()
        client = _peer(_connect_all, port, count, client_cpu, theirs)
        if not ours.poll(60):
            _stop(client)
            raise HarnessError("the connecting process did not finish within 60 s")
        handshake = ours.recv()
        if isinstance(handshake, str):
            _stop(client)
            raise HarnessError(f"connecting to port {port}: {handshake}")
        accept = lsock._accept  # type: ignore[attr-defined]
        fds: list[int] = []
        ep = select.epoll()
        try:
            def do_accept(k: int) -> None:
                for _ in range(k):
                    fds.append(accept()[0])

            accept_s = _per_op(do_accept, lambda k: [_noop() for _ in range(k)], count)
            register = ep.register
            mask = select.EPOLLIN | select.EPOLLRDHUP

            def do_register(k: int) -> None:
                for fd in fds[:k]:
                    register(fd, mask)

            def base_register(k: int) -> None:
                for fd in fds[:k]:
                    _noop(fd, mask)

            ctl_s = _per_op(do_register, base_register, count)
            close = os.close

            def do_close(k: int) -> None:
                for fd in fds[:k]:
                    close(fd)

            def base_close(k: int) -> None:
                for fd in fds[:k]:
                    _noop(fd)

            close_s = _per_op(do_close, base_close, count)
        finally:
            ep.close()
            ours.send("go")
            _stop(client)
        return accept_s, ctl_s, close_s, handshake


def bench_syn_drop(n: int) -> tuple[float, int]:
    """A SYN dropped at a full accept queue, as the connecting CPU pays for it on
    loopback (the listener's whole receive path runs in the sender's connect()):
    non-blocking connect() to a listener whose queue is full, minus connect() to
    nothing (a socket that is created and closed).  Returns the cost and the
    ListenOverflows the kernel counted during the loop (checked against ``n``)."""
    with socket.socket() as lsock:
        lsock.bind((ADDRESS, 0))
        lsock.listen(0)  # backlog 0: the queue is full with one connection
        port = lsock.getsockname()[1]
        held = []
        try:
            for _ in range(2):  # fill the accept queue (a second is let in by "> backlog")
                s = socket.socket()
                s.setblocking(False)
                try:
                    s.connect((ADDRESS, port))
                except BlockingIOError:
                    pass
                held.append(s)
            time.sleep(0.05)
            before = _listen_overflows()
            target = (ADDRESS, port)
            new = socket.socket

            # each socket closed at once (a socket in SYN-SENT closes without a packet),
            # so the loop holds one descriptor at a time
            def loop(k: int) -> None:
                for _ in range(k):
                    s = new()
                    s.setblocking(False)
                    try:
                        s.connect(target)
                    except BlockingIOError:
                        pass
                    s.close()

            def baseline(k: int) -> None:
                for _ in range(k):
                    s = new()
                    s.setblocking(False)
                    try:
                        _raise_blocking(target)
                    except BlockingIOError:
                        pass
                    s.close()

            cost = _per_op(loop, baseline, n)
            return cost, _listen_overflows() - before
        finally:
            for s in held:
                s.close()


def _listen_overflows() -> int:
    """TcpExtListenOverflows from /proc/net/netstat."""
    lines = Path("/proc/net/netstat").read_text().splitlines()
    for names, values in zip(lines[::2], lines[1::2], strict=False):
        if names.startswith("TcpExt:"):
            table = dict(zip(names.split()[1:], values.split()[1:], strict=True))
            return int(table.get("ListenOverflows", 0))
    return 0


def _drain(sock: socket.socket, cpu: int) -> None:
    """Peer: read ``sock`` until its end."""
    pin(cpu)
    while sock.recv(1 << 20):
        pass


def _write_every(sock: socket.socket, cpu: int, gap_s: float, count: int) -> None:
    """Peer: write one byte ``count`` times, ``gap_s`` apart (busy-waiting: no sleep's
    timer slack)."""
    pin(cpu)
    for _ in range(count):
        sock.send(b"x")
        deadline = time.perf_counter() + gap_s
        while time.perf_counter() < deadline:
            pass


def bench_send(n: int, size: int, client_cpu: int) -> float:
    """send() of ``size`` bytes on an established loopback connection whose reader
    drains it on another CPU (the sender's CPU also runs the receive softirq)."""
    with socket.socket() as lsock:
        lsock.bind((ADDRESS, 0))
        lsock.listen(1)
        port = lsock.getsockname()[1]
        sender = socket.create_connection((ADDRESS, port))
        reader, _ = lsock.accept()
        drainer = _peer(_drain, reader, client_cpu)
        reader.close()
        try:
            payload = b"x" * size
            send = sender.sendall

            def loop(k: int) -> None:
                for _ in range(k):
                    send(payload)

            def baseline(k: int) -> None:
                for _ in range(k):
                    _noop(payload)

            return _per_op(loop, baseline, n)
        finally:
            sender.shutdown(socket.SHUT_WR)  # the peer's copy of this socket stays open
            sender.close()
            _stop(drainer)


def bench_wakeup(n: int, client_cpu: int, gap_s: float = 200e-6) -> float:
    """What a blocking epoll_wait() that sleeps and is woken costs the sleeper beyond a
    non-blocking one that finds the event ready: the context switch out and back in
    (the waker on ``client_cpu`` writes one byte every ``gap_s``)."""
    import select

    a, b = socket.socketpair()
    ep = select.epoll()
    ep.register(a.fileno(), select.EPOLLIN)
    writer = _peer(_write_every, b, client_cpu, gap_s, n)
    try:
        recv = a.recv
        poll = ep.poll
        t0 = time.thread_time_ns()
        for _ in range(n):
            poll(-1, 1)
            recv(1)
        t1 = time.thread_time_ns()
        _stop(writer)
        b.send(b"x")
        t2 = time.thread_time_ns()
        for _ in range(n):  # the same calls, the event always there
            poll(0, 1)
            recv(1, socket.MSG_PEEK)
        t3 = time.thread_time_ns()
        return ((t1 - t0) - (t3 - t2)) / n / 1e9
    finally:
        _stop(writer)
        ep.close()
        a.close()
        b.close()


def _read_waking(sock: socket.socket, cpu: int, sleeps: bool) -> None:
    """Peer: read ``sock`` until its end, each read after an ``epoll_wait`` that sleeps
    until data comes (``sleeps``) or that polls without sleeping (timeout 0, again and
    again): the same calls but for the sleep."""
    import select

    pin(cpu)
    ep = select.epoll()
    ep.register(sock.fileno(), select.EPOLLIN)
    timeout = -1 if sleeps else 0
    while True:
        if ep.poll(timeout, 1) and not sock.recv(1 << 16):
            return


def bench_wake_reader(n: int, client_cpu: int, gap_s: float = WAKE_READER_GAP_S) -> float:
    """What a loopback send costs its sender beyond the send itself when it wakes a
    reader asleep in epoll_wait on ``client_cpu``: the sender's CPU time in ``n`` sends
    of one small segment, ``gap_s`` apart, to a reader that sleeps between them, minus
    the same to a reader that polls epoll without sleeping.  On loopback the segment is
    received inside its sender's send, so the wake-up (run-queue work and the
    inter-processor interrupt to the reader's idle CPU; in a virtual machine an exit that
    kicks the halted virtual CPU) runs there."""

    def per_send(sleeps: bool) -> float:
        with socket.socket() as lsock:
            lsock.bind((ADDRESS, 0))
            lsock.listen(1)
            sender = socket.create_connection(lsock.getsockname())
            sender.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            reader, _ = lsock.accept()
        reader_proc = _peer(_read_waking, reader, client_cpu, sleeps)
        reader.close()
        try:
            payload = b"x" * SEND_SIZES[0]
            send, cpu_ns, clock = sender.send, time.thread_time_ns, time.perf_counter
            time.sleep(0.05)  # the reader is in its loop
            spent = 0
            for _ in range(n):
                t0 = cpu_ns()
                send(payload)
                spent += cpu_ns() - t0
                deadline = clock() + gap_s  # busy-waiting: this CPU never idles
                while clock() < deadline:
                    pass
            t0 = cpu_ns()
            for _ in range(n):  # the clock reads' own cost
                cpu_ns()
            spent -= (cpu_ns() - t0) * 2
            return spent / n / 1e9
        finally:
            sender.shutdown(socket.SHUT_WR)
            sender.close()
            _stop(reader_proc)

    return per_send(True) - per_send(False)


def cold_fit(costs: dict[float, float] | Sequence[tuple[float, float]]
             ) -> tuple[float, float, float]:
    """(warm, cold, tau) of the least-squares curve ``warm + cold * (1 - exp(-gap /
    tau))`` through a sleep's cost against the idle gap before it (``costs``: gap -> cost,
    or (gap, cost) points, several per gap; bounded: costs >= 0, tau from 10 us to
    100 ms)."""
    import numpy as np
    from scipy.optimize import curve_fit

    points = sorted(costs.items() if isinstance(costs, dict) else costs)
    # fitted in ms and us, where the numbers are of order one
    gaps = np.array([g for g, _ in points]) * 1e3
    values = np.array([c for _, c in points]) * 1e6

    def curve(gap: Any, warm: float, cold: float, tau: float) -> Any:
        return warm + cold * (1.0 - np.exp(-gap / tau))

    low, high = np.array([0.0, 0.0, 1e-2]), np.array([1e3, 1e3, 100.0])
    # a start inside the bounds, whatever the points (a loaded host's delays can pass them)
    start = np.clip([values[0], values[-1] - values[0], float(np.median(gaps))],
                    low + 1e-9 * (high - low), high - 1e-9 * (high - low))
    (warm, cold, tau), _ = curve_fit(curve, gaps, values, p0=start, bounds=(low, high))
    return float(warm) * 1e-6, float(cold) * 1e-6, float(tau) * 1e-3


def _stamp_every(sock: socket.socket, cpu: int, gap_s: float, count: int) -> None:
    """Peer: send the monotonic clock (8 bytes, ns) ``count`` times, ``gap_s`` apart."""
    pin(cpu)
    for _ in range(count):
        deadline = time.perf_counter() + gap_s
        while time.perf_counter() < deadline:
            pass
        sock.send(time.monotonic_ns().to_bytes(8, "little"))


def bench_wake_latency(n: int, client_cpu: int, gap_s: float = 1e-3) -> float:
    """How long after an event a task asleep in epoll_wait() runs again: the median of
    (its clock when epoll_wait returns - the sender's clock when it sent), minus the
    same delay for a task that polls without sleeping (what the write, the wake-up
    call and Python take on either side).  The sleeper's CPU is idle between events,
    as a server's is between connections (in a virtual machine: halted)."""
    import select

    def median_delay(blocking: bool) -> float:
        a, b = socket.socketpair()
        ep = select.epoll()
        ep.register(a.fileno(), select.EPOLLIN)
        sender = _peer(_stamp_every, b, client_cpu, gap_s, n)
        delays = []
        try:
            poll, recv, now = ep.poll, a.recv, time.monotonic_ns
            for _ in range(n):
                if blocking:
                    poll(5.0, 1)
                else:
                    while not poll(0, 1):
                        pass
                woke = now()
                data = recv(8)
                if len(data) < 8:  # two stamps can never merge into a short read
                    break
                delays.append(woke - int.from_bytes(data[:8], "little"))
        finally:
            _stop(sender)
            ep.close()
            a.close()
            b.close()
        if not delays:
            raise HarnessError("the wake-up latency benchmark received no events")
        return statistics.median(delays) / 1e9

    return median_delay(True) - median_delay(False)


# -- the suite ----------------------------------------------------------------------


@dataclass
class CostReport:
    """Every measurement of one ``acceptsim measure-costs``."""

    host: HostInfo
    measurements: list[Measurement] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def by_name(self) -> dict[str, Measurement]:
        return {m.name: m for m in self.measurements}

    def fields(self) -> dict[str, float]:
        """The cost fields the measurements set, by field name."""
        return {m.field: m.mean for m in self.measurements if m.field is not None}


def measure_costs(
    server_cpu: int = 0,
    client_cpu: int = 1,
    operations: int = DEFAULT_OPERATIONS,
    repeats: int = DEFAULT_REPEATS,
    nginx_plan: Any = None,
    progress: Callable[[str], None] | None = None,
) -> CostReport:
    """Run every microbenchmark ``repeats`` times (interleaved: repeat 1 of each, then
    repeat 2, ...) with the measuring thread pinned to ``server_cpu`` and any peer
    pinned to ``client_cpu``; then the plan's server's CPU per reply below
    saturation under ``nginx_plan`` (:func:`server_cpu_per_reply`; None: not measured)."""
    online = os.cpu_count() or 1
    for name, cpu in (("--server-cpu", server_cpu), ("--client-cpu", client_cpu)):
        if not 0 <= cpu < online:
            raise ConfigError(name, cpu, f"a CPU number from 0 to {online - 1}")
    say = progress or (lambda _: None)
    report = CostReport(HostInfo.here())
    if report.host.irq_time_accounting is False:
        report.notes.append(
            "the kernel has no IRQ time accounting: softirq work run in a task's context "
            "(on loopback, the receive side of what the task sends) is charged to the task "
            "and to its cgroup's CFS quota"
        )
    allowed = os.sched_getaffinity(0)
    samples: dict[str, list[float]] = {}
    overflow_checks: list[tuple[int, int]] = []

    def add(name: str, value: float) -> None:
        samples.setdefault(name, []).append(value)

    try:
        pin(server_cpu)
        for rep in range(repeats):
            say(f"repeat {rep + 1}/{repeats}")
            add("accept_empty_s", bench_accept_empty(operations))
            for k in EPOLL_READY_COUNTS:
                add(f"epoll_wait_{k}", bench_epoll(operations // 4, k))
            batch = min(ACCEPT_BATCH, operations)
            acc, ctl, close, handshake = bench_accept_register_close(batch, client_cpu)
            add("accept_s", acc)
            add("epoll_ctl_s", ctl)
            add("close_s", close)
            add("loopback_handshake_s", handshake)
            drop_n = min(operations, 2000)
            drop, overflows = bench_syn_drop(drop_n)
            add("syn_drop_s", drop)
            overflow_checks.append((drop_n, overflows))
            for size in SEND_SIZES:
                add(f"send_{size}", bench_send(max(200, operations // (1 + size // 2048)),
                                               size, client_cpu))
            for gap in WAKEUP_GAPS_S:
                count = max(20, min(operations, round(WAKEUP_SECONDS / gap)))
                add(f"wakeup_after_{round(gap * 1e6)}us_s", bench_wakeup(count, client_cpu, gap))
            for gap in WAKE_LATENCY_GAPS_S:  # (each gap's wake-ups in about a second)
                count = max(100, min(operations, 1000, round(WAKEUP_SECONDS / gap)))
                add(f"wakeup_latency_after_{round(gap * 1e6)}us_s",
                    bench_wake_latency(count, client_cpu, gap))
            add("wake_reader_s", bench_wake_reader(min(operations, WAKE_READER_SENDS),
                                                   client_cpu))
    finally:
        os.sched_setaffinity(0, allowed)

    def m(name: str, values: Sequence[float], method: str, ops: int, unit: str = "s",
          cost_field: str | None = None) -> None:
        report.measurements.append(
            Measurement(name, tuple(values), unit, method, ops, cost_field)
        )

    n = operations
    m("accept_empty_s", samples["accept_empty_s"],
      "accept4() on an empty non-blocking listener (EAGAIN)", n, cost_field="accept_empty_s")
    bases, slopes = [], []
    for rep in range(repeats):
        base, slope = line_fit({k: samples[f"epoll_wait_{k}"][rep] for k in EPOLL_READY_COUNTS})
        bases.append(base)
        slopes.append(slope)
    ready_counts = ", ".join(map(str, EPOLL_READY_COUNTS))
    m("epoll_base_s", bases, f"epoll_wait(timeout 0) with {ready_counts} level-triggered "
      "ready sockets, each followed by clock_gettime(CLOCK_REALTIME) as nginx's loop does: "
      "intercept of the least-squares line", n // 4, cost_field="epoll_base_s")
    m("epoll_per_event_s", slopes, "the same line's slope", n // 4, unit="s/event",
      cost_field="epoll_per_event_s")
    batch = min(ACCEPT_BATCH, n)
    m("accept_s", samples["accept_s"], "accept4() returning a queued loopback connection",
      batch, cost_field="accept_s")
    m("epoll_ctl_s", samples["epoll_ctl_s"], "epoll_ctl(ADD, EPOLLIN|EPOLLRDHUP) of an "
      "accepted connection", batch, cost_field="epoll_ctl_s")
    m("close_s", samples["close_s"], "close() of an established loopback connection; its FIN's "
      "receive processing and the peer's ACK run in the same call (loopback)", batch,
      cost_field="close_s")
    m("loopback_handshake_s", samples["loopback_handshake_s"],
      "the client's blocking connect(): SYN, SYN-ACK, final ACK and the child socket "
      "queued, all on the client's CPU on loopback (not the server's)", batch,
      cost_field="client_connect_s")
    m("syn_drop_s", samples["syn_drop_s"], "non-blocking connect() to a full accept queue "
      "minus a socket created and closed without connecting: the SYN's transmit and its "
      "drop, on the connecting CPU on loopback", min(n, 2000))
    for drop_n, overflows in overflow_checks:
        if overflows < drop_n:
            report.notes.append(
                f"syn_drop_s: {overflows} ListenOverflows counted for {drop_n} SYNs sent "
                "(other traffic, or SYNs not dropped); the value is not a pure drop cost"
            )
            break
    per_byte = [
        line_fit({s: samples[f"send_{s}"][rep] for s in SEND_SIZES[1:]})[1]
        for rep in range(repeats)
    ]
    sizes = ", ".join(map(str, SEND_SIZES[1:]))
    m("send_per_byte_s", per_byte, f"send() of {sizes} bytes on a loopback connection "
      "drained on the other CPU: slope of the least-squares line (copy, checksum, "
      "segmentation and the receive side on loopback)", n, unit="s/byte",
      cost_field="send_per_byte_s")
    m("send_small_s", samples[f"send_{SEND_SIZES[0]}"], f"one send() of {SEND_SIZES[0]} bytes "
      "(one segment), its receive processing on loopback included (part of the server's "
      "per-request work)", n)
    gap_names = {gap: f"wakeup_after_{round(gap * 1e6)}us_s" for gap in WAKEUP_GAPS_S}
    for gap, name in gap_names.items():
        m(name, samples[name], f"a blocking epoll_wait() that sleeps {gap * 1e3:g} ms and is "
          "woken from the other CPU, minus one that finds its event ready: the sleeper's "
          "context switches on a CPU that stood idle that long",
          max(20, min(n, round(WAKEUP_SECONDS / gap))))
    # one repeat's four points hardly fix three parameters: the curve is fitted to every
    # repeat's points together, leaving out one repeat at a time (its samples; their mean
    # is close to the fit to all, their spread shows the repeats' scatter)
    fits = [cold_fit([(gap, samples[name][r]) for gap, name in gap_names.items()
                      for r in range(repeats) if r != left_out])
            for left_out in range(repeats)]
    gaps = ", ".join(f"{gap * 1e3:g}" for gap in WAKEUP_GAPS_S)
    curve = (f"least squares of warm + cold * (1 - exp(-gap / tau)) through the sleep's cost "
             f"after idle gaps of {gaps} ms, every repeat's points but one (each sample "
             "leaves out another)")
    m("wakeup_s", [f[0] for f in fits], f"a sleep's cost after no idle time: {curve}", 1,
      cost_field="wakeup_s")
    m("wakeup_cold_s", [f[1] for f in fits], f"what a long idle adds to it: {curve}", 1,
      cost_field="wakeup_cold_s")
    m("wakeup_cold_tau_s", [f[2] for f in fits], f"the idle time it grows over: {curve}", 1,
      cost_field="wakeup_cold_tau_s")
    latency_names = {gap: f"wakeup_latency_after_{round(gap * 1e6)}us_s"
                     for gap in WAKE_LATENCY_GAPS_S}
    for gap, name in latency_names.items():
        m(name, samples[name], f"median delay from an event sent on the other CPU every "
          f"{gap * 1e3:g} ms to the return of a blocking epoll_wait() on an idle CPU, minus "
          "the same delay for a task polling without sleeping: the time a woken task waits "
          "to run after that idle", max(100, min(n, 1000, round(WAKEUP_SECONDS / gap))))
    fits = [cold_fit([(gap, samples[name][r]) for gap, name in latency_names.items()
                      for r in range(repeats) if r != left_out])
            for left_out in range(repeats)]
    gaps = ", ".join(f"{gap * 1e3:g}" for gap in WAKE_LATENCY_GAPS_S)
    curve = (f"least squares of warm + cold * (1 - exp(-gap / tau)) through the wake-up's "
             f"latency after idle gaps of {gaps} ms, every repeat's points but one")
    m("wakeup_latency_s", [f[0] for f in fits], f"a wake-up's latency after no idle time: "
      f"{curve}", 1, cost_field="wakeup_latency_s")
    m("wakeup_latency_cold_s", [f[1] for f in fits], f"what a long idle adds to it: {curve}",
      1, cost_field="wakeup_latency_cold_s")
    m("wakeup_latency_tau_s", [f[2] for f in fits], f"the idle time it grows over: {curve}",
      1, cost_field="wakeup_latency_tau_s")
    m("wake_reader_s", samples["wake_reader_s"], f"one send() of {SEND_SIZES[0]} bytes "
      f"every {WAKE_READER_GAP_S * 1e3:g} ms to a loopback reader asleep in epoll_wait on "
      "the other CPU, minus the same to a reader polling epoll without sleeping: the "
      "wake-up's work in the sender's context", min(n, WAKE_READER_SENDS),
      cost_field="wake_reader_s")
    if nginx_plan is not None:
        server = nginx_plan.server
        say(f"{server} per reply")
        pairs = [server_cpu_per_reply(nginx_plan, server_cpu, client_cpu)
                 for _ in range(max(2, repeats // 2))]
        whose = "the worker's" if server == "nginx" else f"{server}'s process"
        setting = ("multi_accept on" if server == "nginx" else
                   f"accept limit {', '.join(map(str, nginx_plan.accept_limits))}")
        m(f"{server}_sleeps_per_reply", [p[1] for p in pairs], f"{whose} voluntary context "
          "switches (/proc/PID/status) per reply in the same runs: its epoll_wait calls that "
          "slept", 1, unit="1")
        m(f"{server}_cpu_per_reply_s", [p[0] for p in pairs], f"{server}'s CPU time "
          f"(/proc/PID/schedstat) per reply under httperf at {nginx_plan.rates_per_s[0]:g}/s for "
          f"{nginx_plan.duration_s:g} s, {nginx_plan.file_size_bytes}-byte file, {setting}, no "
          f"quota: everything {server} pays for a connection on this host", 1)
        if server == "haproxy":
            say("haproxy per turn of its loop")
            epoll_base = statistics.fmean(bases)
            rate = HAPROXY_TURN_LOAD * HAPROXY_TURN_QUOTA[0] / statistics.fmean(
                p[0] for p in pairs)
            turns = []
            while len(turns) < max(2, repeats // 2):
                slope, slept = haproxy_turn_cost(nginx_plan, server_cpu, client_cpu, rate)
                if slept <= HAPROXY_TURN_MAX_SLEEPS:
                    turns.append(slope)
                    continue
                if rate >= HAPROXY_TURN_MAX_LOAD * HAPROXY_TURN_QUOTA[0] / statistics.fmean(
                        p[0] for p in pairs):
                    raise HarnessError(
                        f"haproxy still slept {slept:.2f} times per accepted connection at "
                        f"{rate:.0f}/s under {HAPROXY_TURN_QUOTA[0]:g} CPU: no rate found "
                        "at which every turn of its loop is busy")
                say(f"haproxy slept {slept:.2f} times per connection at {rate:.0f}/s: "
                    f"not saturated; again at {HAPROXY_TURN_STEP:g} x the rate")
                turns.clear()  # every repeat at the one rate that saturates
                rate *= HAPROXY_TURN_STEP
            m("haproxy_loop_s", [t - epoll_base for t in turns], "the slope of HAProxy's CPU "
              "per accepted connection (its cgroup's usage) against its turns of the loop per "
              "connection (show activity: loops, accepted), over runs at tune.maxaccept "
              f"{', '.join(map(limit_text, HAPROXY_TURN_LIMITS))} under a CFS quota of "
              f"{HAPROXY_TURN_QUOTA[0]:g} CPU per {HAPROXY_TURN_QUOTA[1] // 1000} ms at "
              f"{rate:.0f}/s (from {HAPROXY_TURN_LOAD:g} x what the quota serves at the "
              f"unloaded CPU per reply, raised {HAPROXY_TURN_STEP:g}-fold until HAProxy "
              f"slept at most {HAPROXY_TURN_MAX_SLEEPS:g} times per accepted connection at "
              "every limit: no turn sleeps), minus epoll_base_s", 1,
              cost_field="haproxy_loop_s")
    return report


#: the load of the HAProxy turn benchmark: a CFS quota whose every period HAProxy uses up
#: (HAPROXY_TURN_LOAD times the rate the quota serves at its unloaded CPU per reply; a
#: busy HAProxy costs less per reply than an idle one, which pays a wake-up each time),
#: so that no turn sleeps and the limits take the queued connections in different
#: numbers of turns, which is what the slope of CPU against turns needs
HAPROXY_TURN_QUOTA = (0.05, 20000)  # CPUs, period (us)
HAPROXY_TURN_LOAD = 1.4
HAPROXY_TURN_LIMITS = (1, 2, 64, math.inf)
#: a turn run that HAProxy spent throttled in fewer of its periods than this slept: its
#: turns include sleeps and wake-ups, and the slope would be no turn's cost
HAPROXY_TURN_MIN_THROTTLED = 0.9
#: ... and so did one in which HAProxy slept (voluntary context switches: an epoll_wait
#: that blocked) more than this often per accepted connection: throttled in every period
#: is not enough, a HAProxy below saturation sleeps within its periods (at 619/s under
#: 0.05 CPU, where it serves about 750/s, the slope came out 0.5 +/- 2.7 us); the rate is
#: then raised by HAPROXY_TURN_STEP, up to HAPROXY_TURN_MAX_LOAD times the first estimate
HAPROXY_TURN_MAX_SLEEPS = 0.05
HAPROXY_TURN_STEP = 1.25
HAPROXY_TURN_MAX_LOAD = 4.0


def haproxy_activity(stats: str) -> dict[str, int]:
    """The counters of HAProxy's ``show activity`` (``loops: 1234``; with several threads
    the total, the first number), from the text of ``harness.Haproxy.stats()``."""
    out: dict[str, int] = {}
    section = stats.partition("# show activity")[2]
    for line in section.splitlines():
        key, sep, rest = line.partition(":")
        words = rest.split()
        if sep and words and words[0].isdigit():
            out[key.strip()] = int(words[0])
    return out


def haproxy_turn_cost(
    plan: Any, server_cpu: int, client_cpu: int, rate: float
) -> tuple[float, float]:
    """CPU seconds per turn of HAProxy's loop: one run at ``rate`` per limit of
    HAPROXY_TURN_LIMITS, each giving CPU and turns per accepted connection; the
    least-squares slope of the first against the second.  And the most sleeps per
    accepted connection of those runs (HAProxy's voluntary context switches)."""
    from dataclasses import replace

    from acceptsim.measure import harness

    tools = harness.check_tools(need_taskset=True, server="haproxy")
    points: dict[float, float] = {}
    slept = 0.0
    quota, period = HAPROXY_TURN_QUOTA
    with harness.CpuQuota(quota, period) as group:
        for limit in HAPROXY_TURN_LIMITS:
            run_plan = replace(plan, accept_limits=(limit,), server_cpu_quota=quota,
                               server_cpu_period_us=period)
            server = harness.Haproxy(run_plan, str(server_cpu), str(tools["haproxy"]), group,
                                     maxaccept=limit)
            with server:
                pid = server.worker_pids()[0]
                before, cpu_before = haproxy_activity(server.stats()), group.usage_us()
                throttled_before = group.throttled()
                sleeps_before = _sleeps(pid)
                harness.run_httperfs(
                    harness.httperf_commands(run_plan, rate, server.uri),
                    str(client_cpu), run_plan.duration_s + run_plan.timeout_s + 30,
                )
                cpu = (group.usage_us() - cpu_before) * 1e-6
                sleeps = _sleeps(pid) - sleeps_before
                throttled = {k: v - throttled_before.get(k, 0)
                             for k, v in group.throttled().items()}
                after = haproxy_activity(server.stats())
            loops = after.get("loops", 0) - before.get("loops", 0)
            accepted = after.get("accepted", 0) - before.get("accepted", 0)
            if accepted <= 0 or loops <= 0:
                raise HarnessError(f"haproxy at maxaccept {limit_text(limit)}: {accepted} "
                                   f"connections accepted, {loops} turns (show activity)")
            busy = throttled.get("nr_throttled", 0) / max(1, throttled.get("nr_periods", 0))
            if busy < HAPROXY_TURN_MIN_THROTTLED:
                raise HarnessError(f"haproxy at maxaccept {limit_text(limit)} and {rate:.0f}/s "
                                   f"was throttled in {busy:.0%} of its periods, under "
                                   f"{HAPROXY_TURN_MIN_THROTTLED:.0%}: its turns slept")
            points[loops / accepted] = cpu / accepted
            slept = max(slept, sleeps / accepted)
    return line_fit(points)[1], slept


def server_cpu_per_reply(plan: Any, server_cpu: int, client_cpu: int) -> tuple[float, float]:
    """The server's CPU seconds per reply below saturation and its sleeps per reply: the
    runtime and voluntary context switches of nginx's worker (or HAProxy's one-thread
    process) over the httperf load of ``plan`` (the harness's ``Plan``, with one rate and,
    for HAProxy, its first accept limit), divided by the replies httperf counted."""
    from acceptsim.measure import harness
    from acceptsim.measure.httperf import parse_httperf

    tools = harness.check_tools(need_taskset=True, server=plan.server)
    rate = plan.rates_per_s[0]
    executable = str(tools[plan.server])
    server = (harness.Nginx(plan, str(server_cpu), executable) if plan.server == "nginx" else
              harness.Haproxy(plan, str(server_cpu), executable,
                              maxaccept=plan.accept_limits[0]))
    with server:
        workers = server.worker_pids()
        if not workers:
            raise HarnessError(f"{plan.server}'s worker pid could not be read")
        before, sleeps_before = _runtime_ns(workers[0]), _sleeps(workers[0])
        out = harness.run_httperfs(
            harness.httperf_commands(plan, rate, server.uri), str(client_cpu),
            plan.duration_s + plan.timeout_s + 30,
        )
        after, sleeps_after = _runtime_ns(workers[0]), _sleeps(workers[0])
    replies = sum(r.totals.replies for text in out for r in parse_httperf(text))
    if replies <= 0:
        raise HarnessError(f"httperf counted no replies from {plan.server}")
    return (after - before) / replies / 1e9, (sleeps_after - sleeps_before) / replies


def _sleeps(pid: int) -> int:
    """The task's voluntary context switches so far (/proc/PID/status): its sleeps."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("voluntary_ctxt_switches:"):
                return int(line.split()[1])
    except (OSError, ValueError) as exc:
        raise HarnessError(f"/proc/{pid}/status: {exc}") from None
    raise HarnessError(f"/proc/{pid}/status: no voluntary_ctxt_switches")


def _runtime_ns(pid: int) -> int:
    """The task's exact CPU time so far (/proc/PID/schedstat, first field, ns)."""
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
    except (OSError, ValueError, IndexError) as exc:
        raise HarnessError(f"/proc/{pid}/schedstat: {exc}") from None


# -- writing -----------------------------------------------------------------------------


def _fmt(value: float) -> str:
    return f"{value:.4g}" if math.isfinite(value) else "nan"


def measured_dict(report: CostReport) -> dict[str, Any]:
    """The report as a parameter file's ``[measured]`` table: ``host`` and one table
    per measurement."""
    out: dict[str, Any] = {"host": dict(vars(report.host))}
    for meas in report.measurements:
        out[meas.name] = {
            "mean": meas.mean, "spread": meas.spread, "unit": meas.unit,
            "repeats": len(meas.samples), "operations": meas.operations,
            "samples": list(meas.samples), "method": meas.method,
            **({"sets": meas.field} if meas.field else {}),
        }
    return out


def measured_tables(measured: dict[str, Any]) -> str:
    """``[measured.NAME]`` tables (TOML) of a ``[measured]`` table."""
    lines: list[str] = []
    for name, table in measured.items():
        if not isinstance(table, dict):
            continue
        key = name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else json.dumps(name)
        lines += ["", f"[measured.{key}]"]
        for key, value in table.items():
            if isinstance(value, list):
                lines.append(f"{key} = [{', '.join(_toml_value(v) for v in value)}]")
            else:
                lines.append(f"{key} = {_toml_value(value)}")
    return "\n".join(lines).lstrip("\n")


def to_toml(report: CostReport, command: str = "") -> str:
    """A parameter file: the measured cost fields at top level (``--params`` reads
    them; every other field keeps its default), each measurement under
    ``[measured.NAME]`` and the host under ``[measured.host]``."""
    host = report.host
    lines = [
        "# costs measured on this host by `acceptsim measure-costs`",
        *([f"#   {command}"] if command else []),
        f"# {host.date}, Linux {host.kernel}, {host.cpu_model} ({host.cpus} CPUs)",
        "# each value: mean over repeats of (CPU time of a loop of the operation minus the",
        "# same loop without the system call) / operations; spread = standard deviation",
        *[f"# note: {n}" for n in report.notes],
        "",
    ]
    for meas in report.measurements:
        if meas.field is not None:
            lines.append(f"{meas.field} = {meas.mean!r}  # +/- {_fmt(meas.spread)} "
                         f"{meas.unit}, measured as {meas.name}")
    lines += ["", measured_tables(measured_dict(report))]
    return "\n".join(lines) + "\n"


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return '"unknown"'
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(str(value))


def table(report: CostReport) -> str:
    """The measurements as a text table (microseconds)."""
    rows = [f"{'cost':<24} {'mean':>10} {'spread':>9}  unit     sets"]
    for meas in report.measurements:
        scale, unit = {"s": (1e6, "us"), "s/byte": (1e9, "ns/byte"),
                       "s/event": (1e6, "us/event")}.get(meas.unit, (1.0, meas.unit))
        rows.append(f"{meas.name:<24} {meas.mean * scale:>10.3f} {meas.spread * scale:>9.3f}  "
                    f"{unit:<8} {meas.field or '-'}")
    return "\n".join(rows)


