"""The multi-worker measured sets' layouts, shared by their tests
(``test_measured_workers.py``, ``test_measured_worker_cgroups.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acceptsim.measure import find_runs, load_run
from acceptsim.measure.calibrate import validate

#: the workers' numbers each set was recorded with, and the runs per layout in each
WORKERS = (2, 4)
RUNS_PER_LAYOUT = 15


def layout_of(name: str) -> str:
    """A run's layout from its directory name: shared, reuseport or mutex."""
    return "reuseport" if "reuseport" in name else "mutex" if "mutex" in name else "shared"


def validate_set(path: Path, costs: Any) -> dict[int, dict]:
    """``acceptsim validate``'s report of each ``workers-N`` part of the set at ``path``."""
    return {n: validate([load_run(d) for d in find_runs(path / f"workers-{n}")], costs, jobs=2)
            for n in WORKERS}


def by_layout(report: dict, layout: str) -> list[dict]:
    """The report's rows of one layout: all of them, none left out."""
    rows = [row for row in report["runs"] if layout_of(row["run"]) == layout]
    assert len(rows) == RUNS_PER_LAYOUT and not any(row["excluded_because"] for row in rows)
    return rows
