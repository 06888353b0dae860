"""Replies larger than a segment (acceptsim/models/tcp.py): each mechanism, and what a run shows
of it with the mechanism switched off (a parameter that takes it away)."""

from __future__ import annotations

import math

import pytest

from acceptsim.models.config import RunConfig
from acceptsim.models.costs import CLUSTER1
from acceptsim.models.experiment import simulate
from acceptsim.models.host import Host
from acceptsim.models.kernel import LINUX_24
from acceptsim.models.tcp import WRITABLE_SHARE, Nic, link_note

MSS = LINUX_24.mss_bytes
#: a send buffer no reply fills: every reply is written by one write()
HUGE_BUFFER = 1 << 30


def _config(server: str = "userver", reply_bytes: int = 10 * MSS, rate: float = 100.0,
            kernel=LINUX_24, costs=CLUSTER1) -> RunConfig:
    """Connections one at a time (evenly spaced, far apart): each reply sent alone."""
    return RunConfig(
        server=server, workload="one-packet", workload_params={"reply_bytes": reply_bytes},
        rate_per_s=rate, spacing="deterministic", duration_s=1.0, warmup_s=0.0,
        kernel=kernel, costs=costs,
    )


def _host(server: str = "userver", **fields) -> Host:
    host = Host(_config(server, **fields))
    host.run()
    return host


def _replies(host: Host) -> int:
    return host.client.replies_total


# -- segments, and the ACKs that come back ---------------------------------------------
@pytest.mark.parametrize("server", ["userver", "tux", "knot"])
def test_a_reply_leaves_as_segments_of_mss_each_charged_and_its_acks_cost_the_kernel(server):
    on = _host(server)
    # off: one segment a reply (and a buffer that holds it)
    off = _host(server, kernel=LINUX_24.replace(mss_bytes=20 * MSS, tcp_wmem_bytes=HUGE_BUFFER))
    n = _replies(on)
    assert n == _replies(off) > 50
    assert on.client.tx.segments == 10 * n
    # the client ACKs every second segment: 5 ACKs a reply (the tenth segment's rides
    # on its FIN), each charged to the server's kernel
    assert on.client.tx.acks == 5 * n
    assert off.client.tx.acks == 0
    kernel_on, kernel_off = on.cpu.usage()["kernel"], off.cpu.usage()["kernel"]
    assert kernel_on - kernel_off == pytest.approx(5 * n * CLUSTER1.rx_segment_s, rel=1e-6)
    # the nine segments beyond the first are sent in the server's context
    work = "work"
    extra = on.cpu.usage()[work] - off.cpu.usage()[work]
    assert extra == pytest.approx(9 * n * CLUSTER1.tx_segment_s, rel=1e-6)


def test_a_reply_of_one_segment_keeps_the_one_burst_path():
    host = _host(reply_bytes=MSS)
    assert host.client.tx.segments == 0  # not through the send path
    assert host.client.tx.acks == 0


# -- the send buffer: partial writes ----------------------------------------------------
def test_a_reply_larger_than_the_send_buffer_keeps_its_connection_in_the_write_set():
    reply = 100_000
    on = _host(reply_bytes=reply)
    off = _host(reply_bytes=reply, kernel=LINUX_24.replace(tcp_wmem_bytes=HUGE_BUFFER))
    n = _replies(on)
    assert n == _replies(off) > 50
    # each write takes the whole segments that fit in 16 KB: 11 (15,928 bytes)
    per_write = (LINUX_24.tcp_wmem_bytes // MSS) * MSS
    further = math.ceil(reply / per_write) - 1
    assert on.client.tx.writes == further * n
    assert off.client.tx.writes == 0
    # every further write waited for select() to report the socket writable
    selects_on = on.server.counters().select_calls
    selects_off = off.server.counters().select_calls
    assert selects_on - selects_off >= further * n
    assert on.cpu.usage()["getevents"] > off.cpu.usage()["getevents"]


@pytest.mark.parametrize("server", ["tux", "knot"])
def test_tux_and_knot_send_a_large_reply_in_several_passes(server):
    reply = 100_000
    on = _host(server, reply_bytes=reply)
    off = _host(server, reply_bytes=reply, kernel=LINUX_24.replace(tcp_wmem_bytes=HUGE_BUFFER))
    assert _replies(on) == _replies(off) > 50
    assert on.client.tx.writes > 0 == off.client.tx.writes
    assert on.client.tx.partial_writes == on.client.tx.writes  # each but the last write


def test_a_socket_is_writable_when_at_most_two_thirds_of_its_buffer_is_queued():
    # tcp_poll: free space >= half of what is queued
    buffer = LINUX_24.tcp_wmem_bytes
    queued = WRITABLE_SHARE * buffer
    assert buffer - queued == pytest.approx(queued / 2)


# -- the link -------------------------------------------------------------------------------
def test_frames_are_serialised_at_line_rate_one_after_another():
    nic = Nic(1e9)
    assert nic.serialise(0.0, 1538) == pytest.approx(1538 * 8 / 1e9)
    assert nic.serialise(0.0, 1538) == pytest.approx(2 * 1538 * 8 / 1e9)  # queued behind
    assert nic.serialise(1.0, 1538) == pytest.approx(1.0 + 1538 * 8 / 1e9)  # idle link


def test_a_large_reply_arrives_its_serialisation_time_later_than_on_a_fast_link():
    segs = 1000
    reply = segs * MSS
    kernel = LINUX_24.replace(tcp_wmem_bytes=HUGE_BUFFER)  # one write: the link alone
    gigabit = simulate(_config(reply_bytes=reply, kernel=kernel, rate=20.0))
    fast = simulate(_config(reply_bytes=reply, kernel=kernel, rate=20.0,
                            costs=CLUSTER1.replace(nic_bits_per_s=1e15)))
    wire = reply + segs * CLUSTER1.frame_overhead_bytes
    delay_ms = gigabit["response_time_ms"]["mean"] - fast["response_time_ms"]["mean"]
    assert delay_ms == pytest.approx(1e3 * wire * 8 / CLUSTER1.nic_bits_per_s, rel=1e-3)


def test_the_record_reports_each_links_utilisation():
    r = simulate(RunConfig(rate_per_s=5000.0, duration_s=1.0, warmup_s=0.25, seed=2))
    links = r["link_utilization"]
    assert len(links) == CLUSTER1.nics
    # one-packet: every reply one frame of mss + overhead bytes on one of the links
    frame_s = (MSS + CLUSTER1.frame_overhead_bytes) * 8 / CLUSTER1.nic_bits_per_s
    assert sum(links) == pytest.approx(r["reply_rate_per_s"] * frame_s, rel=0.02)
    assert all(0.0 < u < 1.0 for u in links)


def test_no_link_sends_more_than_its_line_rate():
    """One-segment replies on links too slow for them: each frame waits for the frames
    before it, so no link is busy more than the whole window, the replies are limited
    to the line rate, and the run says so."""
    slow = CLUSTER1.replace(nic_bits_per_s=2e7)  # 20 Mbit/s: about 1,600 frames/s per link
    r = simulate(RunConfig(rate_per_s=6000.0, duration_s=1.0, warmup_s=0.25, costs=slow,
                           timeout_s=10.0))
    frame_s = (MSS + slow.frame_overhead_bytes) * 8 / slow.nic_bits_per_s
    links = r["link_utilization"]
    assert all(0.98 <= u <= 1.0 + 1e-9 for u in links), links
    assert r["reply_rate_per_s"] <= slow.nics / frame_s * 1.01
    assert link_note(links).startswith("the run is limited by the links to the clients")
    fast = simulate(RunConfig(rate_per_s=6000.0, duration_s=1.0, warmup_s=0.25,
                              timeout_s=10.0))
    assert link_note(fast["link_utilization"]) == ""
    assert fast["reply_rate_per_s"] > 1.5 * r["reply_rate_per_s"]


def test_the_run_command_names_a_run_its_links_limit(capsys) -> None:
    """The issue's case: 12 nginx workers, 200 clients in a closed loop on the LAN."""
    from acceptsim.cli import main

    assert main(["run", "--server", "nginx", "--cpus", "12", "--concurrency", "200",
                 "--kernel", "linux-modern", "--duration", "0.3", "--warmup", "0.1",
                 "--format", "json"]) == 0
    out, err = capsys.readouterr()
    import json

    links = json.loads(out)["link_utilization"]
    assert max(links) <= 1.0 + 1e-9 and max(links) >= 0.98
    assert "limited by the links to the clients" in err


def test_a_send_buffer_smaller_than_a_segment_is_refused():
    from acceptsim.sim.errors import ConfigError

    with pytest.raises(ConfigError, match=r"kernel.tcp_wmem_bytes=1000 .*mss_bytes \(1448\)"):
        RunConfig(kernel=LINUX_24.replace(tcp_wmem_bytes=1000))
    with pytest.raises(ConfigError, match=r"kernel.mss_bytes=0 "):
        LINUX_24.replace(mss_bytes=0)


def test_loopback_has_no_link():
    r = simulate(RunConfig(rate_per_s=2000.0, duration_s=0.5, warmup_s=0.1,
                           network="loopback"))
    assert r["link_utilization"] == []
