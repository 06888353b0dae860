"""Running many configurations: in parallel, one tidy row per run.

``run_many(run, points, jobs)`` calls ``run(point)`` for every point (a
mapping of configuration fields) and returns the records in the order of
``points``, whatever order they finished in.  Results never depend on where
a run ran: each point carries its own seed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import pandas as pd
from tqdm.auto import tqdm

from sim.results import flatten, json_safe

RunFn = Callable[[Mapping[str, Any]], dict[str, Any]]


def default_jobs() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def run_many(
    run: RunFn, points: Sequence[Mapping[str, Any]], jobs: int | None = None, progress: bool = True
) -> list[dict[str, Any]]:
    jobs = default_jobs() if jobs is None else jobs
    bar = tqdm(total=len(points), disable=not progress, unit="run", leave=False)
    results: list[dict[str, Any] | None] = [None] * len(points)
    try:
        if jobs <= 1 or len(points) <= 1:
            for i, point in enumerate(points):
                results[i] = run(point)
                bar.update()
        else:
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                futures = {pool.submit(run, point): i for i, point in enumerate(points)}
                for future in _as_completed(futures):
                    results[futures[future]] = future.result()
                    bar.update()
    finally:
        bar.close()
    return results  # type: ignore[return-value]


def _as_completed(futures: Any) -> Any:
    from concurrent.futures import as_completed

    return as_completed(futures)


def to_frame(records: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per run; nested metrics flattened with dots; inf written as "inf"."""
    return pd.DataFrame([flatten(json_safe(dict(r))) for r in records])
