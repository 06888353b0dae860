"""The ``acceptsim`` command.

Every failure a user can cause ends with one line on stderr and exit status 2
(a :class:`~acceptsim.sim.errors.ConfigError` names the field, the value and what is
allowed), and so does code of the user's (a policy or a server) that exits or raises
KeyboardInterrupt.  SIGINT stops a command with exit status 130, SIGTERM with 143, one
line each; a sweep keeps every run that finished (``--resume`` continues it).  Output
cut short by its reader (``acceptsim reproduce --list | head``) ends silently with 141,
as a Unix tool killed by SIGPIPE does.
``calibrate`` exits 3 when a fit ends on a bound of its parameter (nothing is written).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from types import ModuleType

from acceptsim import __version__

#: numpy's OpenBLAS starts a thread per core when it loads, and each spins for about a
#: tenth of a CPU-second before it sleeps (measured: importing the models took 0.32 CPU-s,
#: 0.21 with one thread), on a core a sweep's other run could use; no command multiplies
#: matrices large enough to gain from threads.  A value of the user's is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from acceptsim.sim.errors import ConfigError, shorten  # noqa: E402 (after the setting above)
from acceptsim.sim.params import plain_text  # noqa: E402

#: every command: its name, the module of ``acceptsim.commands`` that defines it and its
#: one-line help, in the order ``--help`` lists them.  A command's module is imported only
#: when that command runs (or when :func:`build_parser` is asked for every parser), so that
#: ``acceptsim --version`` and ``--help`` start without numpy's, pandas' or matplotlib's
#: imports; tests/test_cli_startup.py checks this table against the modules' own parsers.
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("cmd_run", "simulate one configuration"),
    "servers": ("cmd_servers", "list the servers, workloads and kernel profiles (one line "
                "each), or show one's parameters with units and defaults"),
    "policies": ("cmd_policies", "list the built-in accept policies and parameters"),
    "search": ("cmd_search", "find the best static accept-limit (or tune a policy's "
               "parameters)"),
    "compare": ("cmd_compare", "policies against the best static accept-limit, from a "
                "sweep's results"),
    "oracle": ("cmd_oracle", "per-interval best static accept-limit: the headroom for "
               "adaptation"),
    "reproduce": ("cmd_reproduce", "reproduce the paper's figures (the main job)"),
    "sweep": ("cmd_sweep", "run a scenario's sweep with replications (parallel, resumable, "
              "Parquet)"),
    "bench": ("cmd_bench", "simulated connection attempts per CPU-second"),
    "measure": ("cmd_measure", "measure a real nginx or HAProxy under httperf on the "
                "loopback address"),
    "measure-costs": ("cmd_measure_costs", "measure this host's per-operation costs (accept, "
                      "epoll, close, send, nginx per reply) and write a parameter file"),
    "calibrate": ("cmd_calibrate", "fit cost parameters to measured runs"),
    "validate": ("cmd_calibrate", "predicted against measured, per run"),
    "calibrate-paper": ("cmd_calibrate", "fit cost fields to the paper's published numbers"),
    "plot": ("cmd_plot", "figures of a stored sweep: curves with 95%% bands, a heat map, a "
             "policy's paired differences"),
}

#: the modules of the commands, each once, in COMMANDS' order
MODULES = list(dict.fromkeys(module for module, _ in COMMANDS.values()))


def command_module(module: str) -> ModuleType:
    """``acceptsim.commands.<module>``, imported now."""
    return importlib.import_module(f"acceptsim.commands.{module}")


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


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The command line's parser.  Without ``argv`` every command's parser is built (every
    command module imported); with it only the parser of the command ``argv`` names, the
    others listed by name and help (what ``--help`` prints is the same)."""
    parser = _Parser(prog="acceptsim", description=plain_text(__doc__ or ""))
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and the "
                        "hot path in use (compiled or pure Python), and exit")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    wanted = None if argv is None else _command_named(argv)
    added: set[str] = set()
    for name, (module, help_text) in COMMANDS.items():
        if argv is None or COMMANDS.get(wanted or "", ("",))[0] == module:
            if module not in added:  # the module adds each of its commands' parsers
                added.add(module)
                command_module(module).add_parser(sub)
        else:  # listed, never parsed: argv names another command
            sub.add_parser(name, help=help_text, add_help=False)
    return parser


def _command_named(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names: its first word that is not an option (``acceptsim``'s
    own options take no value)."""
    for word in argv:
        if word == "--" or not word.startswith("-"):
            return word if word != "--" else None
    return None


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
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    prog = f"acceptsim {args.command}"
    try:
        with _sigterm_stops():
            return int(args.main(args) or 0)
    except (ConfigError, *_loaded("acceptsim.models.policies", "PolicyError")) as exc:
        return _fail(prog, str(exc))
    except _loaded("acceptsim.measure.parse_errors", "ParseError") as exc:
        return _fail(prog, f"{shorten(exc.path)}:{exc.line}: {shorten(exc.message, 300)}")
    except BrokenPipeError:  # the reader of stdout stopped (`| head`): as a Unix tool does
        with contextlib.suppress(OSError):  # Python's own flush at exit would fail again
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except OSError as exc:  # e.g. --out or --plot not writable
        where = shorten(str(exc.filename)) if exc.filename is not None else "a file"
        return _fail(prog, f"{where}: {exc.strerror or exc}")
    except SystemExit as exc:  # raised by code of the user's in the run (a policy, a server)
        return _fail(prog, f"the run raised SystemExit({shorten(repr(exc.code), 60)}): code of "
                     "yours (a policy or server class) exited instead of returning")
    except KeyboardInterrupt as exc:
        terminated = isinstance(exc, Terminated)
        note = "; ".join(getattr(exc, "__notes__", []))
        name = "SIGTERM" if terminated else "SIGINT"
        sys.stderr.write(f"{prog}: stopped by {name}" + (f"; {note}" if note else "") + "\n")
        return 143 if terminated else 130


def _loaded(module: str, name: str) -> tuple[type[BaseException], ...]:
    """The exception class ``module.name`` if that module has been imported, else none: an
    exception of a module never imported cannot have been raised (and importing it here
    would cost every command its start-up)."""
    found = getattr(sys.modules.get(module), name, None)
    return (found,) if isinstance(found, type) and issubclass(found, BaseException) else ()


def _fail(prog: str, message: str) -> int:
    sys.stderr.write(f"{prog}: error: {message}\n")
    return 2


if __name__ == "__main__":
    sys.exit(main())
