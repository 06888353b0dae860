"""The run record: every field declared once (acceptsim.models.record.METRICS), read by
the record, ``acceptsim run --help`` and the documentation alike; and one way to
simulate a point (acceptsim.models.runner.run_point) for every command."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from acceptsim.cli import build_parser
from acceptsim.models.experiment import simulate
from acceptsim.models.record import METRICS, SOURCES, help_text, markdown_table
from acceptsim.models.runner import run_point
from acceptsim.models.servers.registry import SERVERS

ROOT = Path(__file__).resolve().parent.parent
NAMES = [m.name for m in METRICS]
ALWAYS = [m.name for m in METRICS if m.present is None]
SHORT = {"duration_s": 0.6, "warmup_s": 0.2, "rate_per_s": 2000.0}


def test_every_metric_is_declared_once_with_a_unit_a_meaning_and_a_known_source() -> None:
    assert len(NAMES) == len(set(NAMES))
    for m in METRICS:
        assert m.meaning and m.source in SOURCES, m.name
        assert re.fullmatch(r"[a-z][a-z0-9_]*", m.name), m.name


@pytest.mark.parametrize("server", sorted(SERVERS))
def test_a_record_holds_the_declared_fields_in_order_then_the_servers_own(server: str) -> None:
    fields = dict(SHORT)
    if server.startswith("flash"):
        fields["workload"] = "fileset"
    record = simulate(server=server, **fields)
    keys = list(record)
    assert keys[: len(ALWAYS)] == ALWAYS
    declared = [k for k in keys if k in NAMES]
    assert declared == [n for n in NAMES if n in declared]  # the declaration's order
    extras = keys[len(declared):]
    assert not set(extras) & set(NAMES)
    assert keys == declared + extras  # a server's own measures come after every metric


def test_optional_fields_are_present_exactly_when_asked_for() -> None:
    plain = simulate(**SHORT)
    assert not {"replies_per_interval", "timeseries", "cfs"} & set(plain)
    asked = simulate(**SHORT, series_interval_s=0.1, timeseries_interval_s=0.2, cpu_quota=0.5)
    assert {"replies_per_interval", "timeseries", "cfs"} <= set(asked)
    assert list(asked) == [n for n in NAMES if n in asked]


def test_run_help_and_the_documentation_list_every_metric(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--help"])
    run_help = capsys.readouterr().out
    table = markdown_table()
    assert help_text() in run_help
    for name in NAMES:
        assert re.search(rf"^\s+{name}\s", run_help, re.M), name
        assert f"| `{name}` |" in table
    page = (ROOT / "docs" / "getting_started.md").read_text()
    assert "{include} _generated/record_fields.md" in page


def test_run_point_keeps_or_drops_the_time_series_and_summarises_a_reply_series() -> None:
    point = {**SHORT, "timeseries_interval_s": 0.2, "series_interval_s": 0.01}
    kept = run_point(point, timeseries=True)
    dropped = run_point(point)
    assert "timeseries" in kept and "timeseries" not in dropped
    for record in (kept, dropped):
        assert "replies_per_interval" not in record
        assert record["reply_rate_mser5_per_s"] >= 0


def _python_sources() -> list[Path]:
    return [
        p for p in (ROOT / "acceptsim").rglob("*.py")
    ]  # fmt: skip


def test_every_command_simulates_a_point_through_run_point() -> None:
    """One way to simulate a point: only the runner calls ``simulate`` (the front door
    for Python users, defined in acceptsim/models/experiment.py)."""
    def calls_simulate(path: Path) -> bool:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
                if name == "simulate":
                    return True
        return False

    callers = sorted(str(p.relative_to(ROOT)) for p in _python_sources() if calls_simulate(p))
    assert callers == ["acceptsim/models/runner.py"]


def test_no_module_reads_the_clients_private_counter() -> None:
    readers = [str(p.relative_to(ROOT)) for p in _python_sources() if "._next_id" in p.read_text()]
    # the client's own; others read connections_started
    assert readers == ["acceptsim/models/client.py"]
