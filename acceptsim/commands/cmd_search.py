"""``acceptsim search``: the best static accept-limit, or tuned policy parameters.

Static search: every accept-limit of a log-scale ladder (1, 2, 4, ..., 256,
inf by default) over the same ``--replications`` (common random numbers),
the mean reply rate with a 95 % Student t interval for each, and the best
limit.  Candidates whose paired difference from the highest mean is not
significant are marked ``indistinguishable`` (``--indifference 0.01`` also
counts those within 1 % of the best mean); ``--prefer smallest`` (the
default) reports the smallest of them (equal throughput, shorter phases),
``--prefer max`` the highest mean.  ``argmax_accept_limit`` is always the
highest mean.

Policy tuning (``--policy NAME``): the policy's ``TUNE`` parameters (or
``--tune key=low:high``) are tuned with scipy.optimize on the mean reply rate
over the same replications, at most ``--max-evals`` evaluations.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Mapping
from typing import Any

from acceptsim.commands.common import (
    add_point_arguments,
    base_point,
    importable_spec,
    sweep_cache,
)
from acceptsim.config_io import parse_int, parse_number
from acceptsim.models import policies
from acceptsim.models.policies import check_limit
from acceptsim.sim import search as search_mod
from acceptsim.sim.errors import ConfigError
from acceptsim.sim.files import atomic_path, check_plot_file
from acceptsim.sim.params import parse_value, split_assignment
from acceptsim.sim.results import json_safe


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "search", help="find the best static accept-limit (or tune a policy's parameters)"
    )
    add_point_arguments(p, duration_s=10)
    p.add_argument("--replications", default="3", help="replications per candidate (default 3)")
    p.add_argument("--prefer", default=search_mod.PREFER, choices=search_mod.PREFERENCES,
                   help="among limits indistinguishable from the best: the smallest or the "
                   f"highest mean (default {search_mod.PREFER}, as search.best_of's)")
    p.add_argument("--indifference", default="0",
                   help="indifference zone: limits whose mean is within this fraction of the best "
                   "also count as equivalent (e.g. 0.01; default 0: statistics alone)")
    p.add_argument("--policy", default=None, help="tune this policy's parameters instead: a "
                   "built-in one, or a class of yours, MODULE:CLASS or FILE.py:CLASS (its "
                   "TUNE table gives the default ranges; else --tune)")
    p.add_argument("--policy-param", action="append", default=[], metavar="KEY=VALUE",
                   help="fixed parameters of --policy (repeatable)")
    p.add_argument("--tune", action="append", default=[], metavar="KEY=LOW:HIGH",
                   help="parameter of --policy to tune and its range (default: the policy's own)")
    p.add_argument("--max-evals", default="12", help="most parameter settings tried (default 12)")
    p.add_argument("--plot", default=None, metavar="PNG",
                   help="plot the searched curve (mean and 95%% CI per candidate) to this file")
    p.add_argument("--format", default="table", choices=("table", "json"))
    p.add_argument("--force", action="store_true", help="run even beyond the work bounds "
                   "(10,000 runs per evaluation; 1e8 simulated connection attempts per run)")
    p.set_defaults(main=main)


def plot_curve(out: dict[str, Any], path: str) -> None:
    """Mean reply rate with its 95 % CI per evaluated accept-limit (inf drawn at the right)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = out["evaluated"]
    finite = [e["accept_limit"] for e in points if e["accept_limit"] != math.inf]
    top = max(finite) * 2 if finite else 1
    xs = [top if e["accept_limit"] == math.inf else e["accept_limit"] for e in points]
    means = [e["reply_rate_per_s"] for e in points]
    errs = [[m - e["ci95"][0] for m, e in zip(means, points, strict=True)],
            [e["ci95"][1] - m for m, e in zip(means, points, strict=True)]]  # fmt: skip
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.errorbar(xs, means, yerr=errs, marker="o", capsize=3)
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs, [_fmt(e["accept_limit"]) for e in points])
    ax.set_xlabel("accept-limit")
    ax.set_ylabel("reply rate (1/s), mean and 95% CI")
    run = out["run"]
    ax.set_title(f"{run['server']}, {run['workload']}, {run['rate_per_s']:g}/s: "
                 f"best {_fmt(out['best_accept_limit'])}")  # fmt: skip
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=100)
    plt.close(fig)


#: the most parameter settings ``--max-evals`` may ask for (each a sweep of replications)
MAX_EVALS = 1000


def search_static(
    point: Mapping[str, Any], candidates: list[float], prefer: str, replications: int,
    jobs: int | None, indifference: float = 0.0, force: bool = False,
) -> dict[str, Any]:
    result = search_mod.best_of(
        point, "accept_limit", candidates, prefer=prefer,
        indifference=indifference, replications=replications, jobs=jobs, force=force,
        cache=sweep_cache(False),  # ACCEPTSIM_CACHE checked (UTF-8, writable) before any run
    )  # fmt: skip
    return {
        "search": "static accept-limit",
        "best_accept_limit": result.best.value,
        "best_reply_rate_per_s": result.best.mean,
        "ci95": list(result.best.ci95),
        "argmax_accept_limit": result.argmax.value,
        "replications": result.replications,
        "prefer": prefer,
        "indifference": indifference,
        "evaluated": [
            {"accept_limit": e.value, "reply_rate_per_s": e.mean, "ci95": list(e.ci95),
             "indistinguishable_from_best": e.indistinguishable, "values": list(e.values)}
            for e in result.evaluated
        ],  # fmt: skip
    }


def policy_class(spec: str) -> tuple[str, Any]:
    """``--policy``'s name and class: a built-in policy, or a class of the user's
    (MODULE:CLASS or FILE.py:CLASS, imported now; its values go in --policy-param)."""
    spec = importable_spec("--policy", spec.strip()) or spec
    custom = policies.custom_spec(spec)
    if custom is None:
        if spec not in policies.POLICIES:
            raise ConfigError("policy", spec, "one of " + ", ".join(policies.POLICIES)
                              + ", or MODULE:CLASS (a policy class of yours)")
        return spec, policies.POLICIES[spec]
    module, qualname, values = custom
    if values:
        raise ConfigError("--policy", spec, "MODULE:CLASS alone (fixed values go in "
                          "--policy-param)")
    return f"{module}:{qualname}", policies.load_custom(module, qualname)


def parameters_of(cls: Any) -> dict[str, Any]:
    """A policy class's parameters and their defaults: its ``Params`` set's (as the
    built-in policies have), else the arguments its constructor takes by name."""
    import inspect

    params_cls = getattr(cls, "Params", None)
    if isinstance(params_cls, type) and hasattr(params_cls, "describe"):
        return {f["name"]: f["default"] for f in params_cls.describe()}
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):
        return {}
    return {name: (None if p.default is inspect.Parameter.empty else p.default)
            for name, p in signature.parameters.items()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def tune_policy(
    point: Mapping[str, Any], name: str, fixed: dict[str, Any],
    bounds: dict[str, tuple[float, float, bool]], max_evals: int, replications: int,
    jobs: int | None, force: bool = False, defaults: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Tune a policy's parameters in ``bounds`` (``name``: a built-in policy, or a class of
    the user's as MODULE:CLASS; ``defaults``: each parameter's default, an integer one
    tuned in integers; default: the built-in policy's)."""
    if defaults is None:
        defaults = parameters_of(policies.POLICIES[name])

    def make_point(base: Mapping[str, Any], values: Mapping[str, float]) -> dict[str, Any]:
        chosen = dict(fixed)
        for key, value in values.items():
            chosen[key] = round(value) if isinstance(defaults[key], int) else value
        return {**base, "policy": policies.format_spec(name, chosen)}

    result = search_mod.optimise(
        point, make_point, {k: (lo, hi) for k, (lo, hi, _) in bounds.items()},
        log_scale={k: log for k, (_, _, log) in bounds.items()}, max_evals=max_evals,
        replications=replications, jobs=jobs, force=force, cache=sweep_cache(False),
    )  # fmt: skip
    best_params = make_point({}, result.best.value)["policy"]
    return {
        "search": f"policy {name}",
        "policy": name,
        "best_policy": best_params,
        "best_params": {**fixed, **policies.parse_spec(best_params)[1]},
        "best_reply_rate_per_s": result.best.mean,
        "ci95": list(result.best.ci95),
        "replications": result.replications,
        "evaluated": [
            {"params": e.value, "reply_rate_per_s": e.mean, "ci95": list(e.ci95)}
            for e in result.evaluated
        ],
    }


def main(args: argparse.Namespace) -> int:
    if args.plot:
        check_plot_file("--plot", args.plot)  # before the search's runs
    point = base_point(args)
    replications = parse_int("replications", args.replications)
    if replications < 2:
        raise ConfigError("replications", replications, "an integer >= 2 (for a CI)")
    jobs = parse_int("jobs", args.jobs) if args.jobs is not None else None
    if args.policy is None:
        candidates = [check_limit(c, "candidates") for c in args.candidates.split(",") if c]
        indifference = parse_number("indifference", args.indifference)
        out = search_static(point, candidates, args.prefer, replications, jobs, indifference,
                            args.force)  # fmt: skip
    else:
        name, cls = policy_class(args.policy)
        fixed = {}
        for item in args.policy_param:
            key, value = split_assignment("--policy-param", item)
            fixed[key] = parse_value(value)
        bounds = dict(getattr(cls, "TUNE", None) or {})
        if args.tune:
            bounds = {}
            for item in args.tune:
                key, text = split_assignment("--tune", item)
                lo, sep, hi = text.partition(":")
                if not sep:
                    raise ConfigError("--tune", item, "KEY=LOW:HIGH")
                low, high = parse_number("--tune", lo), parse_number("--tune", hi)
                bounds[key] = (low, high, low > 0 and high / low >= 10)
        if not bounds:
            raise ConfigError("--tune", "", f"KEY=LOW:HIGH for each parameter of {name} to "
                              "tune (the class declares no TUNE table of ranges)")
        fields = parameters_of(cls)
        unknown = [k for k in bounds if k not in fields]
        if unknown:
            raise ConfigError(f"policy.{name}.{unknown[0]}", bounds[unknown[0]][:2],
                              "a parameter of the policy (see `acceptsim policies`)")
        # validate the fixed parameters and the bounds' ends before running
        for key, (lo, hi, _) in bounds.items():
            for v in (lo, hi):
                spec = policies.format_spec(name, {**fixed, key: v})
                policies.policy_params(spec)
        max_evals = parse_int("max-evals", args.max_evals)
        if not 1 <= max_evals <= MAX_EVALS:
            raise ConfigError("max-evals", args.max_evals, f"an integer from 1 to {MAX_EVALS}")
        out = tune_policy(point, name, fixed, bounds, max_evals, replications, jobs, args.force,
                          defaults=fields)
    out["run"] = point
    if args.plot and "best_accept_limit" in out:
        plot_curve(out, args.plot)
    if args.format == "json":
        print(json.dumps(json_safe(out), indent=2))
    else:
        print(format_text(out))
    return 0


def _fmt(v: Any) -> str:
    if isinstance(v, float) and math.isinf(v):
        return "inf"
    return f"{v:g}" if isinstance(v, float) else str(v)


def format_text(out: dict[str, Any]) -> str:
    lines = [f"{out['search']}: {out['replications']} replications per point"]
    first = "accept-limit" if out["evaluated"] and "accept_limit" in out["evaluated"][0] \
        else "parameters"
    lines.append(f"  {first:>24}  {'replies/s':>10}  95% CI of the mean   "
                 "(~best: indistinguishable from the best)")
    for e in out["evaluated"]:
        what = _fmt(e["accept_limit"]) if "accept_limit" in e else json.dumps(
            json_safe(e["params"]))
        mark = "  ~best" if e.get("indistinguishable_from_best") else ""
        lines.append(f"  {what:>24}  {e['reply_rate_per_s']:10,.1f}  "
                     f"[{e['ci95'][0]:,.1f}, {e['ci95'][1]:,.1f}]{mark}")
    best = _fmt(out["best_accept_limit"]) if "best_accept_limit" in out else out["best_policy"]
    lines.append(f"best: {best}  {out['best_reply_rate_per_s']:,.1f} replies/s "
                 f"(95% CI {out['ci95'][0]:,.1f} .. {out['ci95'][1]:,.1f})")
    return "\n".join(lines)
