"""Hand-made inputs shared by the measured-run tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from acceptsim.measure import find_runs, read_run_info

DATA = Path(__file__).resolve().parents[1] / "data" / "measured"
#: the HAProxy sets: replayed per set (tests/measure/test_haproxy_measure.py)
HAPROXY_SETS = sorted(DATA.glob("haproxy-*/*/"))
HAPROXY_RUN_DIRS = [d for s in HAPROXY_SETS for d in find_runs(s)]
#: the wrk runs (load.tool = "wrk": wrk.txt in place of httperf.txt; tests/test_wrk_client.py)
WRK_RUN_DIRS = [d for d in find_runs(DATA)
                if read_run_info(d / "run.toml").load.tool == "wrk"]
#: the nginx runs under httperf
RUN_DIRS = [d for d in find_runs(DATA)
            if d not in set(HAPROXY_RUN_DIRS) and d not in set(WRK_RUN_DIRS)]
#: the nginx runs by recorded set (the folder that holds them, relative to DATA): the
#: checks of every recorded run replay them one set a test (the ``run_set`` fixture)
RUN_SETS: dict[str, list[Path]] = {}
for _run in RUN_DIRS:
    RUN_SETS.setdefault(_run.parent.relative_to(DATA).as_posix() or ".", []).append(_run)


def replay(run_set: list[Path], check: Callable[[Path], object]) -> None:
    """``check(run_dir)`` on every folder of a recorded set, past any that fails: one
    assertion names every failing folder, each with what failed in it."""
    failures = []
    for run_dir in run_set:
        try:
            check(run_dir)
        except Exception as error:  # an assertion, or a reader's error: name the folder
            text = str(error).strip().replace("\n", "\n    ")
            failures.append(f"{run_dir.relative_to(DATA)}: {type(error).__name__}: {text}")
    assert run_set, "an empty set"
    assert not failures, (
        f"{check.__name__}: {len(failures)} of {len(run_set)} folders fail:\n"
        + "\n".join(failures)
    )

#: a well-formed single-process httperf 0.9 summary (copied from a real run)
HTTPERF_ONE = (
    "httperf --timeout=1 --client=0/1 --server=127.0.0.1 --port=18080 --uri=/index.html "
    "--rate=500 --send-buffer=4096 --recv-buffer=16384 --num-conns=2500 --num-calls=1\n"
) + """\
Maximum connect burst length: 4

Total: connections 2500 requests 2500 replies 2500 test-duration 4.998 s

Connection rate: 500.2 conn/s (2.0 ms/conn, <=4 concurrent connections)
Connection time [ms]: min 0.0 avg 0.3 max 7.6 median 0.5 stddev 0.9
Connection time [ms]: connect 0.0
Connection length [replies/conn]: 1.000

Request rate: 500.2 req/s (2.0 ms/req)
Request size [B]: 72.0

Reply rate [replies/s]: min 0.0 avg 0.0 max 0.0 stddev 0.0 (0 samples)
Reply time [ms]: response 0.3 transfer 0.0
Reply size [B]: header 238.0 content 900.0 footer 0.0 (total 1138.0)
Reply status: 1xx=0 2xx=2500 3xx=0 4xx=0 5xx=0

CPU time [s]: user 0.93 system 2.38 (user 18.6% system 47.7% total 66.2%)
Net I/O: 591.0 KB/s (4.8*10^6 bps)

Errors: total 0 client-timo 0 socket-timo 0 connrefused 0 connreset 0
Errors: fd-unavail 0 addrunavail 0 ftab-full 0 other 0
"""

#: the session lines httperf adds with --wsess / --wsesslog
SESSION_LINES = """\

Session rate [sess/s]: min 9.80 avg 10.00 max 10.20 stddev 0.14 (100/100)
Session: avg 3.00 connections/session
Session lifetime [s]: 0.3
Session failtime [s]: 0.0
Session length histogram: 0 0 0 100
"""
