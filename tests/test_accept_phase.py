"""The accept phase every server runs (acceptsim/models/servers/base.py, AcceptPhase): its limit,
its ends, the failed accept's charge, its counters, and that no server keeps accept
bookkeeping of its own."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from acceptsim.models.connection import Connection
from acceptsim.models.experiment import Host, RunConfig, simulate
from acceptsim.models.servers.base import ACCEPT
from acceptsim.models.servers.registry import SERVERS
from acceptsim.models.servers.userver import Userver

SERVERS_DIR = Path(__file__).resolve().parents[1] / "acceptsim" / "models" / "servers"


class _Scripted:
    """A policy that answers every phase with the same limit (0 skips)."""

    name = "scripted"

    def __init__(self, limit: float) -> None:
        self.limit = limit

    def accept_limit(self, view: object) -> float:
        return self.limit


def _host(server: str = "userver", limit: float = 2, queued: int = 5) -> Host:
    """A host whose clients send nothing (1 connection/s, never run), with ``queued``
    connections put straight into its accept queue."""
    config = RunConfig(server=server, rate_per_s=1.0, duration_s=1.0, warmup_s=0.0)
    host = Host(config, policy=_Scripted(limit))
    for i in range(queued):
        conn = Connection(i, 0.0, 100.0)
        host.client.hold(conn)
        host.listen.accept_queue.append(conn)
    return host


def _accept_all(host: Host) -> list[Connection | None]:
    """Run one accept phase by hand: what each accept() call returned."""
    acc = host.server.acceptor
    got: list[Connection | None] = []
    if acc.begin(host.listen):
        while acc.take():
            conn = acc.took()
            got.append(conn)
            if conn is None:
                break
    acc.end()
    return got


def test_a_phase_ends_at_its_limit_and_counts_once() -> None:
    host = _host(limit=2, queued=5)
    got = _accept_all(host)
    acc = host.server.acceptor
    assert [c.id for c in got if c is not None] == [0, 1]
    assert (acc.phases, acc.accepts, acc.failed) == (1, 2, 0)
    assert host.server.open == 2 and len(host.listen.accept_queue) == 3


def test_a_phase_ends_when_the_server_holds_its_most_without_calling_accept() -> None:
    host = _host(limit=10, queued=5)
    host.server.max_open = 3
    got = _accept_all(host)
    acc = host.server.acceptor
    assert len(got) == 3 and None not in got
    assert acc.failed == 0 and len(host.listen.accept_queue) == 2
    assert not acc.ready(host.listen)  # full: the listening socket is not reported


@pytest.mark.parametrize("server", ["userver", "knot", "flash-mp"])
def test_an_empty_queue_ends_the_phase_with_a_charged_failed_accept(server: str) -> None:
    host = _host(server, limit=10, queued=2)
    acc = host.server.acceptor
    got = _accept_all(host)
    assert [c is None for c in got] == [False, False, True]
    assert (acc.phases, acc.accepts, acc.failed) == (1, 2, 1)
    # the burst the server yields for that call is the failed accept's, on the accept
    # category
    category, seconds = acc.burst  # type: ignore[misc]
    assert category == ACCEPT and seconds == host.server.accept_call_costs()[1] > 0


def test_tux_finds_the_queue_empty_without_a_failed_accept_to_pay() -> None:
    host = _host("tux", limit=10, queued=2)
    acc = host.server.acceptor
    got = _accept_all(host)
    assert None not in got and len(got) == 2  # take() said no third call
    assert (acc.phases, acc.accepts, acc.failed) == (1, 2, 1)


def test_a_limit_of_zero_skips_the_phase_and_is_counted_as_a_skip() -> None:
    host = _host(limit=0, queued=3)
    acc = host.server.acceptor
    assert _accept_all(host) == []
    assert acc.skipped and (acc.skips, acc.phases, acc.accepts) == (1, 0, 0)
    assert len(host.listen.accept_queue) == 3


@pytest.mark.parametrize("name", list(SERVERS))
def test_every_server_counts_its_accepts_in_the_accept_phase(name: str) -> None:
    """Over a run, the accept phase's counts are the record's (Equation 1) and no phase
    accepts more than its limit."""
    spec = SERVERS[name]
    config = RunConfig(
        server=name, accept_limit=3, rate_per_s=6000.0, duration_s=0.6, warmup_s=0.0,
        seed=11, server_params=dict(spec.test_params),
    )
    host = Host(config)
    record = host.run()
    acc = host.server.acceptor
    window = config.duration_s
    assert acc.accepts > 0
    assert record["accept_rate_per_s"] == pytest.approx(acc.accepts / window)
    assert record["accept_phases_per_s"] == pytest.approx(acc.phases / window)
    assert acc.phases <= acc.accepts <= 3 * acc.phases


def test_no_server_keeps_accept_bookkeeping_of_its_own() -> None:
    """Phases, accepts, failed accepts and skips are counted in AcceptPhase only."""
    pattern = re.compile(
        r"\b(accept_phases|accepts|failed_accepts|failed|skips|accept_skipped)\s*\+?=[^=]"
    )
    for path in sorted(SERVERS_DIR.glob("*.py")):
        text = path.read_text()
        if path.name == "base.py":
            body = text[text.index("class AcceptPhase"):text.index("class ServerCounters")]
            text = text.replace(body, "")
        hits = [line.strip() for line in text.splitlines() if pattern.search(line)]
        assert not hits, f"{path.name}: {hits}"


class _CheapSelect(Userver):
    """The userver with select() at a constant cost."""

    SELECT_S = 1e-7  # far below the default's fixed part alone

    def select_cost(self) -> float:
        return self.SELECT_S


class _CountingHolds(Userver):
    """The userver counting the connections it holds and releases."""

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        self.holds = self.releases = 0
        super().__init__(*args, **kwargs)

    def hold(self, conn: Connection) -> None:
        self.holds += 1
        super().hold(conn)

    def release(self, conn: Connection) -> None:
        self.releases += 1
        super().release(conn)


def test_a_subclass_redefining_select_cost_is_obeyed(monkeypatch) -> None:
    config = RunConfig(rate_per_s=8000.0, duration_s=1.0, warmup_s=0.25, seed=3)
    monkeypatch.setitem(SERVERS, "userver", replace(SERVERS["userver"], cls=_CheapSelect))
    record = simulate(config)
    per_select = record["cpu_share"]["getevents"] / record["select_calls_per_s"]
    # every select costs SELECT_S; one that slept scans again and costs it twice
    assert _CheapSelect.SELECT_S <= per_select <= 2 * _CheapSelect.SELECT_S * (1 + 1e-9)


def test_a_subclass_redefining_hold_and_release_is_called_for_every_connection(
    monkeypatch,
) -> None:
    config = RunConfig(rate_per_s=8000.0, duration_s=1.0, warmup_s=0.25, seed=3)
    monkeypatch.setitem(SERVERS, "userver", replace(SERVERS["userver"], cls=_CountingHolds))
    host = Host(config)
    host.run()
    server = host.server
    assert server.holds == server.acceptor.accepts > 0
    assert server.releases == server.holds - server.open


EDITED_SELECT = r"""
import json
from acceptsim.models.experiment import RunConfig, simulate
from acceptsim.models.servers.userver import Userver
Userver.select_cost = lambda self: 1e-7  # an edit of the userver's own select cost
r = simulate(RunConfig(rate_per_s=8000.0, duration_s=1.0, warmup_s=0.25, seed=3))
print(json.dumps(r["cpu_share"]["getevents"] / r["select_calls_per_s"]))
"""


def test_an_edit_of_the_userver_select_cost_reaches_the_plain_userver() -> None:
    """The plain userver's loop calls Userver.select_cost (from the Python sources, where a
    method can be edited in place): no copy of its formula is left in the loop."""
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "ACCEPTSIM_PURE_PYTHON": "1"}
    out = subprocess.run(
        [sys.executable, "-c", EDITED_SELECT], env=env, capture_output=True, text=True,
        check=True,
    )
    per_select = json.loads(out.stdout.strip().splitlines()[-1])
    assert 1e-7 <= per_select <= 2e-7 * (1 + 1e-9)
