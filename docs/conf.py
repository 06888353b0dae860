"""Sphinx configuration of the acceptsim documentation.

Build (from the repository root, with the package and its ``docs`` extra installed)::

    sphinx-build -b html docs docs/_build/html

The notebooks in ``docs/notebooks/`` are executed at
build time, at small scale; ``-D nb_execution_mode=off`` skips that.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _dist_version
from pathlib import Path

# -- environment of the build and of the notebook kernels it starts ----------------------------
# The kernels inherit this process's environment: the notebooks run their small variant
# (seconds per notebook, what the test suite runs) and their figures are drawn inline, as
# images in the page: the kernel's own inline backend, which a caller's MPLBACKEND (say,
# Agg for headless tests) would replace.
os.environ.setdefault("ACCEPTSIM_NOTEBOOK_SCALE", "small")
os.environ.pop("MPLBACKEND", None)
# autodoc must import the Python sources: the mypyc-compiled hot-path modules keep no
# docstrings (acceptsim/sim/native.py lists them).  The choice is made once per process, when
# acceptsim.sim is first imported; the notebooks' kernels (other processes) keep the
# caller's setting, and run the compiled path where there is one (identical records:
# tests/test_native.py).
_pure = os.environ.get("ACCEPTSIM_PURE_PYTHON")
os.environ["ACCEPTSIM_PURE_PYTHON"] = "1"
import acceptsim.sim  # noqa: E402, F401  (chooses the Python sources for this process)

if _pure is None:
    del os.environ["ACCEPTSIM_PURE_PYTHON"]
else:
    os.environ["ACCEPTSIM_PURE_PYTHON"] = _pure

ROOT = Path(__file__).resolve().parent.parent

# -- project -----------------------------------------------------------------------------------
project = "acceptsim"
author = "The acceptsim developers"  # as in CITATION.cff and LICENSE
copyright = f"2026, {author}"


def _release() -> str:
    """The installed distribution's version; else pyproject.toml's (a bare checkout)."""
    try:
        return _dist_version("acceptsim")
    except PackageNotFoundError:
        pass
    try:
        with open(ROOT / "pyproject.toml", "rb") as f:
            return str(tomllib.load(f)["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "unknown"


release = _release()
version = ".".join(release.split(".")[:2])

# -- general -----------------------------------------------------------------------------------
extensions = [
    "myst_nb",  # MyST markdown pages and notebooks (it loads myst_parser itself)
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
]

exclude_patterns = [
    "_build",
    "Thumbs.db",
    ".DS_Store",
    "**.ipynb_checkpoints",  # Jupyter's autosaves beside the notebooks
    "_generated",  # pieces written at build time and included by pages, not pages
]

# MyST: definition lists, and slugs for headings down to level 3, so that pages can link to
# sections of design.md (``design.md#knot-why-a-middle-accept-limit-wins``).
myst_enable_extensions = ["deflist"]
myst_heading_anchors = 3

# every cross-reference must resolve (a warning fails the build: make docs runs with -W)
nitpicky = True
# ...except the standard library's and third-party types in signatures: their inventories
# (intersphinx) would be fetched from the network, which a build must not need.  The
# project's own names are never ignored.
nitpick_ignore_regex = [
    ("py:class", r"(collections\.abc|collections|pathlib|typing|types|argparse|numpy|pandas|simpy)\..+"),
    # a dataclass's generated __init__ keeps its fields' annotations as strings, which
    # Sphinx splits at their commas ('dict[str, Any]' -> "'dict[str")
    ("py:class", r"'.*|.*'"),
]

# -- notebooks (myst-nb) -----------------------------------------------------------------------
nb_execution_mode = "force"
# the full-scale copies (tools/full_scale.py) are shown as they ran, never run again here
nb_execution_excludepatterns = ["full_scale/*"]
nb_execution_timeout = 600
nb_execution_raise_on_error = True
nb_execution_show_tb = True  # a failing cell's traceback in the build log
nb_merge_streams = True

# -- API reference -----------------------------------------------------------------------------
autodoc_member_order = "bysource"
autodoc_preserve_defaults = True  # `base=CLUSTER1`, not the whole cost set
autosummary_generate = False  # summary tables only; the entries are documented in api.md
# The code's docstrings are reST, with no Google or NumPy sections.  Napoleon's parsers
# misread them (each splits a property's or a ``#:`` comment's first line at its first
# colon into "type: description"), so both are off; turn one on for docstrings written
# in that style.
napoleon_google_docstring = False
napoleon_numpy_docstring = False

# -- HTML --------------------------------------------------------------------------------------
html_theme = "furo"
html_title = f"acceptsim {release}"

# -- docstrings of the code, adapted for autodoc -----------------------------------------------
_UNDERLINE = re.compile(r"^\s*([-=~^])\1{2,}\s*$")


def _headings_to_rubrics(lines: list[str]) -> None:
    """Turn reST section headings in a docstring (``Contract`` over ``--------``) into
    rubrics: a heading inside an autodoc entry would otherwise open a section of the
    page, or be an error inside a class or function entry."""
    i = 0
    while i < len(lines) - 1:
        title, rule = lines[i], lines[i + 1]
        if (
            title.strip()
            and _UNDERLINE.match(rule)
            and len(rule.strip()) >= len(title.strip())
            and (i == 0 or not lines[i - 1].strip())
        ):
            indent = title[: len(title) - len(title.lstrip())]
            lines[i : i + 2] = [f"{indent}.. rubric:: {title.strip()}", ""]
        i += 1


def _escape(text: str) -> str:
    """Plain text as reST (no markup is meant in a parameter's description)."""
    return re.sub(r"([\\`*_|])", r"\\\1", " ".join(str(text).split()))


def _params_class(obj: object) -> bool:
    if not isinstance(obj, type) or not dataclasses.is_dataclass(obj):
        return False
    return any(
        base.__name__ == "Params" and base.__module__.endswith("sim.params") for base in obj.__mro__
    )


def _process_docstring(app, what, name, obj, options, lines) -> None:
    _headings_to_rubrics(lines)
    if what != "class" or not _params_class(obj):
        return
    # a parameter set: its fields with unit, allowed values and meaning (Params.describe)
    if lines and lines[0].startswith(obj.__name__ + "("):
        lines.clear()  # the signature dataclasses writes for a class without a docstring
    rows = obj.describe()
    if not rows:
        return
    lines += [
        "",
        ".. rubric:: Fields",
        "",
        ".. list-table::",
        "   :header-rows: 1",
        "   :widths: 20 15 25 40",
        "",
        "   * - field",
        "     - default",
        "     - allowed",
        "     - meaning",
    ]
    for row in rows:
        meaning = _escape(row["doc"])
        if row["fitted"]:
            meaning += " *Fitted:* " + _escape(row["fitted"])
        lines += [
            f"   * - ``{row['name']}``",
            f"     - ``{row['default']!r}``",
            f"     - {_escape(row['allowed'])}",
            f"     - {meaning}",
        ]
    lines.append("")


def _process_signature(app, what, name, obj, options, signature, return_annotation):
    # a parameter set's constructor takes its fields as keywords; the field table says which
    # (the generated signature repeats every default, e.g. a whole HostCosts in RunConfig's)
    if what == "class" and _params_class(obj):
        return "(**fields)", None
    return None


# -- pages written from the code's declarations --------------------------------------------------
def _write_generated(app):
    # the run record's fields, from their one declaration (acceptsim.models.record.METRICS):
    # getting_started.md includes the table
    from acceptsim.models.record import markdown_table

    out = Path(app.srcdir) / "_generated"
    out.mkdir(exist_ok=True)
    path = out / "record_fields.md"
    text = markdown_table()
    if not path.exists() or path.read_text() != text:  # rewritten only when it changes
        path.write_text(text)


def setup(app):
    app.connect("builder-inited", _write_generated)
    app.connect("autodoc-process-docstring", _process_docstring)
    app.connect("autodoc-process-signature", _process_signature)
