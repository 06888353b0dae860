"""`acceptsim servers`: every server, workload and kernel profile a run can name, one
line each, and any one's parameters with units and defaults."""

from __future__ import annotations

import dataclasses
import json

import pytest
from test_cli import acceptsim

from acceptsim.commands.cmd_servers import catalog
from acceptsim.models.kernel import PROFILES
from acceptsim.models.servers.registry import SERVERS
from acceptsim.models.workloads import WORKLOADS


def test_the_catalog_has_every_registered_name_with_a_summary() -> None:
    entries = catalog()
    assert [e["name"] for e in entries["servers"]] == list(SERVERS)
    assert [e["name"] for e in entries["workloads"]] == list(WORKLOADS)
    assert [e["name"] for e in entries["kernels"]] == list(PROFILES)
    for section in entries.values():
        for e in section:
            assert len(e["summary"]) > 20, e["name"]  # compiled classes lose docstrings


def test_the_listing_names_each_entry_once_with_its_summary() -> None:
    out = acceptsim("servers")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    for name in [*SERVERS, *WORKLOADS, *PROFILES]:
        rows = [line for line in lines if line.split()[:1] == [name]]
        assert len(rows) == 1, name
        assert len(rows[0].split()) > 3


def test_one_server_shows_every_parameter_with_its_default() -> None:
    out = acceptsim("servers", "knot")
    assert out.returncode == 0, out.stderr
    params_cls = SERVERS["knot"].params
    for f in dataclasses.fields(params_cls):
        if f.metadata:
            assert f"    {f.name} = {f.default!s} [" in out.stdout


def test_a_kernel_profile_shows_its_own_values() -> None:
    out = acceptsim("servers", "linux-modern", "--format", "json")
    assert out.returncode == 0, out.stderr
    (entry,) = json.loads(out.stdout)
    values = {p["name"]: p["default"] for p in entry["params"]}
    assert entry["kind"] == "kernels"
    assert values == PROFILES["linux-modern"].to_dict()  # its own values, not the defaults
    assert values != PROFILES["linux-2.4"].to_dict()


@pytest.mark.parametrize("name", ["nope", "USERVER"])
def test_an_unknown_name_is_refused_with_the_names_allowed(name: str) -> None:
    out = acceptsim("servers", name)
    assert out.returncode == 2
    assert f"name={name!r}" in out.stderr and "userver, nginx" in out.stderr


def test_run_help_lists_every_server_workload_and_kernel() -> None:
    out = acceptsim("run", "--help")
    text = " ".join(out.stdout.split()).replace("- ", "-")  # argparse wraps at hyphens
    for name in [*SERVERS, *WORKLOADS, *PROFILES]:
        assert f" {name}," in text or f" {name} (" in text, name
    assert "acceptsim servers" in text
