"""Every server: the package's own, found in the modules of ``acceptsim.models.servers``,
and servers of the user's, named by where they live.

Each module that defines servers lists them in a module-level ``SPECS`` tuple
of :class:`~acceptsim.models.servers.spec.ServerSpec`; this module imports every module of
the package and collects them, so a new server module is registered by
existing.  :data:`SERVERS` maps each ``--server`` name to its spec, in the order
of :data:`FIRST` and then of the modules' names.

A server of the user's is passed in as policies are (``docs/howto/add_server.md``):
``RunConfig(server=Fifo)`` (a :class:`~acceptsim.models.servers.base.Server` subclass,
or a ``ServerSpec``), held as ``"MODULE:CLASS@DIGEST"`` (the digest of the class's
source), or the spec ``"MODULE:CLASS"`` on the command line (``--server mymod:Fifo``),
in a sweep or a scenario.  :meth:`ServerRegistry.resolve` turns a name or such a spec
into the server's ``ServerSpec``: the one ``CLASS`` is (a ``ServerSpec`` bound to a name
at the module's top level), the one the module's ``SPECS`` lists for the class, or, for a
subclass of a built-in server that its module does not list, the built-in one's with the
class in its place.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import re
import sys
from collections.abc import Sequence
from typing import Any

from acceptsim.models import policies
from acceptsim.models import servers as package
from acceptsim.models.servers.base import (
    WAKE_ALL,
    WAKE_BLOCKING,
    WAKE_EXCLUSIVE,
    WAKE_MUTEX,
    Server,
)
from acceptsim.models.servers.spec import ServerSpec
from acceptsim.sim.errors import ConfigError
from acceptsim.sim.params import Params

#: modules listed first (the paper's servers); the others follow by name
FIRST = ("userver", "nginx", "tux", "knot")

#: ``MODULE:CLASS``, optionally ``@DIGEST`` of the class's source
_CUSTOM = re.compile(
    r"\s*(?P<module>[A-Za-z_][\w.]*)\s*:\s*(?P<qualname>[A-Za-z_][\w.]*)"
    r"(?:@(?P<digest>[0-9a-f]+))?\s*"
)

#: what a server of the user's must be, for messages
_WHAT = "a Server subclass or a ServerSpec"


def custom_spec(server: str) -> tuple[str, str] | None:
    """``(module, qualname)`` when ``server`` names a server of the user's,
    ``"MODULE:CLASS[@DIGEST]"`` (``"myservers:Fifo"``, ``"__main__:Fifo"`` for a class
    defined in a notebook); None for anything else (a built-in server's name)."""
    match = _CUSTOM.fullmatch(server) if isinstance(server, str) else None
    if match is None:
        return None
    return match["module"], match["qualname"]


class ServerRegistry(dict[str, ServerSpec]):
    """The built-in servers by ``--server`` name; :meth:`resolve` also finds a server of
    the user's by its spec."""

    def allowed(self) -> str:
        """What ``RunConfig.server`` may be, for messages."""
        return ("one of " + ", ".join(self) + ", or MODULE:CLASS (a Server subclass or "
                "ServerSpec of yours, importable: docs/howto/add_server.md)")

    def resolve(self, server: str) -> ServerSpec:
        """The spec of the server ``server`` names: a built-in one by name, or a server of
        the user's by ``MODULE:CLASS[@DIGEST]``; a ConfigError naming ``server`` otherwise
        (before anything runs)."""
        if isinstance(server, str):
            spec = self.get(server)
            if spec is not None:
                return spec
        custom = custom_spec(server)
        if custom is None:
            raise ConfigError("server", server, self.allowed())
        return self._load(*custom)

    def _load(self, module: str, qualname: str) -> ServerSpec:
        name = f"{module}:{qualname}"
        obj = policies.import_named("server", module, qualname, _WHAT)
        if isinstance(obj, ServerSpec):
            spec = obj
        elif isinstance(obj, type) and issubclass(obj, Server):
            spec = self._spec_for(obj, module)
        else:
            raise ConfigError("server", name, f"{_WHAT} (docs/howto/add_server.md), not "
                              f"{type(obj).__name__}")
        _check(name, spec)
        return spec

    def _spec_for(self, cls: type, module: str) -> ServerSpec:
        """A server class's spec: the first its module's ``SPECS`` lists for it, else
        that of the built-in server it derives from, with the class in its place."""
        listed = getattr(sys.modules.get(module), "SPECS", ())
        if isinstance(listed, (tuple, list)):
            for spec in listed:
                if isinstance(spec, ServerSpec) and spec.cls is cls:
                    return spec
        for base in cls.__mro__:
            for spec in self.values():
                if spec.cls is base:
                    return spec if base is cls else dataclasses.replace(spec, cls=cls)
        raise ConfigError(
            "server", f"{module}:{cls.__qualname__}", f"a Server subclass listed in {module}'s "
            "SPECS (its ServerSpec gives its parameters and CPU categories), or a subclass of "
            "a built-in server",
        )  # fmt: skip

    def spec_of(self, server: Any) -> str:
        """What ``RunConfig.server`` holds for a server passed in as an object: a
        built-in server's name (its class or spec), else ``"MODULE:NAME@DIGEST"``, the
        import name of the class (or of the module-level name bound to the
        ``ServerSpec``) and the digest of the class's source.  It must be importable by
        that name (defined at a module's top level, or in a notebook's ``__main__``: a
        sweep's worker processes are forked from the notebook)."""
        if isinstance(server, str):
            return server
        if isinstance(server, ServerSpec):
            cls = server.cls
        elif isinstance(server, type) and issubclass(server, Server):
            cls = server
        else:
            raise ConfigError("server", server, self.allowed())
        for name, spec in self.items():  # a built-in server: its name
            if spec is server or spec == server or (cls is server and spec.cls is cls):
                return name
        module = getattr(cls, "__module__", None)
        qualname = getattr(cls, "__qualname__", None)
        if not module or not qualname or "<" in qualname:
            raise ConfigError(
                "server", server, f"{_WHAT} defined at a module's top level (a sweep's "
                "workers and a resumed sweep find it by its name)",
            )  # fmt: skip
        if cls is server:  # a class: its module's spec for it (the reason if none)
            text = f"{module}:{qualname}"
            if self.resolve(text).cls is not cls:
                raise ConfigError("server", server, f"the class named {text}")
            return f"{text}{policies.source_digest(cls)}"
        # a spec: the module-level name bound to it, else its class's name
        found = vars(sys.modules[module]) if module in sys.modules else {}
        names = [n for n, v in found.items() if v is server and not n.startswith("_")]
        for name in [*names, qualname]:
            text = f"{module}:{name}"
            try:
                resolved = self.resolve(text)
            except ConfigError:
                continue
            if resolved is server or resolved == server:
                return f"{text}{policies.source_digest(cls)}"
        raise ConfigError(
            "server", server, f"{_WHAT} importable by its name, as "
            f"{module}:NAME (a ServerSpec bound to a name at its module's top level, or "
            "listed in its module's SPECS for its class)",
        )  # fmt: skip


#: the wake-up rules a server may list (``ServerSpec.wakeups``)
_WAKEUPS = (WAKE_EXCLUSIVE, WAKE_ALL, WAKE_BLOCKING, WAKE_MUTEX)


def _check(name: str, spec: ServerSpec) -> None:
    """A server spec of the user's is one the host can build (a ConfigError naming it)."""
    if not (isinstance(spec.cls, type) and issubclass(spec.cls, Server)):
        raise ConfigError("server", name, f"a ServerSpec whose cls is a Server subclass, not "
                          f"{spec.cls!r}")
    if not (isinstance(spec.params, type) and issubclass(spec.params, Params)):
        raise ConfigError("server", name, "a ServerSpec whose params is a Params subclass "
                          f"(acceptsim.sim.params), not {spec.params!r}")
    for field, values, allowed in (("categories", spec.categories, None),
                                   ("wakeups", spec.wakeups, _WAKEUPS)):
        if not isinstance(values, Sequence) or isinstance(values, str) or not all(
                isinstance(v, str) and (allowed is None or v in allowed) for v in values):
            what = "names" if allowed is None else "of " + ", ".join(allowed)
            raise ConfigError("server", name, f"a ServerSpec whose {field} are strings "
                              f"({what}), not {values!r}")


def _discover() -> dict[str, ServerSpec]:
    names = sorted(m.name for m in pkgutil.iter_modules(package.__path__))
    ordered = [n for n in FIRST if n in names] + [n for n in names if n not in FIRST]
    out: dict[str, ServerSpec] = {}
    for module_name in ordered:
        module = importlib.import_module(f"acceptsim.models.servers.{module_name}")
        for spec in getattr(module, "SPECS", ()):
            if spec.name in out:
                raise ValueError(f"server {spec.name!r} is registered twice "
                                 f"(acceptsim.models.servers.{module_name})")
            out[spec.name] = spec
    return out


#: every built-in server by its ``--server`` name; ``SERVERS.resolve(server)`` also finds
#: a server of the user's (``MODULE:CLASS``)
SERVERS: ServerRegistry = ServerRegistry(_discover())
