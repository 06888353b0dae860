"""Event-dispatch mechanisms (Chandra and Mosberger): invariants and qualitative results."""

from __future__ import annotations

import math

import pytest

from acceptsim.models import RunConfig, simulate
from acceptsim.models.servers.dispatch import SPECS as DISPATCH_SPECS
from acceptsim.sim.errors import ConfigError

MECHANISMS = sorted(spec.name for spec in DISPATCH_SPECS)
NONDETERMINISTIC = ("sim_cpu_time_s", "sim_conns_per_cpu_s")


def run(server: str, rate: float, idle: int = 0, limit: float = math.inf, **kw: object) -> dict:
    return simulate(
        server=server, rate_per_s=rate, idle_connections=idle, accept_limit=limit,
        duration_s=kw.pop("duration_s", 2.5), warmup_s=kw.pop("warmup_s", 1.0), **kw,
    )


def busy(result: dict) -> float:
    return 1.0 - result["cpu_share"]["idle"]


@pytest.mark.parametrize("server", MECHANISMS)
def test_every_connection_ends_in_one_outcome_with_idle_connections(server: str) -> None:
    r = run(server, 12000, idle=252, limit=1, duration_s=1.5, warmup_s=0.5)
    c = r["connections"]
    assert c["attempted"] == c["completed"] + c["timed_out"] + c["in_flight_at_end"]
    assert sum(r["cpu_share"].values()) == pytest.approx(1.0, abs=1e-9)
    assert r["queues"]["accept_queue_max"] <= r["queues"]["accept_queue_capacity"]
    assert r["open_connections_mean"] >= 252  # the idle ones are held all along
    assert r["dispatch"]["mechanism"]


@pytest.mark.parametrize("server", ["userver-select", "userver-rtsig"])
def test_the_same_seed_gives_the_same_result(server: str) -> None:
    one, two = (run(server, 8000, idle=100, duration_s=1.2, warmup_s=0.4) for _ in range(2))
    for key in NONDETERMINISTIC:
        one.pop(key), two.pop(key)
    assert one == two


def test_light_load_every_mechanism_serves_the_offered_rate() -> None:
    for server in MECHANISMS:
        r = run(server, 2000, idle=252)
        assert r["reply_rate_per_s"] == pytest.approx(2000, rel=0.1), server
        assert r["connections"]["timed_out"] == 0


def test_select_and_poll_cpu_grows_with_idle_connections_at_a_fixed_rate() -> None:
    for server in ("userver-select", "userver-poll"):
        cpu = [busy(run(server, 1000, idle=n)) for n in (0, 100, 1000)]
        assert cpu[0] < cpu[1] < cpu[2], server
        assert cpu[2] > 3 * cpu[0]


@pytest.mark.parametrize("server", ["userver-devpoll", "userver-epoll", "userver-rtsig",
                                    "userver-sigfd"])
def test_event_based_dispatch_cost_does_not_depend_on_idle_connections(server: str) -> None:
    none, many = run(server, 1000, idle=0), run(server, 1000, idle=6000)
    assert many["cpu_share"] == none["cpu_share"]  # idle descriptors are never touched
    assert many["reply_rate_per_s"] == none["reply_rate_per_s"]


def test_rt_signal_cost_depends_on_request_rate() -> None:
    low, high = run("userver-rtsig", 1000, idle=6000), run("userver-rtsig", 4000, idle=6000)
    assert busy(high) == pytest.approx(4 * busy(low), rel=0.15)
    assert high["dispatch"]["signals_queued_per_s"] > 3.5 * low["dispatch"]["signals_queued_per_s"]


def test_select_response_time_falls_with_load_under_many_idle_connections_until_overload() -> None:
    rt = {
        rate: run("userver-select", rate, idle=6000)["response_time_ms"]["mean"]
        for rate in (300, 6000, 20000)
    }
    assert rt[6000] < 0.8 * rt[300]  # more work amortised per select() call
    assert rt[20000] > rt[6000]  # past saturation it rises again


@pytest.mark.slow
def test_multi_accept_select_sustains_throughput_close_to_rt_signals_at_high_load() -> None:
    replies = {
        (server, limit): run(server, 26000, idle=252, limit=limit)["reply_rate_per_s"]
        for server in ("userver-select", "userver-rtsig")
        for limit in (1, math.inf)
    }
    rtsig = replies[("userver-rtsig", math.inf)]
    assert replies[("userver-select", math.inf)] >= 0.9 * rtsig
    assert replies[("userver-select", 1)] < 0.5 * rtsig  # the plain select server is far behind


def test_a_small_rt_signal_queue_overflows_and_falls_back_to_poll() -> None:
    small = {"rtsig_max": 16}
    r = run("userver-rtsig", 15000, idle=252, server_params=small)
    d = r["dispatch"]
    assert d["overflows_per_s"] > 0 and d["signals_lost_per_s"] > 0
    c = r["connections"]
    assert c["attempted"] == c["completed"] + c["timed_out"] + c["in_flight_at_end"]
    assert r["reply_rate_per_s"] > 0.5 * 15000  # lost events are found by the fall-back poll


def test_signal_per_fd_never_overflows() -> None:
    r = run("userver-sigfd", 15000, idle=252, server_params={"rtsig_max": 16})
    assert r["dispatch"]["overflows_per_s"] == 0
    assert r["dispatch"]["signals_lost_per_s"] == 0


def test_signal_per_fd_queues_fewer_signals_than_rt_signals_under_load() -> None:
    rt, fd = (
        run(s, 12000, duration_s=1.5, warmup_s=0.5) for s in ("userver-rtsig", "userver-sigfd")
    )
    assert fd["dispatch"]["signals_queued_per_s"] < rt["dispatch"]["signals_queued_per_s"]


def test_idle_connections_need_a_server_that_holds_them() -> None:
    with pytest.raises(ConfigError, match="idle_connections"):
        RunConfig(server="userver", idle_connections=10)


def test_server_params_are_checked_against_the_server_before_any_run() -> None:
    with pytest.raises(ConfigError, match="server.rtsig_max"):
        RunConfig(server="userver-rtsig", server_params={"rtsig_max": 0})
    with pytest.raises(ConfigError, match="unknown key"):
        RunConfig(server="userver-epoll", server_params={"no_such": 1})
    config = RunConfig(server="userver-rtsig", server_params={"rtsig_max": 64})
    assert config.build_server_params().rtsig_max == 64
    assert config.to_dict()["server_params"] == {"rtsig_max": 64}
