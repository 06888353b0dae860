"""Every server, found in the modules of the package ``acceptsim.models.servers``.

Each module that defines servers lists them in a module-level ``SPECS`` tuple
of :class:`~acceptsim.models.servers.spec.ServerSpec`; this module imports every module of
the package and collects them, so a new server module is registered by
existing.  :data:`SERVERS` maps each ``--server`` name to its spec, in the order
of :data:`FIRST` and then of the modules' names.
"""

from __future__ import annotations

import importlib
import pkgutil

from acceptsim.models import servers as package
from acceptsim.models.servers.spec import ServerSpec

#: modules listed first (the paper's servers); the others follow by name
FIRST = ("userver", "nginx", "tux", "knot")


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


SERVERS: dict[str, ServerSpec] = _discover()
