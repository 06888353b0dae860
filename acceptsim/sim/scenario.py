"""Declarative experiments: a TOML file names a base configuration and a sweep.

A scenario file has no logic::

    name = "userver-one-packet"
    title = "userver, one-packet workload: reply rate against target rate"
    [base]            # fields of the run configuration shared by every point
    server = "userver"
    [sweep]           # factorial expansion: every combination of these lists
    accept_limit = [1, 10, "inf"]
    rate_per_s = [10000, 15000, 20000]
    "server+costs" = [["userver", "cluster1"], ["knot", "cluster2"]]  # linked fields
    [plot]            # what the figure shows
    x = "rate_per_s"
    y = ["reply_rate_per_s", "drops_per_s.total"]
    series = "accept_limit"
    [[expect]]        # published numbers to put beside the simulator's
    ...

A sweep key naming several fields joined by ``+`` varies them together: each
value is a list with one entry per field (so a server can come with its own
parameter set without a factorial product).

The engine only expands and validates the shape; the domain (models/) says
which keys a run configuration accepts.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acceptsim.sim.errors import ConfigError, parse_toml, read_user_file

_KEYS = {"name", "title", "description", "figure", "section", "base", "sweep", "plot", "expect"}
#: the type each key of a scenario file must have
_TYPES = {
    "name": str, "title": str, "description": str, "figure": str, "section": str,
    "base": dict, "sweep": dict, "plot": dict, "expect": list,
}  # fmt: skip
#: the most points a sweep may expand to (each is a configuration held in memory)
MAX_POINTS = 1_000_000


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    base: dict[str, Any]
    sweep: dict[str, list[Any]]
    plot: dict[str, Any] = field(default_factory=dict)
    expect: list[dict[str, Any]] = field(default_factory=list)
    description: str = ""
    figure: str = ""
    #: the report section the scenario belongs to ("" for the paper's figures)
    section: str = ""
    path: Path | None = None

    def count(self) -> int:
        """How many points :meth:`points` gives: the product of the swept lists' lengths,
        known without expanding them."""
        return math.prod(len(values) for values in self.sweep.values())

    def points(self) -> list[dict[str, Any]]:
        """Every configuration of the sweep, as ``base`` updated by one combination."""
        return expand(self.base, self.sweep)

    def with_overrides(self, **base: Any) -> Scenario:
        """The same scenario with some base fields changed (e.g. a shorter duration)."""
        merged = dict(self.base)
        merged.update(base)
        return Scenario(**{**self.__dict__, "base": merged})


def expand(base: dict[str, Any], sweep: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Factorial expansion, in the order the sweep lists its keys and values."""
    keys = list(sweep)
    count = math.prod(len(sweep[k]) for k in keys)
    if count > MAX_POINTS:
        raise ConfigError(
            "sweep", " x ".join(str(len(sweep[k])) for k in keys),
            f"at most {MAX_POINTS:,} points in all (this sweep: {count:,})",
        )  # fmt: skip
    out = []
    for combo in itertools.product(*(sweep[k] for k in keys)):
        point = dict(base)
        for key, value in zip(keys, combo, strict=True):
            if LINK in key:
                point.update(zip(key.split(LINK), value, strict=True))
            else:
                point[key] = value
        out.append(point)
    return out


#: joins the fields of a linked sweep key (``"server+costs"``)
LINK = "+"


def check_sweep_values(field: str, key: str, values: Any) -> None:
    """The values a sweep gives ``key`` (named ``field`` in an error): a non-empty list,
    and for a linked key (fields joined by :data:`LINK`, each named) a list of lists of
    one value per field."""
    if not isinstance(values, list) or not values:
        raise ConfigError(field, values, "a non-empty list")
    parts = key.split(LINK)
    if len(parts) > 1:
        if not all(parts):
            raise ConfigError(field, key, f"field names joined by '{LINK}', none empty")
        if not all(isinstance(v, list) and len(v) == len(parts) for v in values):
            raise ConfigError(field, values, f"a list of {len(parts)}-element lists")


def load(path: str | Path) -> Scenario:
    path = Path(path)
    text = read_user_file("scenario", path, "a readable scenario file (TOML)")
    data = parse_toml("scenario", path, text)
    for key in data:
        if key not in _KEYS:
            allowed = "one of " + ", ".join(sorted(_KEYS))
            raise ConfigError(f"{path.name}: {key}", data[key], allowed)
        kind = _TYPES[key]
        if not isinstance(data[key], kind):
            what = {str: "a string", dict: "a table", list: "a list"}[kind]
            raise ConfigError(f"{path.name}: {key}", data[key], what)
    if not data.get("base") and not data.get("sweep"):  # nothing to run but the defaults
        raise ConfigError(
            "scenario", str(path), "a scenario with a [base] or a [sweep] table (this one "
            "has neither, so it would run one default configuration)",
        )  # fmt: skip
    sweep = data.get("sweep", {})
    for key, values in sweep.items():
        check_sweep_values(f"{path.name}: sweep.{key}", key, values)
    return Scenario(
        name=data.get("name", path.stem),
        title=data.get("title", path.stem),
        base=data.get("base", {}),
        sweep=sweep,
        plot=data.get("plot", {}),
        expect=data.get("expect", []),
        description=data.get("description", ""),
        figure=data.get("figure", ""),
        section=data.get("section", ""),
        path=path,
    )
