"""``acceptsim bench``: simulated connection attempts per CPU-second, per server."""

from __future__ import annotations

import json

import pytest

from acceptsim.cli import main
from acceptsim.commands.cmd_bench import CASES, bench, heap_loop, heap_loop_speed
from acceptsim.models.servers.registry import SERVERS
from acceptsim.sim import native


def test_bench_reports_every_registered_server() -> None:
    result = bench(duration_s=0.2)
    assert set(result) == set(SERVERS) | set(CASES) and "nginx-4cpu" in result
    for figures in result.values():
        assert figures["conns_per_cpu_s"] > 0
        assert figures["conns_attempted"] > 0
        heap = figures["heap_loop_customers_per_cpu_s"]
        assert figures["heap_loop_ratio"] == pytest.approx(figures["conns_per_cpu_s"] / heap,
                                                           abs=1e-3)
        assert figures["hot_path"] == native.path_in_use()


def test_the_heap_loop_serves_what_it_is_asked_and_is_timed() -> None:
    assert heap_loop(1000) == 1000
    assert heap_loop_speed(customers=20_000, repeat=1) > 0


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
