"""The domain's side of a sweep, and the one way a command simulates a point.

:mod:`acceptsim.sim.sweep` is generic: it calls a *run function* (point -> record) and
a *normalise* function (point -> full, validated configuration).  These are the
web-server model's:

* :func:`normalise`: ``RunConfig.from_dict(point)`` back to a dict, so every
  configuration field (cost and kernel parameters included) becomes a column
  and the run's identity covers the defaults it ran with;
* :func:`run_point`: :func:`acceptsim.models.experiment.simulate` for a point, which
  every command that simulates calls (``run``, ``sweep``, ``reproduce``, ``oracle``,
  ``search``, ``bench``, the calibrations); when the point asks for a reply series
  (``series_interval_s > 0``) it also reports MSER-5's detected warm-up
  (``warmup_mser5_s``) and the reply rate after deleting it
  (``reply_rate_mser5_per_s``), in place of the raw series;
* :func:`load_scenario`: a scenario by name from ``scenarios/``, or a file.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from acceptsim.models.config import RunConfig
from acceptsim.models.experiment import simulate
from acceptsim.models.work import Work
from acceptsim.models.work import check_work as experiment_check_work
from acceptsim.sim import scenario as scenario_mod
from acceptsim.sim.errors import ConfigError, names_a_file
from acceptsim.sim.stats import MSER_BATCH, mser5

#: the built-in scenarios: package data (``acceptsim/scenarios``, the checkout's ``scenarios/``)
SCENARIO_DIR = Path(str(resources.files("acceptsim") / "scenarios"))


def scenarios() -> dict[str, Path]:
    """Every built-in scenario (``scenarios/``) by name."""
    return {scenario_mod.load(p).name: p for p in sorted(SCENARIO_DIR.glob("*.toml"))}


def load_scenario(name: str) -> scenario_mod.Scenario:
    """A scenario by name (``userver-one-packet``) or path to a TOML file."""
    known = scenarios()
    if name in known:
        return scenario_mod.load(known[name])
    if names_a_file(name):
        return scenario_mod.load(name)
    raise ConfigError("scenario", name, "one of " + ", ".join(known) + " or a scenario file")


def normalise(point: Mapping[str, Any]) -> dict[str, Any]:
    """The full configuration of a point, validated (raises ConfigError)."""
    config = RunConfig.from_dict(point)
    if config.series_interval_s > 0:
        values = config.duration_s / config.series_interval_s + 1e-9  # may be huge: no int
        if values < 2 * MSER_BATCH:
            raise ConfigError(
                "series_interval_s", config.series_interval_s,
                f"at most duration_s / {2 * MSER_BATCH} ({config.duration_s:g} s / "
                f"{2 * MSER_BATCH}): MSER-5 needs {2 * MSER_BATCH} values per run",
            )  # fmt: skip
    return config.to_dict()


def ignored_fields(point: Mapping[str, Any]) -> set[str]:
    """The fields of a point its run does not read: the static ``accept_limit`` under a
    policy that sets its own limit (:func:`~acceptsim.models.policies.reads_accept_limit`).
    A sweep leaves them at the base's value, so such a policy is one point per
    combination of the other fields, not one per static limit it would ignore."""
    from acceptsim.models import policies

    return set() if policies.reads_accept_limit(point.get("policy", "static")) else {
        "accept_limit"}


def inputs(config: Mapping[str, Any]) -> str:
    """A digest of the user's files a run of ``config`` reads besides its configuration
    (``""`` when it reads none): the source file of a policy class of the user's
    (``policy = "MODULE:CLASS"``: the whole module, whatever the class calls in it), that
    of a server of the user's (``server = "MODULE:CLASS"``) and the session file of the
    wsesslog workload (``workload_file``).  A sweep puts it in each run's key
    (:func:`acceptsim.sim.sweep.run_key`), so that an edited file is a new run, never a
    cached or resumed one."""
    import hashlib

    from acceptsim.models import policies
    from acceptsim.models.servers import registry

    parts = []
    custom = policies.custom_spec(str(config.get("policy", "")))
    if custom is not None:
        parts += _module_source(b"policy", custom[0])
    server = registry.custom_spec(str(config.get("server", "")))
    if server is not None:
        parts += _module_source(b"server", server[0])
    workload_file = config.get("workload_file")
    if workload_file:
        parts.append(b"workload_file\0" + Path(workload_file).read_bytes())
    if not parts:
        return ""
    return hashlib.sha256(b"\0".join(parts)).hexdigest()[:16]


def _module_source(field: bytes, module: str) -> list[bytes]:
    """The source of a module of the user's, as a part of :func:`inputs` (none for a
    notebook's ``__main__``, or a module without a source file)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(module) if module != "__main__" else None
    except (ImportError, ValueError):  # the configuration's check names the module
        return []
    origin = getattr(spec, "origin", None)
    if origin and Path(origin).is_file():
        return [field + b"\0" + Path(origin).read_bytes()]
    return []


def check_work(point: Mapping[str, Any], force: bool = False) -> Work:
    """A point's expected work; :class:`~acceptsim.sim.errors.ConfigError` beyond the bounds of
    :func:`acceptsim.models.work.check_work` unless ``force``."""
    return experiment_check_work(RunConfig.from_dict(point), force)


def expected_requests(point: Mapping[str, Any]) -> float:
    """A run's expected work before it runs, to start a batch's longest runs first: its
    simulated connection attempts (:func:`acceptsim.models.work.estimate_work`) times its
    workload's mean requests per connection (7.2 for ``specweb99``, whose requests,
    segments and think times make a connection several times the work of a one-packet
    one).  A proxy for the order only: the CPU time per request differs between servers."""
    from acceptsim.models.work import estimate_work
    from acceptsim.models.workloads import WORKLOADS
    from acceptsim.sim.streams import Streams

    config = RunConfig.from_dict(point)
    params = config.build_workload_params()
    key = (config.workload, params)
    if key not in _MEAN_REQUESTS:  # a workload's mean does not depend on the seed
        workload = WORKLOADS[config.workload][0](params, Streams(config.seed))
        _MEAN_REQUESTS[key] = workload.mean_requests_per_connection()
    return estimate_work(config).attempts * _MEAN_REQUESTS[key]


#: each workload's mean requests per connection, by its parameters (made once a process)
_MEAN_REQUESTS: dict[tuple[str, Any], float] = {}


def is_measure(column: str) -> bool:
    """Whether a sweep's column is a measure of the run (what ``summary`` averages) rather
    than a configuration the record repeats (``seed``, ``policy_params.limit``) or the
    simulator's own timing: a field of the run record (:data:`acceptsim.models.record.
    METRICS`) from the clients, the server, the kernel or the CPU, a server's own measure,
    or a reply series' MSER-5 summary."""
    from acceptsim.models.record import METRICS

    base = column.split(".")[0]
    sources = {m.name: m.source for m in METRICS}
    if base in sources:
        return sources[base] not in ("config", "policy", "simulator")
    from acceptsim.models.config import RunConfig

    configured = {f.name for f in RunConfig.__dataclass_fields__.values()}
    return base not in configured and base not in ("run_key", "replication", "base_seed")


def run_point(
    point: Mapping[str, Any] | RunConfig,
    *,
    timeseries: bool = False,
    checked: bool = True,
    progress: bool = False,
) -> dict[str, Any]:
    """Simulate one point (a table of :class:`~acceptsim.models.config.RunConfig` fields, or
    a configuration) and return its record: what every command that simulates calls.

    ``timeseries``: keep the run's time series (a sweep's table has no room for it);
    ``checked``: the caller checked the point's work up front (a sweep checks every
    point before the first runs), else :func:`acceptsim.models.work.check_work` does
    here; ``progress``: a progress bar on a terminal.  A reply series
    (``series_interval_s > 0``) is summarised by MSER-5 in place of the raw series.
    """
    config = point if isinstance(point, RunConfig) else RunConfig.from_dict(point)
    record = simulate(config, force=checked, progress=progress)
    if not timeseries:
        record.pop("timeseries", None)
    series = record.pop("replies_per_interval", None)
    if series is not None:
        interval = config.series_interval_s
        cut = mser5(series)
        record["warmup_mser5_s"] = cut.seconds(interval)
        record["warmup_mser5_reliable"] = cut.reliable
        record["reply_rate_mser5_per_s"] = cut.mean / interval
    return record
