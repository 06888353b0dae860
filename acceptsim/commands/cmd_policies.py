"""``acceptsim policies``: the built-in accept policies and their parameters."""

from __future__ import annotations

import argparse
import json
from typing import Any

from acceptsim.models.policies import describe
from acceptsim.sim.results import json_safe


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("policies", help="list the built-in accept policies and parameters")
    p.add_argument("--format", default="table", choices=("table", "json"))
    p.set_defaults(main=main)


def main(args: argparse.Namespace) -> int:
    rows = describe()
    if args.format == "json":
        print(json.dumps(json_safe(rows), indent=2))
        return 0
    for row in rows:
        print(f"{row['name']}\n  {row['doc']}")
        for prm in row["params"]:
            default = prm["default"]
            print(f"    {prm['name']} = {default!s:<8} [{prm['allowed']}] {prm['doc']}")
        print()
    print(CUSTOM)
    return 0


#: how a policy class of the user's is named wherever a built-in one is
CUSTOM = (
    "MODULE:CLASS[:key=value,...]\n"
    "  A policy class of yours, importable from MODULE (any object with an accept_limit\n"
    "  method; see docs/howto/policy.md): built with CLASS(CLASS.Params.from_dict(values))\n"
    "  if it has a Params class, else CLASS(**values).  From Python, the class itself."
)
