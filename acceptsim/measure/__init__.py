"""Measured runs: the on-disk format, its parsers and the real-testbed harness.

``load_run(dir)`` reads one run directory (``run.toml``, ``httperf.txt``,
counter snapshots) into a :class:`MeasuredRun`; ``MeasuredRun.record()`` is
a flat record in the simulator's metric names.
"""

from acceptsim.measure.counters import deltas, parse_counters, read_counters
from acceptsim.measure.httperf import HttperfReport, parse_httperf, read_httperf
from acceptsim.measure.parse_errors import ParseError
from acceptsim.measure.run import MeasuredRun, find_runs, load_run, load_runs, to_frame
from acceptsim.measure.runfile import RunInfo, parse_run_info, read_run_info

__all__ = [
    "HttperfReport",
    "MeasuredRun",
    "ParseError",
    "RunInfo",
    "deltas",
    "find_runs",
    "load_run",
    "load_runs",
    "parse_counters",
    "parse_httperf",
    "parse_run_info",
    "read_counters",
    "read_httperf",
    "read_run_info",
    "to_frame",
]
