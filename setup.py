"""Build acceptsim; compile its simulation hot path with mypyc where a C compiler is present.

Everything else about the package is declared in ``pyproject.toml``.  The
modules compiled are listed in ``acceptsim/sim/native.py`` (``COMPILED``).  Without a
working C compiler, or with ``ACCEPTSIM_PURE_PYTHON=1`` set while installing,
the install still succeeds and the Python sources run (``acceptsim --version``
says which path is in use).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def load_native() -> ModuleType:
    """acceptsim/sim/native.py (standard library only), loaded without importing the package."""
    spec = importlib.util.spec_from_file_location(
        "_acceptsim_native", ROOT / "acceptsim" / "sim" / "native.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


NATIVE = load_native()


def c_compiler_works() -> bool:
    """Can this machine build a Python extension?  (Compile one small C file.)"""
    from setuptools._distutils.ccompiler import new_compiler
    from setuptools._distutils.sysconfig import customize_compiler

    compiler = new_compiler()
    customize_compiler(compiler)
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "probe.c"
        source.write_text("#include <Python.h>\nint probe(void) { return 0; }\n")
        try:
            from sysconfig import get_paths

            compiler.compile([str(source)], output_dir=tmp, include_dirs=[get_paths()["include"]])
        except Exception:  # noqa: BLE001 (any failure means: no usable compiler)
            return False
    return True


#: C compiler options for the compiled hot path, each group kept only where the compiler
#: accepts it (:func:`accepted_options`).  mypyc puts the compiled modules and its runtime's
#: helpers (a list's item read and write, a float's boxing, ...) in one C file, but as
#: exported symbols of a shared library, which GCC must assume can be replaced when the
#: library is loaded, so it calls them instead of inlining them; hidden (the modules reach
#: each other through capsules, and Python finds the library's PyInit_ function, declared
#: visible, as before), they are inlined where the inliner allows, which the two limits
#: widen.  Measured (2026-12-07, ``python tools/instructions.py``): userver, TUX and Knot
#: 10,125, 12,343 and 7,955 instructions an attempt without them, 9,229, 11,278 and 7,358
#: with them; ``farm-bench -n 8`` of a 30-s run at 24,000/s, whole process: 0.92-0.95 of the
#: time.  None changes floating-point arithmetic (no contraction or reordering), so every
#: result is bit-for-bit the same (``tools/reference.py check``).
HOT_PATH_OPTIONS = (
    ("-fno-semantic-interposition", "-fvisibility=hidden"),
    ("--param", "max-inline-insns-auto=40", "--param", "inline-unit-growth=200"),
)


def accepted_options(groups: tuple[tuple[str, ...], ...]) -> list[str]:
    """The groups of ``groups`` this machine's C compiler accepts (a group it refuses, such
    as GCC's ``--param`` under another compiler, is left out), flattened."""
    from setuptools._distutils.ccompiler import new_compiler
    from setuptools._distutils.sysconfig import customize_compiler

    accepted: list[str] = []
    for group in groups:
        compiler = new_compiler()
        customize_compiler(compiler)
        with tempfile.TemporaryDirectory() as tmp:
            source = Path(tmp) / "probe.c"
            source.write_text("int probe(void) { return 0; }\n")
            try:
                compiler.compile([str(source)], output_dir=tmp, extra_postargs=["-Werror", *group])
            except Exception:  # noqa: BLE001 (refused: leave the group out)
                continue
        accepted.extend(group)
    return accepted


def write_manifest(directory: Path) -> None:
    """Record each compiled module's source digest beside the build (``sim.native`` compares
    them with the sources at import: an edited source is never run from an older build)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / NATIVE.MANIFEST).write_text(NATIVE.manifest_text(ROOT / NATIVE.PACKAGE))


#: ``ACCEPTSIM_PGO=1`` with an in-place build (``make build`` sets it): the hot path built
#: twice, GCC's profile-guided optimisation in between.  The first build counts what runs
#: (``-fprofile-generate``), the bench's runs of every server and case train it
#: (:data:`PGO_TRAINING`), and the second lays out branches and inlines by those counts
#: (``-fprofile-use``; what the training did not run is optimised as without a profile).
#: It needs the package's dependencies installed (the training imports them), so a wheel's
#: build never does it.  Where the compiler refuses the options, or the training fails,
#: the build is the plain one, and says why.  Like :data:`HOT_PATH_OPTIONS`, it changes no
#: floating-point arithmetic: every result is bit-for-bit the same.  Measured (2026-12-07):
#: instructions an attempt (``python tools/instructions.py``) userver 9,229 -> 8,702, TUX
#: 11,278 -> 10,639, Knot 7,358 -> 6,856; ``farm-bench -n 8``, whole process: 0.97 of the
#: time for the userver and Knot at 24,000/s (30 s), 0.95 for nginx on 4 CPUs at 80,000/s,
#: 0.99 for the userver on SPECweb99 (the training has no run that long).  It takes the
#: build from about one minute to two.
PGO_ENV = "ACCEPTSIM_PGO"

#: the training run of a profile-guided build: every server and case of ``acceptsim bench``
#: for 3 simulated seconds (about 10 s in all)
PGO_TRAINING = ("-m", "acceptsim", "bench", "--duration", "3", "--rounds", "1")


class BuildExt(build_ext):
    """setuptools' build_ext, plus the compiled modules' manifest when it built any, and a
    profile-guided build when asked (:data:`PGO_ENV`)."""

    def run(self) -> None:
        try:
            if self.extensions and self.inplace and os.environ.get(PGO_ENV, "") == "1":
                self.run_trained()
            else:
                super().run()
        except Exception as exc:  # noqa: BLE001 (a compiler error: install the Python path)
            print(f"acceptsim: compiling the hot path failed ({exc!r}): installing the "
                  "pure-Python hot path", file=sys.stderr)
            self.remove_outputs()
            return
        if self.extensions:
            write_manifest(ROOT / NATIVE.PACKAGE / "sim")  # in place (editable installs)
            write_manifest(Path(self.build_lib) / NATIVE.PACKAGE / "sim")  # in the wheel

    def run_trained(self) -> None:
        """Build with counters, train, build again with the counts (:data:`PGO_ENV`)."""
        profiles = Path(self.build_temp).resolve() / "pgo"
        generate = ("-fprofile-generate", f"-fprofile-dir={profiles}", "-fprofile-update=single")
        use = ("-fprofile-use", f"-fprofile-dir={profiles}", "-fprofile-partial-training",
               "-Wno-missing-profile")
        if len(accepted_options((generate, use))) != len(generate) + len(use):
            print("acceptsim: the C compiler refuses GCC's profile options: the plain build",
                  file=sys.stderr)
            super().run()
            return
        plain = [(ext, list(ext.extra_compile_args), list(ext.extra_link_args or []))
                 for ext in self.extensions]
        compiler = self.compiler  # (a name, or None; each run replaces it with an object)

        def build(compile_args: tuple[str, ...], link_args: tuple[str, ...]) -> None:
            for ext, compile_base, link_base in plain:
                ext.extra_compile_args = [*compile_base, *compile_args]
                ext.extra_link_args = [*link_base, *link_args]
            self.force = True  # every object again, whatever its age
            self.compiler = compiler
            super(BuildExt, self).run()

        shutil.rmtree(profiles, ignore_errors=True)
        build(generate, ("-fprofile-generate",))
        write_manifest(ROOT / NATIVE.PACKAGE / "sim")  # the training imports this build
        training = subprocess.run(
            [sys.executable, *PGO_TRAINING], cwd=ROOT, capture_output=True, text=True,
            env={**os.environ, "ACCEPTSIM_CACHE": "off", NATIVE.PURE_ENV: "0"},
        )
        if training.returncode != 0:
            print("acceptsim: the profile-guided build's training failed (exit "
                  f"{training.returncode}: {training.stderr.strip()[-300:]}): the plain build",
                  file=sys.stderr)
            build((), ())
            return
        if not any(profiles.rglob("*.gcda")):
            print("acceptsim: the profile-guided build's training wrote no profile (did it "
                  "run the Python sources?): the plain build", file=sys.stderr)
            build((), ())
            return
        build(use, ())

    def remove_outputs(self) -> None:
        """Remove what a failed build left: a partial build must not be imported."""
        for ext in self.extensions:
            for base in (Path(self.build_lib), ROOT):
                (base / self.get_ext_filename(ext.name)).unlink(missing_ok=True)
        self.extensions = []


def ext_modules() -> list[object]:
    if os.environ.get("ACCEPTSIM_PURE_PYTHON", "") == "1":
        print("acceptsim: ACCEPTSIM_PURE_PYTHON=1: not compiling the hot path", file=sys.stderr)
        return []
    if not c_compiler_works():
        print(
            "acceptsim: no working C compiler: installing the pure-Python hot path "
            "(correct, about half as fast)",
            file=sys.stderr,
        )
        return []
    # the other modules are type-checked only as far as the compiled ones use them
    options = ["--follow-imports=silent"]
    try:
        from mypyc.build import mypycify

        # compiled through the package's own path, so that the modules are named
        # acceptsim.sim.engine, ...
        sources = [f"{NATIVE.PACKAGE}/{path}" for path in NATIVE.COMPILED]
        extensions = mypycify(options + sources, opt_level="3", group_name="acceptsim._hot")
        extra = accepted_options(HOT_PATH_OPTIONS)
        for ext in extensions:
            ext.extra_compile_args = [*ext.extra_compile_args, *extra]
        return extensions
    except (Exception, SystemExit) as exc:  # noqa: BLE001 (mypyc exits on a type error)
        print(f"acceptsim: mypyc could not compile the hot path ({exc!r}): installing the "
              "pure-Python hot path", file=sys.stderr)
        return []


setup(ext_modules=ext_modules(), cmdclass={"build_ext": BuildExt})
