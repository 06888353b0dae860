"""``run.toml``: what was measured, validated like every other configuration.

Schema (``format = "acceptsim-measured-run/1"``; every table is optional
except ``[server]`` and ``[load]``; keys not given take the documented
default; unknown keys or bad values raise :class:`~acceptsim.sim.errors.ConfigError` naming the
file and the key)::

    format = "acceptsim-measured-run/1"   # required
    label = "nginx multi_accept=on 2000/s #1"

    [server]                  # ServerInfo
    name = "nginx"            # required
    version = "1.22.1"
    worker_processes = 1
    multi_accept = true
    accept_limit = 4          # HAProxy's tune.maxaccept (an integer >= 1, or "inf" for -1);
                              # 0 or left out for nginx, whose multi_accept sets the limit
    events = "epoll"
    backlog = 128             # listen(2) backlog asked for
    max_connections = 16384   # nginx's worker_connections, HAProxy's maxconn (0 or left
                              # out: the testbed's of the time, acceptsim.measure.testbed)
    cpus = "0"                # taskset CPU list of the server ("" = not pinned)
    cpu_quota = 0.3           # CPUs the server could use (cgroup CFS quota / period; 0 = no limit)
    cpu_period_us = 2000      # CFS period of that quota (0 = no limit)
    cpu_quota_scope = "server"  # whose cgroup cpu_quota is: "server" (one for nginx) or
                              # "worker" (one per worker, each with cpu_quota); default
                              # "server", so runs recorded before the option read as they were
    cpu_period_offset_us = 730.5  # where the period timer fired past multiples of the
                              # period, the ticks on multiples of the tick (perf; -1 or left
                              # out = not recorded: the simulation's default, 0)

    [kernel]                  # KernelInfo
    profile = "linux-modern"  # the simulator's kernel profile for this host
    release = "6.1.0-18-amd64"
    somaxconn = 4096
    tcp_max_syn_backlog = 1024
    tcp_syncookies = 1
    tick_s = 0.004            # the scheduler tick, 1/HZ (0 = not recorded: the profile's)

    [load]                    # LoadInfo
    tool = "httperf"              # or "wrk" (a closed loop: concurrency, threads, keepalive)
    target_rate_per_s = 2000.0    # required for httperf: aggregate over all processes
    duration_s = 10.0             # required: target_rate_per_s x duration_s connections
    timeout_s = 1.0               # required: httperf --timeout
    processes = 2                 # httperf processes sharing the rate
    spacing = "poisson"           # httperf --period=e (poisson) or --rate (deterministic)
    file_size_bytes = 900
    uri = "/f900.html"
    address = "127.0.0.1"
    port = 18080
    cpus = "1"
    concurrency = 0               # wrk --connections (required for wrk)
    threads = 0                   # wrk --threads
    keepalive = false             # wrk: false = Connection: close on every request
    client_cpu_s = 0.0            # CPU time the load generator used (0 = not recorded)
    client_sleeps = 0             # its voluntary context switches (0 = not recorded)

    [counters]                # file names relative to the run directory
    before = ["counters-before.txt"]
    after = ["counters-after.txt"]

    [host]                    # HostInfo
    cpus = 2
    repeat = 1
    started_at = "2026-11-22T00:30:00Z"

    [timeseries]              # SeriesInfo: only in runs with a timeseries.csv
    interval_s = 0.1          # the sampling interval asked for (acceptsim measure
                              # --sample-interval; 0 = no time series)
    sampler_cpu_s = 0.02      # CPU time the sampler itself used over the run
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acceptsim.measure import testbed
from acceptsim.sim.errors import ConfigError, parse_toml, read_user_file
from acceptsim.sim.params import Params, param

FORMAT = "acceptsim-measured-run/1"
#: the load generators a measured run may name (load.tool)
LOAD_TOOLS = ("httperf", "wrk")


@dataclass(frozen=True)
class ServerInfo(Params):
    _prefix = "server."
    name: str = param("nginx", unit="", doc="server software (required)")
    version: str = param("", unit="", doc="server version ('' = not recorded)")
    worker_processes: int = param(1, unit="processes", ge=1, doc="nginx worker_processes")
    multi_accept: bool = param(False, unit="", doc="nginx multi_accept (nginx's default: off)")
    accept_mutex: bool = param(False, unit="", doc="nginx accept_mutex (default off since 1.11.3)")
    reuseport: bool = param(False, unit="", doc="listen ... reuseport: a socket per worker")
    events: str = param("epoll", unit="", doc="event mechanism (nginx 'use')")
    backlog: int = param(
        testbed.BACKLOG, unit="connections", ge=1,
        doc="listen(2) backlog asked for (left out: the testbed's, acceptsim.measure.testbed)",
    )
    max_connections: int = param(
        0, unit="connections", ge=0,
        doc="the most connections the server holds (nginx's worker_connections, HAProxy's "
        "maxconn as its stats socket reports it); 0 or left out = not recorded: the testbed's "
        "configuration of the time (acceptsim.measure.testbed.RECORDED_MAX_CONNECTIONS), "
        "with which the runs recorded before the field were measured",
    )
    cpus: str = param("", unit="", doc="CPU list the server was pinned to ('' = not pinned)")
    cpu_quota: float = param(
        0.0,
        unit="CPUs",
        ge=0.0,
        le=1024.0,
        doc="CPU time the server's cgroup could use per unit of wall time (CFS quota / "
        "period, acceptsim measure --server-cpu-quota); 0 = no limit",
    )
    cpu_period_us: int = param(
        0,
        unit="us",
        ge=0,
        le=1_000_000,
        doc="CFS period of cpu_quota (cgroup cpu.cfs_period_us); 0 = no limit",
    )
    cpu_period_offset_us: float = param(
        -1.0,
        unit="us",
        ge=-1.0,
        le=1_000_000.0,
        doc="where the quota's period timer fired, past multiples of cpu_period_us, the "
        "scheduler's ticks on multiples of kernel.tick_s (acceptsim measure traces it with "
        "perf: acceptsim.measure.period_timer); -1 = not recorded (the simulation's "
        "default: RunConfig.cpu_period_offset_s)",
    )

    accept_limit: int = param(
        0, unit="connections", ge=0, allow_inf=True,
        doc="the most connections the server accepts in a row (HAProxy's tune.maxaccept; "
        "\"inf\" for its -1, no limit); 0 = not a setting of this server: nginx's "
        "multi_accept gives it (on: inf, off: 1)",
    )
    cpu_quota_scope: str = param(
        "server",
        unit="",
        choices=("server", "worker"),
        doc="whose cgroup cpu_quota is (acceptsim measure --server-cpu-quota-scope): server, "
        "one group for nginx's master and workers; worker, a group per worker with "
        "cpu_quota each (the master's without limit); runs without the key were recorded "
        "before the option and read as server",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.name == "haproxy" and not self.accept_limit:
            raise ConfigError("server.accept_limit", self.accept_limit,
                              "an integer >= 1 or \"inf\" for haproxy (its tune.maxaccept)")
        if self.name == "nginx" and self.accept_limit:
            raise ConfigError("server.accept_limit", self.accept_limit,
                              "0 or left out for nginx (its multi_accept sets the limit)")
        if self.cpu_quota_scope == "worker" and not self.cpu_quota:
            raise ConfigError("server.cpu_quota_scope", self.cpu_quota_scope,
                              "server without a CPU quota (server.cpu_quota = 0); worker "
                              "only with server.cpu_quota > 0")
        if (self.cpu_quota > 0) != (self.cpu_period_us > 0):
            raise ConfigError(
                "server.cpu_period_us",
                self.cpu_period_us,
                f"> 0 exactly when server.cpu_quota > 0 (cpu_quota = {self.cpu_quota})",
            )
        if self.cpu_period_us and not 1000 <= self.cpu_period_us:
            raise ConfigError("server.cpu_period_us", self.cpu_period_us, "0 or 1000 to 1000000")
        if self.cpu_period_offset_us != -1.0 and not (
                0.0 <= self.cpu_period_offset_us < self.cpu_period_us):
            raise ConfigError("server.cpu_period_offset_us", self.cpu_period_offset_us,
                              f"-1 (not recorded) or less than server.cpu_period_us "
                              f"({self.cpu_period_us})")


@dataclass(frozen=True)
class KernelInfo(Params):
    _prefix = "kernel."
    profile: str = param(
        "linux-modern",
        unit="",
        choices=("linux-modern", "linux-2.4"),
        doc="the simulator's kernel profile matching this host",
    )
    release: str = param("", unit="", doc="uname -r ('' = not recorded)")
    somaxconn: int = param(4096, unit="connections", ge=1, doc="net.core.somaxconn")
    tcp_max_syn_backlog: int = param(
        1024, unit="requests", ge=1, doc="net.ipv4.tcp_max_syn_backlog"
    )
    tcp_syncookies: int = param(
        1, unit="", choices=(0, 1, 2), doc="net.ipv4.tcp_syncookies"
    )
    tick_s: float = param(
        0.0, unit="s", ge=0.0, le=1.0,
        doc="the host's scheduler tick, 1/HZ (the resolution of CLOCK_MONOTONIC_COARSE), at "
        "which the kernel notices a used-up CPU quota; 0 = not recorded: the profile's "
        "sched_tick_s",
    )


@dataclass(frozen=True)
class LoadInfo(Params):
    _prefix = "load."
    tool: str = param("httperf", unit="", choices=LOAD_TOOLS,
                      doc="load generator: httperf (open loop) or wrk (closed loop)")
    target_rate_per_s: float = param(
        0.0, unit="connections/s", ge=0.0,
        doc="aggregate target rate (required for httperf; 0 or left out for wrk, whose "
        "closed loop has none)",
    )
    duration_s: float = param(
        1.0, unit="s", gt=0.0, doc="target duration: each process makes rate x duration conns"
    )
    timeout_s: float = param(1.0, unit="s", gt=0.0, doc="httperf --timeout (required)")
    processes: int = param(1, unit="processes", ge=1, doc="httperf processes sharing the rate")
    spacing: str = param(
        "deterministic",
        unit="",
        choices=("poisson", "deterministic"),
        doc="connection spacing: httperf --period=e (poisson) or --rate (deterministic)",
    )
    file_size_bytes: int = param(0, unit="bytes", ge=0, doc="size of the file fetched (0 = ?)")
    uri: str = param("/", unit="", doc="URI requested")
    address: str = param("127.0.0.1", unit="", doc="server address")
    port: int = param(80, unit="", ge=1, le=65535, doc="server port")
    cpus: str = param("", unit="", doc="CPU list the clients were pinned to ('' = not pinned)")
    concurrency: int = param(
        0, unit="connections", ge=0,
        doc="wrk --connections: the closed loop's connections (required for wrk; 0 for httperf)",
    )
    threads: int = param(0, unit="threads", ge=0, doc="wrk --threads (0 for httperf)")
    keepalive: bool = param(
        False, unit="", doc="wrk: each connection kept for its next request (false: every "
        "request carries Connection: close, and wrk connects anew after each reply)",
    )
    client_cpu_s: float = param(
        0.0, unit="s", ge=0.0,
        doc="CPU time the load generator used over the run (0 = not recorded); a wrk run "
        "whose wrk kept its CPUs busier than acceptsim.measure.run.CLIENT_CPU_BUSY_MAX "
        "measured wrk",
    )
    client_sleeps: int = param(
        0, unit="switches", ge=0,
        doc="voluntary context switches of the load generator over the run (wrk: its "
        "threads' sleeps in epoll_wait, each ended by a segment that wakes it; 0 = not "
        "recorded)",
    )


@dataclass(frozen=True)
class HostInfo(Params):
    _prefix = "host."
    cpus: int = param(1, unit="cpus", ge=1, doc="online CPUs of the machine")
    repeat: int = param(1, unit="", ge=1, doc="repetition number of this point")
    started_at: str = param("", unit="", doc="UTC start time, ISO 8601 ('' = not recorded)")


@dataclass(frozen=True)
class SeriesInfo(Params):
    _prefix = "timeseries."
    interval_s: float = param(
        0.0, unit="s", ge=0.0, le=60.0, min_nonzero=1e-3,
        doc="nominal sampling interval of timeseries.csv (acceptsim measure --sample-interval; "
        "0 = no time series)",
    )
    sampler_cpu_s: float = param(
        0.0, unit="s", ge=0.0, doc="CPU time the sampler used over the run (its own cost)"
    )


def check_load(load: LoadInfo) -> None:
    """The load's settings that depend on its tool: httperf's target rate, wrk's
    connections and threads (a ConfigError naming the key)."""
    if load.tool == "httperf":
        if not load.target_rate_per_s:
            raise ConfigError("load.target_rate_per_s", load.target_rate_per_s,
                              "> 0 connections/s for httperf (required)")
        for key in ("concurrency", "threads"):
            if getattr(load, key):
                raise ConfigError(f"load.{key}", getattr(load, key),
                                  "0 or left out for httperf (wrk's setting)")
        return
    if load.target_rate_per_s:
        raise ConfigError("load.target_rate_per_s", load.target_rate_per_s,
                          "0 or left out for wrk (a closed loop has no target rate)")
    if load.concurrency < 1:
        raise ConfigError("load.concurrency", load.concurrency,
                          "an integer >= 1 for wrk (its --connections; required)")
    if not 1 <= load.threads <= load.concurrency:
        raise ConfigError("load.threads", load.threads, f"1 to load.concurrency "
                          f"({load.concurrency}) for wrk (its --threads)")


def parse_cpu_list(text: str) -> list[int]:
    """A taskset CPU list (``0``, ``1,3``, ``0-2,5``) as CPU numbers; ValueError if bad."""
    cpus: list[int] = []
    for part in text.split(","):
        first, dash, last = part.strip().partition("-")
        cpus.extend(range(int(first), int(last) + 1) if dash else [int(first)])
    return cpus


@dataclass(frozen=True)
class CounterFiles:
    before: tuple[str, ...] = ("counters-before.txt",)
    after: tuple[str, ...] = ("counters-after.txt",)


@dataclass(frozen=True)
class RunInfo:
    """The validated contents of one ``run.toml``."""

    server: ServerInfo
    kernel: KernelInfo
    load: LoadInfo
    counters: CounterFiles
    host: HostInfo
    label: str = ""
    format: str = FORMAT
    #: the time series' sampling (interval 0: the run has none; its table is not written)
    timeseries: SeriesInfo = field(default_factory=SeriesInfo)

    @property
    def server_cpu_count(self) -> int:
        """How many CPUs the server ran on: its pinned list, else all of the host's."""
        return len(parse_cpu_list(self.server.cpus)) if self.server.cpus else self.host.cpus

    def to_toml(self) -> str:
        lines = [f"format = {_toml(self.format)}"]
        if self.label:
            lines.append(f"label = {_toml(self.label)}")
        sections = ["server", "kernel", "load", "counters", "host"]
        if self.timeseries.interval_s > 0:
            sections.append("timeseries")
        for name in sections:
            section = getattr(self, name)
            lines.append(f"\n[{name}]")
            values = (
                dataclasses.asdict(section)
                if isinstance(section, CounterFiles)
                else section.to_dict()
            )
            lines.extend(f"{k} = {_toml(v)}" for k, v in values.items())
        return "\n".join(lines) + "\n"


TABLES: dict[str, type[Params]] = {
    "server": ServerInfo,
    "kernel": KernelInfo,
    "load": LoadInfo,
    "host": HostInfo,
    "timeseries": SeriesInfo,
}
REQUIRED: dict[str, tuple[str, ...]] = {"server": ("name",),
                                        "load": ("duration_s", "timeout_s")}
#: the load's keys its tool requires (load.tool)
REQUIRED_BY_TOOL = {"httperf": ("target_rate_per_s",), "wrk": ("concurrency", "threads")}
TOP_LEVEL = ("format", "label", "server", "kernel", "load", "counters", "host", "timeseries")


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value == float("inf"):
        return '"inf"'  # as a string, which every field that allows inf reads
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    raise TypeError(value)


def _table(path: str, data: Mapping[str, Any], name: str) -> Any:
    value = data.get(name, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: {name}", value, "a table")
    return value


def _inside_name(name: str) -> bool:
    """A relative file name that stays inside its directory (symlinks are checked when
    the file is read: :func:`counter_path`)."""
    if not name or "\0" in name or "\\" in name:
        return False
    p = Path(name)
    return not p.is_absolute() and ".." not in p.parts and name.strip() == name


def counter_path(directory: str | Path, name: str, key: str = "counters") -> Path:
    """``directory / name`` for a counter file named in run.toml, refused (ConfigError)
    if it leads outside the run directory, through ``..`` or a symbolic link."""
    directory = Path(directory)
    field = f"{directory / RUN_FILE}: {key}"
    if not _inside_name(name):
        raise ConfigError(field, name, "a file name inside the run directory (relative, no '..')")
    path = directory / name
    try:
        path.resolve().relative_to(directory.resolve())
    except ValueError:
        raise ConfigError(
            field, name, "a file inside the run directory (this one links to a file outside it)"
        ) from None
    except OSError as exc:
        raise ConfigError(field, name, f"a readable file ({exc.strerror})") from None
    return path


#: the name of a run's description file
RUN_FILE = "run.toml"


def parse_run_info(data: Mapping[str, Any], path: str | Path = "run.toml") -> RunInfo:
    """Validate the parsed TOML of a ``run.toml``; errors name ``path`` and the key."""
    path = str(path)
    for key in data:
        if key not in TOP_LEVEL:
            raise ConfigError(
                f"{path}: {key}", data[key], "unknown key; allowed: " + ", ".join(TOP_LEVEL)
            )
    if data.get("format") != FORMAT:
        raise ConfigError(f"{path}: format", data.get("format"), repr(FORMAT))
    label = data.get("label", "")
    if not isinstance(label, str):
        raise ConfigError(f"{path}: label", label, "a string")
    built: dict[str, Any] = {}
    for name, cls in TABLES.items():
        table = _table(path, data, name)
        if name in REQUIRED and name not in data:
            raise ConfigError(f"{path}: {name}", None, "a table (required)")
        required = REQUIRED.get(name, ())
        if name == "load":  # what its tool needs besides
            required += REQUIRED_BY_TOOL.get(table.get("tool", "httperf"), ())
        for key in required:
            if key not in table:
                raise ConfigError(f"{path}: {name}.{key}", None, "a value (required)")
        try:
            built[name] = cls.from_dict(table)
            if name == "load":
                check_load(built[name])
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc.field}", exc.value, exc.allowed) from None
        except TypeError:  # a key that is not a string (cannot happen in TOML) or similar
            raise ConfigError(f"{path}: {name}", table, "a table of known keys") from None
    server = built["server"]
    if not server.max_connections:  # not recorded: the testbed's configuration of the time
        built["server"] = server.replace(
            max_connections=testbed.recorded_max_connections(server.name))
    counters = _table(path, data, "counters")
    files: dict[str, tuple[str, ...]] = {}
    for key in counters:
        if key not in ("before", "after"):
            raise ConfigError(
                f"{path}: counters.{key}", counters[key], "unknown key; allowed: before, after"
            )
    for key, default in (("before", CounterFiles.before), ("after", CounterFiles.after)):
        value = counters.get(key, list(default))
        if isinstance(value, str):
            value = [value]
        if (
            not isinstance(value, list)
            or not value
            or not all(isinstance(v, str) and _inside_name(v) for v in value)
        ):
            raise ConfigError(
                f"{path}: counters.{key}", value, "a non-empty list of file names inside the "
                "run directory (relative, no '..', no NUL)",
            )
        files[key] = tuple(value)
    return RunInfo(
        server=built["server"],
        kernel=built["kernel"],
        load=built["load"],
        counters=CounterFiles(**files),
        host=built["host"],
        label=label,
        timeseries=built["timeseries"],
    )


def read_run_info(path: str | Path) -> RunInfo:
    """Read and validate a ``run.toml`` file."""
    path = Path(path)
    text = read_user_file("run.toml", path, "a readable run.toml file")
    data = parse_toml("run.toml", path, text)
    return parse_run_info(data, path)
