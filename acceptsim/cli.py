"""The ``acceptsim`` command.

Every failure a user can cause ends with one line on stderr and exit status 2
(a :class:`~acceptsim.sim.errors.ConfigError` names the field, the value and what is
allowed).  SIGINT stops a command with exit status 130, SIGTERM with 143, one
line each; a sweep keeps every run that finished (``--resume`` continues it).
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from collections.abc import Iterator, Sequence

from acceptsim import __version__
from acceptsim.commands import (
    cmd_bench,
    cmd_calibrate,
    cmd_compare,
    cmd_measure,
    cmd_measure_costs,
    cmd_oracle,
    cmd_plot,
    cmd_policies,
    cmd_reproduce,
    cmd_run,
    cmd_search,
    cmd_servers,
    cmd_sweep,
)
from acceptsim.measure.parse_errors import ParseError
from acceptsim.models.policies import PolicyError
from acceptsim.sim.errors import ConfigError, shorten
from acceptsim.sim.params import plain_text

COMMANDS = [
    cmd_run, cmd_servers, cmd_policies, cmd_search, cmd_compare, cmd_oracle, cmd_reproduce,
    cmd_sweep, cmd_bench, cmd_measure, cmd_measure_costs, cmd_calibrate, cmd_plot,
]


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is so that it stops as on SIGINT (the same
    clean-up runs: a sweep's finished runs are on disk, worker processes are ended)."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: error: {shorten(message, 400)}\n")
        raise SystemExit(2)


class _Version(argparse.Action):
    """``--version``: the package version and the simulation hot path in use."""

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        from acceptsim.sim import native

        print(f"acceptsim {__version__} (hot path: {native.path_in_use()})")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="acceptsim", description=plain_text(__doc__ or ""))
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and the "
                        "hot path in use (compiled or pure Python), and exit")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated()


@contextlib.contextmanager
def _sigterm_stops() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` while the command runs (main thread only)."""
    try:
        previous = signal.signal(signal.SIGTERM, _raise_terminated)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    prog = f"acceptsim {args.command}"
    try:
        with _sigterm_stops():
            return int(args.main(args) or 0)
    except (ConfigError, PolicyError) as exc:
        return _fail(prog, str(exc))
    except ParseError as exc:
        return _fail(prog, f"{shorten(exc.path)}:{exc.line}: {shorten(exc.message, 300)}")
    except OSError as exc:  # e.g. --out or --plot not writable
        where = shorten(str(exc.filename)) if exc.filename is not None else "a file"
        return _fail(prog, f"{where}: {exc.strerror or exc}")
    except KeyboardInterrupt as exc:
        terminated = isinstance(exc, Terminated)
        note = "; ".join(getattr(exc, "__notes__", []))
        name = "SIGTERM" if terminated else "SIGINT"
        sys.stderr.write(f"{prog}: stopped by {name}" + (f"; {note}" if note else "") + "\n")
        return 143 if terminated else 130


def _fail(prog: str, message: str) -> int:
    sys.stderr.write(f"{prog}: error: {message}\n")
    return 2


if __name__ == "__main__":
    sys.exit(main())
