"""``make build-pgo``'s training run (setup.py, ``PGO_TRAINING``) runs, and runs every
server and layout whose speed the README states (``make bench-instructions``' set): a
training run that fails leaves a plain build with a warning nobody reads in a long build's
output, and one that skips a server leaves that server's code laid out without its
profile."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def constant(name: str, path: str = "setup.py") -> object:
    """A constant of a script, read without running it (setup.py builds when it runs)."""
    tree = ast.parse((ROOT / path).read_text())
    for node in tree.body:
        names = [getattr(t, "id", None) for t in getattr(node, "targets", [])]
        if isinstance(node, ast.Assign) and names == [name]:
            return ast.literal_eval(node.value)
    raise AssertionError(f"{path} has no {name}")


def test_the_training_run_runs_the_benchs_servers() -> None:
    training = constant("PGO_TRAINING")
    assert isinstance(training, tuple)
    done = subprocess.run([sys.executable, "-m", "acceptsim.cli", *training],
                          env={**os.environ, "ACCEPTSIM_CACHE": "off"},
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    ran = json.loads(done.stdout)
    measured = str(constant("DEFAULT_SERVERS", "tools/instructions.py")).split(",")
    assert sorted(ran) == sorted(measured)
    assert all(r["conns_attempted"] > 0 and r["hot_path"] == "compiled (mypyc)"
               for r in ran.values()) or os.environ.get("ACCEPTSIM_PURE_PYTHON") == "1"


def test_the_profile_options_keep_the_floating_point_arithmetic() -> None:
    """The results stay the same to the bit only if no option lets the compiler reorder or
    contract floating-point operations."""
    for name in ("PGO_GENERATE", "PGO_USE"):
        options = constant(name)
        assert isinstance(options, tuple)
        for option in options:
            assert not option.startswith(("-ffast-math", "-Ofast", "-ffp-contract=fast",
                                          "-fassociative-math", "-funsafe-math")), option
