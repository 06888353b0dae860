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

from sim.params import Params, param

_FIT1 = (
    "fitted (select_base_s and request_s together, select_per_fd_s held at 1 us) to the "
    "paper's userver one-packet peaks on cluster 1: about 19,500 replies/s at accept-limit 1 "
    "and 22,000 at accept-limit 10.  Peak = best reply rate over target rates 17k..25k step 1k, "
    "8 s runs with 3 s warm-up, seed 1; fit gives 19,593 (+0.5%) and 21,928 (-0.3%); "
    "re-check with `acceptsim reproduce userver-one-packet`"
)


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
        doc="kernel-generated segment: SYN-ACK retransmission, ACK of the client's FIN",
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
        14.5e-6,
        unit="s",
        ge=0.0,
        doc="serve one request: read, parse, look up the cached file, write headers and "
        "reply into TCP (excluding per-byte cost)",
        fitted=_FIT1,
    )
    send_per_byte_s: float = param(
        2.0e-9, unit="s/byte", ge=0.0, doc="per byte of reply copied and sent"
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


CLUSTER1 = HostCosts()

#: named parameter sets usable with ``--params NAME``
PARAMETER_SETS: dict[str, HostCosts] = {"cluster1": CLUSTER1}
