"""Time-varying load (closed forms for the arrival counts), time series, search, CLI."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from acceptsim.cli import main as cli
from acceptsim.models import arrivals
from acceptsim.models.experiment import TIMESERIES_COLUMNS, RunConfig, simulate
from acceptsim.sim import scenario as scenario_mod
from acceptsim.sim import search
from acceptsim.sim.errors import ConfigError
from acceptsim.sim.streams import Streams


def count_arrivals(spec: str, until: float, seed: int = 3) -> np.ndarray:
    """Start times of a profile's connections over [0, until), from its gap sampler."""
    profile = arrivals.parse(spec)
    assert profile is not None
    clock = [0.0]
    gap = arrivals.thinned_gaps(profile, Streams(seed), lambda: clock[0], "poisson")
    times = []
    while clock[0] < until:
        clock[0] += gap()
        times.append(clock[0])
    return np.array(times[:-1])


def within_poisson(count: int, mean: float, sigmas: float = 4.0) -> bool:
    return abs(count - mean) <= sigmas * math.sqrt(mean)


def test_a_step_profile_gives_poisson_counts_at_each_rate() -> None:
    t = count_arrivals("step:1000@0,3000@10", 20.0)
    assert within_poisson(int((t < 10).sum()), 10_000)
    assert within_poisson(int((t >= 10).sum()), 30_000)


def test_a_ramp_and_a_sine_give_their_integrated_rate() -> None:
    t = count_arrivals("ramp:0@0,4000@10", 10.0)
    assert within_poisson(len(t), 20_000)  # integral of a linear ramp
    assert within_poisson(int((t < 5).sum()), 5_000)
    t = count_arrivals("sine:mean=2000,amplitude=1500,period=4", 8.0)
    assert within_poisson(len(t), 16_000)  # whole periods: the mean rate
    assert within_poisson(int((t < 2).sum()), 2 * 2000 + 1500 * 4 / math.pi)


def test_a_bursty_profile_spends_the_expected_share_of_time_high() -> None:
    t = count_arrivals("bursty:low=200,high=1000,low_s=0.3,high_s=0.1", 200.0)
    expected = 200.0 * (0.75 * 200 + 0.25 * 1000)
    assert abs(len(t) - expected) / expected < 0.05  # ~660 switches: a few % of noise


@pytest.mark.parametrize(
    "spec", ["step", "step:", "step:100@5,200@1", "ramp:x@0", "sine:mean=1,amplitude=2,period=1",
             "bursty:low=1,high=2", "wave:1@0", "sine:mean=10,amplitude=1,period=1,foo=2"],
)
def test_bad_rate_profiles_are_config_errors(spec: str) -> None:
    with pytest.raises(ConfigError) as info:
        RunConfig(rate_profile=spec)
    assert info.value.field.startswith("rate_profile")


def test_the_time_series_adds_up_to_the_run() -> None:
    config = RunConfig(rate_per_s=12000.0, duration_s=2.0, warmup_s=0.0, accept_limit=4,
                       rate_profile="step:6000@0,14000@1", timeseries_interval_s=0.25)
    r = simulate(config)
    ts = r["timeseries"]
    assert list(ts) == list(TIMESERIES_COLUMNS)
    assert len(ts["time_s"]) == 8
    assert ts["target_rate_per_s"] == [6000.0] * 4 + [14000.0] * 4
    replies = sum(v * 0.25 for v in ts["reply_rate_per_s"])
    assert abs(replies - r["httperf"]["replies"]) <= 0.01 * replies
    assert set(ts["accept_limit"]) <= {4, None}
    assert 6000 * 1 + 14000 * 1 == pytest.approx(r["connections"]["attempted"], rel=0.05)


def test_the_constant_rate_path_is_unchanged_by_an_empty_profile() -> None:
    a = simulate(RunConfig(rate_per_s=9000.0, duration_s=1.0, warmup_s=0.0))
    b = simulate(RunConfig(rate_per_s=9000.0, duration_s=1.0, warmup_s=0.0, rate_profile=""))
    assert a["connections"] == b["connections"]


def fake_run(point: Mapping[str, Any]) -> dict[str, Any]:
    """A noisy concave response to log2(limit) with its peak at 8 (common random numbers:
    the noise depends only on the seed)."""
    limit = point["accept_limit"]
    x = 10.0 if limit == math.inf else math.log2(limit)
    noise = np.random.default_rng(point["seed"]).normal(0, 1.0)
    return {"reply_rate_per_s": 1000.0 - 10.0 * (x - 3.0) ** 2 + noise}


def test_best_of_finds_the_peak_with_common_random_numbers() -> None:
    result = search.best_of(
        {"seed": 1}, "accept_limit", [1, 2, 4, 8, 16, 32, math.inf], run=fake_run,
        normalise=dict, replications=3, jobs=1,
    )  # fmt: skip
    assert result.best.value == 8 and result.argmax.value == 8
    assert result.best.ci95[0] <= 1000.0 <= result.best.ci95[1] + 2.0
    # same seeds for every candidate: the paired noise cancels exactly
    assert [e.indistinguishable for e in result.evaluated].count(True) == 1


def test_prefer_first_takes_the_smallest_of_indistinguishable_candidates() -> None:
    def flat(point: Mapping[str, Any]) -> dict[str, Any]:
        return {"reply_rate_per_s": 500.0 + np.random.default_rng(point["seed"]).normal()}

    result = search.best_of({"seed": 2}, "accept_limit", [1, 4, 16], run=flat, normalise=dict,
                            replications=3, jobs=1, prefer="smallest")  # fmt: skip
    assert result.best.value == 1


def test_an_indifference_zone_admits_close_candidates() -> None:
    strict = search.best_of({"seed": 1}, "accept_limit", [1, 8], run=fake_run, normalise=dict,
                            replications=3, jobs=1, prefer="smallest")  # fmt: skip
    assert strict.best.value == 8  # 1 is 90 below the peak of 1000, far outside the noise
    loose = search.best_of({"seed": 1}, "accept_limit", [1, 8], run=fake_run, normalise=dict,
                           replications=3, jobs=1, prefer="smallest", indifference=0.1)  # fmt: skip
    assert loose.best.value == 1 and loose.argmax.value == 8


def test_optimise_tunes_a_parameter_with_scipy() -> None:
    def run(point: Mapping[str, Any]) -> dict[str, Any]:
        return {"reply_rate_per_s": -((point["x"] - 0.3) ** 2)}

    result = search.optimise(
        {"seed": 1}, lambda base, p: {**base, **p}, {"x": (0.0, 1.0)}, run=run, normalise=dict,
        replications=2, jobs=1, max_evals=15,
    )  # fmt: skip
    assert abs(result.best.value["x"] - 0.3) < 0.05
    assert len(result.evaluated) <= 15


def test_linked_sweep_keys_vary_fields_together(tmp_path: Any) -> None:
    path = tmp_path / "s.toml"
    path.write_text('name = "x"\n[sweep]\n"server+costs" = [["userver", "cluster1"], '
                    '["knot", "cluster2"]]\nrate_per_s = [1, 2]\n')
    points = scenario_mod.load(path).points()
    assert [(p["server"], p["costs"], p["rate_per_s"]) for p in points] == [
        ("userver", "cluster1", 1), ("userver", "cluster1", 2),
        ("knot", "cluster2", 1), ("knot", "cluster2", 2),
    ]  # fmt: skip
    path.write_text('[sweep]\n"server+costs" = [["userver"]]\n')
    with pytest.raises(ConfigError):
        scenario_mod.load(path)


def test_cli_policies_run_and_search(capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    assert cli(["policies", "--format", "json"]) == 0
    names = [p["name"] for p in json.loads(capsys.readouterr().out)]
    assert {"static", "queue-aware", "budget", "aimd", "hill-climb", "pid"} <= set(names)
    assert cli(["run", "--rate", "8000", "--duration", "0.5", "--warmup", "0", "--policy",
                "aimd", "--policy-param", "decrease=2", "--format", "json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["policy"] == "aimd:decrease=2" and record["policy_name"] == "aimd"
    assert record["policy_params"]["decrease"] == 2.0
    assert cli(["search", "--rate", "8000", "--duration", "0.5", "--candidates", "1,inf",
                "--replications", "2", "--jobs", "1", "--format", "json",
                "--plot", str(tmp_path / "curve.png")]) == 0
    assert (tmp_path / "curve.png").stat().st_size > 0
    out = json.loads(capsys.readouterr().out)
    assert {"best_accept_limit", "best_reply_rate_per_s", "ci95", "evaluated"} <= set(out)
    assert [e["accept_limit"] for e in out["evaluated"]] == [1, "inf"]
    assert out["best_accept_limit"] in (1, "inf")
    assert cli(["search", "--rate", "8000", "--duration", "0.3", "--policy", "aimd", "--tune",
                "increase=1.5:3", "--max-evals", "2", "--replications", "2", "--jobs", "1",
                "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["best_policy"].startswith("aimd:increase=") and len(out["evaluated"]) <= 2
    assert 1.5 <= out["best_params"]["increase"] <= 3


def test_cli_errors_name_the_policy_and_parameter(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["run", "--rate", "8000", "--duration", "1", "--policy", "pid",
                "--policy-param", "kp=-1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "policy.pid.kp" in err
    assert cli(["search", "--rate", "8000", "--policy", "nosuch"]) == 2
    assert cli(["run", "--rate", "8000", "--duration", "1", "--rate-profile", "step:1@x"]) == 2


def test_compare_puts_each_policy_against_the_best_static_limit() -> None:
    import pandas as pd

    from acceptsim.analysis import compare

    frame = pd.DataFrame({
        "server": ["tux"] * 5, "rate_per_s": [20000.0] * 5, "rate_profile": [""] * 5,
        "policy": ["static", "static", "static:limit=inf", "aimd", "aimd"],
        "policy_params.limit": [1, 64, math.inf, None, None],
        "reply_rate_per_s": [100.0, 110.0, 90.0, 99.0, 100.0],
    })  # fmt: skip
    table = compare(frame)
    assert table.loc[0, "best_static"] == "static:limit=64"
    assert table.loc[0, "aimd %"] == pytest.approx(100 * (99.5 / 110 - 1))
    # two workloads: a best static limit for each
    two = pd.concat([frame.assign(workload="one-packet"),
                     frame.assign(workload="specweb99", reply_rate_per_s=[9.0, 1.0, 1.0, 8, 8])])
    table = compare(two)
    assert list(table["load"]) == ["one-packet 20000", "specweb99 20000"]
    assert list(table["best_static"]) == ["static:limit=64", "static:limit=1"]
    assert table.loc[1, "aimd %"] == pytest.approx(100 * (8 / 9 - 1))
