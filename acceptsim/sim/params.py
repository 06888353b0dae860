"""Parameters as validated, frozen, unit-named data.

A parameter set is a frozen dataclass whose fields are declared with
:func:`param`: every field carries its unit, a one-line description, its
allowed range and (for calibrated values) what it was fitted to.  Values are
checked when the object is built, so a bad value is reported before any
simulation starts, and :meth:`Params.from_dict` rejects unknown keys the way
desmod's ``apply_user_config`` does.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import math
import re
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Self

from acceptsim.sim.errors import ConfigError

INF = math.inf
#: the largest integer a parameter may hold (it fits a signed 64-bit column)
INT64_MAX = 2**63 - 1
_INF_WORDS = ("inf", "infinity")


def ascii_number(text: str, kind: type = float) -> Any:
    """``kind(text)`` for a number written in ASCII (``24000``, ``2.4e4``, ``inf``); a
    ValueError for others' digits (``１０``, which Python's ``float`` reads), underscores
    (``1_000``) and absurdly long text."""
    if not text.isascii() or "_" in text or len(text) > 100:
        raise ValueError(text)
    return kind(text)


def parse_value(text: str) -> Any:
    """A value as written on a command line or in a policy spec: ``inf`` or ``infinity``
    in any case, a TOML value (number, boolean, quoted string, array), else the text
    itself (a bare word); surrounding spaces do not count.  The one reader of such
    values: ``acceptsim run --server-param``, ``sweep``/``search`` ``--set`` and policy
    specs give one value for one text."""
    text = text.strip()
    if text.lower() in _INF_WORDS:
        return INF
    if "\n" in text or "\r" in text:  # one value, never a TOML document's further keys
        return text
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def split_assignment(field: str, text: str, form: str = "KEY=VALUE") -> tuple[str, str]:
    """``KEY=VALUE`` split at its first ``=``, both sides stripped; a
    :class:`~acceptsim.sim.errors.ConfigError` naming ``field`` when there is no ``=`` or
    no key (``form`` says what is allowed)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(field, text, form)
    return key.strip(), value.strip()


def plain_text(text: str) -> str:
    """Docstring markup as plain words for a terminal: ``:role:`~a.b.c``` becomes ``c``
    (the whole target without ``~``), a double-backquoted literal its text."""
    text = re.sub(r":[a-z]+:`~[\w.]*?([\w]+)`", r"\1", text)
    text = re.sub(r":[a-z]+:`([^`]+)`", r"\1", text)
    return text.replace("``", "")


def summary_of(obj: object) -> str:
    """The first paragraph of an object's docstring, on one line and in plain words (a
    one-line summary for listings such as ``acceptsim policies`` and ``acceptsim
    servers``).  A class compiled by mypyc has no ``__doc__``: its docstring is read from
    its module's source, which the build leaves beside the compiled module."""
    doc = obj.__doc__ or _source_docstring(obj)
    return plain_text(" ".join((doc or "").strip().split("\n\n")[0].split()))


def _source_docstring(obj: object) -> str | None:
    """The docstring of the class ``obj`` in its module's ``.py`` source, if there is one
    (found through its package, which is imported before the module is)."""
    package, _, module = getattr(obj, "__module__", "").rpartition(".")
    paths = getattr(sys.modules.get(package), "__path__", None)
    if not paths:
        return None
    return _class_docstrings(str(Path(list(paths)[0]) / (module + ".py"))).get(
        getattr(obj, "__qualname__", "")
    )


@functools.cache
def _class_docstrings(source: str) -> dict[str, str]:
    """Every class docstring of the module ``source`` (read and parsed once)."""
    path = Path(source)
    if not path.is_file():
        return {}
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name: doc for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and (doc := ast.get_docstring(node)) is not None
    }  # fmt: skip


def param(
    default: Any,
    *,
    unit: str,
    doc: str,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    choices: tuple[Any, ...] | None = None,
    allow_inf: bool = False,
    fitted: str | None = None,
    min_nonzero: float | None = None,
    rule: tuple[str, Any] | None = None,
) -> Any:
    """Declare a parameter field with its unit, meaning and allowed values.

    ``min_nonzero``: the value is 0 (typically "off") or at least this much; a
    positive value below it (a denormal, 1e-300 s) has no physical sense.
    Integers always fit in 64 bits (at most ``INT64_MAX`` in magnitude).
    ``rule``: a default that follows other fields, as ``(text, function)``: a float
    field left out (its declared default is NaN) takes ``function(params)`` once the
    other fields are checked, and keeps following them through :meth:`Params.replace`
    and :meth:`Params.from_dict` until it is given a value; ``text`` says the rule
    wherever the default is shown.
    """
    meta = {
        "unit": unit,
        "doc": doc,
        "ge": ge,
        "gt": gt,
        "le": le,
        "choices": choices,
        "allow_inf": allow_inf,
        "fitted": fitted,
        "min_nonzero": min_nonzero,
        "rule": rule,
    }
    if rule is not None:
        # the field's type is its declared default's (a float when declared as None)
        meta["kind"] = float if default is None else type(default)
        default = math.nan  # "left out": the rule gives the value
    return dataclasses.field(default=default, metadata=meta)


def _allowed_text(meta: Mapping[str, Any], kind: type) -> str:
    if meta["choices"] is not None:
        return "one of " + ", ".join(repr(c) for c in meta["choices"])
    parts = [{bool: "true or false", int: "an integer", float: "a number", str: "a string"}[kind]]
    if meta.get("min_nonzero") is not None:
        parts.append(f"0 or >= {meta['min_nonzero']:g}")
    elif meta["ge"] is not None:
        parts.append(f">= {meta['ge']:g}")
    if meta["gt"] is not None:
        parts.append(f"> {meta['gt']:g}")
    if meta["le"] is not None:
        parts.append(f"<= {meta['le']:g}")
    if meta["allow_inf"]:
        parts.append("or inf")
    unit = meta["unit"]
    return " ".join(parts) + (f" ({unit})" if unit else "")


def check_value(name: str, value: Any, default: Any, meta: Mapping[str, Any]) -> Any:
    """Validate one value against a field's declaration; return it (ints widen to float)."""
    kind = meta.get("kind") or type(default)
    allowed = _allowed_text(meta, kind)
    if meta["allow_inf"] and isinstance(value, str) and value.strip().lower() in _INF_WORDS:
        value = INF
    if kind is bool:
        if not isinstance(value, bool):
            raise ConfigError(name, value, allowed)
    elif kind is int and not meta["allow_inf"]:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(name, value, allowed)
        if abs(value) > INT64_MAX:
            raise ConfigError(name, value, allowed + ", within 64 bits (at most 2**63 - 1)")
    elif kind in (int, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(name, value, allowed)
        if isinstance(value, int) and abs(value) > INT64_MAX:  # also beyond any float
            raise ConfigError(name, value, allowed + ", within 64 bits (at most 2**63 - 1)")
        if math.isnan(value):
            raise ConfigError(name, value, allowed)
        if math.isinf(value) and not (meta["allow_inf"] and value > 0):
            raise ConfigError(name, value, allowed)
        if kind is int and not math.isinf(value) and value != int(value):
            raise ConfigError(name, value, allowed)
        if kind is int and not math.isinf(value) and abs(value) > INT64_MAX:
            raise ConfigError(name, value, allowed + ", within 64 bits (at most 2**63 - 1)")
        if kind is float:
            value = float(value)
        elif not math.isinf(value):
            value = int(value)
    elif kind is str:
        if not isinstance(value, str):
            raise ConfigError(name, value, allowed)
    if meta["choices"] is not None and value not in meta["choices"]:
        raise ConfigError(name, value, allowed)
    if kind in (int, float) and not isinstance(value, bool):
        if meta["ge"] is not None and not value >= meta["ge"]:
            raise ConfigError(name, value, allowed)
        if meta["gt"] is not None and not value > meta["gt"]:
            raise ConfigError(name, value, allowed)
        unbounded = meta["allow_inf"] and value == INF  # inf is allowed beyond any le
        if meta["le"] is not None and not value <= meta["le"] and not unbounded:
            raise ConfigError(name, value, allowed)
        tiny = meta.get("min_nonzero")
        if tiny is not None and value != 0 and not value >= tiny:
            raise ConfigError(name, value, allowed)
    return value


def refuse_nan(prefix: str, data: Mapping[str, Any]) -> None:
    """A ConfigError for a nan among ``data``'s values: a parameter set reads nan in a field
    with a rule as "left out" (the rule gives it), which is not what a user who wrote nan
    asked for, and every other field refuses it anyway."""
    for key, value in data.items():
        if isinstance(value, float) and value != value:
            raise ConfigError(prefix + str(key), value,
                              "a number, not nan (leave the key out for its default)")


@dataclasses.dataclass(frozen=True)
class Params:
    """Base of every parameter set: checks each field on construction."""

    #: prefix used in error messages (e.g. ``costs.`` for a cost set)
    _prefix = ""

    def __post_init__(self) -> None:
        ruled = []
        for f in dataclasses.fields(self):
            if not f.metadata:
                continue
            value = getattr(self, f.name)
            if f.metadata.get("rule") is not None and isinstance(value, float) and value != value:
                ruled.append(f)  # left out: the rule gives it, from the checked fields
                continue
            checked = check_value(self._prefix + f.name, value, f.default, f.metadata)
            if checked is not value:
                object.__setattr__(self, f.name, checked)
        for f in ruled:
            value = f.metadata["rule"][1](self)
            object.__setattr__(
                self, f.name, check_value(self._prefix + f.name, value, f.default, f.metadata)
            )
        # the fields a rule gave (they follow their rule through replace and from_dict)
        object.__setattr__(self, "_ruled", frozenset(f.name for f in ruled))

    def _followed(self, changes: Mapping[str, Any]) -> dict[str, Any]:
        """``changes`` with every field a rule gave, and not changed, left out again."""
        return {**{n: math.nan for n in getattr(self, "_ruled", ())}, **changes}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], base: Self | None = None) -> Self:
        """Build from a mapping, starting from ``base`` (or the defaults).

        Unknown keys are an error that lists the allowed ones.
        """
        names = [f.name for f in dataclasses.fields(cls) if f.metadata]
        for key in data:
            if key not in names:
                raise ConfigError(
                    cls._prefix + str(key), data[key], "unknown key; allowed: " + ", ".join(names)
                )
        refuse_nan(cls._prefix, data)
        start = base if base is not None else cls()
        return dataclasses.replace(start, **start._followed(data))

    def replace(self, **changes: Any) -> Self:
        """A copy with some fields changed (validated again)."""
        return self.from_dict(changes, base=self)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.metadata}

    @classmethod
    def describe(cls) -> list[dict[str, Any]]:
        """One row per parameter: name, default, unit, meaning, range, fitted-to."""
        rows = []
        for f in dataclasses.fields(cls):
            if not f.metadata:
                continue
            rows.append(
                {
                    "name": f.name,
                    "default": f.metadata["rule"][0] if f.metadata.get("rule") else f.default,
                    "unit": f.metadata["unit"],
                    "doc": f.metadata["doc"],
                    "allowed": _allowed_text(f.metadata, f.metadata.get("kind") or type(f.default)),
                    "fitted": f.metadata["fitted"],
                }
            )
        return rows
