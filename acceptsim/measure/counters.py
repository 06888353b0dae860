"""Kernel network counters, read from any of three text formats, named as nstat names them.

Accepted formats (detected from the text):

``nstat``
    ``nstat -az`` output: ``#kernel`` then ``Name value [rate]`` per line.
``proc``
    Copies of ``/proc/net/netstat`` and/or ``/proc/net/snmp`` (concatenated
    in one file, or in several files listed together): pairs of lines
    ``TcpExt: ListenOverflows ListenDrops ...`` / ``TcpExt: 3 5 ...``.  The
    nstat name is the section joined to the field: ``TcpExtListenOverflows``.
``netstat-s``
    ``netstat -s`` text: a section header (``TcpExt:``) then indented lines,
    either a phrase (``5 times the listen queue of a socket overflowed``,
    mapped through :data:`NETSTAT_PHRASES`) or ``Name: value``
    (``TCPReqQFullDrop: 2``, mapped to ``TcpExtTCPReqQFullDrop``).  Phrases
    not in the table are skipped: net-tools has hundreds and prints only
    non-zero ones, so a counter absent from both snapshots reads as zero.

A snapshot is a mapping from nstat names to integers; :func:`deltas` gives
what accumulated between two snapshots.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from acceptsim.measure.parse_errors import ParseError, read_text

#: counters whose value is a level, not an accumulated count (no delta makes sense)
GAUGES = frozenset(
    {
        "IpForwarding",
        "IpDefaultTTL",
        "TcpRtoAlgorithm",
        "TcpRtoMin",
        "TcpRtoMax",
        "TcpMaxConn",
        "TcpCurrEstab",
    }
)

#: the listen-path counters this project cares about (brief section 3)
LISTEN_COUNTERS = (
    "TcpExtListenOverflows",
    "TcpExtListenDrops",
    "TcpExtTCPReqQFullDrop",
    "TcpExtTCPReqQFullDoCookies",
    "TcpExtSyncookiesSent",
    "TcpExtSyncookiesRecv",
    "TcpExtSyncookiesFailed",
)

#: netstat -s phrases (net-tools statistics.c, with the number removed) -> nstat name
NETSTAT_PHRASES: dict[tuple[str, str], str] = {
    ("TcpExt", "times the listen queue of a socket overflowed"): "TcpExtListenOverflows",
    ("TcpExt", "SYNs to LISTEN sockets dropped"): "TcpExtListenDrops",
    ("TcpExt", "SYNs to LISTEN sockets ignored"): "TcpExtListenDrops",
    ("TcpExt", "SYN cookies sent"): "TcpExtSyncookiesSent",
    ("TcpExt", "SYN cookies received"): "TcpExtSyncookiesRecv",
    ("TcpExt", "invalid SYN cookies received"): "TcpExtSyncookiesFailed",
    ("TcpExt", "resets received for embryonic SYN_RECV sockets"): "TcpExtEmbryonicRsts",
    ("TcpExt", "TCP sockets finished time wait in fast timer"): "TcpExtTW",
    ("TcpExt", "connections reset due to unexpected data"): "TcpExtTCPAbortOnData",
    ("TcpExt", "connections reset due to early user close"): "TcpExtTCPAbortOnClose",
    ("TcpExt", "connections aborted due to timeout"): "TcpExtTCPAbortOnTimeout",
    ("TcpExt", "other TCP timeouts"): "TcpExtTCPTimeouts",
    ("Tcp", "active connection openings"): "TcpActiveOpens",
    ("Tcp", "active connections openings"): "TcpActiveOpens",
    ("Tcp", "passive connection openings"): "TcpPassiveOpens",
    ("Tcp", "failed connection attempts"): "TcpAttemptFails",
    ("Tcp", "connection resets received"): "TcpEstabResets",
    ("Tcp", "connections established"): "TcpCurrEstab",
    ("Tcp", "segments received"): "TcpInSegs",
    ("Tcp", "segments send out"): "TcpOutSegs",
    ("Tcp", "segments sent out"): "TcpOutSegs",
    ("Tcp", "segments retransmitted"): "TcpRetransSegs",
    ("Tcp", "segments retransmited"): "TcpRetransSegs",
    ("Tcp", "bad segments received"): "TcpInErrs",
    ("Tcp", "bad segments received."): "TcpInErrs",
    ("Tcp", "resets sent"): "TcpOutRsts",
    ("Ip", "total packets received"): "IpInReceives",
    ("Ip", "incoming packets delivered"): "IpInDelivers",
    ("Ip", "requests sent out"): "IpOutRequests",
    ("Ip", "incoming packets discarded"): "IpInDiscards",
    ("Ip", "outgoing packets dropped"): "IpOutDiscards",
}

_NSTAT_LINE = re.compile(r"([A-Za-z][A-Za-z0-9_]*)\s+(-?\d+)(?:\s+-?\d+(?:\.\d+)?)?")
_PROC_LINE = re.compile(r"([A-Za-z][A-Za-z0-9]*):((?:\s+\S+)*)\s*")
_SECTION = re.compile(r"([A-Za-z][A-Za-z0-9]*):")
_NUMBER_PHRASE = re.compile(r"(-?\d+)\s+(.+)")
_NAME_VALUE = re.compile(r"([A-Za-z][A-Za-z0-9_]*):\s*(-?\d+)")
_NAME_VALUE_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9 _/-]*:\s*\S.*")


def detect_format(text: str) -> str:
    """``nstat``, ``proc`` or ``netstat-s`` (raises ValueError if none fits)."""
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    if first.startswith("#kernel") or _NSTAT_LINE.fullmatch(first.strip()):
        return "nstat"
    if _SECTION.fullmatch(first.strip()):
        return "netstat-s"
    if _PROC_LINE.fullmatch(first) and len(first.split()) > 2:
        return "proc"
    raise ValueError(first)


def parse_nstat(text: str, path: str | Path = "<nstat>") -> dict[str, int]:
    values: dict[str, int] = {}
    lines = text.splitlines()
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _NSTAT_LINE.fullmatch(line)
        if match is None:
            raise ParseError(path, number, f"not an nstat 'Name value rate' line: {line!r}")
        values[match.group(1)] = int(match.group(2))
    if not values:
        raise ParseError(path, max(len(lines), 1), "no counters in nstat output")
    return values


def parse_proc(text: str, path: str | Path = "<proc>") -> dict[str, int]:
    """``/proc/net/netstat`` and ``/proc/net/snmp`` text (header line, value line)."""
    values: dict[str, int] = {}
    lines = [(n, ln.strip()) for n, ln in enumerate(text.splitlines(), start=1) if ln.strip()]
    if not lines:
        raise ParseError(path, 1, "empty counter file")
    i = 0
    while i < len(lines):
        number, header = lines[i]
        section, _, names_text = header.partition(":")
        names = names_text.split()
        if not _SECTION.fullmatch(section + ":") or not names:
            raise ParseError(path, number, f"not a '/proc/net' header line: {header!r}")
        if i + 1 >= len(lines):
            raise ParseError(path, number, f"file ends after the {section!r} header: no values")
        vnumber, value_line = lines[i + 1]
        vsection, _, values_text = value_line.partition(":")
        if vsection != section:
            raise ParseError(
                path, vnumber, f"expected the {section!r} values line, got {value_line!r}"
            )
        numbers = values_text.split()
        if len(numbers) != len(names):
            raise ParseError(
                path,
                vnumber,
                f"{section}: {len(names)} names on line {number} but {len(numbers)} values",
            )
        for name, value in zip(names, numbers, strict=True):
            try:
                values[section + name] = int(value)
            except ValueError:
                raise ParseError(
                    path, vnumber, f"{section}{name}={value!r} is not an integer"
                ) from None
        i += 2
    return values


def parse_netstat_s(text: str, path: str | Path = "<netstat -s>") -> dict[str, int]:
    """``netstat -s`` text; see :data:`NETSTAT_PHRASES` for the phrases understood."""
    values: dict[str, int] = {}
    section: str | None = None
    lines = text.splitlines()
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        line = raw.strip()
        if not raw[0].isspace():
            match = _SECTION.fullmatch(line)
            if match is None:
                raise ParseError(path, number, f"expected a 'Section:' header, got {line!r}")
            section = match.group(1)
            continue
        if section is None:
            raise ParseError(path, number, f"indented line before any section header: {line!r}")
        match = _NAME_VALUE.fullmatch(line)
        if match is not None:
            name = match.group(1)
            key = name if name.startswith(section) else section + name
            values[key] = values.get(key, 0) + int(match.group(2))
            continue
        match = _NUMBER_PHRASE.fullmatch(line)
        if match is not None:
            mapped = NETSTAT_PHRASES.get((section, match.group(2)))
            if mapped is not None:
                values[mapped] = values.get(mapped, 0) + int(match.group(1))
            continue
        if _NAME_VALUE_TEXT.fullmatch(line) or line.endswith(":"):
            continue  # sub-headers such as "Forwarding: 1" variants or "InType3: 5"
        # phrases with the number inside ("Quick ack mode was activated 5 times", ...)
        if re.search(r"\d", line):
            continue
        raise ParseError(path, number, f"not a netstat -s counter line: {line!r}")
    if section is None:
        raise ParseError(path, max(len(lines), 1), "no sections in netstat -s output")
    return values


PARSERS = {"nstat": parse_nstat, "proc": parse_proc, "netstat-s": parse_netstat_s}


def parse_counters(text: str, path: str | Path = "<counters>") -> dict[str, int]:
    """A snapshot from text in any accepted format."""
    try:
        kind = detect_format(text)
    except ValueError:
        raise ParseError(
            path, 1, "not nstat output, /proc/net/{netstat,snmp} or netstat -s text"
        ) from None
    return PARSERS[kind](text, path)


def read_counters(paths: Path | str | Iterable[Path | str]) -> dict[str, int]:
    """One snapshot from one or several files (e.g. /proc/net/netstat and /proc/net/snmp)."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    values: dict[str, int] = {}
    for path in paths:
        path = Path(path)
        text = read_text(path)
        values.update(parse_counters(text, path))
    return values


def deltas(before: Mapping[str, int], after: Mapping[str, int]) -> dict[str, int]:
    """Per counter, the count accumulated between the snapshots (gauges left out).

    A counter missing from one snapshot counts as zero there (netstat -s
    prints only non-zero counters).
    """
    names = (set(before) | set(after)) - GAUGES
    return {name: after.get(name, 0) - before.get(name, 0) for name in sorted(names)}
