"""Probes of a simulated processor, shared by the CPU tests (test_bandwidth.py,
test_shared_cpu.py)."""

from __future__ import annotations

import math
from typing import Any

from acceptsim.sim import Environment


def running_stretches(env: Environment, cpu: Any, until: float,
                      every: float = 1e-4) -> list[tuple[float, float]]:
    """Run ``env`` to ``until`` and return when ``cpu``'s task held its processor, as
    (start, end) stretches, probed every ``every`` seconds."""
    stretches: list[list[float]] = []

    def probe(_: object) -> None:
        if cpu.task_end == math.inf:
            return
        if stretches and stretches[-1][1] >= env.now - 1.5 * every:
            stretches[-1][1] = env.now
        else:
            stretches.append([env.now, env.now])

    env.call_recurring(every, lambda: every, probe)
    env.run(until=until)
    return [(a, b) for a, b in stretches]
