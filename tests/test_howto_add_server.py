"""The how-to "Add a server model" (docs/howto/add_server.md): its example module runs
as written, through the accept phase every server uses, passed in as a user's server
is (the class itself, or ``--server fifo:Fifo``), never patched into the registry."""

from __future__ import annotations

import importlib
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from acceptsim.cli import main
from acceptsim.models.experiment import Host, RunConfig
from acceptsim.models.servers.registry import SERVERS

HOWTO = Path(__file__).resolve().parents[1] / "docs" / "howto" / "add_server.md"


@pytest.fixture(scope="module")
def fifo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """The page's module (its first ``python`` block), written as ``fifo.py`` in a folder
    on the path and imported as a user's module is."""
    blocks = re.findall(r"```python\n(.*?)```", HOWTO.read_text(), flags=re.S)
    folder = tmp_path_factory.mktemp("howto")
    (folder / "fifo.py").write_text(blocks[0])
    sys.path.insert(0, str(folder))
    sys.modules.pop("fifo", None)
    try:
        yield importlib.import_module("fifo")
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("fifo", None)


@pytest.mark.parametrize("limit", [1, 10, "inf"])
def test_the_example_server_runs_through_the_accept_phase(fifo: ModuleType, limit) -> None:
    (spec,) = fifo.SPECS
    assert spec.name == "fifo" and "fifo" not in SERVERS  # passed in, not registered
    config = RunConfig(server=fifo.Fifo, accept_limit=limit, rate_per_s=6000.0,
                       duration_s=1.0, warmup_s=0.25, seed=4)
    assert config.server.startswith("fifo:Fifo@")  # its import name and source's digest
    host = Host(config)
    record = host.run()
    assert isinstance(host.server, fifo.Fifo)
    assert record["server"] == config.server
    assert record["reply_rate_per_s"] == pytest.approx(6000.0, rel=0.1)
    # Equation 1 from the accept phase's own counts, each phase within its limit
    rate = record["accept_phases_per_s"] * record["accepts_per_phase"]
    assert record["accept_rate_per_s"] == pytest.approx(rate)
    assert 1 <= record["accepts_per_phase"] <= (float(limit) if limit != "inf" else 130)
    assert record["conns_per_work_phase"] > 0


def test_the_example_server_runs_from_the_command_line_by_its_spec(
    fifo: ModuleType, capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["run", "--server", "fifo:Fifo", "--accept-limit", "10", "--rate", "6000",
                 "--duration", "1", "--warmup", "0.25", "--seed", "4",
                 "--server-param", "skip_wait_s=2e-4", "--format", "json"])
    assert code == 0
    record = json.loads(capsys.readouterr().out)
    assert record["server"] == "fifo:Fifo"
    by_class = Host(RunConfig(server=fifo.SPECS[0], accept_limit=10, rate_per_s=6000.0,
                              duration_s=1.0, warmup_s=0.25, seed=4,
                              server_params={"skip_wait_s": 2e-4})).run()
    assert by_class["server"].startswith("fifo:Fifo@")
    for key in ("reply_rate_per_s", "accept_rate_per_s", "accepts_per_phase"):
        assert by_class[key] == record[key], key  # the same server, the same run
