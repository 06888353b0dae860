"""The architecture scenarios' outputs show their papers' qualitative results (slow).

Each test runs a scenario of ``scenarios/`` as ``acceptsim reproduce`` does
(shorter runs) and checks the result its description states.
"""

from __future__ import annotations

import pytest

from acceptsim import sim
from acceptsim.models.runner import load_scenario
from acceptsim.report import add_normalised

pytestmark = pytest.mark.slow

SHORT = {"duration_s": 3.0, "warmup_s": 1.0}


def frame(name: str):  # type: ignore[no-untyped-def]
    runs = sim.sweep(name, overrides=SHORT, jobs=2, progress=False)
    return add_normalised(load_scenario(name), runs)


def test_dispatch_idle_cost_rises_for_select_and_poll_only() -> None:
    f = frame("dispatch-idle-cost")
    idle = f.pivot_table(index="idle_connections", columns="server", values="cpu_share.idle")
    for server in ("userver-select", "userver-poll"):
        assert idle[server].is_monotonic_decreasing and idle[server].iloc[-1] < 0.05
    for server in ("userver-devpoll", "userver-epoll", "userver-rtsig", "userver-sigfd"):
        assert idle[server].nunique() == 1  # independent of the idle connections


def test_dispatch_select_response_time_falls_with_load_until_overload() -> None:
    f = frame("dispatch-response-time")
    rt = f.pivot_table(index="target_rate_per_s", columns="server",
                       values="response_time_ms.mean")["userver-select"]
    best = rt.idxmin()
    assert rt.iloc[0] > 1.4 * rt[best]  # lightest load: slowest
    assert 1000 < best < 20000 and rt.iloc[-1] > rt[best]


def test_dispatch_multi_accept_select_keeps_up_with_rt_signals_at_high_load() -> None:
    f = frame("dispatch-throughput")
    high = f[f["target_rate_per_s"] >= 22000]
    peak = high.groupby(["server", "accept_limit"])["reply_rate_per_s"].mean()
    rtsig = peak[("userver-rtsig", float("inf"))]
    assert peak[("userver-select", float("inf"))] >= 0.9 * rtsig
    assert peak[("userver-select", 1)] < 0.5 * rtsig


def test_flash_sped_falls_first_when_the_data_set_exceeds_memory() -> None:
    f = frame("flash-dataset")
    rate = f.pivot_table(index="files.dataset_mb", columns="server", values="reply_rate_per_s")
    small, big = rate.index.min(), 399.3
    assert rate.loc[small].min() > 0.97 * rate.loc[small].max()  # all keep up in memory
    assert rate.loc[big, "flash-sped"] < 0.85 * rate.loc[big, "flash-amped"]
    assert rate.loc[big, "flash-mp"] < rate.loc[big, "flash-mt"]


def test_twoclass_differentiation_holds_foreground_near_unloaded() -> None:
    f = frame("twoclass-background")
    norm = f.pivot_table(index="bg_rate_per_s", columns="server",
                         values="response_time_ms.mean.normalised")
    assert norm["twoclass"].max() < 3.0
    assert norm["twoclass-plain"].max() > 10.0
