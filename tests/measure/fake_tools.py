"""Fake nginx, httperf and taskset for the harness's process tests (no real ones needed).

Every fake process appends its pid to the file named by ``$FAKE_PIDS``, so that a test
can check that none is left.  The fake nginx serves its prefix's ``html`` directory from
the forked "workers" its conf's ``worker_processes`` asks for; its "master" does not stop
them when it is stopped (the harness must kill what is left of nginx's process group), and
with ``$FAKE_NGINX_SLOW_STOP`` it takes a second to exit on SIGTERM.  With
``$FAKE_CGROUP_PROCS`` each worker adds itself to that ``cgroup.procs``, as a real worker
starts in its master's cgroup.
"""

from __future__ import annotations

import os
import socket
import stat
import sys
from pathlib import Path

FAKE_NGINX = r'''
import http.server, os, re, signal, sys, time
if "-v" in sys.argv:
    sys.stderr.write("nginx version: nginx/1.22.1\n")
    sys.exit(0)
prefix = sys.argv[sys.argv.index("-p") + 1]
conf = open(sys.argv[sys.argv.index("-c") + 1]).read()
port = int(re.search(r"listen [0-9.]+:(\d+)", conf).group(1))
with open(os.environ["FAKE_PIDS"], "a") as f:
    f.write(f"{os.getpid()}\n")
signal.signal(signal.SIGUSR1, signal.SIG_IGN)  # nginx reopens its logs; no log here
workers = int(re.search(r"worker_processes (\d+);", conf).group(1))
os.chdir(os.path.join(prefix, "html"))
server = None
if workers > 1:  # one listening socket the workers share, as nginx's
    server = http.server.HTTPServer(("127.0.0.1", port), http.server.SimpleHTTPRequestHandler)
for _ in range(workers):
    if os.fork() == 0:  # a "worker", as nginx's master forks them
        with open(os.environ["FAKE_PIDS"], "a") as f:
            f.write(f"{os.getpid()}\n")
        if os.environ.get("FAKE_CGROUP_PROCS"):
            with open(os.environ["FAKE_CGROUP_PROCS"], "a") as f:
                f.write(f"{os.getpid()}\n")
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # only SIGKILL ends it
        if server is None:
            server = http.server.HTTPServer(
                ("127.0.0.1", port), http.server.SimpleHTTPRequestHandler)
        server.serve_forever()
if server is not None:
    server.socket.close()
if os.environ.get("FAKE_NGINX_SLOW_STOP"):
    def stop(signum, frame):
        time.sleep(1.5)
        sys.exit(0)
    signal.signal(signal.SIGTERM, stop)
while True:  # the "master" waits; SIGTERM ends it, not its worker
    time.sleep(1)
'''


def script(directory: Path, name: str, body: str, shell: str = "/bin/sh") -> Path:
    path = directory / name
    path.write_text(f"#!{shell}\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def fake_bin(directory: Path, pids: Path) -> Path:
    """A directory with the fake nginx, an httperf that records its pid and sleeps for ten
    minutes, and a taskset that runs its command unpinned."""
    directory.mkdir()
    script(directory, "nginx", FAKE_NGINX, shell=sys.executable)
    script(directory, "httperf", f"echo $$ >> {pids}; exec sleep 600")
    script(directory, "taskset", 'shift 2; exec "$@"')
    return directory


def recorded(pids: Path) -> list[int]:
    return [int(p) for p in pids.read_text().split()] if pids.exists() else []


def running(pids: Path) -> list[int]:
    """The recorded processes that still run (a zombie awaiting its reaper does not)."""
    alive = []
    for pid in recorded(pids):
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rpartition(")")[2].split()[0] not in ("Z", "X", "x"):
                    alive.append(pid)
        except (OSError, IndexError):
            pass
    return alive


def kill_all(pids: Path) -> None:
    """Clean up after a failed test: SIGKILL whatever recorded process still runs."""
    for pid in running(pids):
        try:
            os.kill(pid, 9)
        except OSError:
            pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
