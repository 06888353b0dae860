"""The expected work of a run, known from its configuration before it starts, and the
bounds beyond which :func:`acceptsim.models.experiment.simulate` (and ``acceptsim
run``/``sweep``) refuse it unless forced.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from acceptsim.models import arrivals
from acceptsim.models.client import ClientParams
from acceptsim.models.config import RunConfig
from acceptsim.sim.errors import ConfigError

#: bounds on the expected work of one run (see :func:`estimate_work`), beyond which
#: :func:`~acceptsim.models.experiment.simulate` (and ``acceptsim run``/``sweep``) refuse
#: it unless forced: about five minutes of one core compiled, 25 from the Python sources
#: (:data:`SPEED_COMPILED`, :data:`SPEED_PYTHON`)
MAX_ATTEMPTS = 1e8
#: time-series rows (``timeseries_interval_s``) plus reply-series values
#: (``series_interval_s``) of one run, each kept in memory
MAX_SERIES_POINTS = 1e6
#: a server's threads and processes (Knot's threads, Flash's helpers, ...), each simulated
MAX_PROCESSES = 100_000
#: time-series rows (``timeseries_interval_s``: one per interval up to ``duration_s``) one
#: run may make, whatever ``force``: a bound on memory, not on time.  A row costs about 5 kB
#: by the time ``acceptsim run`` has printed it (a 10 s TUX run at 2,000/s with
#: ``--timeseries 1e-4``, 100,000 rows, peaked 475 MB above the same run without), so the
#: largest series allowed takes about half a GB
MAX_TIMESERIES_ROWS = 100_000


@dataclass(frozen=True)
class Work:
    """The expected work of one run, known before it starts."""

    #: simulated connection attempts: the target rate (a profile's peak) plus a
    #: server's own background stream, times the duration (retransmissions not
    #: counted), plus the idle connections opened before the run
    attempts: float
    #: time-series rows and reply-series values the run keeps
    series_points: float
    #: the server's threads and processes (its parameters in those units), each simulated
    processes: float = 0.0
    #: the server parameters counted in ``processes``
    process_fields: tuple[str, ...] = ()


def timeseries_rows(config: RunConfig) -> float:
    """The rows of the run's time series (:class:`acceptsim.models.run_series.TimeSeries`
    samples at every multiple of the interval up to ``duration_s``); 0 without one."""
    interval = config.timeseries_interval_s
    if not interval > 0:
        return 0.0
    return float(math.floor((config.duration_s + 1e-9) / interval))


def check_timeseries_rows(config: RunConfig) -> None:
    """Refuse a time series of more than :data:`MAX_TIMESERIES_ROWS` rows (a
    :class:`~acceptsim.sim.errors.ConfigError`; ``force`` does not lift it)."""
    rows = timeseries_rows(config)
    if rows > MAX_TIMESERIES_ROWS:
        shortest = config.duration_s / MAX_TIMESERIES_ROWS
        raise ConfigError(
            "timeseries_interval_s", config.timeseries_interval_s,
            f"at most {MAX_TIMESERIES_ROWS:,} time-series rows per run (this one: "
            f"{rows:,.0f} over duration_s={config.duration_s:g}), so an interval of at least "
            f"{shortest:.3g} s here; a bound on memory (about 5 kB a row), which --force "
            "does not lift",
        )  # fmt: skip


def estimate_work(config: RunConfig) -> Work:
    """What ``config`` will cost: an upper estimate computed from its fields alone."""
    profile = arrivals.parse(config.rate_profile)
    server_params = config.build_server_params()
    rate = config.rate_per_s if profile is None else profile.peak
    if config.concurrency:  # a closed loop: each user at most one request per round trip,
        # and the server's CPUs at most one per request_s each
        rtt = config.loopback_rtt_s() if config.network == "loopback" else ClientParams().rtt_s
        rate = min(config.concurrency / rtt if rtt > 0 else math.inf,
                   config.cpus / config.costs.request_s)
    rate += float(getattr(server_params, "bg_rate_per_s", 0.0))
    points = 0.0
    for interval in (config.timeseries_interval_s, config.series_interval_s):
        if interval > 0:
            points += config.duration_s / interval
    attempts = rate * config.duration_s + config.idle_connections
    fields = tuple(
        row["name"] for row in server_params.describe() if row["unit"] in ("threads", "processes")
    )
    processes = float(sum(getattr(server_params, name) for name in fields))
    return Work(attempts, points, processes, fields)


#: how a user lifts the bounds of :func:`check_work`
FORCE_HINT = "--force (force=True from Python) runs it anyway"


def check_work(config: RunConfig, force: bool = False) -> Work:
    """The run's :class:`Work`; beyond :data:`MAX_ATTEMPTS`, :data:`MAX_SERIES_POINTS` or
    :data:`MAX_PROCESSES` a :class:`~acceptsim.sim.errors.ConfigError` with the estimate
    and how to lift the bound, unless ``force``; beyond :data:`MAX_TIMESERIES_ROWS` one
    even with ``force`` (:func:`check_timeseries_rows`)."""
    check_timeseries_rows(config)  # memory: whatever force
    work = estimate_work(config)
    if force:
        return work
    if not work.attempts <= MAX_ATTEMPTS:
        speed, path = speed_in_use()
        seconds = work.attempts / speed
        cost = (
            "it would never end" if math.isinf(seconds) else
            f"about {_duration_text(seconds)} of CPU at ~{speed:,.0f} attempts/s, {path}"
        )  # fmt: skip
        raise ConfigError(
            "rate_per_s x duration_s", work.attempts,
            f"at most {MAX_ATTEMPTS:.0e} simulated connection attempts per run (this one: "
            f"{cost}); check the rate and duration, or {FORCE_HINT}",
        )  # fmt: skip
    if not work.series_points <= MAX_SERIES_POINTS:
        raise ConfigError(
            "duration_s / sampling interval", work.series_points,
            f"at most {MAX_SERIES_POINTS:.0e} time-series points per run; use a longer "
            f"timeseries_interval_s (--timeseries) or series_interval_s, or {FORCE_HINT}",
        )  # fmt: skip
    if not work.processes <= MAX_PROCESSES:
        raise ConfigError(
            "server_params " + " + ".join(work.process_fields), work.processes,
            f"at most {MAX_PROCESSES:,.0f} simulated threads and processes per run, or "
            f"{FORCE_HINT}",
        )  # fmt: skip
    return work


#: the simulator's speed compiled, in simulated connection attempts per CPU-second, for
#: the time estimates in messages only: the median of the 17 servers measured with
#: ``acceptsim bench --repeat 3`` (one-packet, 24,000/s, limit 1) on the 2-core
#: development VM on 2026-11-25, which ranged from 190,000 (twoclass) to 620,000 (knot),
#: userver and TUX about 585,000
SPEED_COMPILED = 300_000.0
#: the same from the Python sources (``ACCEPTSIM_PURE_PYTHON=1``; userver 78,000, TUX
#: 70,000, Knot 86,000, twoclass 52,000 the same day)
SPEED_PYTHON = 70_000.0


def speed_in_use() -> tuple[float, str]:
    """The speed estimates use, and which path it is for (the one this process runs)."""
    from acceptsim.sim import native

    if native.is_compiled():
        return SPEED_COMPILED, "compiled"
    return SPEED_PYTHON, "from the Python sources"


def _duration_text(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400 * 365:
        return f"{seconds / 3600:,.0f} h"
    return f"{seconds / (86400 * 365):,.3g} years"

