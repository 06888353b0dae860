"""The calibration commands, one module for the command line's layer:

* ``acceptsim calibrate`` and ``acceptsim validate``: the simulator against measured runs
  (:mod:`acceptsim.measure.calibrate`);
* ``acceptsim calibrate-paper``: fit cost fields to the paper's published numbers.  The
  problems (what each fits, to which of the paper's numbers) are in
  :mod:`acceptsim.models.calibration`; the command runs one and prints its values and
  residuals.  ``--write`` records them in ``acceptsim/models/calibration_results.toml``,
  part of the sources: it is written only in a source checkout, never into an installed
  copy of the package.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from acceptsim.config_io import load_measurements, load_params_file, parse_int
from acceptsim.measure import calibrate as cal
from acceptsim.measure import timeseries_check
from acceptsim.measure.run import MeasuredRun, find_runs, load_run
from acceptsim.models import calibration as paper
from acceptsim.models.costs import CLUSTER1, PARAMETER_SETS
from acceptsim.models.workloads import WORKLOADS
from acceptsim.sim.errors import ConfigError, is_user_file
from acceptsim.sim.files import atomic_path, check_output_file, check_plot_file, write_text_atomic
from acceptsim.sim.results import json_safe


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("calibrate", help="fit cost parameters to measured runs")
    p.add_argument("runs", nargs="+", help="run directories, or folders holding them")
    p.add_argument("--out", required=True, help="parameter file to write (TOML)")
    p.add_argument("--fit", default=",".join(cal.DEFAULT_FIT),
                   help="cost parameters to fit, each kept inside its bound: around its "
                   "measurement if --params has one, else a physical range (default "
                   f"{','.join(cal.DEFAULT_FIT)}); a fit that ends on a bound is reported as a "
                   "missing mechanism and nothing is written (exit status 3; an error in the "
                   "input exits 2 before any simulation)")
    p.add_argument("--params", default=None,
                   help="starting cost parameters (TOML), e.g. from `acceptsim measure-costs`, "
                   "whose measurements bound the fit and are carried into --out")
    p.add_argument("--include-client-limited", action="store_true",
                   help="also use runs whose clients limited the load")
    p.add_argument("--max-evaluations", default="60", help="simulator evaluations at most")
    p.add_argument("--jobs", default="1", help="parallel simulations")
    p.add_argument("--seed", default="1")
    p.set_defaults(main=main_calibrate)

    v = subparsers.add_parser("validate", help="predicted against measured, per run")
    v.add_argument("runs", nargs="+", help="run directories, or folders holding them")
    v.add_argument("--params", default=None, help="cost parameters (TOML), e.g. from calibrate")
    v.add_argument("--format", default="table", choices=("table", "json"))
    v.add_argument("--plot", default=None, help="write measured-vs-predicted PNG here")
    v.add_argument("--timeseries", action="store_true",
                   help="one run's time series (its timeseries.csv) against the simulator's at "
                   "the same sampling interval: the columns' means, and with --plot the series "
                   "over time (replies/s, accept queue, ms throttled, listen overflows/s)")
    v.add_argument("--jobs", default="1", help="parallel simulations")
    v.add_argument("--seed", default="1")
    v.set_defaults(main=main_validate)
    add_paper_parser(subparsers)


def read_runs(paths: list[str]) -> list[MeasuredRun]:
    dirs: list[Path] = []
    for text in paths:
        path = Path(text)
        if is_user_file(path / "run.toml"):
            dirs.append(path)
        elif path.is_dir() and (found := find_runs(path)):
            dirs.extend(found)
        else:
            raise ConfigError("run", text, "a run directory (with run.toml) or a folder of them")
    return [load_run(d) for d in dirs]


def main_calibrate(args: argparse.Namespace) -> int:
    check_output_file("--out", args.out)  # before the fit, which takes minutes
    evaluations = parse_int("max-evaluations", args.max_evaluations)
    if evaluations < 1:
        raise ConfigError("--max-evaluations", args.max_evaluations, "an integer >= 1")
    runs = read_runs(args.runs)
    base = load_params_file(args.params)[0] if args.params is not None else CLUSTER1
    measurements = load_measurements(args.params) if args.params is not None else {}
    used = cal.usable(runs, args.include_client_limited)
    fit = [name.strip() for name in args.fit.split(",") if name.strip()]
    if not fit:
        raise ConfigError("--fit", args.fit, "at least one cost parameter, e.g. request_s")
    result = cal.calibrate(
        used,
        fit=fit,
        base=base,
        seed=parse_int("seed", args.seed),
        jobs=parse_int("jobs", args.jobs),
        max_evaluations=evaluations,
        measurements=measurements,
    )
    if result.on_bound:  # a missing mechanism, not a calibration: nothing is written
        for note in result.notes:
            print("note:", note)
        sys.stderr.write(f"acceptsim calibrate: error: {', '.join(result.on_bound)} ended on "
                         f"its bound; {args.out} not written\n")
        return 3
    write_text_atomic(args.out, result.to_toml())  # a failure leaves the old file whole
    for name, value in result.fitted.items():
        print(f"{name:20s} {value * 1e6:9.3f} us  +/- {result.stderr[name] * 1e6:.3f}")
    for run, res in result.residuals.items():
        print(f"  {run:48s} residual {res:+.2%}")
    for note in result.notes:
        print("note:", note)
    kept = {id(run) for run in used}
    for run in runs:
        if id(run) not in kept:
            reasons = run.client_limits() + run.host_limits()
            print(f"left out {run.path.name}: {'; '.join(reasons)}")
    print(f"wrote {args.out} ({len(used)} of {len(runs)} runs used, "
          f"{result.evaluations} evaluations)")
    return 0


def print_closed_loop(report: dict[str, Any]) -> None:
    """The wrk runs: each one's latency report measured and predicted, and keep-alive's
    gain (nothing when the runs are httperf's)."""
    closed = report.get("closed_loop")
    if not closed:
        return
    print("\nwrk runs: latency (ms) measured / predicted, wrk's report")
    print(f"{'run':48s} {'p50':>15s} {'p99':>17s} {'timeouts/s':>13s}")
    for row in report["runs"]:
        if row.get("client") != "wrk":
            continue
        m, p = row["measured"], row["predicted"]
        p50, p99 = p["wrk_latency_ms.p50"] or 0.0, p["wrk_latency_ms.p99"] or 0.0
        print(f"{row['run']:48s} {m['wrk_latency_ms.p50']:7.2f} / {p50:<6.2f}"
              f"{m['wrk_latency_ms.p99']:8.2f} / {p99:<7.2f}"
              f"{m['wrk_timeouts_per_s']:6.1f} / {p['wrk_timeouts_per_s']:.1f}")
    print(f"throughput's mean absolute % error: {closed['mape_reply_rate']:.1f}% over "
          f"{closed['runs']} wrk runs")
    for g in closed["keepalive_gain"]:
        print(f"keep-alive's gain, {g['worker_processes']} worker(s), {g['concurrency']} "
              f"connections: measured {g['measured']:.2f}, predicted {g['predicted']:.2f}")


def main_validate(args: argparse.Namespace) -> int:
    if args.plot:
        check_plot_file("--plot", args.plot)  # a file, not a directory: before the runs
    runs = read_runs(args.runs)
    costs = load_params_file(args.params)[0] if args.params is not None else CLUSTER1
    if args.timeseries:
        return validate_timeseries(args, runs, costs)
    report = cal.validate(
        runs, costs, seed=parse_int("seed", args.seed), jobs=parse_int("jobs", args.jobs)
    )
    if args.plot:
        plot(report, Path(args.plot))
    if args.format == "json":
        print(json.dumps(json_safe(report), indent=2))
        return 0
    print(f"{'run':48s} {'measured':>9s} {'predicted':>9s} {'error':>7s}  "
          "overflows meas/pred")
    for row in report["runs"]:
        m, p = row["measured"], row["predicted"]
        flag = " (excluded)" if row["excluded_because"] else ""
        err = row["reply_rate_error_pct"]
        err_text = f"{err:+6.1f}%" if err is not None else "    n/a"
        print(
            f"{row['run']:48s} {m['reply_rate_per_s']:9.0f} {p['reply_rate_per_s']:9.0f} "
            f"{err_text}  {m['listen_overflows_per_s']:7.0f} / "
            f"{p['listen_overflows_per_s']:.0f}{flag}"
        )
    for row in report["runs"]:
        if row["worker_share_error_pp"] is not None:
            m, p = row["measured"]["worker_shares"], row["predicted"]["worker_shares"]
            print(f"{row['run']:48s} workers' shares measured "
                  + "/".join(f"{s:.2f}" for s in m) + ", predicted "
                  + "/".join(f"{s:.2f}" for s in p)
                  + f" (largest gap {row['worker_share_error_pp']:.1f} points)")
    for item in report["excluded"]:
        print(f"excluded {item['run']}: {item['reason']}")
    mape = report["mape_reply_rate"]
    if mape is None:
        print("no run the clients did not limit")
        return 0
    by = report["mape_reply_rate_by_multi_accept"]
    parts = ", ".join(f"multi_accept {k}: {v:.1f}%" for k, v in by.items() if v is not None)
    if not parts:  # a server with an accept limit of its own (HAProxy's tune.maxaccept)
        parts = ", ".join(f"limit {k}: {v:.1f}%" for k, v in
                          report["mape_reply_rate_by_accept_limit"].items())
    print(f"mean absolute % error of reply rate: {mape:.1f}% over {report['runs_in_mape']} "
          f"runs ({parts})")
    repeats = report["repeats"]
    if repeats is not None:
        print(f"the repeats alone: no prediction of one number a point does better than "
              f"{repeats['mape_floor']:.1f}% over the {repeats['runs']} runs of the "
              f"{repeats['points']} points measured more than once")
    if report["worker_share_error_pp_max"] is not None:
        print("largest gap between a measured and a predicted worker's share: "
              f"{report['worker_share_error_pp_max']:.1f} percentage points")
    print_limits(report)
    print_closed_loop(report)
    d = report["direction"]
    if d["rates"]:
        print(f"\nreply rate off minus on, per rate (noise: {d['noise_sigmas']:g} standard "
              "errors of the measured difference)")
        print(f"{'rate':>7s} {'meas on':>8s} {'meas off':>8s} {'meas diff':>12s} "
              f"{'pred on':>8s} {'pred off':>8s} {'pred diff':>9s}  direction")
        for pt in d["rates"]:
            verdict = direction_verdict(pt, d["noise_sigmas"])
            print(
                f"{pt['target_rate_per_s']:7.0f} {pt['measured_on_mean']:8.0f} "
                f"{pt['measured_off_mean']:8.0f} {pt['measured_off_minus_on']:+6.0f}"
                f"+/-{pt['measured_diff_stderr']:<4.0f} {pt['predicted_on']:8.0f} "
                f"{pt['predicted_off']:8.0f} {pt['predicted_off_minus_on']:+9.0f}  {verdict}"
            )
        print(f"direction right at {d['right']} of {d['right'] + d['wrong']} rates where the "
              "measured difference exceeds the noise")
        pool = d["pooled"]
        if pool.get("rates"):
            verdict = direction_verdict(pool, d["noise_sigmas"])
            print(f"mean over {pool['rates']} rates: measured "
                  f"{pool['measured_off_minus_on']:+.0f} +/- {pool['measured_diff_stderr']:.0f}, "
                  f"predicted {pool['predicted_off_minus_on']:+.0f}: direction {verdict}")
    return 0


def direction_verdict(point: dict[str, Any], sigmas: float) -> str:
    """The verdict on one predicted difference (off minus on; limit 1 minus inf in
    print_limits, under the same keys): right or WRONG where the
    measured difference exceeds the noise; where it does not, whether the predicted one is
    within that noise too, or beyond it (a difference predicted that was not measured: its
    size is wrong, whatever its sign)."""
    if point["direction_right"] is not None:
        return "right" if point["direction_right"] else "WRONG"
    se = point["measured_diff_stderr"]
    if se != se:  # no repeats: no noise to judge by
        return "not judged (a setting without repeats)"
    gap = point["predicted_off_minus_on"] - point["measured_off_minus_on"]
    if abs(gap) <= sigmas * se:
        return "measured within noise, predicted too"
    return (f"measured within noise, predicted {abs(gap) / se:.1f} standard errors from it: "
            "WRONG size")


def print_limits(report: dict[str, Any]) -> None:
    """validate's table per rate and accept limit (runs of more than nginx's two
    settings: HAProxy's tune.maxaccept)."""
    lim = report["limits"]
    if not any(len(p["limits"]) > 2 for p in lim["rates"]):
        return
    print(f"\nreply rate per accept limit (mean +/- standard error of the repeats; best right "
          f"when the predicted best is the measured best or within {lim['noise_sigmas']:g} "
          "standard errors of it)")
    for pt in lim["rates"]:
        cells = "  ".join(
            f"{'inf' if c['accept_limit'] == math.inf else int(c['accept_limit'])}: "
            f"{c['measured_mean']:.0f}+/-{c['measured_stderr']:.0f} ({c['predicted']:.0f})"
            for c in pt["limits"])
        verdict = "right" if pt["best_right"] else "WRONG"
        print(f"{pt['target_rate_per_s']:7.0f}/s  {cells}")
        line = (f"         best measured {_limit(pt['measured_best'])}, predicted "
                f"{_limit(pt['predicted_best'])}: {verdict}")
        one = pt.get("one_minus_inf")
        if one is not None:
            sign = direction_verdict({
                "direction_right": one["sign_right"], "measured_off_minus_on": one["measured"],
                "measured_diff_stderr": one["measured_stderr"],
                "predicted_off_minus_on": one["predicted"]}, lim["noise_sigmas"])
            line += (f"; limit 1 minus inf measured {one['measured']:+.0f} +/- "
                     f"{one['measured_stderr']:.0f}, predicted {one['predicted']:+.0f}: {sign}")
        print(line)
    print(f"best limit right at {lim['best_right']} of {lim['best_right'] + lim['best_wrong']} "
          "rates")


def _limit(value: float) -> str:
    return "inf" if value == math.inf else str(int(value))


def validate_timeseries(args: argparse.Namespace, runs: list[MeasuredRun], costs: Any) -> int:
    """``validate --timeseries RUN``: the run's series against the simulator's (the output
    file was checked before the simulation)."""
    if len(runs) != 1:
        raise ConfigError("--timeseries", " ".join(args.runs),
                          f"exactly one run directory (these hold {len(runs)} runs)")
    comparison = timeseries_check.compare(runs[0], costs, seed=parse_int("seed", args.seed))
    if args.plot:
        timeseries_check.plot_comparison(comparison, Path(args.plot))
    if args.format == "json":
        print(json.dumps(json_safe(timeseries_check.comparison_record(comparison)), indent=2))
        return 0
    print(f"{comparison.run}: means over {len(comparison.measured)} measured and "
          f"{len(comparison.simulated)} simulated intervals of {comparison.interval_s:g} s")
    print(f"{'column':24s} {'measured':>11s} {'simulated':>11s}")
    for row in comparison.means.to_dict("records"):
        cells = [f"{v:11.2f}" if v == v else f"{'n/a':>11s}"
                 for v in (row["measured_mean"], row["simulated_mean"])]
        print(f"{row['column']:24s} {cells[0]} {cells[1]}")
    if args.plot:
        print(f"wrote {args.plot}")
    return 0


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 4.2))
    for multi, marker in ((False, "o"), (True, "s")):
        rows = [r for r in report["runs"] if r["multi_accept"] == multi]
        if not rows:  # a setting with no runs: no legend entry for nothing
            continue
        ax.scatter(
            [r["target_rate_per_s"] for r in rows],
            [r["measured"]["reply_rate_per_s"] for r in rows],
            marker=marker, facecolors="none", edgecolors="C0" if multi else "C1",
            label=f"measured, multi_accept {'on' if multi else 'off'}",
        )
        pts = sorted((r["target_rate_per_s"], r["predicted"]["reply_rate_per_s"]) for r in rows)
        ax.plot([x for x, _ in pts], [y for _, y in pts], color="C0" if multi else "C1",
                label=f"predicted, multi_accept {'on' if multi else 'off'}")
    ax.set_xlabel("target rate (connections/s)")
    ax.set_ylabel("replies/s")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110)
    plt.close(fig)


# -- acceptsim calibrate-paper --------------------------------------------------------------
#: every problem the command can run
PROBLEMS = sorted([*paper.PROBLEMS, *paper.RATIO_PROBLEMS, *paper.OVERLOAD_PROBLEMS,
                   *paper.JOINT_PROBLEMS, "section7"])  # fmt: skip


def add_paper_parser(subparsers: Any) -> None:
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
                   help=f"record the result in acceptsim/models/{paper.RESULTS.name} (a source "
                   "checkout only)")
    p.set_defaults(main=main_paper)


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


def main_paper(args: argparse.Namespace) -> int:
    maxfev = parse_int("--maxfev", args.maxfev)
    if maxfev < 1:
        raise ConfigError("--maxfev", args.maxfev, "an integer >= 1 (simulation rounds)")
    args.maxfev = maxfev
    args.jobs = parse_jobs(args.jobs)
    if args.write:
        check_writable_results(paper.RESULTS)  # before any simulation
    if args.problem in paper.RATIO_PROBLEMS:
        return main_ratio(paper.RATIO_PROBLEMS[args.problem], args)
    if args.problem in paper.OVERLOAD_PROBLEMS:
        return main_overload(paper.OVERLOAD_PROBLEMS[args.problem], args)
    if args.problem == "section7":
        return main_section7(args)
    if args.problem in paper.JOINT_PROBLEMS:
        return main_joint(paper.JOINT_PROBLEMS[args.problem], args)
    problem = paper.PROBLEMS[args.problem]
    if args.check:
        base = PARAMETER_SETS[problem.costs]
        values = [getattr(base, f) for f in problem.fields]
        res = paper.residuals(problem, values, args.jobs)
        outcome = {"values_s": dict(zip(problem.fields, values, strict=True)),
                   "residuals": res.tolist(), "evaluations": 1}
    else:
        outcome = paper.fit(problem, args.maxfev, args.jobs)
    for k, v in outcome["values_s"].items():
        print(f"{k} = {v:.4e}")
    for t, r in zip(problem.targets, outcome["residuals"], strict=True):
        print(f"{t.server} limit {t.accept_limit}: paper {t.paper_peak_per_s:.0f}, "
              f"relative error {r:+.2%}")
    if args.write:
        paper.write(problem, outcome)
    return 0


def main_overload(problem: paper.OverloadProblem, args: argparse.Namespace) -> int:
    if args.check:
        targets = [t for t in paper.OVERLOAD_TARGETS if t.name in problem.targets]
        value = getattr(PARAMETER_SETS[problem.costs], problem.field)
        outcome = {"value": value, "targets": targets,
                   "values": paper.overload_values(targets, jobs=args.jobs), "evaluations": 1}
    else:
        outcome = paper.fit_overload(problem, args.jobs)
    print(f"{problem.field} = {outcome['value']:.4e}")
    paper.target_lines("", outcome["targets"], outcome["values"])
    if args.write:
        paper.write_overload(problem, outcome)
    return 0


def main_joint(problem: paper.JointProblem, args: argparse.Namespace) -> int:
    if args.check:  # the defaults' band errors only
        peaks, overload = paper.joint_values(problem, PARAMETER_SETS[problem.costs], args.jobs)
        errors = paper.band_errors(problem, peaks, overload)
        point = {"peaks": peaks, "overload": overload, "errors": errors,
                 "score": float(np.sum(np.square(errors)))}
        base = PARAMETER_SETS[problem.costs]
        outcome = {"values_s": {f: getattr(base, f) for f in problem.fields}, "best": point,
                   "start": point, "evaluations": 1}
    else:
        outcome = paper.fit_joint(problem, args.maxfev, args.jobs)
    for k, v in outcome["values_s"].items():
        print(f"{k} = {v:.4e}")
    overload = [t for t in paper.OVERLOAD_TARGETS if t.name in problem.overload]
    paper.target_lines("", list(problem.peaks) + overload,
                     outcome["best"]["peaks"] + outcome["best"]["overload"])
    if args.write:
        paper.write_joint(problem, outcome)
    return 0


def main_section7(args: argparse.Namespace) -> int:
    """Every overload target of brief section 7 with the default parameter sets, under the
    paper's protocol (nothing is fitted); ``--write`` records them."""
    values = paper.overload_values(paper.OVERLOAD_TARGETS, jobs=args.jobs)
    lines = ["[section7]\n",
             f"run = {{ duration_s = {paper.PAPER_DURATION_S}, warmup_s = 0.0, seed = 1 }}\n"]
    lines += paper.target_lines("section7", paper.OVERLOAD_TARGETS, values)
    if args.write:
        paper.write_section("section7", "".join(lines), paper.RESULTS)
    return 0


def main_ratio(problem: paper.RatioProblem, args: argparse.Namespace) -> int:
    if args.check:
        value = getattr(WORKLOADS[problem.workload][1](), problem.field)
        ratio = paper.ratio(problem, value, args.jobs)
        outcome = {"value": value, "ratio": ratio, "evaluations": 1}
    else:
        outcome = paper.fit_ratio(problem, args.jobs)
    print(f"{problem.field} = {outcome['value']:.4e}")
    print(f"{problem.what}: paper {problem.paper_ratio}, simulated {outcome['ratio']:.4f} "
          f"(relative error {(outcome['ratio'] - problem.paper_ratio) / problem.paper_ratio:+.2%})")
    if args.write:
        paper.write_ratio(problem, outcome)
    return 0
