"""A fake cgroup hierarchy in a plain directory, for the ``--server-cpu-quota`` tests.

cgroupfs is not a plain file system; under its root, the fake behaves as the kernel does
where the harness depends on it (pathlib's ``mkdir``, ``rmdir``, ``read_text`` and
``write_text`` are patched for paths under the root, nothing else):

- ``mkdir`` of a group creates its interface files: ``cgroup.procs``, ``cpu.stat`` and
  the quota's files: v2 ``cpu.max``, only if the parent's ``cgroup.subtree_control``
  enables cpu; v1 ``cpu.cfs_quota_us`` and ``cpu.cfs_period_us``;
- no other file can be created (EACCES); the quota's files check what is written (EINVAL);
- writing ``+cpu`` to a v2 ``cgroup.subtree_control`` enables the controller, if its
  ``cgroup.controllers`` offers it (else ENOENT);
- writing a pid to a ``cgroup.procs`` moves that process there from every other group
  (ESRCH if it does not exist); ``cgroup.procs`` lists only processes that have not
  exited (a process started in a group whose children stay in it adds them itself);
- ``rmdir`` of a group removes its interface files with it, and fails (EBUSY) while a
  process is in it.

``python fake_cgroupfs.py v1|v2 ROOT ARGS...`` makes ROOT such a hierarchy and runs
``acceptsim ARGS...`` with the harness pointed at it (for tests that signal the CLI).
"""

from __future__ import annotations

import errno
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

CONTROLLERS = "cpuset cpu io memory pids"
V2_STAT = "usage_usec 0\nuser_usec 0\nsystem_usec 0\n"
V2_CPU_STAT = "nr_periods 0\nnr_throttled 0\nthrottled_usec 0\n"
V1_STAT = "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] not in ("Z", "X", "x")
    except (OSError, IndexError):
        return False


def _write(path: Path, text: str) -> None:
    with open(path, "w") as file:
        file.write(text)


def _read(path: Path) -> str:
    with open(path) as file:
        return file.read()


def make_root(root: Path, version: int, controllers: str = CONTROLLERS,
              subtree: str = "") -> Path:
    """An empty hierarchy's root: v2 with ``controllers`` offered and ``subtree``
    enabled for its children, or a v1 cpu hierarchy."""
    root.mkdir(parents=True)
    _write(root / "cgroup.procs", "")
    if version == 2:
        _write(root / "cgroup.controllers", controllers + "\n")
        _write(root / "cgroup.subtree_control", subtree)
        _write(root / "cpu.stat", V2_STAT)
    else:
        _write(root / "cpu.cfs_quota_us", "-1\n")
        _write(root / "cpu.cfs_period_us", "100000\n")
        _write(root / "cpu.stat", V1_STAT)
    return root


class FakeCgroupfs:
    """The kernel's side of a fake hierarchy at ``root`` (see the module's docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.version = 2 if (root / "cgroup.controllers").exists() else 1
        self.original: dict[str, Callable[..., Any]] = {}

    def covers(self, path: Path) -> bool:
        return path == self.root or self.root in path.parents

    def patches(self) -> dict[str, Callable[..., Any]]:
        """pathlib.Path's methods, replaced: name -> function (the originals are kept)."""
        for name in ("mkdir", "rmdir", "read_text", "write_text"):
            self.original.setdefault(name, getattr(Path, name))
        fake = self

        def mkdir(self: Path, *args: Any, **kwargs: Any) -> None:
            fake.original["mkdir"](self, *args, **kwargs)
            if fake.covers(self) and self != fake.root:
                fake.populate(self)

        def rmdir(self: Path) -> None:
            if fake.covers(self) and self != fake.root:
                fake.remove(self)
            else:
                fake.original["rmdir"](self)

        def read_text(self: Path, *args: Any, **kwargs: Any) -> str:
            if fake.covers(self) and self.name == "cgroup.procs":
                return "".join(f"{pid}\n" for pid in fake.procs(self.parent))
            return str(fake.original["read_text"](self, *args, **kwargs))

        def write_text(self: Path, data: str, *args: Any, **kwargs: Any) -> int:
            if fake.covers(self):
                fake.write(self, data)
                return len(data)
            return int(fake.original["write_text"](self, data, *args, **kwargs))

        return {"mkdir": mkdir, "rmdir": rmdir, "read_text": read_text,
                "write_text": write_text}

    def install(self) -> None:
        for name, function in self.patches().items():
            setattr(Path, name, function)

    def procs(self, group: Path) -> list[int]:
        return [int(p) for p in _read(group / "cgroup.procs").split() if _alive(int(p))]

    def populate(self, group: Path) -> None:
        _write(group / "cgroup.procs", "")
        if self.version == 1:
            _write(group / "cpu.cfs_quota_us", "-1\n")
            _write(group / "cpu.cfs_period_us", "100000\n")
            _write(group / "cpu.stat", V1_STAT)
            return
        enabled = _read(group.parent / "cgroup.subtree_control").split()
        _write(group / "cgroup.controllers", " ".join(enabled) + "\n")
        _write(group / "cgroup.subtree_control", "")
        _write(group / "cpu.stat", V2_STAT + (V2_CPU_STAT if "cpu" in enabled else ""))
        if "cpu" in enabled:
            _write(group / "cpu.max", "max 100000\n")

    def remove(self, group: Path) -> None:
        if not group.is_dir():
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(group))
        if self.procs(group) or any(p.is_dir() for p in group.iterdir()):
            raise OSError(errno.EBUSY, os.strerror(errno.EBUSY), str(group))
        for file in group.iterdir():
            file.unlink()
        self.original["rmdir"](group)

    def write(self, path: Path, data: str) -> None:
        def refuse(code: int) -> OSError:
            return OSError(code, os.strerror(code), str(path))

        if not path.is_file():
            raise refuse(errno.EACCES)  # cgroupfs has no files but its own
        text = data.strip()
        if path.name == "cgroup.procs":
            if not (text.isdigit() and _alive(int(text))):
                raise refuse(errno.ESRCH)
            for other in self.root.rglob("cgroup.procs"):
                _write(other, "".join(f"{p}\n" for p in self.procs(other.parent)
                                      if p != int(text)))
            _write(path, _read(path) + f"{text}\n")
        elif path.name == "cgroup.subtree_control":
            enabled = _read(path).split()
            offered = _read(path.parent / "cgroup.controllers").split()
            for word in text.split():
                name = word[1:]
                if word[:1] not in "+-" or name not in offered:
                    raise refuse(errno.ENOENT)
                enabled = [c for c in enabled if c != name] + ([name] if word[0] == "+" else [])
            _write(path, " ".join(enabled) + "\n")
        elif path.name == "cpu.max":
            if not re.fullmatch(r"(max|[1-9][0-9]{3,}) [1-9][0-9]{3,6}", text):
                raise refuse(errno.EINVAL)
            _write(path, text + "\n")
        elif path.name in ("cpu.cfs_quota_us", "cpu.cfs_period_us"):
            if not re.fullmatch(r"-1|[1-9][0-9]{3,}", text):
                raise refuse(errno.EINVAL)
            _write(path, text + "\n")
        else:
            raise refuse(errno.EINVAL)


def main(argv: list[str]) -> int:
    import acceptsim.measure.harness as harness
    from acceptsim.cli import main as acceptsim

    version, root, args = argv[0], Path(argv[1]), argv[2:]
    make_root(root, 2 if version == "v2" else 1)
    FakeCgroupfs(root).install()
    harness.CGROUP_ROOT = root if version == "v2" else root.parent / "no-unified-hierarchy"
    harness.CGROUP_CPU_ROOT = root if version == "v1" else root.parent / "no-v1-hierarchy"
    return acceptsim(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
