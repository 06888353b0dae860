"""Reading parameter files and command-line values into validated configuration."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from acceptsim.models.config import resolve_costs, resolve_kernel
from acceptsim.models.costs import HostCosts
from acceptsim.models.kernel import KernelProfile
from acceptsim.sim.errors import ConfigError, parse_toml, read_user_file
from acceptsim.sim.params import ascii_number


def load_params_file(path: str | Path) -> tuple[HostCosts, KernelProfile | None]:
    """A parameter file: cost fields at top level (optionally ``base = "cluster1"``),
    an optional ``[kernel]`` table (optionally ``name = "linux-2.4"``) and an optional
    ``[measured]`` table, the measurements behind the values (written by ``acceptsim
    measure-costs``; read by :func:`load_measurements`, not by the model)."""
    if not str(path).strip():  # Path("") would be the current directory
        raise ConfigError("--params", str(path), "a parameter set (cluster1, cluster2) or a "
                          "TOML file, not empty (leave --params out for the default set)")
    path = Path(path)
    text = read_user_file("--params", path, "a parameter set (cluster1, cluster2) or a TOML file")
    data = parse_toml("--params", path, text)
    kernel_table = data.pop("kernel", None)
    data.pop("measured", None)
    try:
        costs = resolve_costs(data)
        kernel = resolve_kernel(kernel_table) if kernel_table is not None else None
    except ConfigError as exc:  # say which file the bad value is in
        raise ConfigError(f"{path}: {exc.field}", exc.value, exc.allowed) from None
    return costs, kernel


def load_measurements(path: str | Path) -> dict[str, Any]:
    """A parameter file's ``[measured]`` table (what ``acceptsim measure-costs`` measured
    behind its values); empty if it has none."""
    text = read_user_file("--params", Path(path), "a TOML parameter file")
    measured = parse_toml("--params", Path(path), text).get("measured", {})
    if not isinstance(measured, dict):
        raise ConfigError(f"{path}: measured", measured, "a table of measurements")
    for name, entry in measured.items():
        if not isinstance(entry, dict) or "mean" not in entry:
            continue  # the host's description, or another table without a measurement
        check_measurement(f"{path}: measured.{name}", entry)
    return measured


def check_measurement(field: str, entry: dict[str, Any]) -> None:
    """A measurement's ``mean`` is a finite number >= 0 and its ``spread`` (if given) a
    finite number >= 0: a bound made of nan or inf would let a fit go anywhere."""
    for key in ("mean", "spread"):
        if key not in entry and key == "spread":
            continue
        value = entry[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                math.isfinite(value) and value >= 0):
            raise ConfigError(f"{field}.{key}", value, "a finite number >= 0")


def parse_number(field: str, text: str) -> float:
    """A number written in ASCII (``24000``, ``2.4e4``, ``inf``), not ``１０`` or ``1_000``:
    Python's ``float`` also reads other scripts' digits and underscores."""
    try:
        value: float = ascii_number(text)
    except ValueError:
        raise ConfigError(field, text, "a number in ASCII digits, e.g. 24000 or 2.4e4") from None
    if math.isnan(value):  # (float reads "nan"; to a parameter set it means "its default")
        raise ConfigError(field, text, "a number in ASCII digits, e.g. 24000 or 2.4e4, not nan")
    return value


def parse_int(field: str, text: str) -> int:
    """An integer written in ASCII digits (see :func:`parse_number`)."""
    try:
        return ascii_number(text, int)
    except ValueError:
        raise ConfigError(field, text, "an integer in ASCII digits, e.g. 10") from None

