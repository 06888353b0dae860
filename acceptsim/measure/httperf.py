"""httperf 0.9's standard output, parsed into typed frozen records.

httperf prints its command line, ``Maximum connect burst length: N`` and then
a summary (see ``stat/basic.c`` and ``stat/wsess_stat.c`` in its sources)::

    Total: connections 2500 requests 2500 replies 2500 test-duration 4.998 s
    Connection rate: 500.2 conn/s (2.0 ms/conn, <=4 concurrent connections)
    Connection time [ms]: min 0.0 avg 0.3 max 7.6 median 0.5 stddev 0.9
    Connection time [ms]: connect 0.0
    Connection length [replies/conn]: 1.000
    Request rate: 500.2 req/s (2.0 ms/req)
    Request size [B]: 72.0
    Reply rate [replies/s]: min 0.0 avg 0.0 max 0.0 stddev 0.0 (0 samples)
    Reply time [ms]: response 0.3 transfer 0.0
    Reply size [B]: header 238.0 content 900.0 footer 0.0 (total 1138.0)
    Reply status: 1xx=0 2xx=2500 3xx=0 4xx=0 5xx=0
    CPU time [s]: user 0.93 system 2.38 (user 18.6% system 47.7% total 66.2%)
    Net I/O: 591.0 KB/s (4.8*10^6 bps)
    Errors: total 0 client-timo 0 socket-timo 0 connrefused 0 connreset 0
    Errors: fd-unavail 0 addrunavail 0 ftab-full 0 other 0

plus, with ``--wsess`` or ``--wsesslog``, the ``Session ...`` lines.  Every
line of the summary is parsed; a line we do not know, a line we know with
the wrong shape, or a summary that stops early raises
:class:`~acceptsim.measure.parse_errors.ParseError` naming the file and the line.
Several summaries may follow each other in one file (one per httperf process of a
run): each starts at httperf's echo of its command line.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acceptsim.measure.parse_errors import ParseError, read_text

NUM = r"(-?nan|-?inf|-?\d+(?:\.\d+)?(?:e[+-]?\d+)?)"
INT = r"(\d+)"


@dataclass(frozen=True)
class Totals:
    connections: int
    requests: int
    replies: int
    test_duration_s: float


@dataclass(frozen=True)
class ConnectionRate:
    per_s: float
    ms_per_conn: float
    max_concurrent: int


@dataclass(frozen=True)
class ConnectionTime:
    min_ms: float
    avg_ms: float
    max_ms: float
    #: read off httperf's histogram of 1-ms bins (a bin's centre), so it may lie up to
    #: 0.5 ms outside [min_ms, max_ms]
    median_ms: float
    stddev_ms: float


@dataclass(frozen=True)
class RequestRate:
    per_s: float
    ms_per_request: float


@dataclass(frozen=True)
class ReplyRate:
    """Reply rate over httperf's 5 s sampling periods (none in runs under 5 s)."""

    min_per_s: float
    avg_per_s: float
    max_per_s: float
    stddev_per_s: float
    samples: int


@dataclass(frozen=True)
class ReplyTime:
    response_ms: float
    transfer_ms: float


@dataclass(frozen=True)
class ReplySize:
    header_bytes: float
    content_bytes: float
    footer_bytes: float
    total_bytes: float


@dataclass(frozen=True)
class ReplyStatus:
    s1xx: int
    s2xx: int
    s3xx: int
    s4xx: int
    s5xx: int


@dataclass(frozen=True)
class CpuTime:
    """httperf's own CPU use (a busy client is a bottleneck, not the server)."""

    user_s: float
    system_s: float
    user_pct: float
    system_pct: float
    total_pct: float


@dataclass(frozen=True)
class NetIO:
    kb_per_s: float
    mbit_per_s: float


@dataclass(frozen=True)
class Errors:
    total: int
    client_timo: int
    socket_timo: int
    connrefused: int
    connreset: int
    fd_unavail: int
    addrunavail: int
    ftab_full: int
    other: int


@dataclass(frozen=True)
class SessionRate:
    min_per_s: float
    avg_per_s: float
    max_per_s: float
    stddev_per_s: float
    completed: int
    total: int


@dataclass(frozen=True)
class Sessions:
    """The session lines, printed only with ``--wsess`` or ``--wsesslog``."""

    rate: SessionRate
    connections_per_session: float
    lifetime_s: float
    failtime_s: float
    length_histogram: tuple[int, ...]


@dataclass(frozen=True)
class HttperfReport:
    """One httperf process's summary."""

    command: str | None
    options: dict[str, str]
    max_connect_burst: int | None
    totals: Totals
    connection_rate: ConnectionRate
    connection_time: ConnectionTime
    connect_time_ms: float | None
    connection_length_replies: float
    request_rate: RequestRate
    request_size_bytes: float
    reply_rate: ReplyRate
    reply_time: ReplyTime
    reply_size: ReplySize
    reply_status: ReplyStatus
    cpu_time: CpuTime
    net_io: NetIO
    errors: Errors
    sessions: Sessions | None = None


def _floats(*names: str) -> Callable[[tuple[str, ...]], dict[str, Any]]:
    return lambda groups: {n: float(g) for n, g in zip(names, groups, strict=True)}


def _ints(*names: str) -> Callable[[tuple[str, ...]], dict[str, Any]]:
    return lambda groups: {n: int(g) for n, g in zip(names, groups, strict=True)}


def _mixed(*spec: tuple[str, type]) -> Callable[[tuple[str, ...]], dict[str, Any]]:
    return lambda groups: {n: t(g) for (n, t), g in zip(spec, groups, strict=True)}


# (key, pattern of the whole line, converter of the groups to keyword fields)
_LINES: list[tuple[str, re.Pattern[str], Callable[[tuple[str, ...]], dict[str, Any]]]] = [
    (
        "max_connect_burst",
        re.compile(rf"Maximum connect burst length: {INT}"),
        _ints("value"),
    ),
    (
        "totals",
        re.compile(
            rf"Total: connections {INT} requests {INT} replies {INT} test-duration {NUM} s"
        ),
        _mixed(
            ("connections", int), ("requests", int), ("replies", int), ("test_duration_s", float)
        ),
    ),
    (
        "connection_rate",
        re.compile(
            rf"Connection rate: {NUM} conn/s \({NUM} ms/conn, <={INT} concurrent connections\)"
        ),
        _mixed(("per_s", float), ("ms_per_conn", float), ("max_concurrent", int)),
    ),
    (
        "connection_time",
        re.compile(
            rf"Connection time \[ms\]: min {NUM} avg {NUM} max {NUM} median {NUM} stddev {NUM}"
        ),
        _floats("min_ms", "avg_ms", "max_ms", "median_ms", "stddev_ms"),
    ),
    ("connect_time_ms", re.compile(rf"Connection time \[ms\]: connect {NUM}"), _floats("value")),
    (
        "connection_length_replies",
        re.compile(rf"Connection length \[replies/conn\]: {NUM}"),
        _floats("value"),
    ),
    (
        "request_rate",
        re.compile(rf"Request rate: {NUM} req/s \({NUM} ms/req\)"),
        _floats("per_s", "ms_per_request"),
    ),
    ("request_size_bytes", re.compile(rf"Request size \[B\]: {NUM}"), _floats("value")),
    (
        "reply_rate",
        re.compile(
            rf"Reply rate \[replies/s\]: min {NUM} avg {NUM} max {NUM} stddev {NUM} "
            rf"\({INT} samples\)"
        ),
        _mixed(
            ("min_per_s", float),
            ("avg_per_s", float),
            ("max_per_s", float),
            ("stddev_per_s", float),
            ("samples", int),
        ),
    ),
    (
        "reply_time",
        re.compile(rf"Reply time \[ms\]: response {NUM} transfer {NUM}"),
        _floats("response_ms", "transfer_ms"),
    ),
    (
        "reply_size",
        re.compile(
            rf"Reply size \[B\]: header {NUM} content {NUM} footer {NUM} \(total {NUM}\)"
        ),
        _floats("header_bytes", "content_bytes", "footer_bytes", "total_bytes"),
    ),
    (
        "reply_status",
        re.compile(rf"Reply status: 1xx={INT} 2xx={INT} 3xx={INT} 4xx={INT} 5xx={INT}"),
        _ints("s1xx", "s2xx", "s3xx", "s4xx", "s5xx"),
    ),
    (
        "cpu_time",
        re.compile(
            rf"CPU time \[s\]: user {NUM} system {NUM} "
            rf"\(user {NUM}% system {NUM}% total {NUM}%\)"
        ),
        _floats("user_s", "system_s", "user_pct", "system_pct", "total_pct"),
    ),
    (
        "net_io",
        re.compile(rf"Net I/O: {NUM} KB/s \({NUM}\*10\^6 bps\)"),
        _floats("kb_per_s", "mbit_per_s"),
    ),
    (
        "errors_1",
        re.compile(
            rf"Errors: total {INT} client-timo {INT} socket-timo {INT} "
            rf"connrefused {INT} connreset {INT}"
        ),
        _ints("total", "client_timo", "socket_timo", "connrefused", "connreset"),
    ),
    (
        "errors_2",
        re.compile(rf"Errors: fd-unavail {INT} addrunavail {INT} ftab-full {INT} other {INT}"),
        _ints("fd_unavail", "addrunavail", "ftab_full", "other"),
    ),
    (
        "session_rate",
        re.compile(
            rf"Session rate \[sess/s\]: min {NUM} avg {NUM} max {NUM} stddev {NUM} "
            rf"\({INT}/{INT}\)"
        ),
        _mixed(
            ("min_per_s", float),
            ("avg_per_s", float),
            ("max_per_s", float),
            ("stddev_per_s", float),
            ("completed", int),
            ("total", int),
        ),
    ),
    (
        "connections_per_session",
        re.compile(rf"Session: avg {NUM} connections/session"),
        _floats("value"),
    ),
    ("lifetime_s", re.compile(rf"Session lifetime \[s\]: {NUM}"), _floats("value")),
    ("failtime_s", re.compile(rf"Session failtime \[s\]: {NUM}"), _floats("value")),
    (
        "length_histogram",
        re.compile(r"Session length histogram:((?: \d+)*)"),
        lambda groups: {"value": tuple(int(x) for x in groups[0].split())},
    ),
]

#: the first word(s) of each line kind, to tell "garbled" from "unknown"
_PREFIXES = {
    "max_connect_burst": "Maximum connect burst",
    "totals": "Total:",
    "connection_rate": "Connection rate:",
    "connection_time": "Connection time [ms]: min",
    "connect_time_ms": "Connection time [ms]: connect",
    "connection_length_replies": "Connection length",
    "request_rate": "Request rate:",
    "request_size_bytes": "Request size",
    "reply_rate": "Reply rate",
    "reply_time": "Reply time",
    "reply_size": "Reply size",
    "reply_status": "Reply status",
    "cpu_time": "CPU time",
    "net_io": "Net I/O",
    "errors_1": "Errors: total",
    "errors_2": "Errors: fd-unavail",
    "session_rate": "Session rate",
    "connections_per_session": "Session: avg",
    "lifetime_s": "Session lifetime",
    "failtime_s": "Session failtime",
    "length_histogram": "Session length histogram",
}

#: lines every summary has, in the order httperf prints them
REQUIRED = (
    "totals",
    "connection_rate",
    "connection_time",
    "connection_length_replies",
    "request_rate",
    "request_size_bytes",
    "reply_rate",
    "reply_time",
    "reply_size",
    "reply_status",
    "cpu_time",
    "net_io",
    "errors_1",
    "errors_2",
)
SESSION_KEYS = (
    "session_rate",
    "connections_per_session",
    "lifetime_s",
    "failtime_s",
    "length_histogram",
)

#: httperf's diagnostics on stderr ("httperf: warning: open file limit > FD_SETSIZE...",
#: "httperf: connection failed with unexpected error 99"), if merged into the file
_IGNORED = re.compile(r"httperf: .*")


def _command_options(command: str) -> dict[str, str]:
    """``httperf --rate=500 --hog`` -> ``{"rate": "500", "hog": ""}``."""
    options: dict[str, str] = {}
    for word in shlex.split(command)[1:]:
        if word.startswith("--"):
            name, _, value = word[2:].partition("=")
            options[name] = value
    return options


def _build(path: str, last_line: int, command: str | None, seen: dict[str, Any]) -> HttperfReport:
    missing = [k for k in REQUIRED if k not in seen]
    if missing:
        raise ParseError(
            path,
            last_line,
            f"httperf summary ends early: no {_PREFIXES[missing[0]]!r} line"
            + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""),
        )
    sessions = None
    present = [k for k in SESSION_KEYS if k in seen]
    if present:
        if len(present) != len(SESSION_KEYS):
            absent = next(k for k in SESSION_KEYS if k not in seen)
            raise ParseError(
                path, last_line, f"session summary ends early: no {_PREFIXES[absent]!r} line"
            )
        sessions = Sessions(
            rate=SessionRate(**seen["session_rate"]),
            connections_per_session=seen["connections_per_session"]["value"],
            lifetime_s=seen["lifetime_s"]["value"],
            failtime_s=seen["failtime_s"]["value"],
            length_histogram=seen["length_histogram"]["value"],
        )
    burst = seen.get("max_connect_burst")
    connect = seen.get("connect_time_ms")
    return HttperfReport(
        command=command,
        options=_command_options(command) if command else {},
        max_connect_burst=burst["value"] if burst else None,
        totals=Totals(**seen["totals"]),
        connection_rate=ConnectionRate(**seen["connection_rate"]),
        connection_time=ConnectionTime(**seen["connection_time"]),
        connect_time_ms=connect["value"] if connect else None,
        connection_length_replies=seen["connection_length_replies"]["value"],
        request_rate=RequestRate(**seen["request_rate"]),
        request_size_bytes=seen["request_size_bytes"]["value"],
        reply_rate=ReplyRate(**seen["reply_rate"]),
        reply_time=ReplyTime(**seen["reply_time"]),
        reply_size=ReplySize(**seen["reply_size"]),
        reply_status=ReplyStatus(**seen["reply_status"]),
        cpu_time=CpuTime(**seen["cpu_time"]),
        net_io=NetIO(**seen["net_io"]),
        errors=Errors(**seen["errors_1"], **seen["errors_2"]),
        sessions=sessions,
    )


def parse_httperf(text: str, path: str | Path = "<httperf output>") -> list[HttperfReport]:
    """Every httperf summary in ``text`` (one per httperf process), in order."""
    path = str(path)
    reports: list[HttperfReport] = []
    command: str | None = None
    seen: dict[str, Any] = {}
    started = False
    lines = text.splitlines()
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or _IGNORED.fullmatch(line):
            continue
        if line.startswith("httperf ") or line == "httperf":
            if started:
                reports.append(_build(path, number - 1, command, seen))
            command, seen, started = line, {}, True
            continue
        for key, pattern, convert in _LINES:
            if line.startswith(_PREFIXES[key]):
                match = pattern.fullmatch(line)
                if match is None:
                    raise ParseError(path, number, f"garbled {_PREFIXES[key]!r} line: {line!r}")
                if key in seen:
                    if key != "max_connect_burst" and key != "totals":
                        raise ParseError(path, number, f"repeated {_PREFIXES[key]!r} line")
                    # a second summary without httperf's command-line echo
                    reports.append(_build(path, number - 1, command, seen))
                    command, seen = None, {}
                seen[key] = convert(match.groups())
                started = True
                break
        else:
            raise ParseError(path, number, f"unknown line in httperf output: {line!r}")
    if not started:
        raise ParseError(path, max(len(lines), 1), "no httperf summary in this file")
    reports.append(_build(path, len(lines), command, seen))
    return reports


def read_httperf(path: str | Path) -> list[HttperfReport]:
    """The httperf summaries in a file."""
    path = Path(path)
    return parse_httperf(read_text(path), path)


def as_dict(report: HttperfReport) -> dict[str, Any]:
    """The report as nested plain data (for JSON or a flat table)."""
    return dataclasses.asdict(report)
