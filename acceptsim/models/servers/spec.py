"""The contract of a server module: a :class:`ServerSpec` per server it defines.

A server module defines its classes and lists them in a module-level ``SPECS``
tuple; :mod:`acceptsim.models.servers.registry` collects every module's specs, and runs,
the command line, the benchmark and the registry-wide tests read them from
there.  Adding a server is writing one module (``docs/design.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True)
class ServerSpec:
    """What the rest of acceptsim needs to know of one server."""

    #: the ``--server`` name
    name: str
    #: the server class: built as ``cls(host, params, policy)``
    #: (``host``: a :class:`acceptsim.models.servers.base.WorkerWiring`)
    cls: type
    #: its parameter set (a :class:`acceptsim.sim.params.Params` subclass)
    params: type
    #: the CPU categories its work is charged to (the run's ``cpu_share`` keys)
    categories: Sequence[str]
    #: one line for ``acceptsim servers`` (written out: compiled classes lose docstrings)
    summary: str
    #: it can hold idle persistent connections (``RunConfig.idle_connections``; the
    #: class then has ``adopt_idle(n)``)
    idle_connections: bool = False
    #: the wake-up rules it runs under on several workers that share a listening socket
    #: (``RunConfig.wakeup``; acceptsim.models.multicore), its default first; empty: it runs
    #: as one worker only
    wakeups: Sequence[str] = ()
    #: called with the server's workers once they are built, to set up state they share
    #: (HAProxy's listener); None: nothing shared
    share: Callable[[list[Any]], None] | None = None
    #: server parameters the registry-wide property tests run it with, to exercise
    #: what its defaults leave off (a background class, a small file cache, ...)
    test_params: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    #: the accept-limit a run of this server takes when it gives none
    #: (``RunConfig.accept_limit``'s rule): the server's own setting (HAProxy's
    #: ``tune.maxaccept``, nginx's ``multi_accept``), or the paper's 1
    accept_limit: float = 1
    #: where :attr:`accept_limit` comes from, for ``acceptsim servers NAME``
    accept_limit_source: str = "the paper's default (its figures vary it)"
    #: the kernel profile a run of this server takes when it names none
    #: (``RunConfig.kernel``; ``acceptsim.models.kernel.PROFILES``): the paper's 2.4
    #: kernel for the paper's servers, today's for servers of today
    kernel: str = "linux-2.4"
    #: where :attr:`kernel` comes from, for ``acceptsim servers NAME``
    kernel_source: str = "the paper's testbeds (Linux 2.4.19/2.4.20)"
