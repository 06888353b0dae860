"""The ``acceptsim`` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from acceptsim import __version__
from acceptsim.commands import (
    bench,
    calibrate,
    compare,
    measure,
    policies,
    reproduce,
    run,
    search,
    sweep,
)
from models.policies import PolicyError
from sim.errors import ConfigError

COMMANDS = [run, policies, search, compare, reproduce, sweep, bench, measure, calibrate]


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="acceptsim", description=__doc__)
    parser.add_argument("--version", action="version", version=f"acceptsim {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.main(args) or 0)
    except (ConfigError, PolicyError) as exc:
        sys.stderr.write(f"acceptsim {args.command}: error: {exc}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("acceptsim: interrupted\n")
        return 130


if __name__ == "__main__":
    sys.exit(main())
