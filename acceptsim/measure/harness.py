"""The real loopback testbed: nginx under several httperf processes, written as measured runs.

Everything here is bounded: each httperf makes ``rate x duration``
connections and is killed after a wall-clock limit; nginx runs as a child
process from a temporary prefix directory, listens on 127.0.0.1 only, and is
stopped in a ``finally``.  Nothing is written to the output directory unless
the run completed.
"""

from __future__ import annotations

import math
import os
import platform
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from acceptsim.measure.run import HTTPERF_FILE, RUN_FILE, MeasuredRun, load_run
from acceptsim.measure.runfile import (
    CounterFiles,
    HostInfo,
    KernelInfo,
    LoadInfo,
    RunInfo,
    ServerInfo,
)
from sim.errors import ConfigError

ADDRESS = "127.0.0.1"  # the only address the harness ever binds or loads
#: httperf select()s over at most FD_SETSIZE = 1024 descriptors; keep headroom
HTTPERF_MAX_OPEN = 700
#: bounds on one invocation, so a typo cannot start an endless measurement
MAX_CONNECTIONS_PER_RUN = 2_000_000
MAX_POINTS = 200
NSTAT_PATTERNS = ("Tcp*", "Ip*")
MAX_PROCESSES = 64
INSTALL_HINT = (
    "install them with `apt-get install httperf nginx-light iproute2` (Debian/Ubuntu "
    "packages httperf, nginx-light and, for nstat, iproute2); nginx lives in /usr/sbin, "
    "which must be on PATH"
)


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

    def __post_init__(self) -> None:
        if self.server != "nginx":
            raise ConfigError("--server", self.server, "nginx")
        if not self.rates_per_s or len(self.rates_per_s) * self.repeats > MAX_POINTS:
            raise ConfigError(
                "--rates", self.rates_per_s, f"1 to {MAX_POINTS} runs (rates x repeats)"
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

    def processes_for(self, rate: float) -> int:
        """httperf processes for one rate: enough that none holds more than
        HTTPERF_MAX_OPEN connections even if every one of them waits the full timeout."""
        if self.processes is not None:
            return self.processes
        return min(MAX_PROCESSES, max(1, math.ceil(rate * self.timeout_s / HTTPERF_MAX_OPEN)))


def check_tools(need_taskset: bool) -> dict[str, str | None]:
    """Paths of the tools; raise HarnessError naming the missing ones and how to install them."""
    found = {name: shutil.which(name) for name in ("httperf", "nginx", "nstat", "taskset")}
    missing = [name for name in ("httperf", "nginx") if found[name] is None]
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


def nginx_conf(prefix: Path, multi_accept: bool, port: int, backlog: int = 128) -> str:
    """nginx.conf for one worker, epoll, the given multi_accept, one static file."""
    return f"""# written by acceptsim measure
worker_processes 1;
daemon off;
master_process on;
pid {prefix}/nginx.pid;
error_log {prefix}/logs/error.log warn;
worker_rlimit_nofile 20000;
events {{
    use epoll;
    multi_accept {"on" if multi_accept else "off"};
    accept_mutex off;
    worker_connections 16384;
}}
http {{
    access_log off;
    client_body_temp_path {prefix}/tmp/body;
    proxy_temp_path {prefix}/tmp/proxy;
    fastcgi_temp_path {prefix}/tmp/fastcgi;
    uwsgi_temp_path {prefix}/tmp/uwsgi;
    scgi_temp_path {prefix}/tmp/scgi;
    sendfile on;
    keepalive_timeout 65;
    server {{
        listen {ADDRESS}:{port} backlog={backlog};
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


def _nginx_version(nginx: str) -> str:
    out = subprocess.run([nginx, "-v"], capture_output=True, text=True, timeout=10)
    text = (out.stderr or out.stdout).strip()
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


def _pin(cpus: str, argv: list[str]) -> list[str]:
    return ["taskset", "-c", cpus, *argv] if cpus else argv


class Nginx:
    """nginx as a child process in a temporary prefix; ``with`` stops it whatever happens."""

    def __init__(self, plan: Plan, cpus: str, nginx: str) -> None:
        self.plan, self.cpus, self.nginx = plan, cpus, nginx
        self.dir = Path(tempfile.mkdtemp(prefix="acceptsim-nginx-"))
        self.proc: subprocess.Popen[bytes] | None = None
        self.uri = f"/f{plan.file_size_bytes}.html"

    def __enter__(self) -> Nginx:
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self) -> None:
        for sub in ("logs", "html", "tmp"):
            (self.dir / sub).mkdir()
        # the worker drops to 'nobody' when started as root: it must read the files
        os.chmod(self.dir, 0o755)
        os.chmod(self.dir / "html", 0o755)
        page = self.dir / "html" / self.uri.lstrip("/")
        page.write_bytes(b"x" * self.plan.file_size_bytes)
        os.chmod(page, 0o644)
        conf = self.dir / "nginx.conf"
        conf.write_text(nginx_conf(self.dir, self.plan.multi_accept, self.plan.port))
        log = str(self.dir / "logs" / "error.log")  # -e: not the compiled-in /var/log path
        argv = _pin(self.cpus, [self.nginx, "-p", str(self.dir), "-e", log, "-c", str(conf)])
        port_is_free(self.plan.port)
        stderr_path = self.dir / "logs" / "stderr.txt"
        with open(stderr_path, "wb") as stderr:
            self.proc = subprocess.Popen(
                argv, stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True
            )
        url = f"http://{ADDRESS}:{self.plan.port}{self.uri}"
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no http_proxy
        deadline = time.monotonic() + 10.0
        while True:  # bounded: at most 10 s
            if self.proc.poll() is not None:
                err = stderr_path.read_text(errors="replace").strip()
                raise HarnessError(f"nginx exited at start: {err or 'no message'}")
            try:
                with direct.open(url, timeout=1.0) as reply:
                    body = reply.read()
                if len(body) != self.plan.file_size_bytes:
                    raise HarnessError(f"nginx served {len(body)} bytes for {url}")
                return
            except urllib.error.HTTPError as exc:
                raise HarnessError(f"nginx answered {url} with HTTP {exc.code}") from None
            except OSError:
                if time.monotonic() > deadline:
                    raise HarnessError(f"nginx did not answer {url} within 10 s") from None
                time.sleep(0.1)

    def __exit__(self, *exc: object) -> None:
        try:
            if self.proc is not None and self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                    self.proc.wait(timeout=10)
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


def run_httperfs(commands: list[list[str]], cpus: str, limit_s: float) -> list[str]:
    """Start every httperf at once; their standard outputs, or HarnessError after limit_s."""
    procs: list[subprocess.Popen[str]] = []
    try:
        for argv in commands:
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
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


def run_dir_name(plan: Plan, rate: float, repeat: int) -> str:
    ma = "on" if plan.multi_accept else "off"
    return f"{plan.server}-multi_accept-{ma}-rate-{rate:06.0f}-rep-{repeat}"


def measure(
    plan: Plan, out: Path, log: Callable[[str], None] = print
) -> list[MeasuredRun]:
    """Run every point of the plan; write one run directory each; return them loaded."""
    cpus = sorted(os.sched_getaffinity(0))
    tools = check_tools(need_taskset=len(cpus) >= 2)
    server_cpus, client_cpus = cpu_split(cpus)
    nginx = tools["nginx"]
    assert nginx is not None
    version = _nginx_version(nginx)
    kernel = KernelInfo(
        profile="linux-modern",
        release=platform.release(),
        somaxconn=_sysctl("net.core.somaxconn", 4096),
        tcp_max_syn_backlog=_sysctl("net.ipv4.tcp_max_syn_backlog", 1024),
        tcp_syncookies=_sysctl("net.ipv4.tcp_syncookies", 1),
    )
    out.mkdir(parents=True, exist_ok=True)
    runs = []
    for rate in plan.rates_per_s:
        for repeat in range(1, plan.repeats + 1):
            name = run_dir_name(plan, rate, repeat)
            target = out / name
            if target.exists():
                raise HarnessError(f"{target} exists; choose another --out or remove it")
            with Nginx(plan, server_cpus, nginx) as server:
                commands = httperf_commands(plan, rate, server.uri)
                started = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
                before = snapshot(tools["nstat"])
                outputs = run_httperfs(
                    commands, client_cpus, limit_s=plan.duration_s + plan.timeout_s + 60.0
                )
                after = snapshot(tools["nstat"])
            info = RunInfo(
                label=f"{plan.server} multi_accept={'on' if plan.multi_accept else 'off'} "
                f"{rate:g}/s #{repeat}",
                server=ServerInfo(
                    name=plan.server,
                    version=version,
                    worker_processes=1,
                    multi_accept=plan.multi_accept,
                    events="epoll",
                    backlog=128,
                    cpus=server_cpus,
                ),
                kernel=kernel,
                load=LoadInfo(
                    tool="httperf",
                    target_rate_per_s=float(rate),
                    duration_s=plan.duration_s,
                    timeout_s=plan.timeout_s,
                    processes=len(commands),
                    spacing=plan.spacing,
                    file_size_bytes=plan.file_size_bytes,
                    uri=server.uri,
                    address=ADDRESS,
                    port=plan.port,
                    cpus=client_cpus,
                ),
                counters=CounterFiles(),
                host=HostInfo(cpus=len(cpus), repeat=repeat, started_at=started),
            )
            partial = out / (name + ".partial")
            shutil.rmtree(partial, ignore_errors=True)
            partial.mkdir()
            (partial / RUN_FILE).write_text(info.to_toml())
            (partial / HTTPERF_FILE).write_text("".join(outputs))
            (partial / info.counters.before[0]).write_text(before)
            (partial / info.counters.after[0]).write_text(after)
            partial.rename(target)
            run = load_run(target)
            runs.append(run)
            r = run.record()
            log(
                f"{name}: reply {r['reply_rate_per_s']:.0f}/s, "
                f"client-timo {r['client_timeouts_per_s']:.0f}/s, "
                f"listen overflows {r['listen_overflows_per_s']:.0f}/s, "
                f"test-duration {r['test_duration_s']:.1f} s"
            )
            if plan.pause_s:
                time.sleep(plan.pause_s)
    return runs
