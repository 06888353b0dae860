"""Progress of a long run on a terminal: simulated time, attempts per second and an ETA.

With a progress bar the run advances in slices of simulated time, which gives the very
same result as one stretch (the engine's state carries over); without a terminal it
runs in one stretch, with no overhead.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from acceptsim.sim.engine import Environment

#: simulated connection attempts per slice of a run shown with progress (~0.3 s of wall time)
SLICE_ATTEMPTS = 50_000
#: at most this many slices, however long the run
MAX_SLICES = 10_000


def progress_bar(total_s: float) -> Any:
    """A tqdm bar over simulated seconds (a widget in a Jupyter kernel), or None when
    neither a kernel nor a terminal would show it (:func:`acceptsim.sim.bars.show_progress`)."""
    from acceptsim.sim.bars import bar as make_bar

    bar = make_bar(
        total=total_s, leave=False, dynamic_ncols=True, unit="s",
        bar_format="simulated {n:,.2f} of {total:,.2f} s |{bar}| {postfix} "
        "[{elapsed} elapsed, ETA {remaining}]",
    )  # fmt: skip
    if bar.disable:
        bar.close()
        return None
    return bar


def advance(
    env: Environment, end_s: float, *, progress: bool, slices: int | None,
    attempts: Callable[[], float], started: Callable[[], int],
) -> None:  # fmt: skip
    """Run ``env`` to ``end_s``.

    ``progress``: show a bar when stderr is a terminal; ``slices``: a number of slices
    (for tests; default: about :data:`SLICE_ATTEMPTS` attempts each, from
    ``attempts()``, the run's expected attempts); ``started()``: the connections started
    so far (the bar's attempts per second).
    """
    bar = progress_bar(end_s) if progress else None
    if bar is None and not slices:
        env.run(until=end_s)  # no terminal: one stretch, no overhead
        return
    if not slices:
        slices = int(min(MAX_SLICES, max(1, math.ceil(attempts() / SLICE_ATTEMPTS))))
    began = time.perf_counter()
    try:
        for i in range(1, slices + 1):
            until = end_s if i == slices else end_s * i / slices
            env.run(until=until)
            if bar is not None:
                wall = time.perf_counter() - began
                rate = started() / wall if wall > 0 else 0.0
                bar.set_postfix_str(f"{rate:,.0f} attempts/s", refresh=False)
                bar.update(until - bar.n)
    finally:
        if bar is not None:
            bar.close()
