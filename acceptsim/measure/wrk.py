"""wrk 4.1's standard output, parsed into a typed frozen record, and wrk's command line.

wrk prints (``src/wrk.c``'s ``main``, with ``--latency``)::

    Running 10s test @ http://127.0.0.1:18080/f900.html
      2 threads and 64 connections
      Thread Stats   Avg      Stdev     Max   +/- Stdev
        Latency     9.12ms    2.04ms  30.11ms   80.12%
        Req/Sec     3.51k   210.33     4.02k    71.00%
      Latency Distribution
         50%    8.95ms
         75%    9.80ms
         90%   11.02ms
         99%   17.41ms
      70123 requests in 10.01s, 80.12MB read
      Socket errors: connect 0, read 0, write 0, timeout 3
      Non-2xx or 3xx responses: 5
    Requests/sec:   7005.29
    Transfer/sec:      8.00MB

The ``Socket errors`` and ``Non-2xx`` lines appear only when not zero, the latency
distribution only with ``--latency``.  Times carry wrk's units (us, ms, s, m, h), sizes
its binary ones (B, KB, MB, ... of 1024).  ``requests`` counts every reply, slow or not;
``timeout`` counts the replies whose latency reached ``--timeout`` (wrk gives no request
up; they are left out of the latency figures, which are corrected for coordinated
omission: :mod:`acceptsim.models.wrk_report`).  A line we do not know, a known line of the
wrong shape, or output without its totals raises
:class:`~acceptsim.measure.parse_errors.ParseError` naming the file and the line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acceptsim.measure.parse_errors import ParseError, read_text

#: wrk's time units, in seconds
_TIME_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
#: wrk's binary size units (format_binary), in bytes
_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}
#: wrk's metric units (format_metric)
_METRIC_UNITS = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_NUM = r"(\d+(?:\.\d+)?)"
_TIME = _NUM + r"(us|ms|s|m|h)"
_PCT = _NUM + "%"



@dataclass(frozen=True)
class WrkReport:
    """One wrk run's report; times in milliseconds, rates per second.  ``percentiles_ms``
    maps each percentile of the latency distribution (50, 75, 90, 99) to its time (empty
    without ``--latency``)."""

    url: str
    threads: int
    connections: int
    requests: int  # every reply read ("N requests in ...")
    runtime_s: float  # from the threads' start to their end (the duration, and a little)
    bytes_read: float
    requests_per_s: float  # requests / runtime, as wrk prints it (to 0.01/s; its runtime
    # is printed to 10 ms)
    latency_mean_ms: float
    latency_stdev_ms: float
    latency_max_ms: float
    # the latency distribution's percentiles (50, 75, 90, 99), empty without --latency
    percentiles_ms: Mapping[float, float] = field(default_factory=dict)
    errors_connect: int = 0
    errors_read: int = 0
    errors_write: int = 0
    errors_timeout: int = 0
    non_2xx_3xx: int = 0  # wrk's "status" errors: replies with a status above 399


def _time_ms(number: str, unit: str) -> float:
    return float(number) * _TIME_UNITS[unit] * 1e3


_LINES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (key, re.compile(pattern)) for key, pattern in (
        ("running", r"Running (\S+) test @ (\S+)"),
        ("threads", r"(\d+) threads and (\d+) connections"),
        ("header", r"Thread Stats\s+Avg\s+Stdev\s+Max\s+\+/- Stdev"),
        ("latency", rf"Latency\s+{_TIME}\s+{_TIME}\s+{_TIME}\s+{_PCT}"),
        ("req_sec", rf"Req/Sec\s+{_NUM}([kMGTP]?)\s+{_NUM}([kMGTP]?)\s+{_NUM}([kMGTP]?)"
                    rf"\s+{_PCT}"),
        ("distribution", r"Latency Distribution"),
        ("percentile", rf"{_NUM}%\s+{_TIME}"),
        ("totals", rf"(\d+) requests in {_TIME}, {_NUM}([KMGTP]?)B read"),
        ("socket_errors", r"Socket errors: connect (\d+), read (\d+), write (\d+), "
                          r"timeout (\d+)"),
        ("status", r"Non-2xx or 3xx responses: (\d+)"),
        ("rate", rf"Requests/sec:\s+{_NUM}"),
        ("transfer", rf"Transfer/sec:\s+{_NUM}([KMGTP]?)B"),
    )
)
#: the lines every report has
_REQUIRED = ("running", "threads", "latency", "totals", "rate")


def parse_wrk(text: str, path: str | Path = "<wrk output>") -> WrkReport:
    """The report in ``text``, wrk's standard output."""
    path = str(path)
    seen: dict[str, Any] = {}
    percentiles: dict[float, float] = {}
    lines = text.splitlines()
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        for key, pattern in _LINES:
            match = pattern.fullmatch(line)
            if match is None:
                continue
            if key == "percentile":
                if "distribution" not in seen:
                    raise ParseError(path, number, f"a percentile before 'Latency "
                                     f"Distribution': {line!r}")
                p = float(match.group(1))
                if p in percentiles:
                    raise ParseError(path, number, f"repeated {p:g}% line")
                percentiles[p] = _time_ms(match.group(2), match.group(3))
            elif key in seen:
                raise ParseError(path, number, f"repeated line: {line!r}")
            else:
                seen[key] = match.groups()
            break
        else:
            raise ParseError(path, number, f"unknown line in wrk output: {line!r}")
    missing = [key for key in _REQUIRED if key not in seen]
    if missing:
        raise ParseError(path, max(len(lines), 1), "no wrk report here: its "
                         + ", ".join(repr(k) for k in missing) + " line(s) are missing")
    latency = seen["latency"]
    requests, run_number, run_unit, size, size_unit = seen["totals"]
    errors = tuple(int(x) for x in seen.get("socket_errors", (0, 0, 0, 0)))
    report = WrkReport(
        url=seen["running"][1],
        threads=int(seen["threads"][0]),
        connections=int(seen["threads"][1]),
        requests=int(requests),
        runtime_s=_time_ms(run_number, run_unit) / 1e3,
        bytes_read=float(size) * _SIZE_UNITS[size_unit],
        requests_per_s=float(seen["rate"][0]),
        latency_mean_ms=_time_ms(latency[0], latency[1]),
        latency_stdev_ms=_time_ms(latency[2], latency[3]),
        latency_max_ms=_time_ms(latency[4], latency[5]),
        percentiles_ms=percentiles,
        errors_connect=errors[0],
        errors_read=errors[1],
        errors_write=errors[2],
        errors_timeout=errors[3],
        non_2xx_3xx=int(seen.get("status", (0,))[0]),
    )
    if report.runtime_s <= 0:
        raise ParseError(path, 0, f"a run of {report.runtime_s:g} s")
    if report.errors_timeout > report.requests:
        raise ParseError(path, 0, f"{report.errors_timeout} timeouts for {report.requests} "
                         "requests (wrk counts a timeout for a reply it read)")
    return report


def read_wrk(path: str | Path) -> WrkReport:
    """The wrk report in a file."""
    return parse_wrk(read_text(path), path)


def wrk_command(url: str, concurrency: int, threads: int, duration_s: int, timeout_s: int,
                keepalive: bool) -> list[str]:
    """wrk's command line: ``concurrency`` connections on ``threads`` threads for
    ``duration_s`` seconds with ``--timeout timeout_s`` (wrk reads both as whole seconds),
    its latency distribution, and ``Connection: close`` on every request unless
    ``keepalive`` (the server then closes each connection after its reply, and wrk
    connects anew)."""
    argv = ["wrk", "--latency", f"--threads={threads}", f"--connections={concurrency}",
            f"--duration={duration_s}s", f"--timeout={timeout_s}s"]
    if not keepalive:
        argv += ["--header", "Connection: close"]
    return [*argv, url]
