"""Pitfalls of the compiled build that a test can keep away.

mypyc (2.4.1) passes a method's left-out ``float`` (or fixed-width integer) argument
wrongly when compiled code calls it on an instance of an *interpreted* subclass: the
caller passes a placeholder 0 and a bitmap saying "use the default", and the glue that
calls the interpreted subclass ignores the bitmap, so the method sees 0.0 (and an
explicit -113.0, mypyc's error marker for floats, arrives as the default).  That is
why Flash MP once accepted nothing when the accept-limit had a default of -1.0
(docs/design.md, "The compiled build's pitfalls", has the minimal reproduction).  So no
method of a compiled class that allows interpreted subclasses may give such an
argument a default.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from acceptsim.sim.native import COMPILED

ROOT = Path(__file__).resolve().parents[1]
#: argument types whose left-out value mypyc's glue for interpreted subclasses mangles
MANGLED = {"float", "i64", "i32", "i16", "u8"}


def _allows_interpreted_subclasses(cls: ast.ClassDef) -> bool:
    for deco in cls.decorator_list:
        if isinstance(deco, ast.Call) and getattr(deco.func, "id", "") == "mypyc_attr":
            for kw in deco.keywords:
                if kw.arg == "allow_interpreted_subclasses":
                    return bool(getattr(kw.value, "value", False))
    return False


def _mangled_defaults(source: str) -> list[str]:
    found = []
    for cls in ast.walk(ast.parse(source)):
        if not (isinstance(cls, ast.ClassDef) and _allows_interpreted_subclasses(cls)):
            continue
        for fn in cls.body:
            if not isinstance(fn, ast.FunctionDef):
                continue
            args = fn.args
            positional = args.posonlyargs + args.args
            with_default = positional[len(positional) - len(args.defaults):]
            with_default += [a for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d]
            for arg in with_default:
                if arg.annotation is not None and ast.unparse(arg.annotation) in MANGLED:
                    found.append(f"{cls.name}.{fn.name}({arg.arg})")
    return found


def test_the_check_finds_the_default_that_broke_flash_mp() -> None:
    source = (
        "@mypyc_attr(allow_interpreted_subclasses=True)\n"
        "class Server:\n"
        "    def accept_batch(self, listen, taken, limit: float = -1.0): ...\n"
        "    def fine(self, n: int = 1, name: str = 'x'): ...\n"
    )
    assert _mangled_defaults(source) == ["Server.accept_batch(limit)"]


@pytest.mark.parametrize("module", COMPILED)
def test_no_compiled_method_open_to_interpreted_subclasses_has_a_float_default(
    module: str,
) -> None:
    assert _mangled_defaults((ROOT / "acceptsim" / module).read_text()) == []
