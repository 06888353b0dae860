"""Records of the reference set, written once and compared later, field by field.

A refactor that must not change results (the server contract of issue 15, a
faster hot path) is checked by recording the reference set's run records before
it and comparing after it:

    python tools/reference.py write out/reference.json    # before the change
    python tools/reference.py check out/reference.json    # after it: exit 1 on any difference

The reference set is every registered server with both paper workloads, plus
higher limits, a policy, a CPU quota, the modern kernel and a file set (the same
set ``tests/test_native.py`` runs compiled and from source).  Timing fields are
left out; every other field must be equal, floats to the last bit.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

#: fields that measure the simulator, not the model
TIMING_FIELDS = ("sim_cpu_time_s", "sim_conns_per_cpu_s")


def reference_set() -> list[dict[str, Any]]:
    from acceptsim.models.servers.registry import SERVERS

    base = {"rate_per_s": 24000.0, "duration_s": 1.0, "warmup_s": 0.25, "seed": 3}
    out: list[dict[str, Any]] = []
    for server in SERVERS:
        for workload in ("one-packet", "specweb99"):
            rate = 24000.0 if workload == "one-packet" else 4000.0
            out.append({**base, "server": server, "workload": workload, "rate_per_s": rate})
    out += [
        {**base, "server": "userver", "accept_limit": "inf"},
        {**base, "server": "tux", "accept_limit": "inf"},
        {**base, "server": "knot", "accept_limit": 50},
        {**base, "server": "userver", "policy": "hill-climb"},
        {**base, "server": "userver", "cpu_quota": 0.5, "cpu_period_s": 0.01},
        {**base, "server": "userver", "kernel": "linux-modern", "accept_limit": 10},
        # reply sizes that name their file (an int subclass the compiled record must keep)
        {**base, "server": "flash-amped", "workload": "fileset", "rate_per_s": 3000.0},
    ]
    return out


def records(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each point's run record without its timing fields, as JSON gives it back."""
    from acceptsim.models.experiment import RunConfig, simulate

    out = []
    for fields in points:
        record = simulate(RunConfig.from_dict(fields))
        for name in TIMING_FIELDS:
            record.pop(name, None)
        out.append(json.loads(json.dumps(record, default=repr)))
    return out


def differences(old: Any, new: Any, path: str = "", rel_tol: float = 0.0) -> list[str]:
    """Where two records differ, as ``path: old -> new`` lines (floats within ``rel_tol``
    of each other, relatively, are taken as equal)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for key in sorted(set(old) | set(new), key=str):
            out += differences(old.get(key, "<missing>"), new.get(key, "<missing>"),
                               f"{path}.{key}" if path else str(key), rel_tol)
        return out
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [d for i, (a, b) in enumerate(zip(old, new, strict=True))
                for d in differences(a, b, f"{path}[{i}]", rel_tol)]
    if rel_tol and isinstance(old, float) and isinstance(new, float):
        if math.isclose(old, new, rel_tol=rel_tol):
            return []
    if old == new and type(old) is type(new):  # 3 and 3.0 differ in the JSON a user reads
        return []
    if isinstance(old, float) and isinstance(new, float) and math.isnan(old) and math.isnan(new):
        return []  # a NaN field (a policy run's accept_limit) is the same NaN
    return [f"{path}: {old!r} -> {new!r}"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("write", "check"))
    parser.add_argument("path", type=Path)
    parser.add_argument("--rel-tol", type=float, default=0.0,
                        help="check: floats within this relative difference are equal (default "
                        "0: to the last bit; a change that only reorders a float sum, such as "
                        "a time integral, moves its last digits)")
    args = parser.parse_args(argv)
    points = reference_set()
    if args.action == "write":
        args.path.parent.mkdir(parents=True, exist_ok=True)
        args.path.write_text(json.dumps({"points": points, "records": records(points)}))
        print(f"wrote {len(points)} records to {args.path}")
        return 0
    saved = json.loads(args.path.read_text())
    missing = [p for p in saved["points"] if p not in points]
    if missing:
        print(f"{len(missing)} saved points are no longer in the reference set (a server "
              "removed?); write it again from the version before the change", file=sys.stderr)
        return 2
    added = [p for p in points if p not in saved["points"]]
    if added:  # a server added since: its points have no record to compare with
        print(f"{len(added)} points new since the set was written (not compared): "
              + ", ".join(f"{p['server']} {p.get('workload', 'one-packet')}" for p in added))
    found: list[str] = []
    new_fields: list[str] = []
    for p, old, new in zip(saved["points"], saved["records"], records(saved["points"]),
                           strict=True):
        for d in differences(old, new, rel_tol=args.rel_tol):
            label = f"{p['server']} {p.get('workload', 'one-packet')}: {d}"
            # a field the record gained is listed, not counted: the old fields must be equal
            (new_fields if ": '<missing>' -> " in d else found).append(label)
    for line in found:
        print(line)
    if new_fields:
        names = sorted({line.split(": ")[1] for line in new_fields})
        print(f"fields new since the set was written (not compared): {', '.join(names)}")
    print(f"{len(saved['points'])} records, {len(found)} differences")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
