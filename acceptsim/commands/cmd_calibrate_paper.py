"""``acceptsim calibrate-paper``: fit cost fields to the paper's published numbers.

The problems (what each fits, to which of the paper's numbers) are in
:mod:`acceptsim.models.calibration`; this command runs one and prints its values and
residuals.  ``--write`` records them in ``acceptsim/models/calibration_results.toml``, which is
part of the sources: it is written only in a source checkout, never into an installed
copy of the package.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from acceptsim.config_io import parse_int
from acceptsim.models import calibration as cal
from acceptsim.models.costs import PARAMETER_SETS
from acceptsim.models.workloads import WORKLOADS
from acceptsim.sim.errors import ConfigError

#: every problem the command can run
PROBLEMS = sorted([*cal.PROBLEMS, *cal.RATIO_PROBLEMS, *cal.OVERLOAD_PROBLEMS,
                   *cal.JOINT_PROBLEMS, "section7"])  # fmt: skip


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "calibrate-paper", help="fit cost fields to the paper's published numbers",
        description="Fit cost fields to the paper's published numbers: one problem of "
        "acceptsim.models.calibration (its docstring says what each fits), printing the "
        "values and residuals.",
    )
    p.add_argument("problem", choices=PROBLEMS, help="what to fit: " + ", ".join(PROBLEMS))
    p.add_argument("--maxfev", default="12",
                   help="simulation rounds for the optimiser (default 12)")
    p.add_argument("--jobs", default=None, help="parallel runs (default: every core)")
    p.add_argument("--check", action="store_true",
                   help="only report the residuals of the current defaults")
    p.add_argument("--write", action="store_true",
                   help=f"record the result in models/{cal.RESULTS.name} (a source checkout only)")
    p.set_defaults(main=main)


def parse_jobs(text: str | None) -> int | None:
    if text is None:
        return None
    jobs = parse_int("--jobs", text)
    if jobs < 1:
        raise ConfigError("--jobs", text, "an integer >= 1, or leave it out for every core")
    return jobs


def check_writable_results(path: Path) -> None:
    """Refuse to write the results file outside a source checkout: in an installed copy
    it would change the package's data under site-packages, where no one reviews it."""
    root = path.resolve().parents[2]  # (acceptsim/models/NAME in a checkout)
    checkout = (root / "pyproject.toml").is_file()
    if not (checkout and (root / "acceptsim" / "models" / path.name).is_file()):
        raise ConfigError(
            "--write", str(path.resolve()),
            "a results file in a source checkout of acceptsim (this one is an installed "
            "copy): run the command from a checkout, e.g. pip install -e . in a git clone",
        )


def main(args: argparse.Namespace) -> int:
    maxfev = parse_int("--maxfev", args.maxfev)
    if maxfev < 1:
        raise ConfigError("--maxfev", args.maxfev, "an integer >= 1 (simulation rounds)")
    args.maxfev = maxfev
    args.jobs = parse_jobs(args.jobs)
    if args.write:
        check_writable_results(cal.RESULTS)  # before any simulation
    if args.problem in cal.RATIO_PROBLEMS:
        return main_ratio(cal.RATIO_PROBLEMS[args.problem], args)
    if args.problem in cal.OVERLOAD_PROBLEMS:
        return main_overload(cal.OVERLOAD_PROBLEMS[args.problem], args)
    if args.problem == "section7":
        return main_section7(args)
    if args.problem in cal.JOINT_PROBLEMS:
        return main_joint(cal.JOINT_PROBLEMS[args.problem], args)
    problem = cal.PROBLEMS[args.problem]
    if args.check:
        base = PARAMETER_SETS[problem.costs]
        values = [getattr(base, f) for f in problem.fields]
        res = cal.residuals(problem, values, args.jobs)
        outcome = {"values_s": dict(zip(problem.fields, values, strict=True)),
                   "residuals": res.tolist(), "evaluations": 1}
    else:
        outcome = cal.fit(problem, args.maxfev, args.jobs)
    for k, v in outcome["values_s"].items():
        print(f"{k} = {v:.4e}")
    for t, r in zip(problem.targets, outcome["residuals"], strict=True):
        print(f"{t.server} limit {t.accept_limit}: paper {t.paper_peak_per_s:.0f}, "
              f"relative error {r:+.2%}")
    if args.write:
        cal.write(problem, outcome)
    return 0


def main_overload(problem: cal.OverloadProblem, args: argparse.Namespace) -> int:
    if args.check:
        targets = [t for t in cal.OVERLOAD_TARGETS if t.name in problem.targets]
        value = getattr(PARAMETER_SETS[problem.costs], problem.field)
        outcome = {"value": value, "targets": targets,
                   "values": cal.overload_values(targets, jobs=args.jobs), "evaluations": 1}
    else:
        outcome = cal.fit_overload(problem, args.jobs)
    print(f"{problem.field} = {outcome['value']:.4e}")
    cal.target_lines("", outcome["targets"], outcome["values"])
    if args.write:
        cal.write_overload(problem, outcome)
    return 0


def main_joint(problem: cal.JointProblem, args: argparse.Namespace) -> int:
    if args.check:  # the defaults' band errors only
        peaks, overload = cal.joint_values(problem, PARAMETER_SETS[problem.costs], args.jobs)
        errors = cal.band_errors(problem, peaks, overload)
        point = {"peaks": peaks, "overload": overload, "errors": errors,
                 "score": float(np.sum(np.square(errors)))}
        base = PARAMETER_SETS[problem.costs]
        outcome = {"values_s": {f: getattr(base, f) for f in problem.fields}, "best": point,
                   "start": point, "evaluations": 1}
    else:
        outcome = cal.fit_joint(problem, args.maxfev, args.jobs)
    for k, v in outcome["values_s"].items():
        print(f"{k} = {v:.4e}")
    overload = [t for t in cal.OVERLOAD_TARGETS if t.name in problem.overload]
    cal.target_lines("", list(problem.peaks) + overload,
                     outcome["best"]["peaks"] + outcome["best"]["overload"])
    if args.write:
        cal.write_joint(problem, outcome)
    return 0


def main_section7(args: argparse.Namespace) -> int:
    """Every overload target of brief section 7 with the default parameter sets, under the
    paper's protocol (nothing is fitted); ``--write`` records them."""
    values = cal.overload_values(cal.OVERLOAD_TARGETS, jobs=args.jobs)
    lines = ["[section7]\n",
             f"run = {{ duration_s = {cal.PAPER_DURATION_S}, warmup_s = 0.0, seed = 1 }}\n"]
    lines += cal.target_lines("section7", cal.OVERLOAD_TARGETS, values)
    if args.write:
        cal.write_section("section7", "".join(lines), cal.RESULTS)
    return 0


def main_ratio(problem: cal.RatioProblem, args: argparse.Namespace) -> int:
    if args.check:
        value = getattr(WORKLOADS[problem.workload][1](), problem.field)
        outcome = {"value": value, "ratio": cal.ratio(problem, value, args.jobs), "evaluations": 1}
    else:
        outcome = cal.fit_ratio(problem, args.jobs)
    print(f"{problem.field} = {outcome['value']:.4e}")
    print(f"{problem.what}: paper {problem.paper_ratio}, simulated {outcome['ratio']:.4f} "
          f"(relative error {(outcome['ratio'] - problem.paper_ratio) / problem.paper_ratio:+.2%})")
    if args.write:
        cal.write_ratio(problem, outcome)
    return 0
