"""Two service classes (Eggert and Heidemann): the link, conservation and the result."""

from __future__ import annotations

import pytest

from acceptsim.models import simulate
from acceptsim.models.tcp import Nic


def run(server: str, bg_rate: float, **kw: object) -> dict:
    params = {"bg_rate_per_s": bg_rate, **kw.pop("server_params", {})}  # type: ignore[dict-item]
    return simulate(
        server=server, rate_per_s=5000, server_params=params,
        duration_s=kw.pop("duration_s", 3.0), warmup_s=kw.pop("warmup_s", 1.0), **kw,
    )


def test_the_link_sends_chunks_in_order_at_its_rate() -> None:
    link = Nic(1000.0 * 8)  # 1,000 bytes/s
    assert link.serialise(0.0, 500) == pytest.approx(0.5)
    assert link.serialise(0.1, 100) == pytest.approx(0.6)  # queued behind the first
    assert link.wire_bytes == 600 and link.busy_s == pytest.approx(0.6)


def test_the_record_reports_the_two_class_link_as_the_hosts() -> None:
    r = run("twoclass-plain", 150, duration_s=2.0, warmup_s=0.5)
    assert r["link_utilization"] == [pytest.approx(r["link_busy_share"])]


@pytest.mark.parametrize("server", ["twoclass", "twoclass-plain"])
def test_both_classes_conserve_their_connections(server: str) -> None:
    r = run(server, 150, duration_s=2.0, warmup_s=0.5)
    for c in (r["connections"], r["background"]["connections"]):
        assert c["attempted"] == c["completed"] + c["timed_out"] + c["in_flight_at_end"]
        assert c["attempted"] > 0
    assert sum(r["cpu_share"].values()) == pytest.approx(1.0, abs=1e-9)
    assert 0 <= r["link_busy_share"] <= 1 + 1e-9


def test_without_background_load_both_variants_are_the_same_server() -> None:
    one, two = run("twoclass", 0), run("twoclass-plain", 0)
    assert one["response_time_ms"] == two["response_time_ms"]
    assert one["background"]["reply_rate_per_s"] == 0


def test_background_arrivals_do_not_shift_the_foreground_arrivals() -> None:
    none, some = run("twoclass", 0), run("twoclass", 100)
    assert none["connections"]["attempted"] == some["connections"]["attempted"]


def test_paced_background_never_exceeds_its_pool_times_its_rate_limit() -> None:
    r = run("twoclass", 300, server_params={"bg_workers": 2, "bg_send_limit_bytes_per_s": 5e6})
    assert r["background"]["throughput_mb_per_s"] <= 2 * 5.0 * 1.08  # replies straddling the window


def test_differentiation_keeps_foreground_response_time_near_its_unloaded_value() -> None:
    def normalised(server: str, bg: float) -> float:
        return (
            run(server, bg)["response_time_ms"]["mean"]
            / run(server, 0)["response_time_ms"]["mean"]
        )

    protected, plain = normalised("twoclass", 200), normalised("twoclass-plain", 200)
    assert protected < 3.0
    assert plain > 2 * protected


def test_lower_priority_alone_moves_cpu_waiting_off_the_foreground() -> None:
    no_link = {"link_bytes_per_s": 1e12, "bg_workers": 64, "bg_send_limit_bytes_per_s": "inf"}
    equal = run("twoclass", 200, server_params={**no_link, "bg_low_priority": False})
    low = run("twoclass", 200, server_params={**no_link, "bg_low_priority": True})
    assert low["response_time_ms"]["mean"] < equal["response_time_ms"]["mean"]
