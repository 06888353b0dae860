"""The how-to "Add a server model" (docs/howto/add_server.md): its example module runs
as written, through the accept phase every server uses."""

from __future__ import annotations

import re
import sys
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import pytest

from acceptsim.models.experiment import Host, RunConfig
from acceptsim.models.servers.registry import SERVERS

HOWTO = Path(__file__).resolve().parents[1] / "docs" / "howto" / "add_server.md"


def _example(monkeypatch) -> ModuleType:
    """The page's module (its first ``python`` block), imported as ``fifo``."""
    blocks = re.findall(r"```python\n(.*?)```", HOWTO.read_text(), flags=re.S)
    module = ModuleType("fifo")
    monkeypatch.setitem(sys.modules, "fifo", module)  # (its dataclass looks itself up)
    exec(compile(blocks[0], str(HOWTO), "exec"), module.__dict__)  # noqa: S102
    return module


@pytest.mark.parametrize("limit", [1, 10, "inf"])
def test_the_example_server_runs_through_the_accept_phase(monkeypatch, limit) -> None:
    fifo = _example(monkeypatch)
    (spec,) = fifo.SPECS
    assert spec.name == "fifo"
    # run it in the userver's place (its name is what RunConfig accepts)
    monkeypatch.setitem(SERVERS, "userver", replace(spec, name="userver"))
    host = Host(RunConfig(accept_limit=limit, rate_per_s=6000.0, duration_s=1.0,
                          warmup_s=0.25, seed=4))
    record = host.run()
    assert isinstance(host.server, fifo.Fifo)
    assert record["reply_rate_per_s"] == pytest.approx(6000.0, rel=0.1)
    # Equation 1 from the accept phase's own counts, each phase within its limit
    rate = record["accept_phases_per_s"] * record["accepts_per_phase"]
    assert record["accept_rate_per_s"] == pytest.approx(rate)
    assert 1 <= record["accepts_per_phase"] <= (float(limit) if limit != "inf" else 130)
    assert record["conns_per_work_phase"] > 0
