"""Reading parameter files and command-line values into validated configuration."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from models.costs import HostCosts
from models.experiment import resolve_costs, resolve_kernel
from models.kernel import KernelProfile
from sim.errors import ConfigError


def load_params_file(path: str | Path) -> tuple[HostCosts, KernelProfile | None]:
    """A parameter file: cost fields at top level (optionally ``base = "cluster1"``)
    and an optional ``[kernel]`` table (optionally ``name = "linux-2.4"``)."""
    path = Path(path)
    try:
        data: dict[str, Any] = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError("--params", str(path), "an existing TOML file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError("--params", str(path), f"valid TOML ({exc})") from None
    kernel_table = data.pop("kernel", None)
    costs = resolve_costs(data)
    kernel = resolve_kernel(kernel_table) if kernel_table is not None else None
    return costs, kernel


def parse_number(field: str, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ConfigError(field, text, "a number") from None


def parse_int(field: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ConfigError(field, text, "an integer") from None
