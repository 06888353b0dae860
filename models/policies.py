"""Accept policies: how many connections a server accepts in one accept phase.

A server consults its policy at the start of every accept phase.  The policy
sees the server (read-only by convention) and returns the most connections to
accept consecutively in this phase: an integer >= 1, or ``math.inf`` to
accept until the queue is empty.  The paper's accept-limit is the static
policy :class:`StaticLimit`.
"""

from __future__ import annotations

import math
from typing import Any, Protocol

from sim.errors import ConfigError


class AcceptPolicy(Protocol):
    """The decision hook every server calls."""

    name: str

    def accept_limit(self, server: Any) -> float:
        """Most connections to accept in the accept phase that is starting."""


def check_limit(value: Any, field: str = "accept_limit") -> float:
    """An accept-limit is an integer >= 1 or inf."""
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("inf", "infinity"):
            return math.inf
        try:
            value = int(text)
        except ValueError:
            raise ConfigError(field, value, "an integer >= 1 or inf") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ConfigError(field, value, "an integer >= 1 or inf")
    if value == math.inf:
        return math.inf
    if value < 1 or value != int(value):
        raise ConfigError(field, value, "an integer >= 1 or inf")
    return int(value)


class StaticLimit:
    """Accept at most ``limit`` connections per phase, every phase (the paper's knob)."""

    name = "static"

    def __init__(self, limit: float) -> None:
        self.limit = check_limit(limit)

    def accept_limit(self, server: Any) -> float:
        return self.limit

    def __repr__(self) -> str:
        return f"StaticLimit({self.limit})"
