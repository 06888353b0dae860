"""The compiled hot path (mypyc) and its Python sources give identical results.

Each way runs in its own process (the choice is made at import: :mod:`acceptsim.sim.native`)
over a reference set: every server with both paper workloads in overload, plus
policies, a CPU quota and the modern kernel profile.  Records are compared
field by field, bit for bit, except the simulator's own CPU-time figures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from acceptsim.sim import native

ROOT = Path(__file__).resolve().parents[1]

#: CI sets this so that a build that silently fell back to Python fails the run
REQUIRE_ENV = "ACCEPTSIM_REQUIRE_COMPILED"


CHILD = """
import json, sys
from acceptsim.models.experiment import RunConfig, simulate
from acceptsim.sim import native
out = {"path": native.path_in_use(), "records": []}
for fields in json.loads(sys.argv[1]):
    record = simulate(RunConfig.from_dict(fields))
    for name in json.loads(sys.argv[2]):
        record.pop(name, None)
    out["records"].append(record)
print(json.dumps(out, default=repr))
"""


def run_set(pure: bool, points: list[dict[str, object]], timing_fields: tuple[str, ...]
            ) -> dict[str, object]:
    env = {**os.environ, native.PURE_ENV: "1" if pure else "0"}
    child = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(points), json.dumps(timing_fields)],
        env=env, cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(child.stdout)


def test_ci_runs_the_compiled_build() -> None:
    if os.environ.get(REQUIRE_ENV) != "1":
        pytest.skip(f"{REQUIRE_ENV} not set (CI sets it)")
    assert native.is_compiled(), native.path_in_use()


def test_compiled_and_python_sources_give_identical_results(reference_tool: ModuleType) -> None:
    if not native.is_compiled():
        pytest.skip(f"the compiled hot path is not in use: {native.path_in_use()}")
    points = reference_tool.reference_set()  # the set tools/reference.py records
    timing = reference_tool.TIMING_FIELDS
    compiled = run_set(pure=False, points=points, timing_fields=timing)
    python = run_set(pure=True, points=points, timing_fields=timing)
    assert compiled["path"] == "compiled (mypyc)"
    assert str(python["path"]).startswith("pure Python")
    for fields, a, b in zip(points, compiled["records"], python["records"], strict=True):
        assert a == b, f"compiled and Python results differ for {fields}: " + str(
            {k: (a.get(k), b.get(k)) for k in set(a) | set(b) if a.get(k) != b.get(k)}
        )


def test_pure_python_switch_loads_the_sources() -> None:
    code = ("import acceptsim.sim.engine as e, acceptsim.models.kernel as k; "
            "print(e.__file__, k.__file__)")
    env = {**os.environ, native.PURE_ENV: "1"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    assert all(path.endswith(".py") for path in out), out


def test_a_source_edited_since_the_build_runs_from_source() -> None:
    """A source that differs from the one compiled must not run as the old build."""
    if not native.is_compiled():
        pytest.skip("no compiled build to make stale")
    manifest = ROOT / "acceptsim" / "sim" / native.MANIFEST
    recorded = manifest.read_text()
    digests = json.loads(recorded)
    digests["sim/cpu.py"] = "0" * 64  # as if sim/cpu.py had been edited after the build
    try:
        manifest.write_text(json.dumps(digests))
        code = "from acceptsim.sim import native; print(native.path_in_use())"
        child = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True,
            env={**os.environ, native.PURE_ENV: "0"},
        )  # fmt: skip
    finally:
        manifest.write_text(recorded)
    assert "older than its sources" in child.stdout and "sim/cpu.py" in child.stdout
    assert "pure-Python hot path" in child.stderr  # warned


def test_version_names_the_hot_path_in_use() -> None:
    for pure, expected in (("1", "pure Python"), ("0", native.path_in_use())):
        out = subprocess.run(
            [sys.executable, "-m", "acceptsim.cli", "--version"], capture_output=True, text=True,
            env={**os.environ, native.PURE_ENV: pure},
        )  # fmt: skip
        assert out.returncode == 0 and out.stdout.startswith("acceptsim "), out
        assert f"hot path: {expected}" in out.stdout
