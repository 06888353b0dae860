"""Fuzzing the command line and the TOML files a user hands it (hypothesis).

Whatever the options and files, ``acceptsim`` ends with exit status 0 or 2,
never a traceback; a refusal is one line on stderr; and with the work bounds
turned down (a few thousand connection attempts per run, a handful of runs per
sweep) no command runs longer than a few seconds.  The default test run tries
a couple of hundred cases in all; ``make test-slow`` runs the ``slow`` variant
with over a thousand per target.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import itertools
import resource
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import tomli_w
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import acceptsim.models.work as work
from acceptsim.cli import main
from acceptsim.measure import load_run
from acceptsim.measure.parse_errors import ParseError
from acceptsim.models.config import RunConfig
from acceptsim.models.costs import HostCosts
from acceptsim.models.policies import POLICIES
from acceptsim.models.servers.registry import SERVERS
from acceptsim.models.workloads import WORKLOADS
from acceptsim.sim.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]
SAMPLE_RUN = REPO / "tests" / "data" / "measured" / "nginx-loopback"
#: a command that may run (the work bounds are turned down) uses at most this much
#: processor time (s)
SECONDS = 5.0
#: and lasts at most this long (s)
WALL_SECONDS = 20.0

DEFAULT = settings(
    max_examples=150, deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)  # fmt: skip
SLOW = settings(
    max_examples=1200, deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)  # fmt: skip

# -- values a careless or hostile user types --------------------------------------------------
NASTY = [
    "", " ", "0", "-0", "-1", "1e308", "-1e308", "1e-320", "5e-324", "1e-9", "nan", "inf",
    "-inf", "Infinity", "1_000", "0x10", "1e", ".", "+", "\uff11\uff10", "\u0661\u0660", "9" * 23,
    "9" * 400, "18446744073709551616", "abc", "1,000", "10 20", "x" * 5000, "'", '"', "\\",
    "=", "a=b", "[", "{", "\n", "../../etc/passwd", "/", "/dev/zero", "/etc/shadow",
]  # fmt: skip
TEXT = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)),
               max_size=12)  # fmt: skip
NUMBERISH = st.one_of(
    st.sampled_from(NASTY),
    st.floats().map(repr),
    st.integers(-(10**25), 10**25).map(str),
    TEXT,
)
SMALL_RATE = st.sampled_from(["1", "50", "800", "2000", "2999"])
SMALL_TIME = st.sampled_from(["0.000001", "0.01", "0.2", "1", "1.5"])
#: names that are valid somewhere, so that values get past the name check
SERVER_FIELDS = sorted({r["name"] for spec in SERVERS.values() for r in spec.params.describe()})
WORKLOAD_FIELDS = sorted({r["name"] for _, p in WORKLOADS.values() for r in p.describe()})
VALUE = st.one_of(st.sampled_from(["1", "0", "-1", "1e18", "1e-320", "inf", "true", "x"]), TEXT)


def assignment(names: list[str]) -> st.SearchStrategy[str]:
    return st.builds(lambda n, v: f"{n}={v}", st.one_of(st.sampled_from(names), TEXT), VALUE)


def choice_or_junk(choices: list[str]) -> st.SearchStrategy[str]:
    """Mostly a valid choice (so that later checks are reached), sometimes junk."""
    valid = st.sampled_from(choices)
    return st.one_of(valid, valid, valid, st.sampled_from(NASTY), TEXT)


def valid_or_junk(valid: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(valid, valid, valid, NUMBERISH)


RUN_OPTIONS: dict[str, st.SearchStrategy[Any]] = {
    "--server": choice_or_junk(list(SERVERS)),
    "--accept-limit": valid_or_junk(st.sampled_from(["1", "10", "inf", "INF"])),
    "--workload": choice_or_junk(list(WORKLOADS)),
    "--workload-file": choice_or_junk(["", "/nonexistent/s.log", "/", str(REPO / "README.md")]),
    "--warmup": valid_or_junk(st.sampled_from(["0", "0.000001", "0.1"])),
    "--seed": valid_or_junk(st.sampled_from(["0", "1", str(2**63 - 1), str(2**63)])),
    "--spacing": choice_or_junk(["poisson", "deterministic"]),
    "--timeout": valid_or_junk(SMALL_TIME),
    "--idle-connections": valid_or_junk(st.sampled_from(["0", "5", "1000000", "1000001"])),
    "--server-param": st.lists(assignment(SERVER_FIELDS), max_size=2),
    "--workload-param": st.lists(assignment(WORKLOAD_FIELDS), max_size=2),
    "--kernel": choice_or_junk(["linux-2.4", "linux-modern"]),
    "--params": choice_or_junk(["cluster1", "cluster2", "/nonexistent.toml", "/", "."]),
    "--policy": choice_or_junk(list(POLICIES)),
    "--policy-param": st.lists(st.one_of(assignment(["limit", "interval_s", "decrease"]), TEXT),
                               max_size=2),  # fmt: skip
    "--rate-profile": choice_or_junk([
        "step:1000@0,2000@0.5", "ramp:10@0,2999@1", "sine:mean=1000,amplitude=500,period=0.5",
        "bursty:low=100,high=2000,low_s=0.1,high_s=0.1", "step:1e308@0", "sine:period=0",
        "bursty:low=1,high=1,low_s=1e-320,high_s=1e-320", "step:", "ramp:1@-1",
    ]),  # fmt: skip
    "--timeseries": valid_or_junk(st.sampled_from(["0.1", "0.001"])),
    "--format": st.sampled_from(["json", "table", "xml"]),
}


#: option values that are all allowed, so that runs happen (then within the bounds)
VALID_OPTIONS: dict[str, st.SearchStrategy[Any]] = {
    "--server": st.sampled_from(list(SERVERS)),
    "--accept-limit": st.sampled_from(["1", "2", "10", "inf"]),
    "--warmup": st.sampled_from(["0", "0.000001", "0.05"]),
    "--seed": st.sampled_from(["0", "1", "7", str(2**63 - 1)]),
    "--spacing": st.sampled_from(["poisson", "deterministic"]),
    "--timeout": st.sampled_from(["0.000001", "0.01", "1", "1e9"]),
    "--kernel": st.sampled_from(["linux-2.4", "linux-modern"]),
    "--params": st.sampled_from(["cluster1", "cluster2"]),
    "--policy": st.sampled_from(list(POLICIES)),
    "--rate-profile": st.sampled_from(["step:1000@0,2000@0.1", "ramp:10@0,1999@0.2",
                                       "sine:mean=1000,amplitude=500,period=0.05"]),
    "--timeseries": st.sampled_from(["0.01", "0.05"]),
    "--format": st.sampled_from(["json", "table"]),
}  # fmt: skip


@st.composite
def run_argv(draw: st.DrawFn) -> list[str]:
    if draw(st.booleans()):  # every value allowed: the run happens, within the bounds
        argv = ["run", "--rate", draw(SMALL_RATE), "--duration", draw(st.sampled_from(["0.1",
                "0.3", "1"]))]  # fmt: skip
        for flag in draw(st.lists(st.sampled_from(sorted(VALID_OPTIONS)), max_size=6,
                                  unique=True)):  # fmt: skip
            argv.append(f"{flag}={draw(VALID_OPTIONS[flag])}")
        return argv
    argv = ["run"]
    # usually a rate and duration a bounded run can afford, sometimes anything (or none)
    for flag, small in (("--rate", SMALL_RATE), ("--duration", SMALL_TIME)):
        value = draw(st.one_of(small, small, small, NUMBERISH, st.none()))
        if value is not None:
            argv += [flag, value]
    chosen = draw(st.lists(st.sampled_from(sorted(RUN_OPTIONS)), max_size=5, unique=True))
    for flag in chosen:
        value = draw(RUN_OPTIONS[flag])
        for item in value if isinstance(value, list) else [value]:
            argv += [f"{flag}={item}"] if draw(st.booleans()) else [flag, item]
    if draw(st.booleans()):  # --force lifts the bounds: then only options that stay cheap
        argv = ["run", "--rate", draw(SMALL_RATE), "--duration", draw(SMALL_TIME), "--force"]
        for flag in chosen:
            if flag not in SCALING:
                value = draw(RUN_OPTIONS[flag])
                for item in value if isinstance(value, list) else [value]:
                    argv += [flag, item]
    return argv


#: options that can make a forced run arbitrarily long
SCALING = {"--timeseries", "--idle-connections", "--server-param", "--workload-param",
           "--rate-profile"}  # fmt: skip


@contextlib.contextmanager
def small_bounds() -> Iterator[None]:
    """Work bounds low enough that anything accepted without --force finishes in moments."""
    sweep_module = importlib.import_module("acceptsim.sim.sweep")  # the CLI imports it lazily
    with (
        mock.patch.object(work, "MAX_ATTEMPTS", 3000.0),
        mock.patch.object(work, "MAX_SERIES_POINTS", 300.0),
        mock.patch.object(work, "MAX_PROCESSES", 2000),
        mock.patch.object(sweep_module, "MAX_RUNS", 4),
    ):
        yield


def cpu_seconds() -> float:
    """Processor time of this process and of its children it has reaped."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def check_cli(argv: list[str]) -> None:
    """``acceptsim ARGV`` exits 0 or 2 within SECONDS of processor time (and WALL_SECONDS
    of wall time: a command that waits); exit 2 says why in one line.  Processor time,
    because the slow tests run beside others that use processes of their own (a bench
    call took 6.2 s of wall time so, where the same test alone passes)."""
    out, err = io.StringIO(), io.StringIO()
    started, cpu_started = time.perf_counter(), cpu_seconds()
    with small_bounds(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse: usage errors, --help
            code = exc.code if isinstance(exc.code, int) else 2
    wall = time.perf_counter() - started
    elapsed = cpu_seconds() - cpu_started
    text = err.getvalue()
    event(f"{argv[0]}: exit {code}")
    assert code in (0, 2), (argv, code, text)
    if code == 2:
        lines = text.splitlines()
        assert len(lines) == 1 or lines[-1].startswith("acceptsim"), (argv, text)
        assert lines and len(lines[-1]) < 1000, (argv, text)
    assert "Traceback" not in text
    forced = "--force" in argv
    assert (elapsed < SECONDS and wall < WALL_SECONDS) or forced, (argv, elapsed, wall)


# -- the command line ---------------------------------------------------------------------------
@DEFAULT
@given(argv=run_argv())
def test_fuzz_run_options(argv: list[str]) -> None:
    check_cli(argv)


@pytest.mark.slow
@SLOW
@given(argv=run_argv())
def test_fuzz_run_options_many(argv: list[str]) -> None:
    check_cli(argv)


# -- the TOML files -------------------------------------------------------------------------------
TOML_SCALAR = st.one_of(
    st.integers(-(2**63), 2**63 - 1), st.floats(), st.booleans(), TEXT,
    st.sampled_from([1e-320, 1e308, 2**63 - 1, -1, 0, 0.0, "inf", "cluster1", "linux-2.4"]),
)  # fmt: skip
TOML_VALUE = st.recursive(
    TOML_SCALAR,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(TEXT, inner, max_size=3)),  # fmt: skip
    max_leaves=6,
)
COST_FIELDS = [r["name"] for r in HostCosts.describe()]
CONFIG_FIELDS = [r["name"] for r in RunConfig.describe()] + ["costs", "kernel", "server_params",
                                                             "workload_params"]  # fmt: skip


def toml_text(data: dict[str, Any]) -> str:
    try:
        return tomli_w.dumps(data)
    except (TypeError, ValueError):  # a value TOML cannot hold: write some text instead
        return "x = [\n"


def table(names: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(st.one_of(st.sampled_from(names), TEXT), TOML_VALUE, max_size=5)


FILE_TEXT = st.one_of(
    st.text(max_size=200),
    st.binary(max_size=60).map(lambda b: b.decode("latin-1")),
)

PARAMS_FILE = st.one_of(
    FILE_TEXT,
    st.builds(lambda costs, kernel: toml_text({**costs, **({"kernel": kernel} if kernel else {})}),
              table(COST_FIELDS + ["base"]),
              st.one_of(st.none(), table(["name", "somaxconn", "syncookies", "profile"]))),
)  # fmt: skip


@st.composite
def scenario_text(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 4)) == 0:
        return draw(FILE_TEXT)
    data: dict[str, Any] = {"name": draw(st.one_of(st.just("fuzzed"), TOML_VALUE))}
    base = {"duration_s": 0.3, "warmup_s": 0.1, "rate_per_s": 1000}
    base.update(draw(table(CONFIG_FIELDS)))
    data["base"] = draw(st.one_of(st.just(base), TOML_VALUE))
    sweep = draw(st.dictionaries(st.one_of(st.sampled_from(CONFIG_FIELDS), TEXT),
                                 st.one_of(st.lists(TOML_SCALAR, max_size=3), TOML_VALUE),
                                 max_size=2))  # fmt: skip
    if sweep:
        data["sweep"] = sweep
    for key in draw(st.lists(st.sampled_from(["title", "plot", "expect", "junk"]), max_size=2)):
        data[key] = draw(TOML_VALUE)
    return toml_text(data)


_counter = itertools.count()


def check_params_file(tmp_path: Path, text: str) -> None:
    path = tmp_path / "params.toml"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    check_cli(["run", "--rate", "1000", "--duration", "0.3", "--params", str(path)])


def check_scenario_file(tmp_path: Path, text: str) -> None:
    path = tmp_path / "scenario.toml"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    out = tmp_path / f"out{next(_counter)}"
    check_cli(["sweep", str(path), "--jobs", "1", "--quiet", "--out", str(out)])
    shutil.rmtree(out, ignore_errors=True)


@DEFAULT
@given(text=PARAMS_FILE)
def test_fuzz_params_files(tmp_path: Path, text: str) -> None:
    check_params_file(tmp_path, text)


@settings(DEFAULT, max_examples=40)
@given(text=scenario_text())
def test_fuzz_scenario_files(tmp_path: Path, text: str) -> None:
    check_scenario_file(tmp_path, text)


@pytest.mark.slow
@SLOW
@given(text=PARAMS_FILE)
def test_fuzz_params_files_many(tmp_path: Path, text: str) -> None:
    check_params_file(tmp_path, text)


@pytest.mark.slow
@SLOW
@given(text=scenario_text())
def test_fuzz_scenario_files_many(tmp_path: Path, text: str) -> None:
    check_scenario_file(tmp_path, text)


# -- run.toml of a measured run -------------------------------------------------------------------
RUN_TABLES = {
    "server": ["name", "version", "worker_processes", "multi_accept", "backlog", "cpu_quota",
               "cpu_period_us"],
    "kernel": ["profile", "somaxconn", "tcp_syncookies"],
    "load": ["target_rate_per_s", "duration_s", "timeout_s", "processes", "spacing", "port"],
    "counters": ["before", "after"],
    "host": ["cpus", "repeat", "started_at"],
}  # fmt: skip
COUNTER_NAMES = st.sampled_from([
    "counters-after.txt", "../secret.txt", "/etc/hostname", "link-out.txt", "./counters-after.txt",
    "a/../../secret.txt", "", "nonexistent.txt", ".", "..",
])  # fmt: skip


@st.composite
def run_toml(draw: st.DrawFn, original: dict[str, Any]) -> str:
    if draw(st.integers(0, 5)) == 0:
        return draw(FILE_TEXT)
    data = {k: (dict(v) if isinstance(v, dict) else v) for k, v in original.items()}
    for name in draw(st.lists(st.sampled_from(sorted(RUN_TABLES)), max_size=3, unique=True)):
        section = data.setdefault(name, {})
        if not isinstance(section, dict):
            continue
        for key in draw(st.lists(st.sampled_from(RUN_TABLES[name]), max_size=2, unique=True)):
            if name == "counters":
                section[key] = draw(st.one_of(st.lists(COUNTER_NAMES, max_size=2),
                                              COUNTER_NAMES, TOML_VALUE))  # fmt: skip
            else:
                section[key] = draw(TOML_VALUE)
    for key in draw(st.lists(st.one_of(st.sampled_from(["format", "label"]), TEXT), max_size=1)):
        data[key] = draw(TOML_VALUE)
    return toml_text(data)


def _sample_dir() -> Path:
    return next(p for p in sorted(SAMPLE_RUN.iterdir()) if (p / "run.toml").is_file())


def _original() -> dict[str, Any]:
    import tomllib

    return tomllib.loads((_sample_dir() / "run.toml").read_text())


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    target = tmp_path / "runs" / "one"
    shutil.copytree(_sample_dir(), target)
    secret = tmp_path / "runs" / "secret.txt"  # a counter file, with one counter of its own
    secret.write_text((target / "counters-after.txt").read_text() + "TcpExtSECRET 4242 0.0\n")
    (target / "link-out.txt").symlink_to(secret)
    return target


def check_run_dir(run_dir: Path, text: str, read: Callable[[Path], Any]) -> None:
    (run_dir / "run.toml").write_text(text, encoding="utf-8", errors="surrogateescape")
    try:
        run = read(run_dir)
    except (ConfigError, ParseError) as exc:
        assert "\n" not in str(exc)
        event("run.toml refused")
        return
    event("run.toml read")
    # whatever was read came from inside the run directory
    assert "SECRET" not in repr(run.counters_before) + repr(run.counters_after)


@settings(DEFAULT, max_examples=80)
@given(text=run_toml(_original()))
def test_fuzz_run_toml_never_reads_outside_the_run_directory(run_dir: Path, text: str) -> None:
    check_run_dir(run_dir, text, load_run)


@pytest.mark.slow
@SLOW
@given(text=run_toml(_original()))
def test_fuzz_run_toml_many(run_dir: Path, text: str) -> None:
    check_run_dir(run_dir, text, load_run)


# -- the other commands' options ------------------------------------------------------------------
TINY_SCENARIO = """\
name = "tiny"
title = "one small point"
[base]
rate_per_s = 1000
duration_s = 0.3
warmup_s = 0.1
[sweep]
accept_limit = [1]
"""
FIELD_NAMES = st.one_of(st.sampled_from(CONFIG_FIELDS), TEXT)
SWEEP_OPTIONS: dict[str, st.SearchStrategy[Any]] = {
    "--jobs": valid_or_junk(st.sampled_from(["1", "1", "2"])),
    "--replications": valid_or_junk(st.sampled_from(["1", "2", "4", "5"])),
    "--duration": valid_or_junk(st.sampled_from(["0.2", "0.5"])),
    "--warmup": valid_or_junk(st.sampled_from(["0", "0.1"])),
    "--set": st.lists(st.builds(lambda k, v: f"{k}={v}", FIELD_NAMES, VALUE), max_size=2),
    "--vary": st.lists(st.builds(lambda k, vs: f"{k}={','.join(vs)}", FIELD_NAMES,
                                 st.lists(VALUE, max_size=3)), max_size=2),  # fmt: skip
    "--detect-warmup": st.just(None),
    "--series-interval": valid_or_junk(st.sampled_from(["0.01", "0.02"])),
    "--metric": choice_or_junk(["reply_rate_per_s", "drops_per_s.total"]),
    "--target-ci": valid_or_junk(st.sampled_from(["0.5", "0.01"])),
    "--max-replications": valid_or_junk(st.sampled_from(["2", "3", "4"])),
    "--resume": st.just(None),
}
OTHER_COMMANDS: dict[str, dict[str, st.SearchStrategy[Any]]] = {
    "search": {
        "--rate": valid_or_junk(SMALL_RATE),
        "--duration": valid_or_junk(st.sampled_from(["0.2", "0.3"])),
        "--warmup": valid_or_junk(st.just("0")),
        "--replications": valid_or_junk(st.sampled_from(["2", "1"])),
        "--candidates": choice_or_junk(["1,inf", "1,2", "", ",", "0", "inf,inf"]),
        "--indifference": valid_or_junk(st.sampled_from(["0", "0.05", "1"])),
        "--policy": choice_or_junk(list(POLICIES)),
        "--tune": st.lists(st.builds(lambda k, lo, hi: f"{k}={lo}:{hi}",
                                     st.sampled_from(["interval_s", "decrease", "x"]),
                                     NUMBERISH, NUMBERISH), max_size=1),  # fmt: skip
        "--max-evals": valid_or_junk(st.sampled_from(["1", "2"])),
        "--set": st.lists(st.builds(lambda k, v: f"{k}={v}", FIELD_NAMES, VALUE), max_size=1),
    },
    "bench": {
        "--duration": valid_or_junk(st.sampled_from(["0.1", "0.2"])),
        "--rate": valid_or_junk(SMALL_RATE),
        "--accept-limit": valid_or_junk(st.sampled_from(["1", "inf"])),
        "--repeat": valid_or_junk(st.sampled_from(["1", "2"])),
        "--servers": choice_or_junk(["userver", "tux,knot", "", "userver,,"]),
    },
    "reproduce": {
        "--duration": valid_or_junk(st.sampled_from(["0.2", "0.3"])),
        "--warmup": valid_or_junk(st.just("0.05")),
        "--rates": choice_or_junk(["1000", "1000,2000", ",", "1e308", "0"]),
        "--jobs": st.just("1"),
    },
    "compare": {"--metric": choice_or_junk(["reply_rate_per_s"])},
    "validate": {"--seed": valid_or_junk(st.just("1")), "--jobs": st.just("1")},
    "calibrate": {"--jobs": st.just("1")},
    "policies": {},
}
#: always given (positional arguments first), so that the commands' own checks are reached
REQUIRED = {
    # one process: a pool per evaluation would measure forking, not the bounds
    "search": ["--rate", "1000", "--duration", "0.2", "--warmup", "0", "--jobs", "1",
               "--max-evals", "3"],
    "bench": ["--duration", "0.1", "--rate", "1000", "--servers", "userver"],
    "reproduce": ["--duration", "0.2", "--warmup", "0.05"],
}
PATHS = st.sampled_from(["/nonexistent", "/", ".", "/dev/zero", "x" * 5000, "", "tiny.toml",
                         str(SAMPLE_RUN)])  # fmt: skip


@st.composite
def other_argv(draw: st.DrawFn, tmp: Path) -> list[str]:
    command = draw(st.sampled_from(["sweep", *sorted(OTHER_COMMANDS)]))
    options = SWEEP_OPTIONS if command == "sweep" else OTHER_COMMANDS[command]
    argv = [command]
    if command in ("sweep", "reproduce"):
        argv.append(draw(st.one_of(st.just(str(tmp / "tiny.toml")), PATHS)))
    if command in ("compare", "validate", "calibrate"):
        argv.append(draw(PATHS))
    if command in ("sweep", "reproduce"):
        argv += ["--out", str(tmp / f"out{next(_counter)}")]
    if command == "sweep":
        argv += ["--quiet", "--jobs", "1"]
    argv += REQUIRED.get(command, [])
    flags = st.lists(st.sampled_from(sorted(options)), max_size=4, unique=True) if options else []
    for flag in draw(flags) if options else []:
        value = draw(options[flag])
        for item in value if isinstance(value, list) else [value]:
            argv += [flag] if item is None else [f"{flag}={item}"]
    return argv


def check_other(tmp_path: Path, data: st.DataObject) -> None:
    (tmp_path / "tiny.toml").write_text(TINY_SCENARIO)
    with contextlib.chdir(tmp_path):  # reproduce and friends write nothing in the repository
        check_cli(data.draw(other_argv(tmp_path)))


@settings(DEFAULT, max_examples=60)
@given(data=st.data())
def test_fuzz_other_commands(tmp_path: Path, data: st.DataObject) -> None:
    check_other(tmp_path, data)


@pytest.mark.slow
@SLOW
@given(data=st.data())
def test_fuzz_other_commands_many(tmp_path: Path, data: st.DataObject) -> None:
    check_other(tmp_path, data)


# -- the other files a user hands over: session files, httperf output, counters, parts -------------
NUMBER_TEXT = st.one_of(
    st.sampled_from(["0", "-1", "-7.9", "1e400", "nan", "inf", "99999999999999999999999", "x"]),
    st.integers(-(2**70), 2**70).map(str), st.floats(allow_nan=True).map(repr),
)  # fmt: skip


@st.composite
def session_text(draw: st.DrawFn) -> str:
    """httperf --wsesslog lines: URIs with attributes, blank lines, comments, junk."""
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.integers(0, 4))
        if kind == 0:
            lines.append("")
        elif kind == 1:
            lines.append(draw(TEXT))
        else:
            attrs = draw(st.lists(st.builds(lambda k, v: f"{k}={v}", st.sampled_from(
                ["think", "size", "method", "contents", "bogus"]), NUMBER_TEXT), max_size=3))
            lines.append(" ".join(["/" + draw(st.text("abc/", max_size=5)), *attrs]))
    return "\n".join(lines)


def check_session_file(tmp_path: Path, text: str) -> None:
    path = tmp_path / "sessions.log"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    check_cli(["run", "--rate", "200", "--duration", "0.3", "--workload", "wsesslog",
               "--workload-file", str(path)])


@st.composite
def mutated_lines(draw: st.DrawFn, original: str) -> str:
    """A measured file with some numbers replaced, some lines dropped or garbled."""
    import re

    out = []
    for line in original.splitlines():
        action = draw(st.integers(0, 12))
        if action == 0:
            continue
        if action == 1:
            out.append(draw(TEXT))
            continue
        if action == 2:
            line = re.sub(r"-?\d+(\.\d+)?", lambda _: draw(NUMBER_TEXT), line, count=1)
        out.append(line)
    return "\n".join(out) + "\n"


def check_measured_file(run_dir: Path, name: str, text: str) -> None:
    (run_dir / name).write_text(text, encoding="utf-8", errors="surrogateescape")
    try:
        load_run(run_dir)
    except (ConfigError, ParseError) as exc:
        assert "\n" not in str(exc)
        event(f"{name} refused")
        return
    event(f"{name} read")


def _sample_text(name: str) -> str:
    return (_sample_dir() / name).read_text()


@DEFAULT
@given(text=session_text())
def test_fuzz_session_files(tmp_path: Path, text: str) -> None:
    check_session_file(tmp_path, text)


@settings(DEFAULT, max_examples=60)
@given(text=mutated_lines(_sample_text("httperf.txt")))
def test_fuzz_httperf_output(run_dir: Path, text: str) -> None:
    check_measured_file(run_dir, "httperf.txt", text)


@settings(DEFAULT, max_examples=60)
@given(text=mutated_lines(_sample_text("counters-after.txt")))
def test_fuzz_counters_files(run_dir: Path, text: str) -> None:
    check_measured_file(run_dir, "counters-after.txt", text)


@settings(DEFAULT, max_examples=10)
@given(data=st.binary(max_size=64))
def test_fuzz_a_part_replaced_by_junk_is_run_again(tmp_path: Path, data: bytes) -> None:
    out = tmp_path / f"sweep{next(_counter)}"
    scenario = tmp_path / "tiny.toml"
    scenario.write_text(TINY_SCENARIO)
    check_cli(["sweep", str(scenario), "--jobs", "1", "--quiet", "--out", str(out),
               "--no-cache"])
    part = next((out / "parts").glob("*.parquet"))
    part.write_bytes(data)
    check_cli(["sweep", str(scenario), "--jobs", "1", "--quiet", "--out", str(out),
               "--resume", "--no-cache"])
    assert part.exists() and part.read_bytes()[:4] == b"PAR1"  # made again
    shutil.rmtree(out, ignore_errors=True)


@pytest.mark.slow
@SLOW
@given(text=session_text())
def test_fuzz_session_files_many(tmp_path: Path, text: str) -> None:
    check_session_file(tmp_path, text)


@pytest.mark.slow
@SLOW
@given(text=mutated_lines(_sample_text("httperf.txt")))
def test_fuzz_httperf_output_many(run_dir: Path, text: str) -> None:
    check_measured_file(run_dir, "httperf.txt", text)


@pytest.mark.slow
@SLOW
@given(text=mutated_lines(_sample_text("counters-after.txt")))
def test_fuzz_counters_files_many(run_dir: Path, text: str) -> None:
    check_measured_file(run_dir, "counters-after.txt", text)
