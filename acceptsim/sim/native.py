"""Which simulation hot path runs: the mypyc-compiled modules, or their Python sources.

The modules in :data:`COMPILED` are the event loop and the per-connection
models.  ``pip install`` compiles them with mypyc when it can (``setup.py``);
the compiled module sits beside its ``.py`` file and Python imports it in
preference.  The ``.py`` sources stay the reference: the same code runs
either way, and the tests assert identical results both ways.

The Python sources are used instead when

* the environment variable ``ACCEPTSIM_PURE_PYTHON`` is set to ``1`` (to
  compare, or to debug and profile the models line by line), or
* a source differs from the one compiled (an edited checkout not yet rebuilt:
  ``make build``; the build records each source's digest in ``MANIFEST``);
  a warning says so, once.

:func:`~acceptsim.sim.native.install` decides before the first hot module is imported
(``acceptsim.sim`` and ``acceptsim.models`` call it first thing); :func:`path_in_use` says
what was chosen.
This module imports only the standard library (``setup.py`` reads
:data:`COMPILED` from it).
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import warnings
from pathlib import Path
from types import ModuleType

#: the modules mypyc compiles, as paths relative to the ``acceptsim`` package
COMPILED = (
    "sim/engine.py",
    "sim/cpu.py",
    "models/connection.py",
    "models/kernel.py",
    "models/client.py",
    "models/servers/base.py",
    "models/servers/pool.py",
    "models/servers/userver.py",
    "models/servers/tux.py",
    "models/servers/knot.py",
    "models/servers/nginx.py",
    "models/servers/dispatch.py",
    "models/servers/twoclass.py",
    "models/servers/flash.py",
    "models/multicore.py",
    "models/tcp.py",
)

#: set to "1" to run the Python sources even where compiled modules are present
PURE_ENV = "ACCEPTSIM_PURE_PYTHON"

#: written beside this module by the build: the digest of each source it compiled
MANIFEST = "_native_build.json"

#: the ``acceptsim`` package's folder (not resolved: in a checkout ``acceptsim/sim`` is a link)
_ROOT = Path(os.path.abspath(__file__)).parents[1]
#: the package the compiled modules belong to
PACKAGE = "acceptsim"
_state: dict[str, str] = {}


def module_names() -> tuple[str, ...]:
    """The compiled modules' import names (``acceptsim.sim.engine``, ...)."""
    return tuple(f"{PACKAGE}." + p.removesuffix(".py").replace("/", ".") for p in COMPILED)


def manifest_text(root: Path) -> str:
    """The manifest of a build of the sources under ``root``: their SHA-256 digests."""
    digests = {p: hashlib.sha256((root / p).read_bytes()).hexdigest() for p in COMPILED}
    return json.dumps(digests, indent=1, sort_keys=True) + "\n"


def _compiled_file(source: Path) -> Path | None:
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = source.with_suffix(suffix)
        if candidate.exists():
            return candidate
    return None


def _status() -> tuple[str, str]:
    """(path, reason): ``compiled``, or ``python`` with why."""
    if os.environ.get(PURE_ENV, "") == "1":
        return "python", f"{PURE_ENV}=1"
    missing = [p for p in COMPILED if _compiled_file(_ROOT / p) is None]
    manifest = Path(__file__).with_name(MANIFEST)
    if len(missing) == len(COMPILED) or not manifest.exists():
        return "python", "not compiled (no C compiler when installed, or a pure-Python install)"
    if missing:
        return "python", f"compiled build incomplete (missing: {', '.join(missing)})"
    built = json.loads(manifest.read_text())
    now = json.loads(manifest_text(_ROOT))
    stale = [p for p in COMPILED if built.get(p) != now[p]]
    if stale:
        return "python", f"compiled build older than its sources ({', '.join(stale)}; `make build`)"
    return "compiled", "mypyc"


class _SourceFinder(importlib.abc.MetaPathFinder):
    """Finds the hot modules' ``.py`` sources, bypassing the compiled modules beside them."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = set(names)

    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.names:
            return None
        source = _ROOT / (fullname.removeprefix(f"{PACKAGE}.").replace(".", "/") + ".py")
        return importlib.util.spec_from_file_location(fullname, source)


def install() -> None:
    """Choose the path once per process (before any hot module is imported)."""
    if _state:
        return
    path, reason = _status()
    _state["path"], _state["reason"] = path, reason
    if path == "python":
        loaded = [n for n in module_names() if n in sys.modules]
        if loaded:  # too late to choose: say what runs
            _state["path"], _state["reason"] = "mixed", f"imported before the choice: {loaded}"
            return
        sys.meta_path.insert(0, _SourceFinder(module_names()))
        if "older than its sources" in reason or "incomplete" in reason:
            warnings.warn(f"acceptsim runs its pure-Python hot path: {reason}", stacklevel=2)


def path_in_use() -> str:
    """``compiled (mypyc)`` or ``pure Python (<why>)``, as the modules actually loaded."""
    install()
    if _state["path"] == "compiled":
        return "compiled (mypyc)"
    return f"pure Python ({_state['reason']})"


def is_compiled() -> bool:
    install()
    return _state["path"] == "compiled"


if __name__ == "__main__":  # the Makefile's list of the compiled modules' sources
    print(" ".join(COMPILED))
