"""Machine instructions per simulated connection attempt, under valgrind.

A timing on a shared machine drifts with its neighbours; an instruction
count does not (it is the same for the same interpreter, code and inputs),
so it is the measure to compare two versions of the code by.  Each server's
bench run (``acceptsim bench``: one-packet, 24,000 requests/s; its cases, nginx on
4 CPUs and the userver on the SPECweb99-like workload) is counted at two durations;
the difference in instructions over the difference in connection attempts
leaves out start-up (imports, set-up, the heap loop the bench times, results).

    python tools/instructions.py [--servers userver,tux,knot,nginx-4cpu,userver-specweb99]
                                 [--accept-limit L] [--rate R] [--general-loop]

Needs ``valgrind`` on the PATH; prints JSON ``{"<server>": instructions, ...}``.
Takes about half a minute per server (nginx on 4 CPUs about two).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

#: what ``make bench-instructions`` counts: the paper's three servers, nginx on 4 CPUs and
#: a SPECweb99-like run (``acceptsim bench``'s cases)
DEFAULT_SERVERS = "userver,tux,knot,nginx-4cpu,userver-specweb99"

#: simulated seconds of the short and the long run
DURATIONS_S = (1.0, 3.0)

#: run with address-space randomisation off (util-linux's setarch -R), where there is
#: setarch: objects hashed by address (sets and dicts of connections and events) are
#: then laid out alike in every run, and repeats of the same code count the same
#: instructions to within about 1% (with randomisation, up to 6% apart)
FIXED_ADDRESSES = (
    ["setarch", platform.machine(), "-R"] if shutil.which("setarch") is not None else []
)


def count(
    server: str, duration_s: float, accept_limit: str | None, rate: str | None = None,
    general_loop: bool = False,
) -> tuple[int, int]:
    """(instructions, simulated connection attempts) of one bench run under valgrind."""
    args = ["bench", "--servers", server, "--duration", str(duration_s), "--rounds", "1"]
    if accept_limit is not None:
        args += ["--accept-limit", accept_limit]
    if rate is not None:
        args += ["--rate", rate]
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            [*FIXED_ADDRESSES, "valgrind", "--tool=cachegrind", "--cache-sim=no",
             f"--cachegrind-out-file={Path(tmp) / 'cg.out'}",
             sys.executable, "-m", "acceptsim.cli", *args],
            capture_output=True, text=True, check=True,
            # string hashing is randomised per process; it orders sets and dicts of
            # strings, and with it the interpreter's work, by several per cent.  numpy's
            # BLAS threads spin for a while after start-up, for as long as the wall clock
            # says, so their count grew with the machine's load (Knot 12,700 alone, 14,800
            # beside a test run): one thread, none spinning
            env={**os.environ, "PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1",
                 "ACCEPTSIM_GENERAL_LOOP": "1" if general_loop else ""},
        )  # fmt: skip
    refs = re.search(r"I\s+refs:\s+([\d,]+)", out.stderr)
    if refs is None:
        raise RuntimeError(f"no instruction count in valgrind's output:\n{out.stderr[-2000:]}")
    attempts = json.loads(out.stdout)[server]["conns_attempted"]
    return int(refs.group(1).replace(",", "")), int(attempts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", default=DEFAULT_SERVERS)
    parser.add_argument("--accept-limit", default=None)
    parser.add_argument("--rate", default=None, help="target rate (default: the bench's)")
    parser.add_argument("--general-loop", action="store_true",
                        help="run one-CPU hosts on the general event loop too (to compare "
                        "with the one-CPU loop they run on otherwise)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="count each server this many times and report the median "
                        "(repeats agree within about 1 per cent with setarch, up to 6 per "
                        "cent without it)")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        parser.error("valgrind is not on the PATH")
    result = {}
    for server in args.servers.split(","):
        per_attempt = []
        for _ in range(max(args.repeat, 1)):
            (i0, c0), (i1, c1) = (
                count(server, d, args.accept_limit, args.rate, args.general_loop)
                for d in DURATIONS_S
            )
            per_attempt.append((i1 - i0) / (c1 - c0))
        result[server] = round(statistics.median(per_attempt))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
