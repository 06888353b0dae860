"""What several commands share: the options of one simulated point and its parsing."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from acceptsim.config_io import load_params_file, parse_int, parse_number
from acceptsim.models.config import WARMUP_RULE, RunConfig, default_text
from acceptsim.models.costs import PARAMETER_SETS
from acceptsim.models.work import check_work
from acceptsim.sim.errors import ConfigError
from acceptsim.sim.files import check_writable_dir, expand_user
from acceptsim.sim.params import parse_value, split_assignment

DEFAULT_CANDIDATES = "1,2,4,8,16,32,64,128,256,inf"


def add_point_arguments(p: argparse.ArgumentParser, duration_s: int) -> None:
    """The run every candidate accept-limit shares (read by :func:`base_point`), the
    ladder of candidates and the parallel jobs: arguments of ``search`` and ``oracle``."""
    d = default_text  # RunConfig's own defaults
    p.add_argument("--server", default=None, help=f"server (default {d('server')}; "
                   "`acceptsim servers` lists them), or MODULE:CLASS, a server of yours (see "
                   "`run --help`)")
    p.add_argument("--workload", default=None, help=f"workload (default {d('workload')})")
    p.add_argument("--rate", required=True, help="target connection rate per second")
    p.add_argument("--rate-profile", default=None, help="time-varying rate (see `run --help`)")
    p.add_argument("--duration", default=str(duration_s),
                   help=f"simulated seconds per run (default {duration_s})")
    p.add_argument("--warmup", default=None, help="seconds left out of each run (default: "
                   f"{WARMUP_RULE})")
    p.add_argument("--seed", default=None, help=f"base seed (default {d('seed')})")
    p.add_argument("--jobs", default=None, help="parallel runs (default: every core)")
    p.add_argument("--params", default=None,
                   help="cost parameters: a named set (cluster1, cluster2) or a TOML file, e.g. "
                   "from `acceptsim calibrate` (its [kernel] table, if any, too)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="any other run field, e.g. --set costs=cluster2 (repeatable)")
    p.add_argument("--candidates", default=DEFAULT_CANDIDATES,
                   help=f"accept-limits to try (default {DEFAULT_CANDIDATES})")


def base_point(args: argparse.Namespace) -> dict[str, Any]:
    point: dict[str, Any] = {
        "rate_per_s": parse_number("rate", args.rate),
        "duration_s": parse_number("duration", args.duration),
    }
    # left out: RunConfig's default (the warm-up: its rule), the same as everywhere
    for name, text, read in (
        ("server", importable_spec("--server", args.server), str),
        ("workload", args.workload, str),
        ("rate_profile", args.rate_profile, str),
        ("warmup_s", args.warmup, lambda t: parse_number("warmup", t)),
        ("seed", args.seed, lambda t: parse_int("seed", t)),
    ):
        if text is not None:
            point[name] = read(text)
    if args.params in PARAMETER_SETS:
        point["costs"] = args.params
    elif args.params is not None:  # the file's values, so that a run's key holds them
        costs, kernel = load_params_file(args.params)
        point["costs"] = costs.to_dict()
        if kernel is not None:
            point["kernel"] = kernel.to_dict()
    for item in args.set:
        key, value = split_assignment("--set", item)
        point[key] = parse_value(value)
    config = RunConfig.from_dict(point)
    check_work(config, args.force)  # validate, refuse a huge run, first
    for name in ("server", "workload", "rate_profile", "warmup_s", "seed"):
        point[name] = getattr(config, name)  # as used: the runs and the output say it
    return point


def sweep_cache(no_cache: bool) -> bool | Path:
    """The run cache a command's sweep uses: none with ``--no-cache`` or
    ``ACCEPTSIM_CACHE=off``, else ``$ACCEPTSIM_CACHE`` (``~`` expanded) or the default
    directory, refused before the first run (naming it) when it is no UTF-8 path or
    cannot be written."""
    from acceptsim.sim.sweep import CACHE_ENV, CACHE_OFF, default_cache_dir

    text = os.environ.get(CACHE_ENV, "")
    if no_cache or text.strip().lower() in CACHE_OFF:
        return False
    root = expand_user(text) if text else default_cache_dir()
    return check_writable_dir(CACHE_ENV if text else "cache (default)", root)


def importable_spec(field: str, spec: str | None) -> str | None:
    """``--policy path/to/file.py:CLASS[...]`` (or ``--server``) as ``MODULE:CLASS[...]``:
    the file's folder put first on the import path (``sys.path``, and ``PYTHONPATH`` for
    the worker processes), its name the module's.  A spec without a ``.py`` file is
    returned as it is.  Refused (one line) when the file is no regular file, or its name
    is no module name or imports another module (``random.py`` is the standard library's)."""
    if spec is None:
        return None
    head, sep, rest = spec.strip().partition(":")
    if not head.endswith(".py") or not sep:
        return spec
    import importlib.util
    import sys

    path = expand_user(head)
    if not path.is_file():
        raise ConfigError(field, spec, f"a Python file and a class, FILE.py:CLASS ({path} is "
                          "no file)")
    name = path.stem
    if not name.isidentifier():
        raise ConfigError(field, spec, f"a file whose name is a module name ({name!r} is not)")
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
        os.environ["PYTHONPATH"] = os.pathsep.join(
            p for p in (folder, os.environ.get("PYTHONPATH", "")) if p)
    found = importlib.util.find_spec(name)
    origin = Path(found.origin).resolve() if found is not None and found.origin else None
    if origin != path.resolve():
        raise ConfigError(field, spec, f"a file whose name imports it ({name} is {origin}: "
                          "rename the file)")
    return f"{name}:{rest}"
