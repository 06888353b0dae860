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


#: the compiler options of a profile-guided build (``ACCEPTSIM_PGO=1``, ``make build-pgo``),
#: GCC's: the first build counts where its code goes ({dir}: the counts' folder), the second
#: lays the code out by those counts (hot functions together, cold blocks apart, the
#: branches' likely sides first); functions the training did not run stay as without
#: profile.  Neither changes floating-point arithmetic: the results are the same to the bit
PGO_GENERATE = ("-fprofile-generate={dir}", "-fprofile-update=single")
PGO_USE = ("-fprofile-use={dir}", "-fprofile-partial-training", "-Wno-missing-profile")
#: the training run between the two builds: the servers and layouts whose speed the
#: README states (``make bench-instructions``' set), two simulated seconds each
PGO_TRAINING = ("bench", "--servers", "userver,tux,knot,nginx-4cpu,userver-specweb99",
                "--duration", "2", "--rounds", "1")


class BuildExt(build_ext):
    """setuptools' build_ext, plus the compiled modules' manifest when it built any, and a
    profile-guided build when ``ACCEPTSIM_PGO=1`` asks for one."""

    def run(self) -> None:
        pgo = bool(self.extensions) and os.environ.get("ACCEPTSIM_PGO", "") == "1"
        try:
            if pgo:
                self.run_profile_guided()
            else:
                super().run()
        except Exception as exc:  # noqa: BLE001 (a compiler error: install the Python path)
            print(f"acceptsim: compiling the hot path failed ({exc!r}): installing the "
                  "pure-Python hot path", file=sys.stderr)
            self.remove_outputs()
            return
        if self.extensions:
            self.write_manifests()

    def write_manifests(self) -> None:
        write_manifest(ROOT / NATIVE.PACKAGE / "sim")  # in place (editable installs)
        write_manifest(Path(self.build_lib) / NATIVE.PACKAGE / "sim")  # in the wheel

    def run_profile_guided(self) -> None:
        """Build with counters, run :data:`PGO_TRAINING` on that build, build again from
        its counts.  A compiler without GCC's options, or a failed training run, leaves
        the plain build (and says so)."""
        import subprocess

        with tempfile.TemporaryDirectory(prefix="acceptsim-pgo-") as counts:
            generate = [o.format(dir=counts) for o in PGO_GENERATE]
            use = [o.format(dir=counts) for o in PGO_USE]
            if not (compiles("int probe(void) { return 0; }\n", ("-Werror", *generate))
                    and compiles("int probe(void) { return 0; }\n", ("-Werror", *use))):
                print("acceptsim: ACCEPTSIM_PGO=1, but the C compiler does not take GCC's "
                      "profile options: a plain build", file=sys.stderr)
                super().run()
                return
            plain = {ext.name: (list(ext.extra_compile_args), list(ext.extra_link_args))
                     for ext in self.extensions}
            for ext in self.extensions:
                ext.extra_compile_args = [*plain[ext.name][0], *generate]
                ext.extra_link_args = [*plain[ext.name][1], *generate]
            self.force = True
            compiler = self.compiler  # a name until run() makes it a compiler: each build
            super().run()  # starts from the name
            self.write_manifests()  # the training imports this build, not the sources
            where = ROOT if self.inplace else Path(self.build_lib)
            # on the instrumented build, or not at all (exit 3: the sources would run)
            train = ("import sys\nfrom acceptsim.sim import native\n"
                     "if not native.is_compiled():\n    sys.exit(3)\n"
                     "from acceptsim.cli import main\n"
                     f"sys.exit(main({list(PGO_TRAINING)!r}))\n")
            training = subprocess.run(
                [sys.executable, "-c", train],
                env={**os.environ, "PYTHONPATH": str(where), "ACCEPTSIM_CACHE": "off"},
                capture_output=True, text=True, check=False)
            if training.returncode != 0:
                print("acceptsim: ACCEPTSIM_PGO=1: the training run failed (exit "
                      f"{training.returncode}: {training.stderr.strip()[-500:]}): a plain "
                      "build", file=sys.stderr)
                use = []
            for ext in self.extensions:
                ext.extra_compile_args = [*plain[ext.name][0], *use]
                ext.extra_link_args = plain[ext.name][1]
            self.compiler = compiler
            super().run()

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
