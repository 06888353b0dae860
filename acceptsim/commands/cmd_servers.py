"""``acceptsim servers``: the servers, workloads and kernel profiles a run can name."""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from acceptsim.models.config import default_text
from acceptsim.models.kernel import PROFILE_SUMMARIES, PROFILES, KernelProfile
from acceptsim.models.multicore import LAYOUTS, SOFTIRQ
from acceptsim.models.servers.registry import SERVERS, custom_spec
from acceptsim.models.servers.spec import ServerSpec
from acceptsim.models.workloads import WORKLOADS
from acceptsim.sim.errors import ConfigError
from acceptsim.sim.params import summary_of
from acceptsim.sim.results import json_safe

#: the catalog's sections, with the ``acceptsim run`` option that names their entries
SECTIONS = {"servers": "--server", "workloads": "--workload", "kernels": "--kernel"}


def run_defaults(spec: ServerSpec) -> list[dict[str, Any]]:
    """The run settings a server gives a run that sets none (RunConfig's rules
    ACCEPT_LIMIT_RULE and KERNEL_RULE), each with where it comes from."""
    return [
        {"name": "accept_limit", "option": "--accept-limit", "default": spec.accept_limit,
         "source": spec.accept_limit_source},
        {"name": "kernel", "option": "--kernel", "default": spec.kernel,
         "source": spec.kernel_source},
    ]


def server_entry(name: str, spec: ServerSpec) -> dict[str, Any]:
    """A server's catalog entry: its summary, parameter table (each default with where it
    comes from), wake-up rules and run defaults."""
    return {"name": name, "summary": spec.summary, "params": spec.params.describe(),
            "wakeups": list(spec.wakeups), "run_defaults": run_defaults(spec)}


def catalog() -> dict[str, list[dict[str, Any]]]:
    """Every server, workload and kernel profile a run can name: its name, one-line
    summary and parameter table (a kernel profile's table shows its own values)."""
    servers = [server_entry(name, spec) for name, spec in SERVERS.items()]
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


def limit_text(value: Any) -> str:
    """A run default as the command line writes it (``inf``, ``4``, ``linux-modern``)."""
    if isinstance(value, float):
        return "inf" if math.isinf(value) else f"{value:g}"
    return str(value)


def workers_text(entry: dict[str, Any]) -> str:
    """A server's wake-up rules, if it runs on several workers (its default first)."""
    wakeups = entry.get("wakeups")
    if not wakeups:
        return ""
    return f" [several workers; --wakeup {' | '.join(wakeups)}, default {wakeups[0]}]"


def multicore_text() -> str:
    """The host's multi-core options with their defaults (RunConfig's own)."""
    d = default_text
    return (f"A host of several CPUs: --cpus N (default {d('cpus')}), --workers W (default "
            f"{d('workers')}), --listen {' | '.join(LAYOUTS)} (default {d('listen')}), "
            f"--wakeup (default {d('wakeup')}), --softirq {' | '.join(SOFTIRQ)} (default "
            f"{d('softirq')}); the servers marked above run on several workers, the others "
            "as one (acceptsim.models.multicore).")


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "servers", help="list the servers, workloads and kernel profiles (one line each), or "
        "show one's parameters with units and defaults")
    p.add_argument("name", nargs="?", default=None,
                   help="a server, workload or kernel profile: show its parameters (a "
                   "server of yours too: MODULE:CLASS)")
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
                print(f"  {e['name']:<{width}}  {e['summary']}{workers_text(e)}")
            print()
        print("acceptsim servers NAME shows one's parameters.")
        print(multicore_text())
        return 0
    found = [(section, e) for section, es in entries.items() for e in es
             if e["name"] == args.name]
    if not found and custom_spec(args.name) is not None:  # a server of the user's
        found = [("servers", server_entry(args.name, SERVERS.resolve(args.name)))]
    if not found:
        names = [e["name"] for es in entries.values() for e in es]
        raise ConfigError("name", args.name, "a server, workload or kernel profile: "
                          + ", ".join(names))
    if args.format == "json":
        print(json.dumps(json_safe([dict(e, kind=section) for section, e in found]), indent=2))
        return 0
    for section, e in found:
        print(f"{e['name']} ({section[:-1]}, {SECTIONS[section]} {e['name']})\n  {e['summary']}"
              f"{workers_text(e)}")
        for prm in e["params"]:
            print(f"    {prm['name']} = {prm['default']!s} [{prm['allowed']}] {prm['doc']}")
        for row in e.get("run_defaults", ()):
            print(f"  {row['option']} default {limit_text(row['default'])}: {row['source']}")
        print()
    return 0
