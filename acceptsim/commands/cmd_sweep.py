"""``acceptsim sweep``: every point of a scenario, with replications, in parallel, resumable.

Writes ``OUT/parts/*.parquet`` as runs finish, then ``OUT/results.parquet``
(one row per run, configuration and package versions in its metadata) and
``OUT/summary.csv`` (mean and 95 % CI over replications per configuration),
and prints the summary of the chosen metric.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acceptsim.commands.common import importable_spec, sweep_cache
from acceptsim.config_io import parse_int, parse_number
from acceptsim.models.servers.registry import SERVERS
from acceptsim.models.work import MAX_ATTEMPTS
from acceptsim.sim.errors import ConfigError
from acceptsim.sim.files import atomic_path, check_utf8_path, expand_user
from acceptsim.sim.params import parse_value, split_assignment
from acceptsim.sim.scenario import Scenario

if TYPE_CHECKING:
    import pandas as pd

#: reply-series interval used by --detect-warmup unless --series-interval says otherwise
DEFAULT_SERIES_INTERVAL_S = 0.1


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "sweep", help="run a scenario's sweep with replications (parallel, resumable, Parquet)"
    )
    p.add_argument("scenario", help="scenario name (see `acceptsim reproduce --list`) or TOML file")
    p.add_argument("--jobs", default=None, help="local parallel runs (default: all cores)")
    p.add_argument("--scheduler", default=None, help="Dask scheduler address (e.g. tcp://host:8786)")
    p.add_argument("--replications", default=None,
                   help="replications per configuration (default 1; with --resume, the "
                   "stored sweep's)")
    p.add_argument("--out", default=None, help="output directory (default out/sweeps/SCENARIO)")
    p.add_argument("--resume", action="store_true", help="continue the sweep stored in --out")
    p.add_argument("--duration", default=None, help="override every run's duration (s)")
    p.add_argument("--warmup", default=None, help="override every run's fixed warm-up (s)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a base field, e.g. --set spacing=deterministic (repeatable)")
    p.add_argument("--policy", action="append", default=[], metavar="SPEC",
                   help="run every point under this accept policy too (repeatable: a "
                   "dimension of the sweep): a built-in spec (aimd:decrease=0.7) or a policy "
                   "class of yours, MODULE:CLASS[:key=value,...]")
    p.add_argument("--server", action="append", default=[], metavar="SERVER",
                   help="run every point on this server too (repeatable: a dimension of the "
                   "sweep): a built-in one (`acceptsim servers`) or a server of yours, "
                   "MODULE:CLASS (a Server subclass or ServerSpec)")
    p.add_argument("--vary", action="append", default=[], metavar="KEY=V1,V2,...",
                   help="replace a swept list, e.g. --vary rate_per_s=20000,24000 (repeatable)")
    p.add_argument("--detect-warmup", action="store_true",
                   help="also detect each run's warm-up with MSER-5 on its reply series "
                   "(adds warmup_mser5_s and reply_rate_mser5_per_s)")
    p.add_argument("--series-interval", default=None,
                   help=f"reply-series interval for --detect-warmup (default "
                   f"{DEFAULT_SERIES_INTERVAL_S} s)")
    p.add_argument("--metric", default="reply_rate_per_s",
                   help="metric to summarise and to apply --target-ci to")
    p.add_argument("--target-ci", default=None,
                   help="stopping rule: add replications until the metric's relative 95%% CI "
                   "half-width is at most this fraction (e.g. 0.01)")
    p.add_argument("--max-replications", default="30",
                   help="upper bound for the stopping rule (default 30)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--no-cache", action="store_true",
                   help="run every run, and keep none in the run cache (default: runs made "
                   "before by the same code are taken from ~/.cache/acceptsim/runs, or "
                   "$ACCEPTSIM_CACHE)")
    p.add_argument("--force", action="store_true",
                   help="run even beyond the work bounds (the number of runs of a sweep, "
                   f"which a refusal states, and {MAX_ATTEMPTS:.0e} simulated connection "
                   "attempts per run)")
    p.set_defaults(main=main)


def main(args: argparse.Namespace) -> int:
    # pandas, scipy and matplotlib: imported when the command runs, not for --help
    from acceptsim import report
    from acceptsim.models import runner
    from acceptsim.sim.stats import StoppingRule
    from acceptsim.sim.sweep import summary
    from acceptsim.sim.sweep import sweep as run_sweep

    overrides: dict[str, Any] = {}
    for item in args.set:
        key, value = split_assignment("--set", item)
        overrides[key] = parse_value(value)
    if args.duration is not None:
        overrides["duration_s"] = parse_number("duration", args.duration)
    if args.warmup is not None:
        overrides["warmup_s"] = parse_number("warmup", args.warmup)
    if args.detect_warmup or args.series_interval is not None:
        interval = (
            parse_number("series-interval", args.series_interval)
            if args.series_interval is not None
            else DEFAULT_SERIES_INTERVAL_S
        )
        overrides["series_interval_s"] = interval
    vary: dict[str, list[Any]] = {}
    for item in args.vary:
        key, values = split_assignment("--vary", item)
        vary[key] = [parse_value(v) for v in values.split(",") if v.strip()]
    if args.policy:
        if "policy" in vary:
            raise ConfigError("--policy", args.policy[0], "not together with --vary policy=...")
        vary["policy"] = [importable_spec("--policy", spec.strip()) for spec in args.policy]
    if args.server:
        if "server" in vary:
            raise ConfigError("--server", args.server[0], "not together with --vary server=...")
        vary["server"] = [importable_spec("--server", name.strip()) for name in args.server]
        for name in vary["server"]:  # a bad one is named as given, not as the scenario's
            SERVERS.resolve(name)
    replications = (
        parse_int("replications", args.replications) if args.replications is not None else None
    )
    jobs = parse_int("jobs", args.jobs) if args.jobs is not None else None
    stop = None
    if args.target_ci is not None:
        stop = StoppingRule(
            metric=args.metric,
            rel_half_width=parse_number("target-ci", args.target_ci),
            max_replications=parse_int("max-replications", args.max_replications),
        )
    if not runner.is_measure(args.metric):  # a configuration column has no CI to summarise
        raise ConfigError("--metric", args.metric, "a measure of the runs (e.g. "
                          "reply_rate_per_s), not a configuration column")
    scenario = runner.load_scenario(args.scenario)
    linked = [k for k in scenario.sweep if "+" in k and "server" in k.split("+")]
    if args.server and linked:  # the new dimension would override the linked one's servers
        raise ConfigError("--server", args.server[0], f"left out with a scenario whose sweep "
                          f"links the server to other fields ({linked[0]}): a scenario of "
                          "your own names your server there")
    report.check_spec(scenario)  # a [plot] or [[expect]] reproduce would refuse: before any run
    planned = Scenario(**{**scenario.__dict__, "base": {**scenario.base, **overrides},
                          "sweep": {**scenario.sweep, **vary}})
    report.check_names(planned, [("--metric", args.metric, True)])  # before any run
    out = expand_user(args.out) if args.out is not None else Path("out") / "sweeps" / scenario.name
    check_utf8_path("out", out)
    cache = sweep_cache(args.no_cache)  # before the first run: named if it cannot be written
    started = time.perf_counter()
    try:
        frame = run_sweep(
            scenario,
            replications=replications,
            jobs=jobs,
            scheduler=args.scheduler,
            out=out,
            resume=args.resume,
            overrides=overrides,
            sweep_overrides=vary,
            stop=stop,
            progress=not args.quiet,
            force=args.force,
            cache=cache,
        )
    except KeyboardInterrupt as exc:  # SIGINT or SIGTERM: say what is kept
        parts = out / "parts"
        kept = sum(1 for _ in parts.glob("*.parquet")) if parts.is_dir() else 0
        exc.add_note(f"{kept} finished runs kept in {parts}; add --resume to continue")
        raise
    wall = time.perf_counter() - started
    if args.metric not in frame.columns:
        raise ConfigError("metric", args.metric, "a column of the results")
    table = summary(frame)
    with atomic_path(out / "summary.csv") as tmp:
        table.to_csv(tmp, index=False)
    print(format_summary(table, frame.attrs["sweep"]["varied"], args.metric))
    print(f"\n{len(frame)} runs, {wall:.1f} s wall; wrote {out}/results.parquet and summary.csv")
    return 0


def format_summary(table: pd.DataFrame, by: list[str], metric: str) -> str:
    """The metric's mean +- 95 % CI half-width per configuration, as text."""
    cols = [*by, "replications"]
    import pandas as pd

    shown = table[cols].copy()
    for col in by:  # 1.0, 10.0, inf -> 1, 10, inf
        shown[col] = pd.Series([_plain(v) for v in shown[col]], dtype=object)
    nothing = pd.Series([float("nan")] * len(table), index=table.index)
    mean = table.get(f"{metric}.mean", nothing)  # a metric null in every run has none
    half = table.get(f"{metric}.ci_half_width", nothing)
    shown[metric] = [
        "-" if pd.isna(m) else f"{m:,.1f}" + ("" if pd.isna(h) else f" +- {h:,.1f}")
        for m, h in zip(mean, half, strict=True)
    ]
    return shown.to_string(index=False)


def _plain(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value
