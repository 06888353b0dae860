"""CPU costs of the host: seconds of processor time per operation.

Costs are grouped per testbed.  ``CLUSTER1`` is the paper's cluster 1
(2.4 GHz Xeon, 512 KB L2, uniprocessor Linux 2.4.20, gigabit LAN).

Kernel costs are charged at interrupt priority for every packet the host
handles, including packets it then drops: a SYN that is dropped is parsed and
looked up first ("significant expense is incurred in handling failed
connection requests").  Server costs are the system calls and user-level
work of each server; the send path of a reply (``write`` into TCP) is part of
the server's per-request cost because it runs in the server's context.
"""

from __future__ import annotations

from dataclasses import dataclass

from acceptsim.sim.params import Params, param

_FIT1 = (
    "fitted (select_base_s and request_s together, select_per_fd_s held at 1 us) to the "
    "paper's userver one-packet peaks on cluster 1: about 19,500 replies/s at accept-limit 1 "
    "and 22,000 at accept-limit 10.  Peak = best reply rate over target rates 17k..25k step 1k, "
    "8 s runs with 3 s warm-up, seed 1; fit gives 19,593 (+0.5%) and 21,928 (-0.3%); "
    "re-check with `acceptsim reproduce userver-one-packet`.  The fit gave 14.5 us with a "
    "1,460-byte one-packet reply; with the reply one 1,448-byte segment (kernel.mss_bytes) "
    "request_s carries the 12 bytes' send_per_byte_s (24 ns), so a one-packet request costs "
    "what it did"
)

_FIT_TUX = (
    "fitted (tux_request_s with cache_refill_s) to the paper's TUX one-packet peaks on "
    "cluster 1: 22,998 replies/s at accept-limit 1 and 20,194 at inf (residuals -0.25% and "
    "-1.5%, 8 s runs; the inf peak is its last unsaturated grid rate); see "
    "`acceptsim calibrate-paper tux` and "
    "acceptsim/models/calibration_results.toml"
)

_FIT_KNOT = (
    "cluster2's value fitted (knot_io_s, knot_listen_poll_s and knot_poll_per_conn_s "
    "together) to the paper's Knot-C one-packet peaks on cluster 2: about 12,000 replies/s "
    "at accept-limit 1, 14,000 at 50, and at 100 slightly above limit 1 (taken as 12,500); "
    "peak = best reply rate over target rates 12k..20k, 8 s runs with 3 s warm-up, seed 1; "
    "Nelder-Mead, 10 evaluations from (6.9 us, 7.6 us, 0.09 us), giving 11,653 (-2.9%), "
    "13,130 (-6.2%) and 13,008 (+4.1%); limits 50 and 100 run identically until accept "
    "phases reach 50 connections, so their peaks cannot be pulled further apart; see "
    "`acceptsim calibrate-paper knot` and acceptsim/models/calibration_results.toml.  The "
    "class default (cluster1, which ran no Knot) is an unfitted estimate"
)

_FIT_CLIENT = (
    "fitted (`acceptsim calibrate-paper overload`: bounded scalar least squares "
    "on errors in units of each target's band, two-minute runs from the start, seed 1, with the "
    "client kernels' 10 ms timer tick) to the userver's four overload numbers on cluster 1: accept-"
    "limit 1 at 20,000/s (14,058 replies/s; simulated +10.3%; 17,832 drops/s; +5.4%) and inf "
    "over 1 at 21,000/s (1.65; -12.6%) and 30,000/s (1.71; +11.1%); the objective is flat "
    "there (0.088-0.100 us score within 10% of each other).  A select() with a zero "
    "timeout registers on no wait queue, so a fraction of a microsecond per socket (kernel "
    "poll plus httperf's bitmap scan) is what the mechanism predicts.  Cluster 2 is taken to "
    "have the same client machines (not fitted to Knot); see "
    "acceptsim/models/calibration_results.toml"
)

#: cluster 2's fitted Knot costs (`acceptsim calibrate-paper knot`)
KNOT_IO_S = 6.9575e-6
KNOT_LISTEN_POLL_S = 6.7133e-6
KNOT_POLL_PER_CONN_S = 1.0350e-7


@dataclass(frozen=True)
class HostCosts(Params):
    """Seconds of CPU per operation on one testbed."""

    _prefix = "costs."

    # -- kernel, per packet (interrupt priority) -----------------------------
    rx_segment_s: float = param(
        2.0e-6,
        unit="s",
        ge=0.0,
        doc="receive one TCP segment: driver, IP, TCP parse and socket lookup "
        "(charged for every segment, dropped or not)",
    )
    syn_queue_s: float = param(
        3.0e-6,
        unit="s",
        ge=0.0,
        doc="extra for a SYN that is queued: allocate the open request, send the SYN-ACK",
    )
    child_socket_s: float = param(
        5.0e-6,
        unit="s",
        ge=0.0,
        doc="extra for a final ACK that completes the handshake: create the child socket "
        "and queue it on the accept queue",
    )
    tx_segment_s: float = param(
        1.5e-6,
        unit="s",
        ge=0.0,
        doc="send one segment: a SYN-ACK retransmission, the ACK of the client's FIN, and "
        "every segment of a reply but its first (whose transmission is part of request_s, "
        "tux_send_s, fitted with one-segment replies; acceptsim/models/tcp.py)",
    )
    # -- server system calls and work -----------------------------------------
    select_base_s: float = param(
        2.75e-6, unit="s", ge=0.0, doc="one select() call, fixed part", fitted=_FIT1
    )
    select_per_fd_s: float = param(
        1.0e-6,
        unit="s/descriptor",
        ge=0.0,
        doc="select() per descriptor in the set: on 2.4 it registers on and polls every "
        "socket's wait queue, of the order of a microsecond per descriptor (set, not fitted)",
    )
    accept_s: float = param(3.0e-6, unit="s", ge=0.0, doc="accept() that returns a connection")
    accept_empty_s: float = param(
        1.0e-6, unit="s", ge=0.0, doc="accept() that fails with EAGAIN (queue empty)"
    )
    request_s: float = param(
        14.524e-6,
        unit="s",
        ge=0.0,
        doc="serve one request: read, parse, look up the cached file, write headers and "
        "reply into TCP (excluding per-byte cost)",
        fitted=_FIT1,
    )
    keepalive_s: float = param(
        0.0, unit="s", ge=0.0,
        doc="the server's work to keep a connection after a reply and take up its next "
        "event (nginx's ngx_http_set_keepalive and keep-alive handler: the request's memory "
        "freed, the keep-alive timer set, the next read), paid with every reply of a "
        "connection the server keeps: every reply under HTTP/1.1's default (httperf's, which "
        "then closes; wrk's with keep-alive), none when the request says Connection: close "
        "(wrk without keep-alive: the server closes at once).  Charged by the userver's "
        "event loop, which nginx's model runs.  0: not told apart from request_s (the "
        "paper's servers, and every cost set fitted before it)",
    )
    connection_s: float = param(
        0.0, unit="s", ge=0.0,
        doc="nginx's own work for a connection beyond the system calls measured apart "
        "(accept_s, epoll_ctl_s, close_s): its connection and memory pool, the HTTP state "
        "it sets up and releases, paid with its close.  With its close, not its accept: "
        "reply rates alone cannot tell them apart, and nginx's measured worker shares, "
        "overflows and tail latency under wrk follow with the close and not with the accept "
        "(tests/data/measured/README.md, nginx-wrk).  0: not told apart from request_s",
    )
    send_per_byte_s: float = param(
        2.0e-9, unit="s/byte", ge=0.0,
        doc="per byte of reply copied and sent: the copy from the file's pages into the "
        "socket's buffers (each byte read and written once, on the 2003 Xeon's 533 MHz "
        "front-side bus of 4.3 GB/s peak, of the order of 1 to 2 GB/s sustained for a "
        "copy) and no checksum (the e1000 computes it: checksum offload); set, not fitted",
    )
    write_s: float = param(
        2.0e-6,
        unit="s",
        ge=0.0,
        doc="a write() that continues a reply once its socket is writable again (system "
        "call, socket lock and TCP's send bookkeeping), excluding the per-byte and "
        "per-segment costs; set, not fitted (of the order of a system call that sends: "
        "the one-segment reply's write is part of request_s).  TUX's further send passes "
        "cost tux_send_s each instead",
    )
    close_s: float = param(
        5.0e-6, unit="s", ge=0.0, doc="read() of end-of-file and close() of the connection"
    )
    # -- epoll-based servers (nginx) ---------------------------------------------
    epoll_base_s: float = param(
        2.0e-6, unit="s", ge=0.0, doc="one epoll_wait() call, fixed part"
    )
    epoll_per_event_s: float = param(
        0.2e-6, unit="s/event", ge=0.0, doc="epoll_wait() per ready event returned"
    )
    epoll_ctl_s: float = param(
        1.0e-6, unit="s", ge=0.0, doc="epoll_ctl() registering an accepted connection"
    )
    wakeup_latency_s: float = param(
        0.0, unit="s", ge=0.0,
        doc="how long a task asleep (in epoll_wait, select or accept) waits to run once an "
        "event wakes it, on an idle CPU: the inter-processor interrupt and the switch in (in "
        "a virtual machine, the halted virtual CPU scheduled again); events that arrive "
        "meanwhile are handled by the same wake-up.  Not CPU time of the task.  The "
        "server's CPUs wait it, and so does a closed loop's wrk thread woken by a reply "
        "(replies that come meanwhile find it woken: no wake_reader_s for them).  After no "
        "idle time; it grows with the idle time before the wake-up (wakeup_latency_cold_s). "
        " `acceptsim measure-costs` measures it (sets measured before 2026-12-07 08:00 UTC "
        "measured it after an idle of 1 ms, and have no growth); 0 in the paper's sets",
    )
    wakeup_latency_cold_s: float = param(
        0.0, unit="s", ge=0.0,
        doc="what a long idle adds to wakeup_latency_s: the latency after an idle of t is "
        "wakeup_latency_s + wakeup_latency_cold_s * (1 - exp(-t / wakeup_latency_tau_s)) "
        "(a virtual CPU halted longer is scheduled again later by its host).  `acceptsim "
        "measure-costs` fits the curve to the latency after idle gaps of 0.03 to 10 ms; 0 "
        "(no growth) in the paper's sets and in sets measured before it",
    )
    wakeup_latency_tau_s: float = param(
        1e-3, unit="s", ge=0.0,
        doc="the idle time over which wakeup_latency_cold_s grows (measured with it); 0: "
        "all of it after any idle time",
    )
    wakeup_cold_s: float = param(
        0.0, unit="s", ge=0.0,
        doc="what a task resumed after its CPU stood idle is charged beyond a warm "
        "resumption, for a long idle: caches and, in a virtual machine, the halted vCPU's "
        "state lost meanwhile; it grows as wakeup_cold_s * (1 - exp(-idle / "
        "wakeup_cold_tau_s)) and is paid by nginx after a sleep and by any task resumed "
        "after a CFS throttle.  `acceptsim measure-costs` fits it to a sleep's cost after "
        "idle gaps of 0.2 to 10 ms; 0 in the paper's sets",
    )
    wakeup_cold_tau_s: float = param(
        1e-3, unit="s", ge=0.0,
        doc="the idle time over which wakeup_cold_s grows (see there; measured with it); 0: "
        "all of it after any idle time",
    )
    wakeup_s: float = param(
        0.0, unit="s", ge=0.0,
        doc="what an epoll_wait() that sleeps costs its caller when it is woken, beyond "
        "one that finds its events ready: the switch out and back in (and, in a virtual "
        "machine, the wake-up's inter-processor interrupt and halt exit); `acceptsim "
        "measure-costs` measures it.  Charged by nginx; 0 in the paper's sets (not "
        "measured there, and their fitted costs stand without it)",
    )
    wake_reader_s: float = param(
        0.0, unit="s", ge=0.0,
        doc="what a server's reply costs it beyond its send when it wakes a client thread "
        "asleep in epoll_wait on another CPU (a closed loop's wrk thread with nothing else "
        "to do): the wake-up's run-queue work and inter-processor interrupt (in a virtual "
        "machine an exit that kicks the halted virtual CPU), run in the sender's context "
        "because a loopback segment is received inside its sender's send.  Charged to "
        "every server's reply written in one step; a client that busy-polls (httperf) is "
        "never asleep.  `acceptsim measure-costs` measures it; 0 in the paper's sets",
    )

    # -- TUX (kernel-mode server: no system-call crossings, no select) --------------
    tux_accept_s: float = param(
        1.5e-6,
        unit="s",
        ge=0.0,
        doc="TUX takes one connection off the accept queue (in-kernel, no syscall crossing)",
    )
    tux_request_s: float = param(
        14.1e-6,
        unit="s",
        ge=0.0,
        doc="TUX reads and parses one request and looks up the cached file (work_pending pass 1)",
        fitted=_FIT_TUX,
    )
    tux_send_s: float = param(
        4.024e-6,
        unit="s",
        ge=0.0,
        doc="TUX sends one reply's headers and content into TCP, excluding per-byte cost "
        "(work_pending pass 2; a reply larger than the send buffer takes a further pass for "
        "each part, at this cost each).  Set at 4 us with a 1,460-byte one-packet reply; "
        "4.024 us carries the 12 bytes' send_per_byte_s now that the reply is one "
        "1,448-byte segment, so the send pass costs what it did",
    )
    tux_close_s: float = param(
        3.0e-6,
        unit="s",
        ge=0.0,
        doc="TUX handles the client's FIN and closes the connection (work_pending pass 3)",
    )
    # -- the processor's cache (what a server's batches cost beyond their items) ------
    l2_cache_bytes: int = param(
        512 * 1024, unit="bytes", ge=0, doc="L2 cache of the processor (cluster 1/2 Xeon: 512 KB)"
    )
    conn_footprint_bytes: int = param(
        6144,
        unit="bytes",
        ge=0,
        doc="per-connection working set a kernel-mode server touches on every pass: struct "
        "sock and tcp_opt (~1.2 KB), the TUX request (~1 KB), request and reply sk_buffs "
        "(~3.5 KB); an estimate from 2.4.20/TUX 2 structure sizes, not fitted",
    )
    cache_refill_s: float = param(
        2.9e-6,
        unit="s",
        ge=0.0,
        doc="extra CPU to refetch one connection's working set from memory when it has been "
        "evicted; charged per work item times the evicted fraction "
        "1 - exp(-connections touched in the phase * conn_footprint_bytes / l2_cache_bytes) "
        "(a shared set-associative L2 misses gradually as a phase's footprint grows, "
        "see acceptsim/models/servers/tux.py).  Used by TUX",
        fitted=_FIT_TUX,
    )

    # -- Knot on Capriccio user-level threads ---------------------------------------
    knot_thread_switch_s: float = param(
        1.0e-6,
        unit="s",
        ge=0.0,
        doc="Capriccio user-level context switch to the next runnable thread (set, not fitted)",
    )
    knot_poll_base_s: float = param(
        20.0e-6,
        unit="s",
        ge=0.0,
        doc="one Capriccio scheduler I/O poll, fixed part (set, not fitted)",
    )
    knot_poll_per_conn_s: float = param(
        0.1e-6,
        unit="s/connection",
        ge=0.0,
        doc="Capriccio scheduler I/O poll, per open connection (it polls all of them)",
        fitted=_FIT_KNOT,
    )
    knot_io_s: float = param(
        8.0e-6,
        unit="s",
        ge=0.0,
        doc="Capriccio's wrapper around each I/O call (accept, read, write, close): the "
        "non-blocking attempt, its bookkeeping in the blocking graph and stack checks",
        fitted=_FIT_KNOT,
    )
    knot_listen_poll_s: float = param(
        2.0e-6,
        unit="s",
        ge=0.0,
        doc="Knot-C opens each accept phase by waiting for the listening socket to be "
        "readable (it accepts without blocking, and blocks only when it has none): a poll() "
        "system call on that one descriptor, charged with knot_io_s for Capriccio's wrapper; "
        "it returns at once when connections are queued, else the thread blocks on the "
        "socket.  Paid once per accept phase: per connection at accept-limit 1",
        fitted=_FIT_KNOT,
    )
    knot_thread_create_s: float = param(
        3.0e-6, unit="s", ge=0.0, doc="Knot-A: create a user-level thread for a new connection"
    )

    # -- HAProxy's loop -------------------------------------------------------------
    haproxy_loop_s: float = param(
        0.0, unit="s", ge=0.0,
        doc="one turn of HAProxy's run_poll_loop beyond its epoll_wait (epoll_base_s and "
        "epoll_per_event_s): timers, the clock, signals, the scheduler's entry and its "
        "activity counters.  0 in the paper's cost sets (no HAProxy there); measured per "
        "host by `acceptsim measure-costs --server haproxy` (the CPU per reply against "
        "HAProxy's own count of turns, `show activity` loops, across accept limits)",
    )

    # -- the testbed's network: the server's links to the client machines -------------
    nics: int = param(
        2, unit="links", ge=0,
        doc="the server's network interfaces to the clients, each a link of its own; the "
        "client machines are split evenly among them (the paper: two gigabit NICs, four "
        "client machines each).  0: no link is modelled (the clients are local)",
    )
    nic_bits_per_s: float = param(
        1.0e9, unit="bits/s", gt=0.0, doc="line rate of each NIC's link (gigabit Ethernet)"
    )
    frame_overhead_bytes: int = param(
        90, unit="bytes/segment", ge=0,
        doc="what a segment takes on the wire beyond its payload: IP and TCP headers with "
        "the timestamp option (52 bytes), Ethernet header and FCS (18), preamble (8) and "
        "the inter-frame gap (12)",
    )

    # -- the client machines (httperf) -------------------------------------------------
    client_machines: int = param(
        8, unit="machines", ge=1, doc="client machines, one httperf process each (the paper: 8); "
        "a client's open sockets are the run's open client connections over this number",
    )
    client_connect_s: float = param(
        0.0, unit="s", ge=0.0,
        doc="the client's CPU for one connect() (on loopback the whole handshake, SYN, "
        "SYN-ACK, final ACK and the child socket queued, runs in that call: acceptsim "
        "measure-costs' loopback_handshake_s).  wrk opens each thread's connections one "
        "after another before its event loop starts, so a wrk closed loop's first "
        "connections start this far apart and their first requests leave when the thread's "
        "last connect is done (RunConfig.client = wrk).  0: they start a round trip apart",
    )
    client_request_s: float = param(
        0.0, unit="s", ge=0.0,
        doc="a closed-loop client thread's CPU per reply (wrk: read and parse it, record its "
        "latency, write the next request).  A thread does this for its connections one "
        "after another, so a user's next request leaves only when its thread is done: "
        "at a few connections it is part of each request's cycle.  Measured by the "
        "client's own CPU time over its requests (acceptsim measure --client wrk records "
        "load.client_cpu_s).  0: the client answers at once",
    )
    client_connection_s: float = param(
        0.0, unit="s", ge=0.0,
        doc="a closed-loop client thread's CPU per connection beyond its requests (wrk "
        "without keep-alive: close the connection, create and connect the next one, on "
        "loopback with its whole handshake, and register it), serial on the thread as "
        "client_request_s",
    )
    client_loop_base_s: float = param(
        0.0, unit="s", ge=0.0, doc="httperf event loop: fixed part of one iteration (timer "
        "tick, select() entry); 0 with client_poll_per_socket_s 0 turns the loop delay off",
    )
    client_poll_per_socket_s: float = param(
        9.8e-8, unit="s/socket", fitted=_FIT_CLIENT, ge=0.0,
        doc="httperf event loop: per open socket of the client machine, each iteration "
        "(httperf polls select() with a zero timeout over every "
        "socket it holds, connecting ones included; the kernel polls each and httperf scans "
        "the bitmaps).  The client application reacts to an event (connection established: "
        "write the request; reply read: close) at the end of the next such scan, so its "
        "reaction delay grows with the sockets it holds, and in overload it holds every "
        "connection whose SYN the server dropped until its timeout",
    )


#: the paper's cluster 1 (userver, TUX).  It ran no Knot: its Knot fields are the
#: class defaults, unfitted estimates
CLUSTER1 = HostCosts()

#: the paper's cluster 2 (Knot): the same 2.4 GHz Xeon with Linux 2.4.19; the kernel
#: path is taken to cost what it does on cluster 1, and the Knot fields marked fitted
#: are fitted here (acceptsim/models/calibration_results.toml, section knot)
CLUSTER2 = CLUSTER1.replace(
    knot_io_s=KNOT_IO_S,
    knot_listen_poll_s=KNOT_LISTEN_POLL_S,
    knot_poll_per_conn_s=KNOT_POLL_PER_CONN_S,
)

#: named parameter sets usable with ``--params NAME``
PARAMETER_SETS: dict[str, HostCosts] = {"cluster1": CLUSTER1, "cluster2": CLUSTER2}
