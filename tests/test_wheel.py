"""The wheel works outside the checkout: built, installed into a fresh virtual environment,
and run from a folder that is not the checkout.

The wheel is built from a copy of the package's files (``pip wheel``, no build isolation:
what the build needs is in the test environment), installed with the fresh environment's
own ``pip`` (``--no-deps --no-index``: nothing is downloaded); the fresh environment reads
the dependencies (numpy, simpy, ...) from the test environment's site-packages through a
``.pth`` file.  The default run builds the pure-Python wheel (seconds); the slow run builds
the mypyc-compiled one, as ``pip install .`` on a machine with a C compiler does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: what the build reads
SOURCES = ("acceptsim", "setup.py", "pyproject.toml", "README.md", "LICENSE")


def build_wheel(tmp: Path, compiled: bool) -> Path:
    src = tmp / "src"
    src.mkdir()
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, symlinks=True, ignore=shutil.ignore_patterns(
                "__pycache__", "*.so", "_native_build.json"))
        else:
            shutil.copy2(path, src / name)
    env = {**os.environ, "ACCEPTSIM_PURE_PYTHON": "0" if compiled else "1"}
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--wheel-dir", str(tmp / "dist"), str(src)],
        env=env, check=True, capture_output=True, text=True,
    )  # fmt: skip
    (wheel,) = (tmp / "dist").glob("acceptsim-*.whl")
    return wheel


def fresh_environment(tmp: Path, wheel: Path) -> Path:
    """A new virtual environment with the wheel installed; returns its bin/ folder."""
    env_dir = tmp / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    bin_dir = env_dir / "bin"
    subprocess.run([str(bin_dir / "python"), "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-index", str(wheel)], check=True, capture_output=True, text=True)
    where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = subprocess.run([str(bin_dir / "python"), "-c", where], check=True,
                          capture_output=True, text=True).stdout.strip()
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(site, "test_dependencies.pth").write_text("\n".join(sorted(deps)) + "\n")
    return bin_dir


def run(bin_dir: Path, *args: str, cwd: Path) -> str:
    unset = ("PYTHONPATH", "ACCEPTSIM_PURE_PYTHON")
    env = {k: v for k, v in os.environ.items() if k not in unset}
    done = subprocess.run([str(bin_dir / args[0]), *args[1:]], cwd=cwd, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def check_wheel(tmp: Path, compiled: bool) -> None:
    wheel = build_wheel(tmp, compiled)
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"acceptsim"}, tops
    assert "acceptsim/scenarios/userver_one_packet.toml" in names
    assert "acceptsim/models/calibration_results.toml" in names
    bin_dir = fresh_environment(tmp, wheel)
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    version = run(bin_dir, "acceptsim", "--version", cwd=elsewhere)
    assert ("compiled (mypyc)" in version) == compiled, version
    listed = run(bin_dir, "acceptsim", "reproduce", "--list", cwd=elsewhere)
    assert "userver-one-packet" in listed and "tux-one-packet" in listed, listed
    record = json.loads(run(bin_dir, "acceptsim", "run", "--rate", "2000", "--duration", "1",
                            "--warmup", "0", "--format", "json", cwd=elsewhere))
    assert record["reply_rate_per_s"] > 1000
    probe = ("import importlib.util as u, acceptsim; "
             "print(u.find_spec('sim'), u.find_spec('models'), acceptsim.__file__)")
    sim_spec, models_spec, package = run(bin_dir, "python", "-c", probe, cwd=elsewhere).split()
    assert (sim_spec, models_spec) == ("None", "None")  # no generic top-level names
    assert Path(package).is_relative_to(bin_dir.parent), package  # the installed copy


def test_the_wheel_works_outside_the_checkout(tmp_path: Path) -> None:
    check_wheel(tmp_path, compiled=False)


@pytest.mark.slow
def test_the_compiled_wheel_works_outside_the_checkout(tmp_path: Path) -> None:
    check_wheel(tmp_path, compiled=True)
