"""When does this host's kernel retransmit a dropped SYN?  (Linux, root: it captures lo.)

A listener on 127.0.0.1 whose accept queue is full drops every SYN; N non-blocking
connects spread over SPREAD seconds each send one, and the kernel retransmits each on its
SYN timer.  Every SYN leaving on lo is captured with its kernel timestamp (AF_PACKET,
SO_TIMESTAMPNS), so the delays are the kernel's, whatever the load: the first SYN of each
connection to its first retransmission.  Prints the quantiles and a histogram in 4-ms
bins after 1 s; the model's client_timer_tick_s and client_timer_wheel_shift
(acceptsim.models.kernel) say what to expect (HZ=250 and Linux 4.8's wheel: 1.000-1.032 s).

    sudo python tools/syn_timer.py [N]
"""

from __future__ import annotations

import socket
import struct
import sys
import threading
import time

SPREAD_S = 0.3
SO_TIMESTAMPNS = 35  # <asm-generic/socket.h>
ETH_P_ALL = 3
PACKET_OUTGOING = 4
#: how long after the last connect the capture waits for its retransmission
WAIT_S = 1.3


def main(n: int) -> None:
    sniffer = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sniffer.bind(("lo", 0))
    sniffer.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    sniffer.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 24)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    syns: dict[int, list[float]] = {}
    done = threading.Event()

    def capture() -> None:
        sniffer.settimeout(0.2)
        while not done.is_set():
            try:
                data, ancillary, _, address = sniffer.recvmsg(256, 64)
            except TimeoutError:
                continue
            if address[2] != PACKET_OUTGOING:  # each segment on lo is seen twice
                continue
            stamp = next((struct.unpack("qq", d[:16]) for _, kind, d in ancillary
                          if kind == SO_TIMESTAMPNS), None)
            ip = data[14:]
            if stamp is None or len(ip) < 40 or ip[9] != socket.IPPROTO_TCP:
                continue
            tcp = ip[(ip[0] & 15) * 4:]
            source, destination = struct.unpack("!HH", tcp[:4])
            if destination == port and tcp[13] & 0x02 and not tcp[13] & 0x10:  # SYN, no ACK
                syns.setdefault(source, []).append(stamp[0] + stamp[1] * 1e-9)

    thread = threading.Thread(target=capture)
    thread.start()
    held = []
    for _ in range(n + 3):  # the first few fill the accept queue (backlog 0: one slot)
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        held.append(s)
        time.sleep(SPREAD_S / n)
    time.sleep(WAIT_S)
    done.set()
    thread.join()
    delays = sorted(t[1] - t[0] for t in syns.values() if len(t) >= 2)
    if not delays:
        raise SystemExit("no SYN was retransmitted (is this root on Linux?)")
    q = lambda p: delays[min(len(delays) - 1, int(p * len(delays)))]  # noqa: E731
    print(f"{len(delays)} of {len(syns)} connections' SYNs retransmitted; delay (s): "
          f"min {delays[0]:.4f} p10 {q(0.1):.4f} p50 {q(0.5):.4f} p90 {q(0.9):.4f} "
          f"max {delays[-1]:.4f}")
    bins: dict[int, int] = {}
    for d in delays:
        k = int((d - 1.0) * 1000 // 4) * 4
        bins[k] = bins.get(k, 0) + 1
    print("ms after 1 s (4-ms bins):", sorted(bins.items()))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
