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


def compiles(code: str, options: tuple[str, ...] = ()) -> bool:
    """Does this machine's C compiler compile ``code`` (a small C file, which may include
    Python's headers) with ``options``?"""
    from sysconfig import get_paths

    from setuptools._distutils.ccompiler import new_compiler
    from setuptools._distutils.sysconfig import customize_compiler

    compiler = new_compiler()
    customize_compiler(compiler)
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "probe.c"
        source.write_text(code)
        try:
            compiler.compile([str(source)], output_dir=tmp, include_dirs=[get_paths()["include"]],
                             extra_postargs=list(options))
        except Exception:  # noqa: BLE001 (any failure means: no)
            return False
    return True


def c_compiler_works() -> bool:
    """Can this machine build a Python extension?  (Compile one small C file.)"""
    return compiles("#include <Python.h>\nint probe(void) { return 0; }\n")


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
    return [option for group in groups
            if compiles("int probe(void) { return 0; }\n", ("-Werror", *group))
            for option in group]


def write_manifest(directory: Path) -> None:
    """Record each compiled module's source digest beside the build (``sim.native`` compares
    them with the sources at import: an edited source is never run from an older build)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / NATIVE.MANIFEST).write_text(NATIVE.manifest_text(ROOT / NATIVE.PACKAGE))


class BuildExt(build_ext):
    """setuptools' build_ext, plus the compiled modules' manifest when it built any."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # noqa: BLE001 (a compiler error: install the Python path)
            print(f"acceptsim: compiling the hot path failed ({exc!r}): installing the "
                  "pure-Python hot path", file=sys.stderr)
            self.remove_outputs()
            return
        if self.extensions:
            write_manifest(ROOT / NATIVE.PACKAGE / "sim")  # in place (editable installs)
            write_manifest(Path(self.build_lib) / NATIVE.PACKAGE / "sim")  # in the wheel

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
