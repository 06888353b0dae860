"""``acceptsim reproduce``: run the paper's figures and write plots, CSV and a report."""

from __future__ import annotations

import argparse
import functools
import math
import time
from typing import Any

from acceptsim import report
from acceptsim.config_io import parse_int, parse_number
from acceptsim.models import calibration, runner
from acceptsim.models.config import RunConfig
from acceptsim.models.costs import PARAMETER_SETS
from acceptsim.sim import native
from acceptsim.sim import scenario as scenario_mod
from acceptsim.sim.errors import ConfigError, in_file, names_a_file
from acceptsim.sim.files import atomic_path, check_output_dir, write_text_atomic
from acceptsim.sim.sweep import MAX_RUNS, Batch, check_size, run_many, to_frame

#: ``--protocol``: each scenario's own run lengths, or the paper's two-minute runs
PROTOCOLS = ("scenario", "paper")

#: ``--figures`` (without scenario names): every scenario that names a figure, or only
#: the paper's own (the scenarios in no further section of the report)
FIGURE_SETS = ("all", "paper")


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("reproduce", help="reproduce the paper's figures (the main job)")
    p.add_argument("names", nargs="*", help="scenario names or files (default: the figures "
                   "--figures chooses)")
    p.add_argument("--figures", choices=FIGURE_SETS, default=None,
                   help="without names: all (every figure, default) or paper (the paper's "
                   "own figures, without the literature's and today's hosts')")
    p.add_argument("--out", default="out", help="output directory (default out/)")
    p.add_argument("--jobs", default=None, help="parallel runs (default: all cores)")
    p.add_argument("--duration", default=None, help="override every run's duration (s)")
    p.add_argument("--warmup", default=None, help="override every run's warm-up (s)")
    p.add_argument("--rates", default=None, help="override the target rates: R1,R2,...")
    p.add_argument("--protocol", choices=PROTOCOLS, default="scenario",
                   help="run lengths: scenario (each scenario's own duration and warm-up; "
                   "default) or paper (every run two minutes, measured from its start, as "
                   "the paper's points were)")
    p.add_argument("--list", action="store_true", help="list the scenarios and exit")
    p.add_argument("--section7", choices=("auto", "yes", "no"), default="auto",
                   help="also run brief section 7's overload numbers and Equation 1 at "
                   "20,000 and 30,000/s under the paper's protocol (two-minute runs; "
                   "auto: when all figures are reproduced with --protocol paper)")
    p.add_argument("--force", action="store_true", help="run even beyond the work bounds "
                   "(10,000 runs; 1e8 simulated connection attempts per run)")
    p.set_defaults(main=main)


def select(names: list[str], figures: str | None = None) -> list[scenario_mod.Scenario]:
    known = runner.scenarios()
    if names and figures is not None:
        raise ConfigError("figures", figures, "not given with scenario names (it chooses the "
                          "figures when none are named)")
    if not names:  # scenarios that name a figure (policy studies are run by name)
        chosen = [s for s in (scenario_mod.load(p) for p in known.values()) if s.figure]
        if figures == "paper":  # the paper's own: in no further section of the report
            chosen = [s for s in chosen if not s.section]
        return chosen
    chosen = []
    for name in names:
        if name in known:
            chosen.append(scenario_mod.load(known[name]))
        elif names_a_file(name):
            chosen.append(scenario_mod.load(name))
        else:
            raise ConfigError("scenario", name, "one of " + ", ".join(known) + " or a file")
    return chosen


def run_point(point: dict[str, Any]) -> dict[str, Any]:
    """:func:`acceptsim.models.runner.run_point` (every point was checked up front), with
    the costs as a table when the scenario varies them (its plots are by them)."""
    return figure_record(point, runner.run_point(point, timeseries=True))


#: what the batch runs for each distinct configuration (a full one: ``runner.normalise``)
FIGURE_RUN = functools.partial(runner.run_point, timeseries=True)


def figure_record(point: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    """A figure's record of its ``point`` from the run of its configuration (which other
    figures may share): the costs as a table when the scenario varies them."""
    if isinstance(point.get("costs"), dict):
        return {**record, "costs": RunConfig.from_dict(point).costs.to_dict()}
    return record


#: Equation 1 past saturation: the userver and TUX at these rates, limits 1 and inf
EQUATION1_OVERLOAD_RATES = (20000.0, 30000.0)


def section7_points() -> list[dict[str, Any]]:
    """The runs of brief section 7's overload numbers and of Equation 1 past saturation:
    two-minute runs measured from their start (the paper's protocol)."""
    points = calibration.overload_points(list(calibration.OVERLOAD_TARGETS), PARAMETER_SETS)
    keys = {(p["server"], p["rate_per_s"], p["accept_limit"]) for p in points}
    for server in ("userver", "tux"):
        for rate in EQUATION1_OVERLOAD_RATES:
            for limit in (1, math.inf):
                if (server, rate, limit) not in keys:
                    points.append({**points[0], "server": server, "rate_per_s": rate,
                                   "accept_limit": limit, "costs": PARAMETER_SETS["cluster1"]})
    return points


def section7_text(points: list[dict[str, Any]], records: list[dict[str, Any]],
                  wall_s: float) -> str:
    """The report's section 7 from the runs of :func:`section7_points`."""
    targets = list(calibration.OVERLOAD_TARGETS)
    values = calibration.values_from(targets, points, records)
    fitted = {name for problem in calibration.OVERLOAD_PROBLEMS.values()
              for name in problem.targets}
    frame = to_frame([r for r in records if r["target_rate_per_s"] in EQUATION1_OVERLOAD_RATES
                      and r["server"] in ("userver", "tux")])
    return report.section7_section(targets, values, fitted, frame, len(records), wall_s)


def section7_elsewhere() -> str:
    """The report's section 7 when it is not run (``--section7 auto`` with all figures
    under each scenario's own run lengths): where its numbers come from."""
    return (
        "## Past saturation: brief section 7 under the paper's protocol\n\n"
        f"Not run here: its numbers are {len(section7_points())} runs of "
        f"{calibration.PAPER_DURATION_S:.0f} s measured from their start (the paper's "
        "protocol).  `acceptsim reproduce --protocol paper` runs them with the figures "
        "(sharing the runs they have in common), `acceptsim reproduce --section7 yes` beside "
        "these figures, and `acceptsim calibrate-paper section7` on their own.  The "
        "figures above set their shorter runs beside the same published numbers.\n"
    )


def section7(jobs: int | None) -> str:
    """Brief section 7's overload numbers, and Equation 1 under overload, from
    two-minute runs measured from their start (the paper's protocol), run on their own."""
    points = section7_points()
    t0 = time.perf_counter()
    records = run_many(run_point, points, jobs=jobs)
    text = section7_text(points, records, time.perf_counter() - t0)
    print("\n" + text)
    return text


def protocol_text(protocol: str, overrides: dict[str, Any]) -> str:
    """How long the report's runs were, in words."""
    if protocol == "paper":
        return (f"the paper's protocol, every run {calibration.PAPER_DURATION_S:.0f} s "
                "measured from its start")
    if overrides:
        return "each scenario's, overridden: " + ", ".join(
            f"{k} = {v:g}" for k, v in sorted(overrides.items()))
    return ("each scenario's own duration and warm-up (`--protocol paper` for two-minute "
            "runs from the start)")


def main(args: argparse.Namespace) -> int:
    report.check_request(args.list, args.names, args.rates)  # issue 46: before anything
    if args.list:
        for name, path in runner.scenarios().items():
            print(f"{name:32s} {scenario_mod.load(path).title}")
        return 0
    overrides: dict[str, Any] = {}
    if args.protocol == "paper":
        for field, value in (("duration", args.duration), ("warmup", args.warmup)):
            if value is not None:
                raise ConfigError(field, value, "not given with --protocol paper (which runs "
                                  "every point 120 s, measured from its start)")
        overrides.update(duration_s=calibration.PAPER_DURATION_S, warmup_s=0.0)
    if args.duration is not None:
        overrides["duration_s"] = parse_number("duration", args.duration)
    if args.warmup is not None:
        overrides["warmup_s"] = parse_number("warmup", args.warmup)
    jobs = parse_int("jobs", args.jobs) if args.jobs is not None else None
    scenarios = [s.with_overrides(**overrides) for s in select(args.names, args.figures)]
    if args.rates:
        rates = [parse_number("rates", r) for r in args.rates.split(",")]
        for s in scenarios:
            s.sweep["rate_per_s"] = rates
    # validate every point of every scenario, its figure and its published numbers, and
    # its expected work, before running anything
    for s in scenarios:
        report.check_spec(s)
    total = sum(s.count() for s in scenarios)  # known before any point is made
    if total > MAX_RUNS and not args.force:
        raise ConfigError("points", total, f"at most {MAX_RUNS:,} runs (one per point), or "
                          "--force runs them anyway")
    points: list[list[dict[str, Any]]] = []  # each scenario's, as it gives them
    configs: list[list[dict[str, Any]]] = []
    for s in scenarios:
        try:
            points.append(s.points())
            configs.append([runner.normalise(point) for point in points[-1]])
        except ConfigError as exc:  # say which scenario (file) holds the bad value
            raise in_file(s.path or s.name, exc) from None
    check_size([c for cs in configs for c in cs], [1] * total, None, runner.check_work,
               args.force)
    run_section7 = args.section7 == "yes" or (
        args.section7 == "auto" and not args.names and args.protocol == "paper")
    if run_section7:
        points.append(section7_points())
        configs.append([runner.normalise(point) for point in points[-1]])
    out = check_output_dir("out", args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError("out", args.out, f"a directory that can be created and written "
                          f"({exc.strerror or type(exc).__name__})") from None
    # the paper's figures first, then each further section's scenarios together
    order = sorted(range(len(scenarios)), key=lambda i: scenarios[i].section != "")
    batch = Batch(configs)
    texts: dict[int, str] = {}
    frames: dict[int, Any] = {}
    started = time.perf_counter()
    for group, records in batch.run(FIGURE_RUN, jobs, cost=runner.expected_requests):
        if group == len(scenarios):  # section 7's runs
            texts[group] = section7_text(points[group], records, time.perf_counter() - started)
            print("\n" + texts[group])
            continue
        s = scenarios[group]
        frame = report.add_normalised(s, to_frame(
            [figure_record(p, r) for p, r in zip(points[group], records, strict=True)]))
        with atomic_path(out / f"{s.name}.csv") as tmp:
            frame.to_csv(tmp, index=False)
        frames[group] = frame
        report.plot(s, frame, out / f"{s.name}.png")
        metric = s.plot.get("table", "reply_rate_per_s")
        label = report.LABELS.get(metric, metric)
        table = report.pivot_text(s, frame, metric)
        print(f"\n== {s.title}\n{label}:\n{table}")
        expect = report.expectation_rows(s, frame)
        if expect:
            print(report.markdown_table(expect))
        cpu = sum(float(r.get("sim_cpu_time_s") or 0.0) for r in records)
        texts[group] = (
            f"## {s.title}\n\n{s.figure}\n\n{s.description.strip()}\n\n"
            f"![{s.name}]({s.name}.png)\n\n"
            f"{label}:\n\n```\n{table}\n```\n\n"
            + (report.markdown_table(expect) + "\n\n" if expect else "")
            + f"({len(frame)} runs, {batch.shared_text(group)}{cpu:.0f} CPU-s simulating)\n"
        )
    sections = []
    current_section = ""
    for i in order:
        if scenarios[i].section != current_section:
            current_section = scenarios[i].section
            sections.append(f"# {current_section}\n")
        sections.append(texts[i])
    if run_section7:
        sections.append(texts[len(scenarios)])
    elif args.section7 == "auto" and not args.names:
        sections.append(section7_elsewhere())
    frames_in_order = [frames[i] for i in order]
    equation1 = report.equation1_section(frames_in_order)
    if equation1:
        print("\n" + equation1)
    write_text_atomic(out / "report.md",
        "# acceptsim: reproduction of Brecht, Pariag and Gammo (USENIX ATC 2004)\n\n"
        + f"Run lengths: {protocol_text(args.protocol, overrides)}.  Hot path: "
        + f"{native.path_in_use()}.\n\n"
        + equation1
        + "\n".join(sections)
        + f"\nTotal wall time: {time.perf_counter() - started:.0f} s\n"
    )
    print(f"\nwrote {out}/report.md, one PNG and one CSV per figure")
    return 0
