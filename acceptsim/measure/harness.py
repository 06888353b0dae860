"""The real loopback testbed: nginx under several httperf processes, written as measured runs.

Everything here is bounded: each httperf makes ``rate x duration``
connections and is killed after a wall-clock limit; nginx runs as a child
process from a temporary prefix directory, listens on 127.0.0.1 only, and is
stopped in a ``finally``.  Nothing is written to the output directory unless
the run completed.  However a measure ends (an error, SIGINT, or SIGTERM, which
the CLI raises as an exception), the processes it started (nginx's master and
worker, every httperf) are killed and the cgroup of ``--server-cpu-quota`` (v2
or v1) is removed.

With ``--server-cpu-quota-scope worker`` the quota is each worker's: every worker is moved
into a cgroup of its own with that quota once nginx answers (:class:`CpuQuota`), and each
run's ``worker-cgroups.csv`` gives every worker's group's throttling and CPU time over the
load (``pid,cgroup,nr_periods,nr_throttled,throttled_us,usage_us``, in start order).

While the load runs, a :class:`Sampler` thread pinned to the clients' CPUs reads the
kernel's counters, the listening socket's accept queue, nginx's cgroup and the server
CPU's time every ``--sample-interval``; with nginx's access log (always written, with
``$msec``) they become the run's ``timeseries.csv`` (:mod:`acceptsim.measure.timeseries_csv`).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import math
import os
import platform
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from acceptsim.measure import testbed
from acceptsim.measure.period_timer import period_offset_s, trace_busy_group
from acceptsim.measure.run import (
    HTTPERF_FILE,
    RUN_FILE,
    WORKERS_FILE,
    WRK_FILE,
    MeasuredRun,
    load_run,
)
from acceptsim.measure.runfile import (
    CounterFiles,
    HostInfo,
    KernelInfo,
    LoadInfo,
    RunInfo,
    SeriesInfo,
    ServerInfo,
    parse_cpu_list,
)
from acceptsim.measure.switch_trace import TURNS_FILE, SwitchTrace, parse_switches, turns_rows
from acceptsim.measure.timeseries_csv import (
    LOG_FORMAT,
    NETSTAT_COLUMNS,
    TIMESERIES_FILE,
    LogLine,
    parse_access_log,
    rows_from_samples,
    write_timeseries,
)
from acceptsim.measure.wrk import wrk_command
from acceptsim.models.servers import haproxy as haproxy_model
from acceptsim.models.wrk_report import WRK_DEFAULT_THREADS
from acceptsim.sim.errors import ConfigError

ADDRESS = "127.0.0.1"  # the only address the harness ever binds or loads
#: `acceptsim measure`'s defaults for the options it shares with `acceptsim measure-costs`
DEFAULT_PORT = 18080
DEFAULT_FILE_SIZE_BYTES = 1024  # the reply fits one packet
DEFAULT_TIMEOUT_S = 2.0
DEFAULT_SPACING = "poisson"
#: httperf select()s over at most FD_SETSIZE = 1024 descriptors; keep headroom
HTTPERF_MAX_OPEN = 700
#: bounds on one invocation, so a typo cannot start an endless measurement
MAX_CONNECTIONS_PER_RUN = 2_000_000
MAX_POINTS = 200
NSTAT_PATTERNS = ("Tcp*", "Ip*")
MAX_PROCESSES = 64
#: the most nginx worker processes a measure starts
MAX_WORKERS = 64
#: the largest tune.maxaccept a measure writes (a 32-bit signed integer in HAProxy's parser
#: allows more; beyond the accept queue's few thousand entries a limit is no limit)
MAX_MAXACCEPT = 1_000_000
#: the load generators `acceptsim measure` can run (--client)
CLIENTS = ("httperf", "wrk")
#: --trace-turns: trace the client CPUs' switches where tracefs allows, always, never
TRACE_TURNS = ("auto", "on", "off")
#: the most connections one wrk run may hold (each a descriptor of wrk's and nginx's)
MAX_WRK_CONNECTIONS = 10_000
#: where the harness puts nginx's group for --server-cpu-quota, in this order: the unified
#: (cgroup v2) hierarchy when it offers the cpu controller, else the v1 ``cpu`` hierarchy;
#: the first of them that this process may write to
CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_CPU_ROOT = Path("/sys/fs/cgroup/cpu")
CGROUP_NAME = "acceptsim-nginx"
#: whose group the quota is (--server-cpu-quota-scope; the first is the default): one group
#: for nginx, or one per worker inside it (``worker-1`` ... ``worker-N``, each with the quota;
#: nginx's master in ``master``, without limit)
QUOTA_SCOPES = ("server", "worker")
MASTER_GROUP = "master"
WORKER_GROUP = "worker-{}"
#: a run's per-worker cgroup counters with --server-cpu-quota-scope worker: one line per
#: worker, in start order, the deltas over the load
WORKER_CGROUPS_FILE = "worker-cgroups.csv"
WORKER_CGROUPS_HEADER = "pid,cgroup,nr_periods,nr_throttled,throttled_us,usage_us"
#: what a user can do when no hierarchy is writable
CGROUP_HINT = (
    "run as root (in a container: with /sys/fs/cgroup mounted read-write) or delegate the "
    "hierarchy to this user"
)
#: the signals that stop a measure; the CLI turns SIGTERM into an exception as Python does
#: SIGINT, so that every ``with`` unwinds (see :func:`deferred_signals`)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: how long removing the group may wait for its killed processes to leave it
CGROUP_RMDIR_WAIT_S = 5.0
#: CFS period for the quota: short, so that a throttled nginx waits a few ms at most
#: rather than the 100 ms default period's long stalls (the kernel allows 1 ms to 1 s);
#: lengthened when needed so that the quota itself is at least the kernel's 1 ms minimum
DEFAULT_CPU_PERIOD_US = 2000
MIN_CPU_QUOTA_US = 1000
#: the time series' sampling interval, when it is not 0 (--sample-interval): not so short
#: that the sampler's own CPU time or /proc/stat's 10 ms ticks dominate
MIN_SAMPLE_INTERVAL_S = 0.01
MAX_SAMPLE_INTERVAL_S = 60.0
#: how long the access log takes to reach its file once nginx is asked to reopen it
LOG_FLUSH_WAIT_S = 0.5


def default_cpu_period_us(quota_cpus: float) -> int:
    """The shortest period, at least DEFAULT_CPU_PERIOD_US, whose quota is >= 1 ms."""
    return max(DEFAULT_CPU_PERIOD_US, math.ceil(MIN_CPU_QUOTA_US / quota_cpus))
INSTALL_HINT = (
    "install them with `apt-get install httperf wrk nginx-light haproxy iproute2` (Debian/Ubuntu "
    "packages httperf, wrk, nginx-light, haproxy and, for nstat, iproute2); nginx and haproxy live "
    "in /usr/sbin, which must be on PATH"
)
#: the servers `acceptsim measure` can start, each with its executable
SERVERS = ("nginx", "haproxy")
#: HAProxy's own default of tune.maxaccept: the model's (acceptsim.models.servers.haproxy)
HAPROXY_DEFAULT_MAXACCEPT = haproxy_model.MAXACCEPT
#: what HAProxy's tune.maxaccept writes for "no limit" (accept until EAGAIN)
HAPROXY_NO_LIMIT = -1


class HarnessError(RuntimeError):
    """The testbed could not run (missing tool, nginx would not start, httperf hung)."""


@dataclass(frozen=True)
class Plan:
    """One invocation of ``acceptsim measure``, validated before anything runs."""

    server: str
    multi_accept: bool
    rates_per_s: tuple[float, ...]
    duration_s: float
    repeats: int
    timeout_s: float
    file_size_bytes: int
    port: int
    spacing: str
    processes: int | None  # None: as many as the descriptor limit needs
    pause_s: float
    server_cpu_quota: float | None = None  # CPUs nginx may use (cgroup CFS quota); None: no limit
    server_cpu_period_us: int | None = None  # None: default_cpu_period_us(quota)
    online_cpus: int = 0  # 0: os.cpu_count(); the upper bound of server_cpu_quota
    first_repeat: int = 1  # number of the first repeat (to add repeats to a recorded sweep)
    workers: int = 1  # nginx worker_processes
    accept_mutex: bool = False  # nginx accept_mutex (several workers on a shared socket)
    reuseport: bool = False  # listen ... reuseport: a socket per worker
    sample_interval_s: float = 0.1  # timeseries.csv's sampling interval (s); 0: none
    #: whose cgroup --server-cpu-quota is (--server-cpu-quota-scope): "server", one group
    #: nginx's master and workers share; "worker", a group per worker with that quota each
    #: (N slow cores emulated on the CPU nginx is pinned to), the master in one without limit
    server_cpu_quota_scope: str = "server"
    #: HAProxy's tune.maxaccept per run (--accept-limit), inf for its -1 (no limit); each
    #: repeat runs every rate at every limit, the limits' order rotated from repeat to
    #: repeat so that the machine's drift hits them alike.  nginx: empty (its knob is
    #: multi_accept)
    accept_limits: tuple[float, ...] = ()
    #: the load generator (--client): httperf's open loop at each of rates_per_s, or wrk's
    #: closed loop with each of concurrencies connections
    client: str = "httperf"
    #: wrk --connections per run (--concurrency); empty for httperf
    concurrencies: tuple[int, ...] = ()
    #: wrk: connections kept for the next request (--keepalive); else Connection: close
    keepalive: bool = False
    #: wrk --threads (--threads)
    wrk_threads: int = WRK_DEFAULT_THREADS
    #: trace the kernel's switches on the client CPUs during each httperf run
    #: (--trace-turns; client-turns.csv, acceptsim.measure.switch_trace): "auto" where
    #: tracefs lets an instance be made, "on" (an error where it does not), "off"
    trace_turns: str = "auto"

    def __post_init__(self) -> None:
        if self.server not in SERVERS:
            raise ConfigError("--server", self.server, " or ".join(SERVERS))
        if self.server == "haproxy":
            self._check_haproxy()
        elif self.accept_limits:
            raise ConfigError("--accept-limit", ",".join(map(limit_text, self.accept_limits)),
                              "only with --server haproxy (nginx's knob is --multi-accept)")
        if self.client not in CLIENTS:
            raise ConfigError("--client", self.client, " or ".join(CLIENTS))
        if self.trace_turns not in TRACE_TURNS:
            raise ConfigError("--trace-turns", self.trace_turns, " or ".join(TRACE_TURNS))
        if self.client == "wrk":
            self._check_wrk()
            if self.trace_turns == "on":
                raise ConfigError("--trace-turns", "on", "only with --client httperf (whose "
                                  "busy-polling processes take turns on a CPU)")
        else:
            if self.concurrencies or self.keepalive:
                option = "--concurrency" if self.concurrencies else "--keepalive"
                raise ConfigError(option, self.concurrencies or True, "only with --client "
                                  "wrk (httperf runs an open loop at --rates)")
            if not self.rates_per_s:
                raise ConfigError("--rates", "", "one or more rates (connections/s)")
        loads = self.concurrencies or self.rates_per_s
        runs = len(loads) * self.repeats * max(1, len(self.accept_limits))
        if runs > MAX_POINTS:
            raise ConfigError(
                "--concurrency" if self.concurrencies else "--rates",
                ",".join(f"{x:g}" for x in loads),
                f"1 to {MAX_POINTS} runs (rates x repeats x accept limits, or concurrencies x "
                f"repeats)"
            )
        for rate in self.rates_per_s:
            if not (rate > 0 and math.isfinite(rate)):
                raise ConfigError("--rates", rate, "positive numbers (connections/s)")
            if rate * self.duration_s > MAX_CONNECTIONS_PER_RUN:
                raise ConfigError(
                    "--rates", rate, f"rate x duration <= {MAX_CONNECTIONS_PER_RUN} connections"
                )
        if not (0 < self.duration_s <= 600):
            raise ConfigError("--duration", self.duration_s, "> 0 and <= 600 s")
        if not (1 <= self.repeats <= 100):
            raise ConfigError("--repeats", self.repeats, "an integer from 1 to 100")
        if not (1 <= self.first_repeat <= 1000):
            raise ConfigError("--first-repeat", self.first_repeat, "an integer from 1 to 1000")
        if not (0 < self.timeout_s <= 60):
            raise ConfigError("--timeout", self.timeout_s, "> 0 and <= 60 s")
        if not (0 <= self.file_size_bytes <= 1 << 20):
            raise ConfigError("--file-size", self.file_size_bytes, "0 to 1048576 bytes")
        if not (1024 <= self.port <= 65535):
            raise ConfigError("--port", self.port, "1024 to 65535")
        if self.spacing not in ("poisson", "deterministic"):
            raise ConfigError("--spacing", self.spacing, "poisson or deterministic")
        if self.processes is not None and not (1 <= self.processes <= MAX_PROCESSES):
            raise ConfigError("--processes", self.processes, f"1 to {MAX_PROCESSES}")
        if not (0 <= self.pause_s <= 60):
            raise ConfigError("--pause", self.pause_s, "0 to 60 s")
        if not (self.sample_interval_s == 0
                or MIN_SAMPLE_INTERVAL_S <= self.sample_interval_s <= MAX_SAMPLE_INTERVAL_S):
            raise ConfigError("--sample-interval", self.sample_interval_s,
                              f"0 (no time series) or {MIN_SAMPLE_INTERVAL_S:g} to "
                              f"{MAX_SAMPLE_INTERVAL_S:g} s")
        if not (1 <= self.workers <= MAX_WORKERS):
            raise ConfigError("--workers", self.workers, f"1 to {MAX_WORKERS} processes")
        if (self.accept_mutex or self.reuseport) and self.workers == 1:
            option = "--accept-mutex" if self.accept_mutex else "--reuseport"
            raise ConfigError(option, True, "only with --workers 2 or more (nginx ignores it "
                              "for one worker)")
        if self.accept_mutex and self.reuseport:
            raise ConfigError("--accept-mutex", True, "not with --reuseport (nginx does not "
                              "use the mutex for reuseport sockets)")
        cpus = self.online_cpus or os.cpu_count() or 1
        if self.server_cpu_quota is not None and not (
            math.isfinite(self.server_cpu_quota) and 0 < self.server_cpu_quota <= cpus
        ):
            raise ConfigError(
                "--server-cpu-quota",
                self.server_cpu_quota,
                f"a fraction of one CPU: > 0 and <= {cpus} (the number of CPUs)",
            )
        if self.server_cpu_quota_scope not in QUOTA_SCOPES:
            raise ConfigError("--server-cpu-quota-scope", self.server_cpu_quota_scope,
                              " or ".join(QUOTA_SCOPES))
        if self.server_cpu_quota_scope == "worker":
            if self.server_cpu_quota is None:
                raise ConfigError("--server-cpu-quota-scope", "worker",
                                  "only with --server-cpu-quota (the quota each worker's "
                                  "cgroup gets)")
            if self.server_cpu_quota > 1:
                raise ConfigError("--server-cpu-quota", self.server_cpu_quota,
                                  "at most 1 CPU with --server-cpu-quota-scope worker (the "
                                  "quota of one worker, a single-threaded process)")
        period = self.server_cpu_period_us
        if period is not None:
            if not (1000 <= period <= 1_000_000):
                raise ConfigError("--server-cpu-period", period, "1000 to 1000000 us")
            if self.server_cpu_quota is not None and (
                self.server_cpu_quota * period < MIN_CPU_QUOTA_US
            ):
                raise ConfigError(
                    "--server-cpu-period",
                    period,
                    f">= {math.ceil(MIN_CPU_QUOTA_US / self.server_cpu_quota)} us, so that "
                    f"quota x period is at least the kernel's minimum quota of "
                    f"{MIN_CPU_QUOTA_US} us",
                )

    def _check_wrk(self) -> None:
        """wrk's options: a closed loop, whole seconds (wrk reads no fractions)."""
        if self.rates_per_s:
            raise ConfigError("--rates", ",".join(f"{r:g}" for r in self.rates_per_s),
                              "left out with --client wrk (a closed loop: --concurrency)")
        if not self.concurrencies:
            raise ConfigError("--concurrency", "", "one or more connection counts C1,C2,... "
                              "for --client wrk")
        for c in self.concurrencies:
            if not 1 <= c <= MAX_WRK_CONNECTIONS:
                raise ConfigError("--concurrency", c, f"integers from 1 to "
                                  f"{MAX_WRK_CONNECTIONS} (wrk --connections)")
        if not 1 <= self.wrk_threads <= min(self.concurrencies):
            raise ConfigError("--threads", self.wrk_threads, f"1 to the smallest --concurrency "
                              f"({min(self.concurrencies)}): wrk needs a connection per thread")
        for option, value in (("--duration", self.duration_s), ("--timeout", self.timeout_s)):
            if value != int(value) or value < 1:
                raise ConfigError(option, value, "whole seconds >= 1 with --client wrk (wrk "
                                  "reads its --duration and --timeout so)")

    def _check_haproxy(self) -> None:
        """HAProxy's options: its limits, and none of nginx's knobs."""
        if not self.accept_limits:
            raise ConfigError("--accept-limit", "", "one or more limits L1,L2,... (integers "
                              ">= 1, or inf for HAProxy's -1)")
        for limit in self.accept_limits:
            if not (limit == math.inf or (limit >= 1 and limit == int(limit)
                                          and limit <= MAX_MAXACCEPT)):
                raise ConfigError("--accept-limit", limit, f"integers from 1 to "
                                  f"{MAX_MAXACCEPT}, or inf (tune.maxaccept -1: no limit)")
        if len(set(self.accept_limits)) != len(self.accept_limits):
            raise ConfigError("--accept-limit", ",".join(map(limit_text, self.accept_limits)),
                              "each limit once")
        for option, value in (("--multi-accept", self.multi_accept),
                              ("--accept-mutex", self.accept_mutex),
                              ("--reuseport", self.reuseport)):
            if value:
                raise ConfigError(option, "on", "nginx only (HAProxy's knob is "
                                  "--accept-limit, tune.maxaccept)")
        if self.server_cpu_quota_scope == "worker":
            raise ConfigError("--server-cpu-quota-scope", "worker", "server with --server "
                              "haproxy (its threads share one process and so one cgroup)")

    def points(self) -> list[tuple[float, int, float | None]]:
        """(rate, repeat, accept limit) in the order they run.  nginx: every repeat of a
        rate in turn.  HAProxy: repeat by repeat, every rate, and at each rate every limit,
        the limits' order rotated by one each repeat (drift hits every limit alike)."""
        repeats = range(self.first_repeat, self.first_repeat + self.repeats)
        if not self.accept_limits:
            loads = self.concurrencies or self.rates_per_s  # wrk: (concurrency, repeat, None)
            return [(load, repeat, None) for load in loads for repeat in repeats]
        limits = list(self.accept_limits)
        out: list[tuple[float, int, float | None]] = []
        for k, repeat in enumerate(repeats):
            shift = k % len(limits)
            order = limits[shift:] + limits[:shift]
            out.extend((rate, repeat, limit) for rate in self.rates_per_s for limit in order)
        return out

    @property
    def cpu_period_us(self) -> int:
        """The CFS period used with server_cpu_quota."""
        if self.server_cpu_period_us is not None:
            return self.server_cpu_period_us
        return default_cpu_period_us(self.server_cpu_quota or 1.0)

    def processes_for(self, rate: float) -> int:
        """httperf processes for one rate: enough that none holds more than
        HTTPERF_MAX_OPEN connections even if every one of them waits the full timeout."""
        if self.processes is not None:
            return self.processes
        return min(MAX_PROCESSES, max(1, math.ceil(rate * self.timeout_s / HTTPERF_MAX_OPEN)))


def limit_text(limit: float) -> str:
    """An accept limit as the command line and the run names write it (inf for none)."""
    return "inf" if limit == math.inf else str(int(limit))


def check_tools(need_taskset: bool, server: str = "nginx",
                client: str = "httperf") -> dict[str, str | None]:
    """Paths of the tools; raise HarnessError naming the missing ones and how to install them."""
    found = {name: shutil.which(name) for name in (client, server, "nstat", "taskset")}
    missing = [name for name in (client, server) if found[name] is None]
    if need_taskset and found["taskset"] is None:
        missing.append("taskset (Debian package util-linux)")
    if missing:
        raise HarnessError(f"missing tools: {', '.join(missing)}; {INSTALL_HINT}")
    return found


def cpu_split(cpus: Sequence[int]) -> tuple[str, str]:
    """(server CPU list, client CPU list): the server alone on the first CPU when there are
    two or more, nothing pinned on one CPU."""
    if len(cpus) < 2:
        return "", ""
    return str(cpus[0]), ",".join(str(c) for c in cpus[1:])


def nginx_conf(
    prefix: Path, multi_accept: bool, port: int, backlog: int = testbed.BACKLOG, workers: int = 1,
    accept_mutex: bool = False, reuseport: bool = False,
) -> str:
    """nginx.conf: ``workers`` worker processes, epoll, the given multi_accept, accept_mutex
    and reuseport, one static file; each request logged, buffered, with when it was logged,
    its request time, its worker's pid and its status (``LOG_FORMAT`` of
    :mod:`acceptsim.measure.timeseries_csv`: the time series' replies and each worker's
    requests)."""
    access_log = (
        f"log_format timing {LOG_FORMAT};\n"
        f"    access_log {prefix}/logs/access.log timing buffer=64k flush=1s;"
    )
    return f"""# written by acceptsim measure
worker_processes {workers};
daemon off;
master_process on;
pid {prefix}/nginx.pid;
error_log {prefix}/logs/error.log warn;
worker_rlimit_nofile {testbed.NGINX_RLIMIT_NOFILE};
events {{
    use epoll;
    multi_accept {"on" if multi_accept else "off"};
    accept_mutex {"on" if accept_mutex else "off"};
    worker_connections {testbed.NGINX_WORKER_CONNECTIONS};
}}
http {{
    {access_log}
    client_body_temp_path {prefix}/tmp/body;
    proxy_temp_path {prefix}/tmp/proxy;
    fastcgi_temp_path {prefix}/tmp/fastcgi;
    uwsgi_temp_path {prefix}/tmp/uwsgi;
    scgi_temp_path {prefix}/tmp/scgi;
    sendfile on;
    keepalive_timeout 65;
    server {{
        listen {ADDRESS}:{port} backlog={backlog}{" reuseport" if reuseport else ""};
        root {prefix}/html;
    }}
}}
"""


def httperf_commands(plan: Plan, rate: float, uri: str) -> list[list[str]]:
    """One httperf command per process, sharing ``rate`` and ``rate x duration`` connections."""
    n = plan.processes_for(rate)
    per_rate = rate / n
    conns = max(1, round(per_rate * plan.duration_s))
    spacing = (
        [f"--period=e{1.0 / per_rate:.9g}"]
        if plan.spacing == "poisson"
        else [f"--rate={per_rate:.9g}"]
    )
    return [
        [
            "httperf",
            f"--client={i}/{n}",
            f"--server={ADDRESS}",
            f"--port={plan.port}",
            f"--uri={uri}",
            *spacing,
            f"--num-conns={conns}",
            "--num-calls=1",
            f"--timeout={plan.timeout_s:g}",
        ]
        for i in range(n)
    ]


def snapshot(nstat: str | None) -> str:
    """Kernel counters now: ``nstat -asz 'Tcp*' 'Ip*'`` (absolute values, zeros shown,
    nstat's history file untouched; the Tcp, TcpExt, Ip and IpExt groups), else copies of
    /proc/net/netstat and /proc/net/snmp."""
    if nstat is not None:
        out = subprocess.run(
            [nstat, "-asz", *NSTAT_PATTERNS],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        return out.stdout
    return Path("/proc/net/netstat").read_text() + Path("/proc/net/snmp").read_text()


def _sysctl(name: str, default: int) -> int:
    try:
        return int(Path("/proc/sys", *name.split(".")).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return default


#: clock_gettime(2)'s id of CLOCK_MONOTONIC_COARSE on Linux (<linux/time.h>)
CLOCK_MONOTONIC_COARSE = 6


def scheduler_tick_s() -> float:
    """The kernel's scheduler tick, 1/HZ: the resolution of ``CLOCK_MONOTONIC_COARSE``,
    which advances once a tick (``clock_getres``); 0.0 where it cannot be read."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    except (OSError, TypeError):
        return 0.0

    class Timespec(ctypes.Structure):
        _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]

    res = Timespec()
    if libc.clock_getres(CLOCK_MONOTONIC_COARSE, ctypes.byref(res)) != 0:
        return 0.0
    tick = res.tv_sec + res.tv_nsec / 1e9
    return tick if 0.0 < tick <= 1.0 else 0.0


def server_version(server: str, executable: str) -> str:
    """The server's version as it reports it (nginx -v: ``nginx version: nginx/1.22.1``;
    haproxy -v: ``HAProxy version 2.6.12-1+deb12u4 2026/10/17 - ...``)."""
    out = subprocess.run([executable, "-v"], capture_output=True, text=True, timeout=10)
    text = (out.stderr or out.stdout).strip()
    if server == "haproxy":
        words = text.split()
        return words[2] if len(words) > 2 and words[1] == "version" else text.splitlines()[0]
    return text.rpartition("/")[2] if "/" in text else text


def port_is_free(port: int) -> None:
    """HarnessError if something already listens on 127.0.0.1:port (we would measure it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # as nginx does: connections of the previous run in TIME_WAIT do not count
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((ADDRESS, port))
        except OSError as exc:
            raise HarnessError(
                f"{ADDRESS}:{port} is in use ({exc.strerror}); choose another --port"
            ) from None


@contextlib.contextmanager
def deferred_signals() -> Iterator[None]:
    """SIGINT and SIGTERM wait until the block is done, then take effect as they would have.

    For the moments when an exception would leave a process or a cgroup behind: between
    starting a process and recording it, and while stopping processes and removing the
    group (a second Ctrl-C or ``kill`` must not cut short the clean-up of the first).
    Outside the main thread, or where a handler was not set from Python, signals are left
    alone.
    """
    handlers = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    if threading.current_thread() is not threading.main_thread() or None in handlers.values():
        yield
        return
    pending: list[int] = []

    def record(signum: int, frame: object) -> None:
        pending.append(signum)

    for signum in STOP_SIGNALS:
        signal.signal(signum, record)
    try:
        yield
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        for signum in dict.fromkeys(pending):  # the handler raises (or the default acts)
            signal.raise_signal(signum)


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists and has not exited (a zombie has)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            state = stat.read().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X", "x")


def cgroup_version(root: Path) -> int:
    """2 if ``root`` is a unified (cgroup v2) hierarchy, else 1."""
    return 2 if (root / "cgroup.controllers").is_file() else 1


def _writable(root: Path) -> bool:
    """Whether this process may make a group under ``root`` and move processes into it
    (root may, unless the file system is mounted read-only)."""
    return os.access(root, os.W_OK) and os.access(root / "cgroup.procs", os.W_OK)


def cgroup_unusable(root: Path) -> str | None:
    """Why ``root`` cannot hold the quota's group, or None if it can: it must be a cgroup
    v2 hierarchy offering the cpu controller or a cgroup v1 cpu hierarchy, writable."""
    if not root.is_dir():
        return "does not exist"
    if cgroup_version(root) == 2:
        try:
            controllers = (root / "cgroup.controllers").read_text().split()
        except OSError as exc:
            return f"cgroup v2, its cgroup.controllers unreadable: {exc.strerror or exc}"
        if "cpu" not in controllers:
            return (
                f"cgroup v2 without the cpu controller: its cgroup.controllers lists "
                f"{' '.join(controllers) or 'nothing'}"
            )
        kind = "cgroup v2 with the cpu controller"
    elif (root / "cpu.cfs_quota_us").is_file():
        kind = "cgroup v1 cpu hierarchy"
    else:
        return "has neither cgroup.controllers (v2) nor cpu.cfs_quota_us (v1 cpu)"
    if not _writable(root):
        return f"{kind}, not writable by this process (user id {os.geteuid()})"
    return None


def usable_cgroup_root(roots: Sequence[Path] | None = None) -> Path:
    """The first of ``roots`` (default: CGROUP_ROOT, the unified hierarchy, then
    CGROUP_CPU_ROOT, the v1 cpu hierarchy) that can hold the quota's group; else
    HarnessError naming each path tried, why it cannot, and what is needed."""
    if roots is None:
        roots = (CGROUP_ROOT, CGROUP_CPU_ROOT)
    tried = []
    for root in roots:
        why = cgroup_unusable(root)
        if why is None:
            return root
        tried.append(f"{root} ({why})")
    raise HarnessError(
        f"--server-cpu-quota needs a cgroup v2 hierarchy with the cpu controller or a "
        f"cgroup v1 cpu hierarchy, writable by this process: {CGROUP_HINT}; tried "
        f"{' and '.join(tried)}"
    )


def default_cgroup_root() -> Path:
    """Where ``--server-cpu-quota`` puts its group: :func:`usable_cgroup_root`'s choice."""
    return usable_cgroup_root()


class CpuQuota:
    """A cgroup with a CFS quota, for nginx: ``quota x period`` us of CPU time per
    ``period`` us, shared by every process in it.

    ``with CpuQuota(...) as group`` creates ``<root>/acceptsim-nginx``; processes started
    with ``preexec_fn=group.join`` run in it (with their children: nginx's master and its
    worker).  On exit, however it happens (an error, SIGINT, SIGTERM), every process
    still in the group is killed, any still listed is moved back to the root group, and
    the group is removed.  A group of that name left with processes in it (another
    measure running, or one killed with SIGKILL) is refused, not emptied.

    ``scope="worker"`` (``--server-cpu-quota-scope worker``): the quota is each worker's,
    not nginx's.  ``acceptsim-nginx`` gets no limit; inside it ``worker-1`` ...
    ``worker-N`` (``workers``) get the quota each, and ``master``, without limit, is where
    nginx starts (``join``): its workers start there too, and :meth:`place_workers` moves
    each into its own group once they run.  The master has a group of its own, not the
    parent's, because cgroup v2 lets no process stay in a group whose children use a
    controller (v1 would allow it; one layout for both); without limit, because it only
    waits for signals and should take nothing from any worker's quota.  The same files as
    for one group (``cpu.max``, or ``cpu.cfs_period_us`` and ``cpu.cfs_quota_us``).

    ``root``: a cgroup v2 (unified) hierarchy, recognised by its ``cgroup.controllers``
    (the quota goes to ``cpu.max``; the root's ``cgroup.subtree_control`` gets ``+cpu``
    if it lacks it), or a v1 ``cpu`` hierarchy (``cpu.cfs_quota_us`` and
    ``cpu.cfs_period_us``).  Default: the unified hierarchy at CGROUP_ROOT if it offers
    the cpu controller and is writable, else the v1 one at CGROUP_CPU_ROOT
    (:func:`usable_cgroup_root`); HarnessError, before anything runs, if neither can be
    used.
    """

    def __init__(self, quota_cpus: float, period_us: int, root: Path | None = None,
                 scope: str = QUOTA_SCOPES[0], workers: int = 1) -> None:
        self.quota_cpus, self.period_us = quota_cpus, period_us
        self.quota_us = round(quota_cpus * period_us)
        if self.quota_us < MIN_CPU_QUOTA_US:
            raise HarnessError(
                f"CPU quota {quota_cpus:g} x period {period_us} us is below the kernel's "
                f"minimum quota of {MIN_CPU_QUOTA_US} us"
            )
        if scope not in QUOTA_SCOPES:
            raise ConfigError("--server-cpu-quota-scope", scope, " or ".join(QUOTA_SCOPES))
        self.scope = scope
        self.root = usable_cgroup_root(None if root is None else (root,))
        self.version = cgroup_version(self.root)
        self.dir = self.root / CGROUP_NAME
        #: scope "worker": the groups inside self.dir, each worker's with the quota, in
        #: start order, and the master's without limit (where nginx is started)
        self.worker_dirs = ([self.dir / WORKER_GROUP.format(i) for i in range(1, workers + 1)]
                            if scope == "worker" else [])
        self.start_dir = self.dir / MASTER_GROUP if scope == "worker" else self.dir
        self._made = False  # whether this object made self.dir (and so must remove it)

    def _error(self, what: str, exc: OSError) -> HarnessError:
        kind = "cgroup v2 hierarchy" if self.version == 2 else "cgroup v1 cpu hierarchy"
        return HarnessError(
            f"--server-cpu-quota needs a writable {kind} at {self.root} ({CGROUP_HINT}); "
            f"{what}: {exc.strerror or exc}"
        )

    def __enter__(self) -> CpuQuota:
        try:
            with deferred_signals():  # a signal meanwhile is raised once the group is made
                self._make()
        except BaseException:  # the group, if made, goes (after an error or that signal)
            self.__exit__(None, None, None)
            raise
        return self

    def _make(self) -> None:
        try:
            if self.version == 2:
                control = self.root / "cgroup.subtree_control"
                if "cpu" not in control.read_text().split():
                    control.write_text("+cpu")
            if self.dir.exists():
                self._remove_left_over()
            self.dir.mkdir()
            self._made = True
            if self.scope == "worker":
                if self.version == 2:  # before any process is in it (v2: none may be)
                    (self.dir / "cgroup.subtree_control").write_text("+cpu")
                for sub in (self.start_dir, *self.worker_dirs):
                    sub.mkdir()
        except OSError as exc:
            raise self._error(f"cannot create {self.dir}", exc) from None
        # scope "worker": the master's group and nginx's have no limit (the kernel's default)
        for group in self.worker_dirs or [self.dir]:
            try:
                if self.version == 2:
                    (group / "cpu.max").write_text(f"{self.quota_us} {self.period_us}")
                else:
                    # period first: a quota longer than the old period would be refused
                    (group / "cpu.cfs_period_us").write_text(str(self.period_us))
                    (group / "cpu.cfs_quota_us").write_text(str(self.quota_us))
            except OSError as exc:
                raise self._error(f"cannot set the quota in {group}", exc) from None

    def _subgroups(self) -> list[Path]:
        """The groups inside self.dir that exist (ours, or a left-over run's)."""
        try:
            return sorted(p for p in self.dir.iterdir() if p.is_dir())
        except OSError:
            return []

    def _remove_left_over(self) -> None:
        """Remove a group of our name left by an earlier run, if nothing runs in it."""
        busy = [pid for pid in self.pids() if _alive(pid)]
        subgroups = self._subgroups()
        if busy:
            pids = " ".join(map(str, busy))
            groups = " ".join(map(str, [*subgroups, self.dir]))
            raise HarnessError(
                f"{self.dir} exists with processes in it (pids {pids}): another acceptsim "
                f"measure is running, or one was killed without cleaning up; wait for it, "
                f"or stop them (kill {pids}) and remove the group (rmdir {groups})"
            )
        for sub in subgroups:
            sub.rmdir()
        self.dir.rmdir()

    def join(self) -> None:
        """Move the calling process into the group (a ``preexec_fn``: runs in the child);
        scope "worker": into the master's group, which its workers start in."""
        (self.start_dir / "cgroup.procs").write_text(str(os.getpid()))

    def pids(self) -> list[int]:
        """The processes in the group, and in the groups inside it."""
        pids = []
        for group in (self.dir, *self._subgroups()):
            pids.extend(int(p) for p in (group / "cgroup.procs").read_text().split())
        return pids

    def place_workers(self, pids: Sequence[int]) -> None:
        """Scope "worker": move each of nginx's workers (``pids``, in start order) into a
        group of its own (``worker-1`` ... in order); HarnessError if their number is not
        the groups' or one is not found there afterwards.  Scope "server": nothing to do."""
        if not self.worker_dirs:
            return
        if len(pids) != len(self.worker_dirs):
            raise HarnessError(
                f"--server-cpu-quota-scope worker: nginx started {len(pids)} workers (pids "
                f"{' '.join(map(str, pids)) or 'none'}), not the {len(self.worker_dirs)} of "
                f"--workers"
            )
        for group, pid in zip(self.worker_dirs, pids, strict=True):
            try:
                (group / "cgroup.procs").write_text(str(pid))
                moved = [int(p) for p in (group / "cgroup.procs").read_text().split()]
            except OSError as exc:
                raise self._error(f"cannot move worker {pid} into {group}", exc) from None
            if moved != [pid]:
                raise HarnessError(f"{group} holds pids {moved}, not worker {pid} alone")

    def throttled(self, group: Path | None = None) -> dict[str, int]:
        """``cpu.stat`` in one form for both versions: ``nr_periods``, ``nr_throttled``
        and ``throttled_us``, the time throttled in microseconds (v1 reports
        ``throttled_time`` in ns, v2 ``throttled_usec``); of ``group`` if given, else of
        nginx (scope "worker": the workers' groups' added up)."""
        if group is None and self.worker_dirs:
            total: dict[str, int] = {}
            for each in self.worker_dirs:
                for key, value in self.throttled(each).items():
                    total[key] = total.get(key, 0) + value
            return total
        raw = {}
        for line in ((group or self.dir) / "cpu.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if value.strip().isdigit():
                raw[key] = int(value)
        out = {k: raw[k] for k in ("nr_periods", "nr_throttled") if k in raw}
        if "throttled_usec" in raw:
            out["throttled_us"] = raw["throttled_usec"]
        elif "throttled_time" in raw:
            out["throttled_us"] = raw["throttled_time"] // 1000
        return out

    def usage_us(self, group: Path | None = None) -> int:
        """CPU time the group's processes used, in microseconds: ``cpu.stat``'s
        ``usage_usec`` (v2), else ``cpuacct.usage`` where cpuacct shares the v1 hierarchy
        (both count the groups inside), else the sum of the ``/proc/TID/schedstat`` run
        times of its tasks (time of tasks that have exited is not in it: nginx's master and
        workers run throughout), with those of the groups inside it; of ``group`` if given,
        else of nginx."""
        where = group or self.dir
        if self.version == 2:
            for line in (where / "cpu.stat").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "usage_usec":
                    return int(value)
            raise OSError(f"{where / 'cpu.stat'} has no usage_usec")
        acct = where / "cpuacct.usage"
        if acct.exists():
            return int(acct.read_text()) // 1000
        if group is None and self.worker_dirs:
            return sum(self.usage_us(each) for each in (self.dir, *self._subgroups()))
        tasks = where / "tasks"
        ids = (tasks if tasks.exists() else where / "cgroup.procs").read_text().split()
        total_ns = 0
        for tid in ids:
            try:
                total_ns += int(Path(f"/proc/{tid}/schedstat").read_text().split()[0])
            except (OSError, IndexError, ValueError):  # exited meanwhile
                pass
        return total_ns // 1000

    def _empty(self) -> None:
        """Kill every process left in the group (only the harness's nginx runs there),
        then move any that is still listed back to the root group."""
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:  # gone meanwhile, or not ours to kill
                pass
        for pid in self.pids():
            try:
                (self.root / "cgroup.procs").write_text(str(pid))
            except OSError:  # the process has exited meanwhile
                pass

    def __exit__(self, *exc: object) -> None:
        if not self._made:
            return
        with deferred_signals():  # a second Ctrl-C or kill does not leave the group behind
            try:
                self._empty()
            except OSError:
                pass
            deadline = time.monotonic() + CGROUP_RMDIR_WAIT_S
            error: OSError | None = None
            for group in (*self._subgroups(), self.dir):  # the groups inside first
                while True:  # bounded: rmdir fails while an exiting process is still listed
                    try:
                        group.rmdir()
                        break
                    except FileNotFoundError:
                        break
                    except OSError as exc:
                        if time.monotonic() > deadline:
                            error = exc
                            break
                        time.sleep(0.05)
                if error is not None:
                    break
            self._made = False
            if error is not None:  # reported, not left silently (its context: the unwinding)
                try:
                    left = " ".join(map(str, self.pids())) or "none"
                except OSError:
                    left = "unknown"
                left_groups = " ".join(map(str, [*self._subgroups(), self.dir]))
                raise HarnessError(
                    f"cannot remove {group} ({error.strerror or error}; pids still in it: "
                    f"{left}, {CGROUP_RMDIR_WAIT_S:g} s after they were killed); remove it "
                    f"with rmdir {left_groups} once they have exited"
                )


# -- the time series' sampler ------------------------------------------------------------------
PROC = Path("/proc")
#: sock_diag (netlink) constants: the listening sockets' queues as ``ss -ltn`` reads them
NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST_DUMP = 0x1 | 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
TCP_LISTEN = 10


def read_netstat(proc: Path = PROC) -> dict[str, int]:
    """The sampled kernel counters (:data:`~acceptsim.measure.timeseries_csv.NETSTAT_COLUMNS`) from
    ``/proc/net/netstat``, read directly (no nstat process: cheap enough every 100 ms)."""
    wanted = set(NETSTAT_COLUMNS)
    found: dict[str, int] = {}
    lines = (proc / "net" / "netstat").read_text().splitlines()
    for names, values in zip(lines[::2], lines[1::2], strict=False):
        section, _, keys = names.partition(":")
        vsection, _, numbers = values.partition(":")
        if section != vsection:
            raise ValueError(f"{proc / 'net' / 'netstat'}: {section!r} and {vsection!r} lines "
                             "do not pair")
        for key, value in zip(keys.split(), numbers.split(), strict=False):
            if section + key in wanted:
                found[section + key] = int(value)
    return found


def read_cpu_ticks(cpus: str, proc: Path = PROC) -> dict[str, int]:
    """The server's CPUs' time in ticks of 1/USER_HZ from ``/proc/stat``: ``user_ticks``
    (user + nice), ``system_ticks``, ``softirq_ticks`` and ``busy_ticks`` (user, nice,
    system, irq, softirq), added up over ``cpus`` (a taskset list; "": every CPU)."""
    names = {"cpu"} if not cpus else {f"cpu{n}" for n in parse_cpu_list(cpus)}
    out = {"user_ticks": 0, "system_ticks": 0, "softirq_ticks": 0, "busy_ticks": 0}
    seen = 0
    for line in (proc / "stat").read_text().splitlines():
        fields = line.split()
        if not fields or fields[0] not in names:
            continue
        user, nice, system, _idle, _iowait, irq, softirq = (int(v) for v in fields[1:8])
        out["user_ticks"] += user + nice
        out["system_ticks"] += system
        out["softirq_ticks"] += softirq
        out["busy_ticks"] += user + nice + system + irq + softirq
        seen += 1
    if seen != len(names):
        raise ValueError(f"{proc / 'stat'} lacks some of {', '.join(sorted(names))}")
    return out


def listen_queue_netlink(port: int) -> int:
    """The accept queues of every TCP listener on ``port`` (IPv4), added up: sock_diag's
    ``idiag_rqueue`` of a listening socket, what ``ss -ltn`` shows as Recv-Q."""
    request = struct.pack("=BBBBI", socket.AF_INET, socket.IPPROTO_TCP, 0, 0,
                          1 << TCP_LISTEN) + bytes(48)  # fmt: skip
    header = struct.pack("=IHHII", 16 + len(request), SOCK_DIAG_BY_FAMILY,
                         NLM_F_REQUEST_DUMP, 1, 0)  # fmt: skip
    total = 0
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG) as sock:
        sock.settimeout(1.0)
        sock.sendto(header + request, (0, 0))
        while True:
            data = sock.recv(65536)
            offset = 0
            while offset + 16 <= len(data):
                length, kind = struct.unpack_from("=IH", data, offset)
                if kind == NLMSG_DONE:
                    return total
                if kind == NLMSG_ERROR:
                    (code,) = struct.unpack_from("=i", data, offset + 16)
                    raise OSError(-code, f"sock_diag: {os.strerror(-code)}")
                body = offset + 16
                (sport,) = struct.unpack_from(">H", data, body + 4)
                (rqueue,) = struct.unpack_from("=I", data, body + 56)
                if sport == port:
                    total += rqueue
                if length < 16:
                    raise OSError(f"sock_diag: a message of {length} bytes")
                offset += (length + 3) & ~3


def parse_ss_listen(text: str, port: int) -> int:
    """The Recv-Q of ``ss -ltnH`` lines whose local port is ``port``, added up."""
    total = 0
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[3].rpartition(":")[2] == str(port):
            total += int(fields[1])
    return total


def listen_queue_ss(port: int) -> int:
    """The accept queue as ``ss -ltnH sport = :PORT`` shows it (where sock_diag sockets
    cannot be opened: a process per sample)."""
    out = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True,
                         timeout=5, check=True)  # fmt: skip
    return parse_ss_listen(out.stdout, port)


def accept_queue_reader(port: int) -> Callable[[], dict[str, float]]:
    """A sampler source: the listening socket's accept queue, through sock_diag, or
    ``ss`` if sock_diag fails at the first try."""
    try:
        listen_queue_netlink(port)
        read = listen_queue_netlink
    except OSError:
        read = listen_queue_ss
    return lambda: {"accept_queue_len": read(port)}


class Sampler:
    """Samples the testbed every ``interval_s`` in a thread of its own while the load runs.

    ``sources``: name -> a function returning some of the values a sample holds (see
    :func:`~acceptsim.measure.timeseries_csv.rows_from_samples`).  Each sample records the
    time it was taken (``wall_s``, Unix time as nginx's ``$msec``): the actual time,
    the schedule being only its target (a late sample is not made up; the next keeps
    to the schedule).  The first sample is taken when :meth:`start` returns, the last by
    :meth:`stop`.  A source that fails (a file gone, sock_diag refused) is read no more
    and :attr:`failed` says why; its columns are empty from then on.  The thread runs on
    ``cpus`` (a taskset list; "": where it is), so that it takes no time from the server;
    :attr:`cpu_s` is the CPU time it used.
    """

    def __init__(
        self, interval_s: float, sources: dict[str, Callable[[], dict[str, float]]],
        cpus: str = "",
    ) -> None:  # fmt: skip
        self.interval_s = interval_s
        self.sources = sources
        self.cpus = cpus
        self.samples: list[dict[str, float]] = []
        #: source name -> why it stopped being read
        self.failed: dict[str, str] = {}
        self.cpu_s = 0.0
        self._stop = threading.Event()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, name="acceptsim-sampler", daemon=True)

    def sample(self) -> None:
        """One sample now."""
        sample: dict[str, float] = {"wall_s": time.time()}
        for name, read in self.sources.items():
            if name in self.failed:
                continue
            try:
                sample.update(read())
            except Exception as exc:  # noqa: BLE001 (any failure: the source is dropped)
                self.failed[name] = f"{type(exc).__name__}: {exc}"
        self.samples.append(sample)

    def _run(self) -> None:
        try:
            if self.cpus:
                with contextlib.suppress(OSError, ValueError):  # (this thread only)
                    os.sched_setaffinity(0, parse_cpu_list(self.cpus))
            self.sample()
        finally:
            self._started.set()
        start = time.monotonic()
        k = 1
        while not self._stop.wait(max(0.0, start + k * self.interval_s - time.monotonic())):
            self.sample()
            # the next target still ahead (one missed is skipped, not sampled twice)
            k = max(k + 1, math.floor((time.monotonic() - start) / self.interval_s) + 1)
        self.sample()
        self.cpu_s = time.thread_time()

    def start(self) -> Sampler:
        self._thread.start()
        self._started.wait(timeout=10.0)
        return self

    def stop(self) -> list[dict[str, float]]:
        """Take the last sample, end the thread and return the samples."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10.0)
        return self.samples

    def __enter__(self) -> Sampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def voluntary_switches(pids: Sequence[int]) -> int:
    """The tasks' voluntary context switches so far, added up (/proc/PID/status): the
    times they slept."""
    total = 0
    for pid in pids:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("voluntary_ctxt_switches:"):
                total += int(line.split()[1])
                break
    return total


def sampler_sources(
    port: int, server_cpus: str, group: CpuQuota | None, workers: Sequence[int] = ()
) -> dict[str, Callable[[], dict[str, float]]]:
    """The testbed's sources: the kernel's counters, the listening socket's accept queue,
    the server CPUs' time, nginx's workers' sleeps (``workers``: their pids) and nginx's
    cgroup (with a CPU quota)."""
    sources: dict[str, Callable[[], dict[str, float]]] = {
        "kernel counters": lambda: dict(read_netstat()),
        "accept queue": accept_queue_reader(port),
        "server CPU": lambda: dict(read_cpu_ticks(server_cpus)),
    }
    if workers:
        pids = list(workers)
        sources["workers' sleeps"] = lambda: {"voluntary_switches": voluntary_switches(pids)}
    if group is not None:
        def cgroup() -> dict[str, float]:
            stat = group.throttled()
            return {"nr_throttled": stat["nr_throttled"], "throttled_us": stat["throttled_us"],
                    "usage_us": group.usage_us()}

        sources["cgroup"] = cgroup
    return sources


def _pin(cpus: str, argv: list[str]) -> list[str]:
    return ["taskset", "-c", cpus, *argv] if cpus else argv


class Nginx:
    """nginx as a child process in a temporary prefix; ``with`` stops it whatever happens
    (an error, SIGINT, SIGTERM): the master, then whatever is left of its process group."""

    def __init__(
        self, plan: Plan, cpus: str, nginx: str, group: CpuQuota | None = None
    ) -> None:
        self.plan, self.cpus, self.nginx, self.group = plan, cpus, nginx, group
        self.dir = Path(tempfile.mkdtemp(prefix="acceptsim-nginx-"))
        self.proc: subprocess.Popen[bytes] | None = None
        self.uri = f"/f{plan.file_size_bytes}.html"
        #: the most connections a worker holds (run.toml's server.max_connections): nginx's
        #: worker_connections as nginx_conf writes it (HAProxy: its maxconn, read back)
        self.max_connections = testbed.NGINX_WORKER_CONNECTIONS

    def __enter__(self) -> Nginx:
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self) -> None:
        argv = self._write_files()
        port_is_free(self.plan.port)
        stderr_path = self.dir / "logs" / "stderr.txt"
        # deferred: a signal between the start and self.proc would leave the server unknown
        with open(stderr_path, "wb") as stderr, deferred_signals():
            self.proc = subprocess.Popen(
                argv,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                start_new_session=True,
                preexec_fn=self.group.join if self.group is not None else None,
            )
        url = f"http://{ADDRESS}:{self.plan.port}{self.uri}"
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no http_proxy
        deadline = time.monotonic() + 10.0
        name = self.plan.server
        while True:  # bounded: at most 10 s
            if self.proc.poll() is not None:
                err = stderr_path.read_text(errors="replace").strip()
                raise HarnessError(f"{name} exited at start: {err or 'no message'}")
            try:
                with direct.open(url, timeout=1.0) as reply:
                    body = reply.read()
                if len(body) != self.plan.file_size_bytes:
                    raise HarnessError(f"{name} served {len(body)} bytes for {url}")
                self._ready(deadline)
                return
            except urllib.error.HTTPError as exc:
                raise HarnessError(f"{name} answered {url} with HTTP {exc.code}") from None
            except OSError:
                if time.monotonic() > deadline:
                    raise HarnessError(f"{name} did not answer {url} within 10 s") from None
                time.sleep(0.1)

    def _write_files(self) -> list[str]:
        """The prefix's folders, the static file and nginx.conf; nginx's command line."""
        for sub in ("logs", "html", "tmp"):
            (self.dir / sub).mkdir()
        # the worker drops to 'nobody' when started as root: it must read the files
        os.chmod(self.dir, 0o755)
        os.chmod(self.dir / "html", 0o755)
        page = self.dir / "html" / self.uri.lstrip("/")
        page.write_bytes(b"x" * self.plan.file_size_bytes)
        os.chmod(page, 0o644)
        conf = self.dir / "nginx.conf"
        plan = self.plan
        conf.write_text(nginx_conf(self.dir, plan.multi_accept, plan.port, workers=plan.workers,
                                   accept_mutex=plan.accept_mutex, reuseport=plan.reuseport))
        log = str(self.dir / "logs" / "error.log")  # -e: not the compiled-in /var/log path
        return _pin(self.cpus, [self.nginx, "-p", str(self.dir), "-e", log, "-c", str(conf)])

    def _ready(self, deadline: float) -> None:
        """nginx answered: its processes in their groups, the access log from the load on."""
        if self.group is not None and len(self.group.pids()) < 2:
            raise HarnessError(
                f"nginx's master and worker are not both in {self.group.dir} "
                f"(found pids {self.group.pids()})"
            )
        if self.group is not None and self.group.worker_dirs:
            self.group.place_workers(self._all_workers(deadline))
        self._start_log()

    def _all_workers(self, deadline: float) -> list[int]:
        """nginx's workers once all of --workers have started (at most until
        ``deadline``, on time.monotonic(): then those found)."""
        while True:
            pids = self.worker_pids()
            if len(pids) >= self.plan.workers or time.monotonic() > deadline:
                return pids
            time.sleep(0.05)

    def _start_log(self) -> None:
        """Forget the start's probe: the per-worker counts begin with the load."""
        self.log_offset = 0
        path = self.dir / "logs" / "access.log"
        if self.plan.workers > 1 and self.proc is not None:
            self.proc.send_signal(signal.SIGUSR1)  # reopen: flushes the probe's line
            time.sleep(0.3)
            self.log_offset = path.stat().st_size if path.exists() else 0

    def access_log(self) -> list[LogLine] | None:
        """The access log's lines since the load began (with several workers; with one,
        since nginx started: the time series bins them by their time), the workers'
        buffers flushed first; None without a log (a stand-in nginx)."""
        path = self.dir / "logs" / "access.log"
        if self.proc is None:
            return None
        self.proc.send_signal(signal.SIGUSR1)  # reopen: flushes the workers' buffers
        time.sleep(LOG_FLUSH_WAIT_S)
        if not path.exists():
            return None
        with open(path, "rb") as log:
            log.seek(self.log_offset)
            return parse_access_log(log, path)

    def worker_requests(self, log: list[LogLine] | None) -> dict[int, int]:
        """Requests per worker pid since the load began, from :meth:`access_log`'s lines;
        empty with one worker or no log (a stand-in nginx)."""
        if self.plan.workers == 1 or not log:
            return {}
        counts: dict[int, int] = {}
        for line in log:
            counts[line.pid] = counts.get(line.pid, 0) + 1
        return counts

    def worker_pids(self) -> list[int]:
        """nginx's worker pids, in the order they were started (their pids' order)."""
        if self.proc is None:
            return []
        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        try:
            return sorted(int(p) for p in children.read_text().split())
        except OSError:
            return []

    def __exit__(self, *exc: object) -> None:
        with deferred_signals():  # a second Ctrl-C or kill does not cut the stop short
            try:
                if self.proc is not None and self.proc.poll() is None:
                    self.proc.send_signal(signal.SIGTERM)
                    try:
                        self.proc.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        os.killpg(self.proc.pid, signal.SIGKILL)
                        self.proc.wait(timeout=10)
                if self.proc is not None:
                    # nginx runs in its own session: whatever of it is left (a worker the
                    # master did not take down) goes with the process group
                    try:
                        os.killpg(self.proc.pid, signal.SIGKILL)
                    except OSError:  # none left
                        pass
            finally:
                shutil.rmtree(self.dir, ignore_errors=True)


#: the timeouts of the generated HAProxy configuration (HAProxy warns without them and
#: then never times a connection out); far beyond a run, so that none acts in it
HAPROXY_TIMEOUTS = {"client": "30s", "connect": "5s", "server": "30s", "http-request": "30s"}
#: what `acceptsim measure` keeps of HAProxy's own counters after the load: its stats
#: socket's ``show info`` and ``show stat`` (accepted connections, requests, responses)
#: and ``show activity`` (turns of its loop, tasks run, polls)
HAPROXY_STATS_FILE = "haproxy-stats.txt"
HAPROXY_STATS_COMMANDS = ("show info", "show stat", "show activity")


def haproxy_conf(prefix: Path, page: Path, maxaccept: float, port: int,
                 backlog: int = testbed.BACKLOG,
                 threads: int = 1) -> str:
    """haproxy.cfg: ``threads`` threads (nbthread), ``tune.maxaccept`` (-1 for inf), one
    frontend on 127.0.0.1 that answers every request itself with ``page``
    (``http-request return``: no backend), its bind backlog, and a stats socket in the
    prefix; everything else HAProxy's defaults (maxconn from the open-file limit, no log)."""
    limit = HAPROXY_NO_LIMIT if maxaccept == math.inf else int(maxaccept)
    timeouts = "\n".join(f"    timeout {k} {v}" for k, v in HAPROXY_TIMEOUTS.items())
    return f"""# written by acceptsim measure
global
    nbthread {threads}
    tune.maxaccept {limit}
    stats socket {prefix}/stats.sock mode 600 level admin
defaults
    mode http
{timeouts}
frontend acceptsim
    bind {ADDRESS}:{port} backlog {backlog}
    http-request return status 200 content-type text/html file {page}
"""


def haproxy_maxconn(stats: str) -> int:
    """HAProxy's maxconn from its ``show info`` text (``Maxconn: 9987``); 0 if absent."""
    for line in stats.splitlines():
        key, _, value = line.partition(":")
        if key == "Maxconn" and value.strip().isdigit():
            return int(value)
    return 0


class Haproxy(Nginx):
    """HAProxy as a child process (``-db``: in the foreground, one process with
    ``--workers`` threads) answering every request itself; ``with`` stops it whatever
    happens.  Its accept limit is the run's (``maxaccept``)."""

    def __init__(self, plan: Plan, cpus: str, haproxy: str, group: CpuQuota | None = None,
                 maxaccept: float = HAPROXY_DEFAULT_MAXACCEPT) -> None:
        super().__init__(plan, cpus, haproxy, group)
        self.maxaccept = maxaccept

    def _write_files(self) -> list[str]:
        (self.dir / "logs").mkdir()
        page = self.dir / self.uri.lstrip("/")
        page.write_bytes(b"x" * self.plan.file_size_bytes)
        conf = self.dir / "haproxy.cfg"
        conf.write_text(haproxy_conf(self.dir, page, self.maxaccept, self.plan.port,
                                     threads=self.plan.workers))
        return _pin(self.cpus, [self.nginx, "-db", "-f", str(conf)])

    def _ready(self, deadline: float) -> None:
        if self.group is not None and not self.group.pids():
            raise HarnessError(f"haproxy is not in {self.group.dir}")
        self.log_offset = 0
        self.max_connections = haproxy_maxconn(self.stats())

    def stats(self) -> str:
        """HAProxy's counters now (HAPROXY_STATS_COMMANDS), from its stats socket ('' if
        it does not answer)."""
        text = []
        for command in HAPROXY_STATS_COMMANDS:
            try:
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                    sock.settimeout(5.0)
                    sock.connect(str(self.dir / "stats.sock"))
                    sock.sendall(command.encode() + b"\n")
                    chunks = []
                    while chunk := sock.recv(65536):
                        chunks.append(chunk)
                text.append(f"# {command}\n" + b"".join(chunks).decode(errors="replace"))
            except OSError:
                return ""
        return "".join(text)

    def access_log(self) -> list[LogLine] | None:
        return None  # HAProxy logs nothing here (a log line per request would cost a write)

    def worker_pids(self) -> list[int]:
        """HAProxy's one process (its threads are its tasks)."""
        return [self.proc.pid] if self.proc is not None and self.proc.poll() is None else []


def run_httperfs(commands: list[list[str]], cpus: str, limit_s: float) -> list[str]:
    """Start every httperf at once; their standard outputs, or HarnessError after limit_s.

    However this ends (an error, the time limit, SIGINT, SIGTERM), no httperf is left
    running: each runs in its own session, and the group of any still running is killed.
    """
    procs: list[subprocess.Popen[str]] = []
    try:
        for argv in commands:
            with deferred_signals():  # started is recorded: the finally will find it
                procs.append(
                    subprocess.Popen(
                        _pin(cpus, argv),
                        stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE,
                        text=True,
                        start_new_session=True,
                    )
                )
        deadline = time.monotonic() + limit_s
        outputs = []
        for proc in procs:
            try:
                out, err = proc.communicate(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                raise HarnessError(f"httperf still running after {limit_s:.0f} s") from None
            if proc.returncode != 0:
                raise HarnessError(f"httperf exited with {proc.returncode}: {err.strip()}")
            outputs.append(out)
        return outputs
    finally:
        with deferred_signals():  # a second Ctrl-C or kill does not leave some running
            for proc in procs:
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=10)


def run_wrk(argv: list[str], cpus: str, limit_s: float) -> tuple[str, float, int]:
    """Run one wrk; its standard output, the CPU time it used (user and system) and its
    voluntary context switches (its sleeps), from its own resource usage when it is
    reaped, or HarnessError after limit_s.  However this ends, no wrk is left running
    (its session's group is killed)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        with deferred_signals():
            proc = subprocess.Popen(_pin(cpus, argv), stdout=out, stderr=err, text=True,
                                    start_new_session=True)
        try:
            deadline = time.monotonic() + limit_s
            while True:
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    break
                if time.monotonic() > deadline:
                    raise HarnessError(f"wrk still running after {limit_s:.0f} s")
                time.sleep(0.05)
            proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        finally:
            with deferred_signals():
                if proc.returncode is None:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=10)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise HarnessError(f"wrk exited with {proc.returncode}: {err.read().strip()}")
        return out.read(), usage.ru_utime + usage.ru_stime, usage.ru_nvcsw


def worker_cgroup_counters(group: CpuQuota | None) -> list[dict[str, int]]:
    """Scope "worker": for each worker's group, in order, the pid in it (0 unless exactly
    one), its ``cpu.stat`` counters and CPU time now (``nr_periods``, ``nr_throttled``,
    ``throttled_us``, ``usage_us``); empty otherwise, or if a group cannot be read."""
    if group is None or not group.worker_dirs:
        return []
    try:
        counters = []
        for d in group.worker_dirs:
            procs = (d / "cgroup.procs").read_text().split()
            counters.append({"pid": int(procs[0]) if len(procs) == 1 else 0,
                             **group.throttled(d), "usage_us": group.usage_us(d)})
        return counters
    except (OSError, ValueError):
        return []


def worker_cgroups_csv(group: CpuQuota, before: list[dict[str, int]],
                       after: list[dict[str, int]]) -> str:
    """``worker-cgroups.csv``: per worker's group (start order), the pid it held when the
    load began (0: not exactly one), its name and its counters' growth over the load."""
    lines = [WORKER_CGROUPS_HEADER]
    keys = WORKER_CGROUPS_HEADER.split(",")[2:]
    for d, b, a in zip(group.worker_dirs, before, after, strict=True):
        lines.append(",".join([str(b["pid"]), d.name,
                               *(str(a.get(k, 0) - b.get(k, 0)) for k in keys)]))
    return "\n".join(lines) + "\n"


def run_dir_name(plan: Plan, rate: float, repeat: int, limit: float | None = None) -> str:
    if limit is not None:  # HAProxy: its threads and tune.maxaccept
        threads = f"-threads-{plan.workers}" if plan.workers > 1 else ""
        return (f"{plan.server}{threads}-maxaccept-{limit_text(limit)}-rate-{rate:06.0f}"
                f"-rep-{repeat}")
    ma = "on" if plan.multi_accept else "off"
    layout = ""
    if plan.workers > 1:
        way = "reuseport" if plan.reuseport else "mutex" if plan.accept_mutex else "shared"
        layout = f"-workers-{plan.workers}-{way}"
    if plan.client == "wrk":  # rate: the concurrency
        ka = "on" if plan.keepalive else "off"
        return (f"{plan.server}{layout}-multi_accept-{ma}-wrk-c-{rate:05.0f}-keepalive-{ka}"
                f"-rep-{repeat}")
    return f"{plan.server}{layout}-multi_accept-{ma}-rate-{rate:06.0f}-rep-{repeat}"


def period_timer_offset(group: CpuQuota, cpus: str, tick_s: float) -> tuple[float | None, str]:
    """Where ``group``'s period timer fires past multiples of its period, the ticks of the
    server's CPUs ``cpus`` on multiples of ``tick_s`` (:mod:`acceptsim.measure.period_timer`),
    traced after a run with the group kept busy (nothing then is measured); (None, why) if
    it cannot be told."""
    if group.worker_dirs:
        return None, "a cgroup per worker, each with a period timer of its own"
    trace = trace_busy_group(group.join, parse_cpu_list(cpus) if cpus else [])
    if trace.failed:
        return None, trace.failed
    return period_offset_s(trace.text, group.period_us / 1e6, tick_s)


def measure(
    plan: Plan, out: Path, log: Callable[[str], None] = print
) -> list[MeasuredRun]:
    """Run every point of the plan; write one run directory each; return them loaded.

    On an error, SIGINT or SIGTERM (which the CLI raises as an exception) every ``with``
    below unwinds: no nginx, httperf or cgroup of this measure is left behind.
    """
    cpus = sorted(os.sched_getaffinity(0))
    tools = check_tools(need_taskset=len(cpus) >= 2, server=plan.server, client=plan.client)
    server_cpus, client_cpus = cpu_split(cpus)
    executable = tools[plan.server]
    assert executable is not None
    if plan.trace_turns == "on" and plan.client == "httperf":  # before anything runs
        with SwitchTrace(cpus) as probe:
            pass
        if probe.failed:
            raise HarnessError(f"--trace-turns on: the client CPUs' switches cannot be "
                               f"traced here ({probe.failed}); --trace-turns auto or off")
    with contextlib.ExitStack() as stack:
        group = None
        if plan.server_cpu_quota is not None:
            # the group first: if no cgroup hierarchy is writable, nothing is started or
            # written
            group = stack.enter_context(CpuQuota(plan.server_cpu_quota, plan.cpu_period_us,
                                                 scope=plan.server_cpu_quota_scope,
                                                 workers=plan.workers))
        version = server_version(plan.server, executable)
        kernel = KernelInfo(
            profile="linux-modern",
            release=platform.release(),
            somaxconn=_sysctl("net.core.somaxconn", 4096),
            tcp_max_syn_backlog=_sysctl("net.ipv4.tcp_max_syn_backlog", 1024),
            tcp_syncookies=_sysctl("net.ipv4.tcp_syncookies", 1),
            tick_s=scheduler_tick_s(),
        )
        out.mkdir(parents=True, exist_ok=True)
        return _measure_points(plan, out, log, cpus, tools, server_cpus, client_cpus, version,
                               kernel, group)


def _measure_points(
    plan: Plan,
    out: Path,
    log: Callable[[str], None],
    cpus: list[int],
    tools: dict[str, str | None],
    server_cpus: str,
    client_cpus: str,
    version: str,
    kernel: KernelInfo,
    group: CpuQuota | None,
) -> list[MeasuredRun]:
    executable = tools[plan.server]
    assert executable is not None
    runs = []
    for rate, repeat, limit in plan.points():
        name = run_dir_name(plan, rate, repeat, limit)
        target = out / name
        if target.exists():
            raise HarnessError(f"{target} exists; choose another --out or remove it")
        server = (Nginx(plan, server_cpus, executable, group) if limit is None
                  else Haproxy(plan, server_cpus, executable, group, limit))
        stats = ""
        wrk = plan.client == "wrk"
        with server:
            commands = ([wrk_command(f"http://{ADDRESS}:{plan.port}{server.uri}", int(rate),
                                     plan.wrk_threads, int(plan.duration_s),
                                     int(plan.timeout_s), plan.keepalive)]
                        if wrk else httperf_commands(plan, rate, server.uri))
            started = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            before = snapshot(tools["nstat"])
            cpu_before = group.throttled() if group else {}
            workers_before = worker_cgroup_counters(group)
            sampler = None
            if plan.sample_interval_s:
                sampler = Sampler(plan.sample_interval_s,
                                  sampler_sources(plan.port, server_cpus, group,
                                                  server.worker_pids()),
                                  client_cpus)  # fmt: skip
            client_cpu_s = 0.0
            client_sleeps = 0
            trace: SwitchTrace | None = None
            with sampler or contextlib.nullcontext():
                if wrk:
                    output, client_cpu_s, client_sleeps = run_wrk(
                        commands[0], client_cpus, limit_s=plan.duration_s + 60.0)
                    outputs = [output]
                else:
                    with (SwitchTrace(parse_cpu_list(client_cpus) if client_cpus else cpus)
                          if plan.trace_turns != "off" else contextlib.nullcontext()) as trace:
                        outputs = run_httperfs(
                            commands, client_cpus,
                            limit_s=plan.duration_s + plan.timeout_s + 60.0)
            cpu_after = group.throttled() if group else {}
            workers_after = worker_cgroup_counters(group)
            after = snapshot(tools["nstat"])
            pids = server.worker_pids()
            # the log: for the time series' replies and each worker's requests
            access_log = (server.access_log() if sampler is not None or plan.workers > 1
                          else None)
            per_worker = server.worker_requests(access_log)
            if isinstance(server, Haproxy):
                stats = server.stats()
        series_rows = None
        if sampler is not None:
            for source, why in sampler.failed.items():
                log(f"{name}: time series without the {source} ({why})")
            try:
                series_rows = rows_from_samples(sampler.samples, access_log,
                                                1e3 / os.sysconf("SC_CLK_TCK"))
            except ValueError as exc:  # the run stands; its series does not
                log(f"{name}: no {TIMESERIES_FILE}: {exc}")
        switches = parse_switches(trace.text) if trace is not None else []
        if trace is not None and not switches:
            why = trace.failed or "no switch recorded"
            if plan.trace_turns == "on":
                raise HarnessError(f"{name}: the client CPUs' switches not traced ({why})")
            log(f"{name}: the client CPUs' switches not traced ({why})")
        offset_us = -1.0
        if group is not None:  # where its period timer fires against the ticks, traced
            offset, why = period_timer_offset(group, server_cpus, kernel.tick_s)
            if offset is None:
                log(f"{name}: the CPU quota's period timer not placed ({why})")
            else:
                offset_us = math.floor(offset * 1e7) / 10.0  # (below the period)
        setting = (f"maxaccept={limit_text(limit)}" if limit is not None
                   else f"multi_accept={'on' if plan.multi_accept else 'off'}")
        load_text = (f"wrk -c {rate:g} keepalive {'on' if plan.keepalive else 'off'}" if wrk
                     else f"{rate:g}/s")
        info = RunInfo(
            label=f"{plan.server} {setting} {load_text} #{repeat}",
            server=ServerInfo(
                name=plan.server,
                version=version,
                worker_processes=plan.workers,
                multi_accept=plan.multi_accept,
                accept_mutex=plan.accept_mutex,
                reuseport=plan.reuseport,
                events="epoll",
                backlog=testbed.BACKLOG,
                cpus=server_cpus,
                cpu_quota=group.quota_us / group.period_us if group else 0.0,
                cpu_period_us=group.period_us if group else 0,
                cpu_period_offset_us=offset_us,
                cpu_quota_scope=plan.server_cpu_quota_scope,
                accept_limit=0 if limit is None else limit,
                max_connections=getattr(server, "max_connections", 0),
            ),
            kernel=kernel,
            load=LoadInfo(
                tool=plan.client,
                target_rate_per_s=0.0 if wrk else float(rate),
                duration_s=plan.duration_s,
                timeout_s=plan.timeout_s,
                processes=len(commands),
                spacing=plan.spacing,
                file_size_bytes=plan.file_size_bytes,
                uri=server.uri,
                address=ADDRESS,
                port=plan.port,
                cpus=client_cpus,
                concurrency=int(rate) if wrk else 0,
                threads=plan.wrk_threads if wrk else 0,
                keepalive=plan.keepalive,
                client_cpu_s=client_cpu_s,
                client_sleeps=client_sleeps,
            ),
            counters=CounterFiles(),
            host=HostInfo(cpus=len(cpus), repeat=repeat, started_at=started),
            timeseries=SeriesInfo(
                interval_s=plan.sample_interval_s, sampler_cpu_s=sampler.cpu_s
            ) if sampler is not None and series_rows is not None else SeriesInfo(),
        )
        partial = out / (name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir()
        (partial / RUN_FILE).write_text(info.to_toml())
        (partial / (WRK_FILE if wrk else HTTPERF_FILE)).write_text("".join(outputs))
        if stats:
            (partial / HAPROXY_STATS_FILE).write_text(stats)
        if limit is None and (per_worker or pids):  # nginx's workers, in start order
            order = pids + sorted(set(per_worker) - set(pids))
            (partial / WORKERS_FILE).write_text(
                "pid,requests\n" + "".join(f"{p},{per_worker.get(p, 0)}\n" for p in order)
            )
        if group is not None and workers_before and workers_after:
            (partial / WORKER_CGROUPS_FILE).write_text(
                worker_cgroups_csv(group, workers_before, workers_after))
        if series_rows is not None:
            write_timeseries(partial / TIMESERIES_FILE, series_rows)
        if switches:
            (partial / TURNS_FILE).write_text(turns_rows(switches))
        (partial / info.counters.before[0]).write_text(before)
        (partial / info.counters.after[0]).write_text(after)
        partial.rename(target)
        run = load_run(target)
        runs.append(run)
        r = run.record()
        throttle = ""
        if cpu_before:
            periods = cpu_after["nr_periods"] - cpu_before["nr_periods"]
            throttled = cpu_after["nr_throttled"] - cpu_before["nr_throttled"]
            whose = ("the workers' groups" if plan.server_cpu_quota_scope == "worker"
                     else plan.server)
            throttle = f", {whose} throttled in {throttled} of {periods} CFS periods"
        shares = ""
        if r.get("worker_shares"):
            shares = ", workers " + "/".join(f"{s:.2f}" for s in r["worker_shares"])
        client_text = (
            f"p50 {r.get('wrk_latency_ms.p50', math.nan):.2f} ms, "
            f"p99 {r.get('wrk_latency_ms.p99', math.nan):.2f} ms, "
            f"wrk timeouts {r['errors.timeout']}, wrk CPU {r['client_cpus_used'] or 0:.2f}"
            if wrk else
            f"client-timo {r['client_timeouts_per_s']:.0f}/s, "
            f"test-duration {r['test_duration_s']:.1f} s, "
            f"httperf CPU {r['client_cpus_used']:.2f}"
        )
        if not wrk and run.turns is not None and run.turns.samples:
            client_text += (f", turns' order kept over the timeout {run.turns.share:.2f} "
                            f"({max(run.turns.processes.values())} processes a CPU)")
        log(
            f"{name}: reply {r['reply_rate_per_s']:.0f}/s{shares}, "
            f"listen overflows {r['listen_overflows_per_s']:.0f}/s, {client_text}{throttle}"
        )
        for reason in run.client_limits() if wrk else ():
            log(f"{name}: warning: the client limited this run: {reason}")
        for reason in run.host_limits():  # recorded, and left out by validate and calibrate
            log(f"{name}: warning: not a quiet machine: {reason}")
        if plan.pause_s:
            time.sleep(plan.pause_s)
    return runs
