"""Kernel counter snapshots in nstat, /proc/net and netstat -s formats, and their deltas."""

from __future__ import annotations

from pathlib import Path

import pytest
from measure_samples import RUN_DIRS, replay

from acceptsim.measure import ParseError, deltas, parse_counters, read_counters, read_run_info
from acceptsim.measure.counters import GAUGES, LISTEN_COUNTERS, detect_format

NSTAT = """\
#kernel
IpInReceives                    7735421            0.0
TcpActiveOpens                  120                0.0
TcpCurrEstab                    3                  0.0
TcpExtListenOverflows           5                  0.0
TcpExtListenDrops               7                  0.0
TcpExtTCPReqQFullDrop           0                  0.0
"""

PROC = """\
TcpExt: SyncookiesSent SyncookiesRecv ListenOverflows ListenDrops TCPReqQFullDoCookies
TcpExt: 4 3 5 7 4
Tcp: RtoAlgorithm RtoMin MaxConn ActiveOpens CurrEstab
Tcp: 1 200 -1 120 3
"""

NETSTAT_S = """\
Ip:
    Forwarding: 1
    7735421 total packets received
    0 forwarded
Tcp:
    120 active connection openings
    0 passive connection openings
    3 connections established
    22 segments retransmitted
TcpExt:
    5 times the listen queue of a socket overflowed
    7 SYNs to LISTEN sockets dropped
    4 SYN cookies sent
    Quick ack mode was activated 17 times
    TCPReqQFullDrop: 2
    TCPReqQFullDoCookies: 4
IpExt:
    InOctets: 1000
"""


def listen_values(values: dict[str, int]) -> dict[str, int]:
    return {k: values[k] for k in ("TcpExtListenOverflows", "TcpExtListenDrops")}


@pytest.mark.parametrize(("text", "kind"), [(NSTAT, "nstat"), (PROC, "proc"),
                                            (NETSTAT_S, "netstat-s")])
def test_the_three_formats_give_the_same_nstat_names(text: str, kind: str) -> None:
    assert detect_format(text) == kind
    values = parse_counters(text, kind)
    assert listen_values(values) == {"TcpExtListenOverflows": 5, "TcpExtListenDrops": 7}
    assert values["TcpActiveOpens"] == 120


def test_netstat_s_names_and_phrases() -> None:
    values = parse_counters(NETSTAT_S)
    assert values["TcpExtTCPReqQFullDrop"] == 2
    assert values["TcpExtTCPReqQFullDoCookies"] == 4
    assert values["TcpExtSyncookiesSent"] == 4
    assert values["TcpRetransSegs"] == 22
    assert values["IpInReceives"] == 7735421
    assert values["IpExtInOctets"] == 1000
    assert values["IpForwarding"] == 1


def test_recorded_counter_snapshots_give_non_negative_deltas(run_set: list[Path]) -> None:
    replay(run_set, recorded_counter_snapshots_give_non_negative_deltas)


def recorded_counter_snapshots_give_non_negative_deltas(run_dir: Path) -> None:
    info = read_run_info(run_dir / "run.toml")
    before = read_counters(run_dir / f for f in info.counters.before)
    after = read_counters(run_dir / f for f in info.counters.after)
    for name in LISTEN_COUNTERS[:2] + ("TcpActiveOpens", "TcpPassiveOpens"):
        assert name in before and name in after
    d = deltas(before, after)
    assert not GAUGES & set(d)
    negative = {k: v for k, v in d.items() if v < 0}
    assert not negative
    # every listen overflow is also counted as a drop at the listener
    assert d["TcpExtListenOverflows"] <= d["TcpExtListenDrops"]
    # the clients opened at least as many connections as the server accepted
    assert d["TcpPassiveOpens"] <= d["TcpActiveOpens"]


def test_both_recorded_formats_are_present() -> None:
    kinds = set()
    for run_dir in RUN_DIRS:
        info = read_run_info(run_dir / "run.toml")
        kinds.add(detect_format((run_dir / info.counters.before[0]).read_text()))
    assert kinds == {"nstat", "proc"}


def test_deltas_treat_missing_counters_as_zero_and_skip_gauges() -> None:
    d = deltas({"A": 1, "TcpCurrEstab": 9}, {"A": 4, "B": 2, "TcpCurrEstab": 1})
    assert d == {"A": 3, "B": 2}


def test_live_proc_files_parse_if_present() -> None:
    netstat, snmp = Path("/proc/net/netstat"), Path("/proc/net/snmp")
    if not (netstat.exists() and snmp.exists()):
        pytest.skip("no /proc/net on this machine")
    values = read_counters([netstat, snmp])
    assert "TcpExtListenOverflows" in values and "TcpActiveOpens" in values


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (NSTAT + "TcpExtBogus  12x  0.0\n", 8, "not an nstat"),
        (PROC.replace("Tcp: 1 200 -1 120 3", "Tcp: 1 200 -1 120"), 4, "5 names on line 3 but 4"),
        ("\n".join(PROC.splitlines()[:3]) + "\n", 3, "file ends after the 'Tcp' header"),
        (PROC.replace("TcpExt: 4 3 5 7 4", "Tcp: 4 3 5 7 4"), 2, "expected the 'TcpExt' values"),
        (PROC.replace("TcpExt: 4 3 5 7 4", "TcpExt: 4 3 x 7 4"), 2, "TcpExtListenOverflows='x'"),
        (NETSTAT_S.replace("    0 forwarded", "forwarded packets"), 4, "expected a 'Section:'"),
        (NETSTAT_S.replace("    0 forwarded", "    forwarded packets"), 4, "not a netstat -s"),
        ("#kernel\n", 1, "no counters"),
        ("", 1, "not nstat output"),
        ("hello there, world\n", 1, "not nstat output"),
    ],
)
def test_bad_counter_text_names_its_line(text: str, line: int, message: str) -> None:
    with pytest.raises(ParseError, match=message) as info:
        parse_counters(text, "counters-before.txt")
    assert info.value.line == line
    assert str(info.value).startswith(f"counters-before.txt:{line}:")


def test_missing_counter_file(tmp_path: Path) -> None:
    with pytest.raises(ParseError, match="file not found"):
        read_counters(tmp_path / "counters-before.txt")


COUNTERS = Path(__file__).resolve().parents[1] / "data" / "counters"


def test_real_snapshots_in_three_formats_agree() -> None:
    """netstat -s, nstat -az and /proc/net copies taken back to back on an idle host."""
    netstat_s = read_counters(COUNTERS / "netstat-s.txt")
    nstat = read_counters(COUNTERS / "nstat-az.txt")
    proc = read_counters(COUNTERS / "proc-net.txt")
    # every name netstat -s gives is nstat's name (nstat leaves out the two gauges)
    assert set(netstat_s) - set(nstat) <= GAUGES
    shared = set(netstat_s) & set(nstat)
    assert len(shared) > 40
    assert {k: netstat_s[k] for k in shared} == {k: nstat[k] for k in shared}
    assert {k: proc[k] for k in nstat if k in proc} == {k: nstat[k] for k in nstat if k in proc}
    for name in ("TcpExtListenOverflows", "TcpExtListenDrops", "TcpExtTCPReqQFullDoCookies",
                 "TcpExtSyncookiesSent"):
        assert netstat_s[name] == nstat[name] == proc[name]
