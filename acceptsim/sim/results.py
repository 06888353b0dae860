"""Result records: flat, JSON-ready dictionaries, one per run.

Ciw's rule for names: ``*_time`` is a duration, ``*_at`` an instant; units
are in the name where they are not seconds (``*_per_s``, ``*_ms``,
``*_bytes``).  Nested objects in the JSON contract (``drops_per_s``,
``cpu_share``, ...) are flattened with dots for tables: ``drops_per_s.total``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


def flatten(record: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``; lists are kept as they are."""
    out: dict[str, Any] = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out


def differences(end: Mapping[str, float], start: Mapping[str, float]) -> dict[str, float]:
    """Counter values accumulated between two snapshots."""
    return {k: end[k] - start.get(k, 0) for k in end}


def ratio(numerator: float, denominator: float) -> float | None:
    """``numerator / denominator``, or None when the denominator is zero."""
    return numerator / denominator if denominator else None


def summary_ms(samples: Sequence[float]) -> dict[str, float | None]:
    """Mean, median, 99th and 99.9th percentiles and maximum of durations in seconds, in
    milliseconds (``p999``: the 99.9th)."""
    if not samples:
        return {"mean": None, "p50": None, "p99": None, "p999": None, "max": None}
    # (fromiter with the count: a list of floats converted without inferring its type)
    arr = np.fromiter(samples, float, len(samples)) * 1e3
    p50, p99, p999 = np.percentile(arr, [50, 99, 99.9])
    return {"mean": float(arr.mean()), "p50": float(p50), "p99": float(p99),
            "p999": float(p999), "max": float(arr.max())}


def json_safe(value: Any) -> Any:
    """Replace inf by the string "inf" (JSON has no infinity) throughout a record."""
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if isinstance(value, Mapping):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value
