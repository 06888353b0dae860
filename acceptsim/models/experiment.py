"""One run: a host (CPU, kernel listen path, server) under an httperf load.

:func:`simulate` is the front door: it builds the model of a
:class:`~acceptsim.models.config.RunConfig`, runs it and returns the run's record (the
JSON of ``acceptsim run``).  The pieces live in one module each:

* :mod:`acceptsim.models.config`: the configuration and the named parameter sets;
* :mod:`acceptsim.models.work`: a run's expected work and the bounds on it;
* :mod:`acceptsim.models.host`: the model wired from a configuration, and its run;
* :mod:`acceptsim.models.record`: every field of the record, declared once;
* :mod:`acceptsim.models.run_series`: the optional time series;
* :mod:`acceptsim.models.progress`: the progress bar of a long run.

Every command simulates a point through :func:`acceptsim.models.runner.run_point`,
which calls :func:`simulate`.  The names below are re-exported from those modules for
the code and notebooks that import them from here.
"""

from __future__ import annotations

import gc
from typing import Any

from acceptsim.models.config import (
    MAX_ACCEPT_LIMIT,
    MAX_IDLE_CONNECTIONS,
    MIN_TIME_S,
    RunConfig,
    resolve_costs,
    resolve_kernel,
)
from acceptsim.models.host import Host
from acceptsim.models.record import METRICS
from acceptsim.models.run_series import COLUMNS as TIMESERIES_COLUMNS
from acceptsim.models.work import (
    FORCE_HINT,
    MAX_ATTEMPTS,
    MAX_PROCESSES,
    MAX_SERIES_POINTS,
    Work,
    check_work,
    estimate_work,
)

__all__ = [
    "FORCE_HINT", "MAX_ACCEPT_LIMIT", "MAX_ATTEMPTS", "MAX_IDLE_CONNECTIONS", "MAX_PROCESSES",
    "MAX_SERIES_POINTS", "METRICS", "MIN_TIME_S", "TIMESERIES_COLUMNS", "Host", "RunConfig",
    "Work", "check_work", "estimate_work", "resolve_costs", "resolve_kernel", "simulate",
]  # fmt: skip


def simulate(
    config: RunConfig | None = None,
    policy: Any = None,
    *,
    force: bool = False,
    progress: bool = False,
    **overrides: Any,
) -> dict[str, Any]:
    """Run one configuration and return its result record.

    ``policy``: a built-in policy spec (a string, as ``RunConfig.policy``), or
    any policy object (or zero-argument class/factory), which then replaces
    ``config.policy`` for this run (:mod:`acceptsim.models.policies` states the contract).
    A run whose expected work exceeds :data:`~acceptsim.models.work.MAX_ATTEMPTS`,
    :data:`~acceptsim.models.work.MAX_SERIES_POINTS` or
    :data:`~acceptsim.models.work.MAX_PROCESSES` raises
    :class:`~acceptsim.sim.errors.ConfigError` before it starts, unless ``force``.
    ``progress``: a progress bar on stderr if it is a terminal.
    """
    if isinstance(policy, str):
        overrides["policy"] = policy
        policy = None
    if config is None:
        config = RunConfig.from_dict(overrides)
    elif overrides:
        config = RunConfig.from_dict(overrides, base=config)
    check_work(config, force)
    # the cyclic collector stays off for the whole run, the host's set-up and its record
    # included, until the host lets go of its events and connections (Host.discard):
    # switched on between the two, it would scan the whole of the run's live state
    collecting = gc.isenabled()
    gc.disable()
    try:
        host = Host(config, policy)
        try:
            return host.run(progress=progress)
        finally:
            host.discard()
    finally:
        if collecting:
            gc.enable()
