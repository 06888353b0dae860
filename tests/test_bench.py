"""``acceptsim bench``: simulated connection attempts per CPU-second, per server."""

from __future__ import annotations

import json

import pytest

from acceptsim.cli import main
from acceptsim.commands import cmd_bench
from acceptsim.commands.cmd_bench import (
    CASES,
    HEAP_LOOP_WARMUP_CUSTOMERS,
    bench,
    bench_config,
    count_events,
    heap_loop,
    heap_loop_speed,
)
from acceptsim.models.servers.registry import SERVERS
from acceptsim.sim import native


def test_bench_reports_every_registered_server() -> None:
    result = bench(duration_s=0.2)
    assert set(result) == set(SERVERS) | set(CASES)
    assert {"nginx-4cpu", "userver-specweb99"} <= set(result)
    for figures in result.values():
        assert figures["conns_per_cpu_s"] > 0
        assert figures["conns_attempted"] > 0
        heap = figures["heap_loop_customers_per_cpu_s"]
        assert figures["heap_loop_ratio"] == pytest.approx(figures["conns_per_cpu_s"] / heap,
                                                           abs=1e-3)
        assert figures["heap_loop_ratios"] == [figures["heap_loop_ratio"]]
        assert figures["hot_path"] == native.path_in_use()


def test_bench_alternates_rounds_and_reports_the_median_ratio() -> None:
    figures = bench(["knot"], duration_s=0.1, rounds=3)["knot"]
    ratios = figures["heap_loop_ratios"]
    assert len(ratios) == 3
    assert figures["heap_loop_ratio"] == sorted(ratios)[1]


def test_bench_cases_run_what_they_name() -> None:
    nginx = bench_config("nginx-4cpu", 1.0)
    assert (nginx.server, nginx.cpus, nginx.rate_per_s) == ("nginx", 4, 96000.0)
    specweb = bench_config("userver-specweb99", 1.0)
    assert (specweb.server, specweb.workload, specweb.rate_per_s) == ("userver", "specweb99",
                                                                     3000.0)


def test_events_per_attempt_are_counted_by_kind() -> None:
    events = count_events(bench_config("userver", 0.2))
    assert events["attempts"] > 1000
    by_kind = events["by_kind"]
    # every attempt's first SYN arrives as one event; the rest are the handshake, the
    # request, the FIN and the server's bursts
    assert by_kind["call Client._arrival"] == pytest.approx(1.0, abs=0.01)
    assert any(kind.startswith("task step") for kind in by_kind)
    assert events["total"] == pytest.approx(sum(by_kind.values()), abs=0.05)
    assert 3.0 < events["total"] < 12.0


def test_the_heap_loop_serves_what_it_is_asked_and_is_timed() -> None:
    assert heap_loop(1000) == 1000
    assert heap_loop_speed(customers=20_000, repeat=1) > 0


def test_the_heap_loop_is_warmed_before_it_is_timed(monkeypatch: pytest.MonkeyPatch) -> None:
    # CPython 3.11 specializes a function's bytecode after its eighth entry: a timing
    # of the loop's first calls in a process measures the unspecialized interpreter
    calls: list[int] = []

    def recorded(customers: int, seed: int = 1) -> int:
        calls.append(customers)
        return customers

    monkeypatch.setattr(cmd_bench, "heap_loop", recorded)
    heap_loop_speed(customers=20_000, repeat=2)
    assert calls.count(20_000) == 2
    assert calls.index(20_000) >= 8
    assert all(c == HEAP_LOOP_WARMUP_CUSTOMERS for c in calls[: calls.index(20_000)])


@pytest.mark.bench
def test_bench_prints_conns_per_cpu_second(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench"]) == 0
    out = capsys.readouterr().out
    result = json.loads(out)
    with capsys.disabled():
        print("\nacceptsim bench:\n" + out)
    assert result["userver"]["conns_per_cpu_s"] > 0


def test_bench_profile_writes_the_top_functions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--servers", "userver", "--duration", "0.2", "--profile", "5"]) == 0
    captured = capsys.readouterr()
    assert set(json.loads(captured.out)) == {"userver"}
    assert "== profile: userver" in captured.err
    assert "tottime" in captured.err and "_run_until" in captured.err
    assert "pure Python" in captured.err  # cProfile sees only the Python sources
