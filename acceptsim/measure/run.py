"""One measured run: its directory, loaded and reduced to a flat record.

A run directory holds::

    run.toml               what was measured (see acceptsim.measure.runfile)
    httperf.txt            httperf's standard output, one summary per httperf process
    wrk.txt                wrk's standard output, in its place for a wrk run (load.tool)
    counters-before.txt    kernel counters before the load (nstat -az, /proc/net copies
    counters-after.txt     or netstat -s text; file names can be changed in run.toml)
    workers.csv            requests per nginx worker, counted with several workers
    timeseries.csv         the load sampled every --sample-interval (optional; see
                           acceptsim.measure.timeseries_csv)
    client-turns.csv       the kernel's task switches on the client CPUs during the load
                           (optional; see acceptsim.measure.switch_trace)

:meth:`MeasuredRun.record` gives the metrics under the simulator's names
(``reply_rate_per_s``, ``connection_rate_per_s``, ``client_timeouts_per_s``,
``drops_per_s.listen_overflow``, ...), so measured and predicted records line up.

Kernel counters map to the simulator's drop names as Linux (4.x and later,
the ``linux-modern`` profile) counts them:

==============================  =========================================
record key                      counter (per second of the load window)
==============================  =========================================
``drops_per_s.listen_overflow``  TcpExtListenOverflows: accept queue full, at the
                                SYN (dropped) or at the final ACK (ignored)
``listen_overflows_per_s``      the same
``drops_per_s.syn_q_full``      TcpExtTCPReqQFullDrop: SYN queue full, no cookies
``drops_per_s.total``           TcpExtListenDrops: every SYN/ACK dropped at a listener
``syncookies_sent_per_s``       TcpExtSyncookiesSent
==============================  =========================================

The counters are host-wide; on a dedicated loopback testbed only the
measured listener contributes.
"""

from __future__ import annotations

import csv
import functools
import math
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acceptsim.measure.counters import deltas, read_counters
from acceptsim.measure.httperf import HttperfReport, read_httperf
from acceptsim.measure.parse_errors import ParseError, read_text
from acceptsim.measure.runfile import (
    RUN_FILE,
    RunInfo,
    counter_path,
    parse_cpu_list,
    read_run_info,
)
from acceptsim.measure.switch_trace import TURNS_FILE, KeptShare, kept_share, read_turns
from acceptsim.measure.timeseries_csv import TIMESERIES_FILE, read_timeseries
from acceptsim.measure.wrk import WrkReport, read_wrk
from acceptsim.models.kernel import PROFILES

HTTPERF_FILE = "httperf.txt"
#: a wrk run's standard output (load.tool = "wrk", in place of httperf.txt)
WRK_FILE = "wrk.txt"
#: a wrk run whose wrk kept its CPUs busier than this share of the run measured wrk: a
#: closed loop's load waits on its client, and wrk's threads, unlike httperf's processes,
#: sleep in epoll_wait when they have nothing to do (a server-bound run leaves them idle
#: most of the time)
CLIENT_CPU_BUSY_MAX = 0.9
#: a run's per-worker request counts (several workers): ``pid,requests`` lines, in the
#: workers' start order
WORKERS_FILE = "workers.csv"
#: a run whose clients started fewer connections per second than this fraction of the
#: target rate measured the clients (see MeasuredRun.client_limits)
CLIENT_START_RATE_MIN = 0.95
#: a run whose server CPUs spent more than this fraction of their time on tasks other than
#: the server measured a shared machine, not the server (see MeasuredRun.host_limits).
#: /proc/stat's busy time is sampled at the scheduler tick (4 ms here), so a server that
#: runs a short burst per CFS period can be counted far from its true time: quiet runs
#: here reach 0.26 with 1 ms per 4-ms period (nginx-loopback-timeseries, where the tick
#: locks on the period) and stay within -0.2 to 0.2 otherwise; runs beside another busy
#: process reached 0.3 to 0.95 (the first HAProxy set, tests/data/measured/README.md)
HOST_OTHER_BUSY_MAX = 0.3


@dataclass(frozen=True)
class MeasuredRun:
    path: Path
    info: RunInfo
    reports: tuple[HttperfReport, ...]
    counters_before: dict[str, int]
    counters_after: dict[str, int]
    #: requests each worker served over the load, in the workers' start order (empty:
    #: one worker, or not recorded)
    worker_requests: tuple[int, ...] = ()
    #: wrk's report (load.tool = "wrk"; its run has no httperf reports)
    wrk: WrkReport | None = None

    def timeseries(self) -> Any:
        """The run's time series (``timeseries.csv``) as a pandas DataFrame, one row per
        interval, checked by ``acceptsim.measure.timeseries_csv.read_timeseries`` (a
        ParseError names the file, line, column and value); None for a run recorded
        without one (every run before ``--sample-interval``)."""
        path = self.path / TIMESERIES_FILE
        if not path.exists() and not path.is_symlink():
            return None
        return read_timeseries(counter_path(self.path, TIMESERIES_FILE, "timeseries"))

    @property
    def counter_deltas(self) -> dict[str, int]:
        return deltas(self.counters_before, self.counters_after)

    @property
    def test_duration_s(self) -> float:
        """The longest httperf test-duration (the processes run side by side); wrk's
        runtime."""
        if self.wrk is not None:
            return self.wrk.runtime_s
        return max(r.totals.test_duration_s for r in self.reports)

    def client_limits(self) -> list[str]:
        """Why the clients, not the server, shaped this run's load (empty: they did not).

        The load is client-limited when an httperf

        * ran out of descriptors, local ports or its connection table (fd-unavail,
          addrunavail, ftab-full errors); or
        * fell behind its schedule: test-duration beyond duration + timeout + 1 s
          (httperf starts every one of its ``rate x duration`` connections, late if
          it must, and a step lasts at most ``timeout``); or
        * started its connections at under CLIENT_START_RATE_MIN of its target rate
          over its load window (:meth:`load_window_s`).

        httperf's own CPU share is *not* a criterion: httperf polls in a busy loop, so
        its processes together report about 100% of their CPU at every rate (one
        process at 300/s already shows 64%).
        """
        if self.wrk is not None:
            return self._wrk_limits()
        load = self.info.load
        reasons = []
        short = [
            r for r in self.reports
            if r.errors.fd_unavail or r.errors.addrunavail or r.errors.ftab_full
        ]
        if short:
            totals = {
                "fd-unavail": sum(r.errors.fd_unavail for r in short),
                "addrunavail": sum(r.errors.addrunavail for r in short),
                "ftab-full": sum(r.errors.ftab_full for r in short),
            }
            bad = ", ".join(f"{k} {v}" for k, v in totals.items() if v)
            reasons.append(
                f"{len(short)} of {len(self.reports)} httperf processes ran out of client "
                f"resources ({bad})"
            )
        late = load.duration_s + load.timeout_s + 1.0
        slowest = self.test_duration_s
        if slowest > late:
            reasons.append(
                f"httperf fell behind its schedule: test-duration {slowest:.1f} s > "
                f"duration + timeout + 1 s = {late:g} s"
            )
        started = sum(r.totals.connections / self.load_window_s(r) for r in self.reports)
        if started < CLIENT_START_RATE_MIN * load.target_rate_per_s:
            reasons.append(
                f"connections started at {started:.0f}/s, under "
                f"{CLIENT_START_RATE_MIN:.0%} of the target {load.target_rate_per_s:g}/s"
            )
        return reasons

    def _wrk_limits(self) -> list[str]:
        """Why wrk, not the server, shaped this closed loop: it could not connect
        (connect errors: no local ports or descriptors), or its threads kept their CPUs
        busier than CLIENT_CPU_BUSY_MAX over the run (``load.client_cpu_s``), so that the
        server waited for wrk."""
        assert self.wrk is not None
        reasons = []
        if self.wrk.errors_connect:
            reasons.append(f"wrk failed {self.wrk.errors_connect} connects (local ports or "
                           "descriptors ran out)")
        load = self.info.load
        cpus = len(parse_cpu_list(load.cpus)) if load.cpus else self.info.host.cpus
        busy = load.client_cpu_s / (self.wrk.runtime_s * min(cpus, load.threads))
        if busy > CLIENT_CPU_BUSY_MAX:
            reasons.append(f"wrk kept its CPUs {busy:.0%} busy (more than "
                           f"{CLIENT_CPU_BUSY_MAX:.0%}: the server waited for it)")
        return reasons

    @functools.cached_property
    def other_tasks_share(self) -> float | None:
        """The share of the server's CPUs' time that other tasks ran over the load (None:
        the run has no time series with the server CPUs' busy time and its cgroup's
        usage, or one that cannot be read: :meth:`timeseries` says why).

        Their busy time outside softirqs (``server_cpu_busy_ms`` minus
        ``server_cpu_softirq_ms``, /proc/stat: the kernel's packet work for the server's
        own traffic is not another task) minus the server's own CPU time (``usage_ms``,
        its cgroup's), over the rows of the load, as a fraction of the CPUs' time.  Read
        with the csv module, only these columns: every record asks for it."""
        path = self.path / TIMESERIES_FILE
        if path.is_symlink() or not path.is_file():  # timeseries() checks where one points
            return None
        sums = {"interval_s": 0.0, "server_cpu_busy_ms": 0.0, "server_cpu_softirq_ms": 0.0,
                "usage_ms": 0.0}
        try:
            with open(path, newline="", encoding="utf-8") as handle:
                rows = csv.DictReader(handle)
                if not {"time_s", "server_cpu_busy_ms", "usage_ms"} <= set(rows.fieldnames or ()):
                    return None
                for row in rows:
                    if float(row["time_s"]) > self.info.load.duration_s:
                        continue
                    if not row["server_cpu_busy_ms"] or not row["usage_ms"]:
                        return None  # a sampler that could not read one: nothing to tell
                    for key in sums:
                        sums[key] += float(row.get(key) or 0.0)
        except (OSError, ValueError, csv.Error):
            return None
        span_ms = 1000.0 * sums["interval_s"] * self.info.server_cpu_count
        if span_ms <= 0:
            return None
        busy = sums["server_cpu_busy_ms"] - sums["server_cpu_softirq_ms"]
        return (busy - sums["usage_ms"]) / span_ms

    @functools.cached_property
    def turns(self) -> KeptShare | None:
        """How much of the order of httperf's turns on its CPUs lasted one timeout, read
        from the run's traced switches (``client-turns.csv``,
        :func:`acceptsim.measure.switch_trace.kept_share` at ``load.timeout_s`` with the
        host's tick); None for a run recorded without them.  A bad file is a ParseError
        naming its line; a link out of the run directory a ConfigError."""
        path = self.path / TURNS_FILE
        if not path.exists() and not path.is_symlink():
            return None
        tick_s = self.info.kernel.tick_s or PROFILES[self.info.kernel.profile].sched_tick_s
        return kept_share(read_turns(counter_path(self.path, TURNS_FILE, "client-turns")),
                          self.info.load.tool, tick_s, self.info.load.timeout_s)

    def host_limits(self) -> list[str]:
        """Why the host, not the server, shaped this run (empty: it did not, or the run
        cannot tell): its server's CPUs ran other tasks (:attr:`other_tasks_share`) for more
        than HOST_OTHER_BUSY_MAX of their time.  Another process on the server's CPU
        competes with the server for it and delays its wake-ups, which no model of the
        server predicts."""
        other = self.other_tasks_share
        if other is None or other <= HOST_OTHER_BUSY_MAX:
            return []
        return [
            f"the server's CPUs ran other tasks {other:.0%} of the load (server_cpu_busy_ms "
            f"minus server_cpu_softirq_ms minus usage_ms; at most {HOST_OTHER_BUSY_MAX:.0%} "
            "on a quiet machine)"
        ]

    @property
    def client_limited(self) -> bool:
        """True when the clients, not the server, shaped the load (see :meth:`client_limits`)."""
        return bool(self.client_limits())

    def load_window_s(self, report: HttperfReport) -> float:
        """How long one httperf process kept starting connections.

        httperf's test-duration also covers the tail after the last start, up
        to one timeout, in which nothing new arrives; counting it would dilute
        every rate by up to timeout/duration.  The window is the target
        duration, or test-duration minus the timeout when httperf fell behind
        its schedule (a client-limited run).
        """
        load = self.info.load
        return max(load.duration_s, report.totals.test_duration_s - load.timeout_s)

    def record(self) -> dict[str, Any]:
        """A flat record, one row of a tidy table, in the simulator's metric names.

        Rates from httperf are summed over its processes, each process's
        totals over its own load window (:meth:`load_window_s`), so that they
        estimate the steady rates a simulation measures after its warm-up.
        ``httperf_*`` fields keep httperf's own convention (totals over
        test-duration).  Kernel counters are divided by the longest window;
        they count every socket of the host, not only the measured server.
        """
        if self.wrk is not None:
            return self._wrk_record()
        info, reports = self.info, self.reports

        def per_s(attr: str, convention: str = "window") -> float:
            total = 0.0
            for r in reports:
                value: Any = r
                for part in attr.split("."):
                    value = getattr(value, part)
                span = self.load_window_s(r) if convention == "window" else r.totals.test_duration_s
                total += value / span if span else 0.0
            return total

        window = max(self.load_window_s(r) for r in reports)
        counter_rate = self._counter_rate(window)
        connections = sum(r.totals.connections for r in reports)
        replies = sum(r.totals.replies for r in reports)
        samples = sum(r.reply_rate.samples for r in reports)
        errors = {
            name: sum(getattr(r.errors, name) for r in reports)
            for name in (
                "total",
                "client_timo",
                "socket_timo",
                "connrefused",
                "connreset",
                "fd_unavail",
                "addrunavail",
                "ftab_full",
                "other",
            )
        }
        weighted_response = (
            sum(r.reply_time.response_ms * r.totals.replies for r in reports) / replies
            if replies
            else None
        )
        record: dict[str, Any] = {
            "run": self.path.name,
            "label": info.label,
            "server": info.server.name,
            "multi_accept": info.server.multi_accept,
            "worker_processes": info.server.worker_processes,
            "backlog": info.server.backlog,
            "kernel": info.kernel.profile,
            "kernel_release": info.kernel.release,
            "target_rate_per_s": info.load.target_rate_per_s,
            "duration_s": info.load.duration_s,
            "timeout_s": info.load.timeout_s,
            "file_size_bytes": info.load.file_size_bytes,
            "httperf_processes": len(reports),
            "repeat": info.host.repeat,
            "test_duration_s": self.test_duration_s,
            "load_window_s": window,
            "reply_rate_per_s": per_s("totals.replies"),
            "connection_rate_per_s": per_s("totals.connections"),
            "request_rate_per_s": per_s("totals.requests"),
            "client_timeouts_per_s": per_s("errors.client_timo"),
            "httperf_reply_rate_per_s": per_s("totals.replies", "httperf"),
            "httperf_connection_rate_per_s": per_s("totals.connections", "httperf"),
            "httperf_reply_rate_avg_per_s": (
                sum(r.reply_rate.avg_per_s for r in reports) if samples else None
            ),
            "httperf_reply_rate_samples": samples,
            "response_time_ms.mean": weighted_response,
            "connections.attempted": connections,
            "connections.completed": replies,
            "connections.timed_out": errors["client_timo"],
            "replies_2xx": sum(r.reply_status.s2xx for r in reports),
            "client_cpus_used": sum(r.cpu_time.total_pct for r in reports) / 100.0,
            "max_connect_burst": max((r.max_connect_burst or 0) for r in reports),
            "client_limited": self.client_limited,
            "client_limit_reasons": "; ".join(self.client_limits()),
            "host_limit_reasons": "; ".join(self.host_limits()),
            "server_cpu_quota": info.server.cpu_quota,
            "max_concurrent_connections": sum(r.connection_rate.max_concurrent for r in reports),
            **self._kernel_and_workers(counter_rate),
        }
        record.update({f"errors.{k}": v for k, v in errors.items()})
        return record

    def _counter_rate(self, window: float) -> Callable[[str], float]:
        """A kernel counter's growth per second of ``window``."""
        d = self.counter_deltas
        return lambda name: d.get(name, 0) / window if window else math.nan

    def _kernel_and_workers(self, counter_rate: Callable[[str], float]) -> dict[str, Any]:
        """The record's kernel counters (per second), server layout and worker shares,
        whatever the client."""
        info = self.info
        counts = self.worker_requests
        total = sum(counts)
        return {
            "listen_overflows_per_s": counter_rate("TcpExtListenOverflows"),
            "listen_drops_per_s": counter_rate("TcpExtListenDrops"),
            "drops_per_s.listen_overflow": counter_rate("TcpExtListenOverflows"),
            "drops_per_s.syn_q_full": counter_rate("TcpExtTCPReqQFullDrop"),
            "drops_per_s.total": counter_rate("TcpExtListenDrops"),
            "syncookies_sent_per_s": counter_rate("TcpExtSyncookiesSent"),
            "req_q_full_do_cookies_per_s": counter_rate("TcpExtTCPReqQFullDoCookies"),
            "tcp_retrans_segs_per_s": counter_rate("TcpRetransSegs"),
            "accept_mutex": info.server.accept_mutex,
            "reuseport": info.server.reuseport,
            "worker_shares": [c / total for c in counts] if total else [],
            "worker_imbalance": max(counts) * len(counts) / total if total else None,
        }

    def _wrk_record(self) -> dict[str, Any]:
        """A wrk run's record: its replies per second of wrk's runtime (the simulator's
        ``reply_rate_per_s``), its latency report under the simulator's
        ``wrk_latency_ms`` names, its errors, and the kernel's counters."""
        info, wrk = self.info, self.wrk
        assert wrk is not None
        window = wrk.runtime_s
        reasons = self.client_limits()
        record: dict[str, Any] = {
            "run": self.path.name,
            "label": info.label,
            "server": info.server.name,
            "client": "wrk",
            "multi_accept": info.server.multi_accept,
            "worker_processes": info.server.worker_processes,
            "backlog": info.server.backlog,
            "kernel": info.kernel.profile,
            "kernel_release": info.kernel.release,
            "concurrency": info.load.concurrency,
            "keepalive": info.load.keepalive,
            "wrk_threads": wrk.threads,
            "duration_s": info.load.duration_s,
            "timeout_s": info.load.timeout_s,
            "file_size_bytes": info.load.file_size_bytes,
            "repeat": info.host.repeat,
            "test_duration_s": wrk.runtime_s,
            "load_window_s": window,
            "reply_rate_per_s": wrk.requests_per_s,
            "wrk_latency_ms.mean": wrk.latency_mean_ms,
            "wrk_latency_ms.max": wrk.latency_max_ms,
            **{f"wrk_latency_ms.p{p:g}": v for p, v in sorted(wrk.percentiles_ms.items())},
            "wrk_timeouts_per_s": wrk.errors_timeout / window,
            "errors.connect": wrk.errors_connect,
            "errors.read": wrk.errors_read,
            "errors.write": wrk.errors_write,
            "errors.timeout": wrk.errors_timeout,
            "errors.status": wrk.non_2xx_3xx,
            "connections.completed": wrk.requests,
            "client_cpus_used": info.load.client_cpu_s / window if info.load.client_cpu_s
            else None,
            # wrk's sleeps (its voluntary context switches) per request it completed
            "client_sleeps_per_reply": info.load.client_sleeps / wrk.requests
            if info.load.client_sleeps and wrk.requests else None,
            "client_limited": bool(reasons),
            "client_limit_reasons": "; ".join(reasons),
            "host_limit_reasons": "; ".join(self.host_limits()),
            "server_cpu_quota": info.server.cpu_quota,
            **self._kernel_and_workers(self._counter_rate(window)),
        }
        return record


def load_run(directory: str | Path) -> MeasuredRun:
    """Read and check one run directory (``ConfigError`` or ``ParseError`` if it is bad)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ParseError(directory, 0, "not a run directory")
    info = read_run_info(directory / RUN_FILE)
    if info.load.tool == "wrk":
        return _load_wrk_run(directory, info)
    reports = tuple(read_httperf(directory / HTTPERF_FILE))
    if len(reports) != info.load.processes:
        raise ParseError(
            directory / HTTPERF_FILE,
            0,
            f"{len(reports)} httperf summaries but run.toml says load.processes = "
            f"{info.load.processes}",
        )
    for report in reports:  # a duration below zero is no httperf's
        if not report.totals.test_duration_s >= 0:
            raise ParseError(directory / HTTPERF_FILE, 0, f"test-duration "
                             f"{report.totals.test_duration_s:g} s is below zero")
        check_totals(directory / HTTPERF_FILE, report)
    before, after = _read_snapshots(directory, info)
    sent = sum(r.totals.requests for r in reports)
    workers = _read_workers(directory, info, sent, "httperf sent")
    return MeasuredRun(directory, info, reports, before, after, workers)


def _load_wrk_run(directory: Path, info: RunInfo) -> MeasuredRun:
    """A wrk run: its report (``wrk.txt``), checked against run.toml's load."""
    report = read_wrk(directory / WRK_FILE)
    for key, value in (("concurrency", report.connections), ("threads", report.threads)):
        if getattr(info.load, key) != value:
            name = "connections" if key == "concurrency" else key
            raise ParseError(directory / WRK_FILE, 0, f"wrk ran {value} {name} "
                             f"but run.toml says load.{key} = {getattr(info.load, key)}")
    before, after = _read_snapshots(directory, info)
    # nginx logs every request it served: each reply wrk read, each lost on a read
    # error, and at most one per connection still in flight when wrk stopped
    workers = _read_workers(directory, info,
                            report.requests + report.errors_read + report.connections,
                            "wrk's replies read, read errors and connections allow")
    return MeasuredRun(directory, info, (), before, after, workers, report)


def _read_snapshots(directory: Path, info: RunInfo) -> tuple[dict[str, int], dict[str, int]]:
    """The kernel counters before and after the load, checked to only grow."""
    before = read_counters(
        [counter_path(directory, n, "counters.before") for n in info.counters.before]
    )
    after = read_counters(
        [counter_path(directory, n, "counters.after") for n in info.counters.after]
    )
    for name, delta in deltas(before, after).items():
        if delta < 0:  # counters only grow: a truncated, swapped or foreign snapshot
            raise ParseError(
                directory / (info.counters.after[0] if info.counters.after else "counters"), 0,
                f"counter {name} went from {before.get(name, 0)} to {after.get(name, 0)}: a "
                "later snapshot below an earlier one (swapped, truncated or another host's)",
            )  # fmt: skip
    return before, after


def _read_workers(directory: Path, info: RunInfo, sent: int, sender: str) -> tuple[int, ...]:
    """``workers.csv``'s counts, checked against the workers and the requests sent."""
    workers = read_worker_requests(directory / WORKERS_FILE)
    if workers and len(workers) != info.server.worker_processes:
        raise ParseError(directory / WORKERS_FILE, 0, f"{len(workers)} workers but run.toml "
                         f"says server.worker_processes = {info.server.worker_processes}")
    if sum(workers) > sent:
        raise ParseError(directory / WORKERS_FILE, 0, f"{sum(workers)} requests served, more "
                         f"than the {sent} {sender}")
    return workers


def check_totals(path: Path, report: HttperfReport) -> None:
    """A ParseError for totals no httperf writes: more replies than requests, more
    requests than connections x ``--num-calls`` (when its command line says it), or
    more replies by status than replies."""
    totals = report.totals
    if totals.replies > totals.requests:
        raise ParseError(path, 0, f"{totals.replies} replies for {totals.requests} requests")
    calls = report.options.get("num-calls", "")
    if calls.isdigit() and totals.requests > totals.connections * int(calls):
        raise ParseError(path, 0, f"{totals.requests} requests from {totals.connections} "
                         f"connections of --num-calls={calls}")
    status = report.reply_status
    by_status = sum(getattr(status, f) for f in ("s1xx", "s2xx", "s3xx", "s4xx", "s5xx"))
    if by_status > totals.replies:
        raise ParseError(path, 0, f"{by_status} replies by status for {totals.replies} "
                         "replies")


def read_worker_requests(path: Path) -> tuple[int, ...]:
    """A run's ``workers.csv``: the requests per worker, in start order (empty if absent)."""
    if not path.exists() and not path.is_symlink():
        return ()
    lines = read_text(path).splitlines()  # a regular file (a FIFO would hang a read)
    if not lines or lines[0].strip() != "pid,requests":
        raise ParseError(path, 1, "a header 'pid,requests'")
    counts = []
    for number, line in enumerate(lines[1:], start=2):
        parts = line.split(",")
        if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
            raise ParseError(path, number, "pid,requests: two whole numbers")
        counts.append(int(parts[1]))
    return tuple(counts)


#: how deep under the folder given :func:`find_runs` looks (a sweep's folder of runs, or a
#: folder of such folders, is 1 or 2 deep); it follows no symbolic links
MAX_DEPTH = 4


def find_runs(root: str | Path, max_depth: int = MAX_DEPTH) -> list[Path]:
    """Every run directory (one holding a run.toml) under ``root``, at most ``max_depth``
    levels down, sorted; unreadable folders are skipped."""
    root = Path(root)
    found = []
    for folder, subfolders, files in os.walk(root, followlinks=False):
        here = Path(folder)
        if RUN_FILE in files:
            found.append(here)
        if len(here.relative_to(root).parts) >= max_depth:
            subfolders.clear()
    return sorted(found)


def load_runs(dirs: Iterable[str | Path]) -> list[MeasuredRun]:
    return [load_run(d) for d in dirs]


def to_frame(runs: Iterable[MeasuredRun]) -> Any:
    """A pandas DataFrame, one row per run."""
    import pandas as pd

    return pd.DataFrame([run.record() for run in runs])
