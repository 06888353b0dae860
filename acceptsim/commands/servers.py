"""``acceptsim servers``: the servers, workloads and kernel profiles a run can name."""

from __future__ import annotations

import argparse
import json
from typing import Any

from acceptsim.models.kernel import PROFILE_SUMMARIES, PROFILES, KernelProfile
from acceptsim.models.servers.registry import SERVERS
from acceptsim.models.workloads import WORKLOADS
from acceptsim.sim.errors import ConfigError
from acceptsim.sim.params import summary_of
from acceptsim.sim.results import json_safe

#: the catalog's sections, with the ``acceptsim run`` option that names their entries
SECTIONS = {"servers": "--server", "workloads": "--workload", "kernels": "--kernel"}


def catalog() -> dict[str, list[dict[str, Any]]]:
    """Every server, workload and kernel profile a run can name: its name, one-line
    summary and parameter table (a kernel profile's table shows its own values)."""
    servers = [
        {"name": name, "summary": spec.summary, "params": spec.params.describe()}
        for name, spec in SERVERS.items()
    ]
    workloads = [
        {"name": name, "summary": summary_of(cls), "params": params_cls.describe()}
        for name, (cls, params_cls) in WORKLOADS.items()
    ]
    kernels = []
    for name, profile in PROFILES.items():
        rows = KernelProfile.describe()
        for row in rows:
            row["default"] = getattr(profile, row["name"])
        kernels.append({"name": name, "summary": PROFILE_SUMMARIES[name], "params": rows})
    return {"servers": servers, "workloads": workloads, "kernels": kernels}


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "servers", help="list the servers, workloads and kernel profiles (one line each), or "
        "show one's parameters with units and defaults")
    p.add_argument("name", nargs="?", default=None,
                   help="a server, workload or kernel profile: show its parameters")
    p.add_argument("--format", default="table", choices=("table", "json"))
    p.set_defaults(main=main)


def main(args: argparse.Namespace) -> int:
    entries = catalog()
    if args.name is None:
        if args.format == "json":
            print(json.dumps(json_safe(entries), indent=2))
            return 0
        for section, option in SECTIONS.items():
            print(f"{section} ({option}):")
            width = max(len(e["name"]) for e in entries[section])
            for e in entries[section]:
                print(f"  {e['name']:<{width}}  {e['summary']}")
            print()
        print("acceptsim servers NAME shows one's parameters.")
        return 0
    found = [(section, e) for section, es in entries.items() for e in es
             if e["name"] == args.name]
    if not found:
        names = [e["name"] for es in entries.values() for e in es]
        raise ConfigError("name", args.name, "a server, workload or kernel profile: "
                          + ", ".join(names))
    if args.format == "json":
        print(json.dumps(json_safe([dict(e, kind=section) for section, e in found]), indent=2))
        return 0
    for section, e in found:
        print(f"{e['name']} ({section[:-1]}, {SECTIONS[section]} {e['name']})\n  {e['summary']}")
        for prm in e["params"]:
            print(f"    {prm['name']} = {prm['default']!s} [{prm['allowed']}] {prm['doc']}")
        print()
    return 0
