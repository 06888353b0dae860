"""A measured run's time series (``timeseries.csv``): its columns, rows, file.

``acceptsim measure`` samples the server and the kernel every ``--sample-interval``
seconds while the load runs (:class:`acceptsim.measure.harness.Sampler`) and bins
nginx's access log into the same intervals; this module turns those samples into rows
(:func:`rows_from_samples`) and writes and reads ``timeseries.csv`` (:data:`COLUMNS`, one
declaration of its columns with their units).  :mod:`acceptsim.measure.timeseries_check`
compares a measured series with the simulator's for the same run (``acceptsim validate
--timeseries RUN``).

Rows are intervals: ``time_s`` is the end of the interval (the sampler's actual time,
from the load's start) and ``interval_s`` its actual length; rates are counts over the
interval divided by ``interval_s``, ``*_ms`` columns are milliseconds over the interval,
``accept_queue_len`` is the value at the sample.  An empty cell is a value that was not
measured (no CPU quota: no ``throttled_*`` or ``usage_ms``; a source the sampler could
not read).  Columns that mean what the simulator's time series means have its names
(:data:`acceptsim.models.run_series.COLUMNS`): :data:`SHARED`.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from acceptsim.measure.parse_errors import ParseError, read_text

if TYPE_CHECKING:
    import pandas as pd


#: a run's time series, in its directory
TIMESERIES_FILE = "timeseries.csv"


@dataclass(frozen=True)
class Column:
    """One column of ``timeseries.csv``."""

    name: str
    #: its unit
    unit: str
    #: what it is, in a line
    meaning: str
    #: whether a value can be below zero (no column's can) and must be a whole number
    integer: bool = False


#: the columns of ``timeseries.csv``, in the file's order
COLUMNS: tuple[Column, ...] = (
    Column("time_s", "s", "end of the interval, from the load's start (the sampler's actual "
           "time, not the nominal one)"),
    Column("interval_s", "s", "the interval's actual length"),
    Column("reply_rate_per_s", "replies/s", "nginx's replies in the interval (access-log lines "
           "binned by $msec; $status 499, the client gone before the reply, not counted)"),
    Column("request_time_mean_ms", "ms", "mean of the interval's replies' $request_time (1 ms "
           "resolution; empty: no reply)"),
    Column("request_time_max_ms", "ms", "largest $request_time of the interval's replies"),
    Column("accept_queue_len", "connections", "the listening socket's accept queue at the "
           "sample (ss's Recv-Q of the listener; every listener of the port, added up)",
           integer=True),
    Column("throttled_periods", "periods", "CFS periods in which nginx's cgroup was throttled "
           "(cpu.stat nr_throttled; empty: no CPU quota)", integer=True),
    Column("throttled_ms", "ms", "time nginx's cgroup was throttled (cpu.stat throttled_usec "
           "or throttled_time)"),
    Column("usage_ms", "ms", "CPU time nginx's cgroup used (cpu.stat usage_usec, cpuacct.usage "
           "or the sum of its tasks' schedstat run times)"),
    Column("listen_overflows_per_s", "events/s", "TcpExtListenOverflows (/proc/net/netstat; "
           "host-wide)"),
    Column("listen_drops_per_s", "events/s", "TcpExtListenDrops"),
    Column("syn_retrans_per_s", "segments/s", "TcpExtTCPSynRetrans: SYNs and SYN-ACKs "
           "retransmitted (the clients' and the server's, host-wide)"),
    Column("server_sleeps_per_s", "sleeps/s", "voluntary context switches of nginx's "
           "workers (/proc/PID/status, added up): their epoll_wait calls that slept (the "
           "simulator's epoll_sleeps_per_s)"),
    Column("server_cpu_user_ms", "ms", "user and nice time of the server's CPUs (/proc/stat, "
           "in ticks of 1/USER_HZ: 10 ms)"),
    Column("server_cpu_system_ms", "ms", "system time of the server's CPUs"),
    Column("server_cpu_softirq_ms", "ms", "softirq time of the server's CPUs"),
    Column("server_cpu_busy_ms", "ms", "user, nice, system, irq and softirq time of the "
           "server's CPUs"),
)  # fmt: skip
NAMES = tuple(c.name for c in COLUMNS)
#: columns every timeseries.csv has
REQUIRED = ("time_s", "interval_s")
#: columns the simulator's time series has under the same name and meaning
SHARED = (
    "reply_rate_per_s", "accept_queue_len", "throttled_periods", "throttled_ms", "usage_ms",
    "listen_overflows_per_s", "listen_drops_per_s", "server_cpu_busy_ms", "syn_retrans_per_s",
)  # fmt: skip
#: the kernel counters sampled (nstat names) and the rate column of each
NETSTAT_COLUMNS = {
    "TcpExtListenOverflows": "listen_overflows_per_s",
    "TcpExtListenDrops": "listen_drops_per_s",
    "TcpExtTCPSynRetrans": "syn_retrans_per_s",
}
#: nginx's $status for a request whose client closed the connection before the reply
CLIENT_CLOSED = 499


# -- nginx's access log ---------------------------------------------------------------------
#: the harness's log_format: what :func:`parse_access_line` reads
LOG_FORMAT = "'$msec $request_time $pid $status'"


@dataclass(frozen=True)
class LogLine:
    """One line of the harness's access log (:data:`LOG_FORMAT`)."""

    #: when nginx logged the request (Unix time, 1 ms resolution)
    msec: float
    #: nginx's $request_time (s, 1 ms resolution)
    request_time_s: float
    #: the worker that served it
    pid: int
    status: int


def parse_access_line(text: str, path: str | Path = "access.log", line: int = 0) -> LogLine:
    """One access-log line, ``$msec $request_time $pid $status``; ParseError otherwise."""
    parts = text.split()
    if len(parts) != 4:
        raise ParseError(path, line, f"{text.strip()!r}: expected '$msec $request_time $pid "
                         "$status' (4 fields)")
    try:
        msec, request_time = float(parts[0]), float(parts[1])
        pid, status = int(parts[2]), int(parts[3])
    except ValueError:
        raise ParseError(path, line, f"{text.strip()!r}: expected numbers ($msec "
                         "$request_time $pid $status)") from None
    if not (math.isfinite(msec) and math.isfinite(request_time) and request_time >= 0):
        raise ParseError(path, line, f"{text.strip()!r}: $msec and $request_time must be "
                         "finite, $request_time >= 0")
    return LogLine(msec, request_time, pid, status)


def parse_access_log(lines: Iterable[str | bytes], path: str | Path = "access.log") -> list[
    LogLine
]:
    """Every non-empty line of an access log written with :data:`LOG_FORMAT`."""
    out = []
    for number, raw in enumerate(lines, start=1):
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        if text.strip():
            out.append(parse_access_line(text, path, number))
    return out


def bin_replies(
    log: Sequence[LogLine], edges: Sequence[float]
) -> list[tuple[int, float | None, float | None]]:
    """Per interval ``(edges[i-1], edges[i]]``: the replies logged in it, and the mean and
    largest $request_time of those (ms; None without a reply).  Lines outside every
    interval (the start's probe, anything after the last sample) and status-499 lines
    (no reply went out) are left out."""
    n = max(len(edges) - 1, 0)
    counts = [0] * n
    sums = [0.0] * n
    maxima: list[float | None] = [None] * n
    for entry in log:
        if entry.status == CLIENT_CLOSED:
            continue
        i = bisect.bisect_left(edges, entry.msec)  # edges[i-1] < msec <= edges[i]
        if 1 <= i <= n:
            counts[i - 1] += 1
            ms = 1e3 * entry.request_time_s
            sums[i - 1] += ms
            top = maxima[i - 1]
            maxima[i - 1] = ms if top is None or ms > top else top
    return [
        (c, (s / c) if c else None, m) for c, s, m in zip(counts, sums, maxima, strict=True)
    ]


# -- rows from the sampler's samples --------------------------------------------------------
def rows_from_samples(
    samples: Sequence[Mapping[str, float]], log: Sequence[LogLine] | None,
    tick_ms: float = 10.0,
) -> list[dict[str, float | None]]:  # fmt: skip
    """The rows of ``timeseries.csv`` from the sampler's raw samples (the first one taken
    as the load started) and the access log (None: not logged, the column left empty).

    A sample maps ``wall_s`` (Unix time it was taken) and whatever its sources read:
    ``TcpExtListenOverflows``, ``TcpExtListenDrops``, ``TcpExtTCPSynRetrans`` (counters),
    ``accept_queue_len``, the cgroup's ``nr_throttled``, ``throttled_us`` and
    ``usage_us``, and the server's CPU ``user_ticks``, ``system_ticks``,
    ``softirq_ticks``, ``busy_ticks`` (of 1/USER_HZ: ``tick_ms``), and the workers'
    ``voluntary_switches``.  A key missing from
    either sample of an interval leaves its column empty there; a counter that went
    down (reset) raises ValueError.
    """
    if len(samples) < 2:
        return []
    edges = [s["wall_s"] for s in samples]
    for a, b in zip(edges, edges[1:], strict=False):
        if not b > a:
            raise ValueError(f"sample times must increase: {a!r} then {b!r}")
    replies = bin_replies(log, edges) if log is not None else None
    rows = []
    for i in range(1, len(samples)):
        before, after = samples[i - 1], samples[i]
        interval = edges[i] - edges[i - 1]

        def delta(key: str, before: Mapping[str, float] = before,
                  after: Mapping[str, float] = after) -> float | None:  # fmt: skip
            if key not in before or key not in after:
                return None
            d = after[key] - before[key]
            if d < 0:
                raise ValueError(f"counter {key} went down from {before[key]} to {after[key]}")
            return d

        def scaled(key: str, factor: float) -> float | None:
            d = delta(key)
            return None if d is None else d * factor

        row: dict[str, float | None] = {
            "time_s": edges[i] - edges[0],
            "interval_s": interval,
        }
        if replies is not None:
            count, mean, top = replies[i - 1]
            row.update(reply_rate_per_s=count / interval, request_time_mean_ms=mean,
                       request_time_max_ms=top)
        else:
            row.update(reply_rate_per_s=None, request_time_mean_ms=None,
                       request_time_max_ms=None)
        row["accept_queue_len"] = after.get("accept_queue_len")
        row["throttled_periods"] = delta("nr_throttled")
        row["throttled_ms"] = scaled("throttled_us", 1e-3)
        row["usage_ms"] = scaled("usage_us", 1e-3)
        for counter, column in NETSTAT_COLUMNS.items():
            row[column] = scaled(counter, 1.0 / interval)
        row["server_sleeps_per_s"] = scaled("voluntary_switches", 1.0 / interval)
        for part in ("user", "system", "softirq", "busy"):
            row[f"server_cpu_{part}_ms"] = scaled(f"{part}_ticks", tick_ms)
        rows.append({name: row.get(name) for name in NAMES})
    return rows


# -- the file --------------------------------------------------------------------------------
def _cell(value: float | None, integer: bool) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if integer:
        return str(int(round(value)))
    return f"{value:.9g}"


def write_timeseries(path: str | Path, rows: Sequence[Mapping[str, float | None]]) -> Path:
    """Write ``rows`` (each a mapping of :data:`NAMES`; missing or None: empty) as CSV."""
    path = Path(path)
    lines = [",".join(NAMES)]
    for row in rows:
        lines.append(",".join(_cell(row.get(c.name), c.integer) for c in COLUMNS))
    path.write_text("\n".join(lines) + "\n")
    return path


def _allowed(column: Column) -> str:
    kind = "a whole number >= 0" if column.integer else "a finite number >= 0"
    if column.name in REQUIRED:
        return kind + (" (> 0)" if column.name == "interval_s" else "")
    return kind + " or empty (not measured)"


def read_timeseries(path: str | Path) -> pd.DataFrame:
    """Read and check a ``timeseries.csv``: a header of known column names (``time_s`` and
    ``interval_s`` required, each name once), then rows of as many cells, each a finite
    number >= 0 (a whole number where the column counts) or empty (not measured),
    ``time_s`` increasing and ``interval_s`` > 0.  A ParseError names the file, the line,
    the column, the value and what is allowed."""
    import pandas as pd

    text = read_text(path)
    lines = text.splitlines()
    if not lines or not lines[0].strip():
        raise ParseError(path, 1, "empty: expected a header line of column names "
                         f"({', '.join(REQUIRED)} required)")
    header = [h.strip() for h in lines[0].split(",")]
    by_name = {c.name: c for c in COLUMNS}
    for name in header:
        if name not in by_name:
            raise ParseError(path, 1, f"unknown column {name!r}; allowed: {', '.join(NAMES)}")
        if header.count(name) > 1:
            raise ParseError(path, 1, f"column {name!r} appears twice")
    for name in REQUIRED:
        if name not in header:
            raise ParseError(path, 1, f"no column {name!r} (required: {', '.join(REQUIRED)})")
    data: dict[str, list[float]] = {name: [] for name in header}
    last_time = -math.inf
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        cells = line.split(",")
        if len(cells) != len(header):
            raise ParseError(path, number, f"{len(cells)} cells, the header has {len(header)}")
        for name, cell in zip(header, cells, strict=True):
            column = by_name[name]
            value = _number(path, number, column, cell.strip())
            data[name].append(value)
        t = data["time_s"][-1]
        if not t > last_time:
            raise ParseError(path, number, f"column 'time_s': value {t!r} is not allowed; "
                             f"allowed: a time after the previous row's ({last_time!r})")
        last_time = t
    return pd.DataFrame({name: data[name] for name in header})


def _number(path: str | Path, line: int, column: Column, cell: str) -> float:
    """One cell's value (NaN for empty where allowed); ParseError naming what is wrong."""
    if cell == "" and column.name not in REQUIRED:
        return math.nan
    problem = None
    try:
        value = float(cell)
    except ValueError:
        value, problem = math.nan, "not a number"
    if problem is None and not (math.isfinite(value) and value >= 0):
        problem = "not a finite number >= 0"
    if problem is None and column.integer and value != int(value):
        problem = "not a whole number"
    if problem is None and column.name == "interval_s" and value == 0:
        problem = "zero"
    if problem is not None:
        raise ParseError(path, line, f"column {column.name!r}: value {cell!r} is {problem}; "
                         f"allowed: {_allowed(column)}")
    return value
