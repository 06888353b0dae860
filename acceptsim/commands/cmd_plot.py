"""``acceptsim plot``: the figures of a stored sweep (``acceptsim.plots``)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from acceptsim.sim.errors import ConfigError


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "plot", help="figures of a stored sweep: curves with 95%% bands, a heat map, a "
        "policy's paired differences",
    )
    p.add_argument("out", help="the sweep's output directory (or its results.parquet)")
    p.add_argument("--metric", default="reply_rate_per_s",
                   help="a column of the results (default reply_rate_per_s)")
    p.add_argument("--policy", default=None, metavar="SPEC",
                   help="also plot this policy minus every static limit, paired by replication")
    p.add_argument("--to", default=None, metavar="DIR",
                   help="where the PNG files go (default OUT/plots)")
    p.set_defaults(main=main)


def main(args: argparse.Namespace) -> int:
    out = Path(args.out)
    results = out / "results.parquet" if out.is_dir() else out
    if not results.is_file():
        raise ConfigError("out", args.out, "a sweep's directory or its results.parquet")
    to = Path(args.to) if args.to is not None else (out if out.is_dir() else out.parent) / "plots"
    if to.exists() and not to.is_dir():
        raise ConfigError("--to", args.to, "a directory (this is a file)")
    parent = to if to.exists() else to.parent
    if not os.access(parent if parent.exists() else Path.cwd(), os.W_OK):
        raise ConfigError("--to", str(to), "a directory this user may write")
    from acceptsim.plots import plot_sweep  # matplotlib: only when a figure is drawn

    try:
        written = plot_sweep(results, to, args.metric, args.policy)
    except ConfigError:
        raise
    except ValueError as exc:
        raise ConfigError("plot", args.out, str(exc)) from None
    for path in written:
        print(path)
    return 0
