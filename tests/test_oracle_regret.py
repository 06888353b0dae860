"""The regret table (``acceptsim compare --regret``) and the per-interval oracle
(``acceptsim oracle``): their arithmetic on hand-built tables, and the command end to end."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acceptsim.analysis import oracle, regret


def _row(server: str, rate: float, policy: str, replies: float, p99: float | None = None,
         seed: int = 1) -> dict[str, object]:  # fmt: skip
    return {"server": server, "rate_per_s": rate, "rate_profile": "", "policy": policy,
            "seed": seed, "reply_rate_per_s": replies, "response_time_ms.p99": p99}  # fmt: skip


def test_regret_compares_each_policy_with_the_best_static_limit_of_each_case() -> None:
    frame = pd.DataFrame([
        # case A: limit 1 best (100); inf 80 (-20%); the policy 99 (-1%)
        _row("a", 10, "static:limit=1", 100.0, 5.0), _row("a", 10, "static:limit=inf", 80.0, 50.0),
        _row("a", 10, "adaptive", 99.0, 6.0),
        # case B: inf best (two replications: mean 200); limit 1 150 (-25%); the policy 196 (-2%)
        _row("a", 20, "static:limit=1", 150.0, 7.0),
        _row("a", 20, "static:limit=inf", 190.0, 40.0, seed=1),
        _row("a", 20, "static:limit=inf", 210.0, 60.0, seed=2),
        _row("a", 20, "adaptive", 196.0, 8.0),
    ])  # fmt: skip
    table, summary = regret(frame)
    pct = {(r.load, r.policy): r.pct for r in table.itertuples()}
    assert pct[("10", "static:limit=1")] == pytest.approx(0.0)
    assert pct[("10", "static:limit=inf")] == pytest.approx(-20.0)
    assert pct[("10", "adaptive")] == pytest.approx(-1.0)
    assert pct[("20", "static:limit=inf")] == pytest.approx(0.0)
    assert pct[("20", "static:limit=1")] == pytest.approx(-25.0)
    assert pct[("20", "adaptive")] == pytest.approx(-2.0)
    best = {r.load: r.best_static for r in table.itertuples()}
    assert best == {"10": "static:limit=1", "20": "static:limit=inf"}
    p99 = table.set_index(["load", "policy"])["response_time_ms.p99"]
    assert p99[("20", "static:limit=inf")] == pytest.approx(50.0)  # the replications' mean
    by_policy = summary.set_index("policy")
    assert list(summary["policy"]) == ["adaptive", "static:limit=inf", "static:limit=1"]
    assert by_policy.loc["adaptive", "worst_pct"] == pytest.approx(-2.0)
    assert by_policy.loc["adaptive", "within_near"] == 2  # -1 % and -2 % are within 2 %
    assert by_policy.loc["adaptive", "far_below"] == 0
    assert by_policy.loc["static:limit=inf", "far_below"] == 1  # -20 %
    assert by_policy.loc["static:limit=1", "mean_pct"] == pytest.approx(-12.5)


def test_regret_without_a_static_limit_says_so() -> None:
    with pytest.raises(ValueError, match="static"):
        regret(pd.DataFrame([_row("a", 10, "adaptive", 1.0)]))


def _series(rates: list[float], p99s: list[float | None] | None = None) -> pd.DataFrame:
    n = len(rates)
    return pd.DataFrame({
        "time_s": [2.0 * (i + 1) for i in range(n)], "reply_rate_per_s": rates,
        "response_time_p99_ms": p99s if p99s is not None else [1.0] * n,
        "client_timeouts_per_s": [0.0] * n,
    })  # fmt: skip


def test_the_oracle_takes_the_best_limit_of_every_interval() -> None:
    series = {"1": _series([10, 20, 20, 20]), "inf": _series([10, 30, 10, 10])}
    out = oracle(series)
    assert out["best_static"] == "1"  # mean 17.5 against 15
    assert out["best_static_reply_rate_per_s"] == pytest.approx(17.5)
    assert [r["best_limit"] for r in out["intervals"]] == ["1", "inf", "1", "1"]  # a tie: static
    assert out["oracle_reply_rate_per_s"] == pytest.approx((10 + 30 + 20 + 20) / 4)
    assert out["headroom_pct"] == pytest.approx(100 * (20 / 17.5 - 1))


def test_the_oracle_with_a_response_time_bound_takes_only_limits_within_it() -> None:
    series = {
        "1": _series([10, 10, 10], [5.0, 5.0, 5.0]),
        "inf": _series([20, 20, 20], [5.0, 500.0, None]),  # None: no reply, nothing exceeds
    }
    out = oracle(series, {"1": 5.0, "inf": 400.0}, p99_bound_ms=100.0)
    assert out["best_static"] == "1"  # inf's whole run is beyond the bound
    assert [r["best_limit"] for r in out["intervals"]] == ["inf", "1", "inf"]
    assert out["oracle_reply_rate_per_s"] == pytest.approx(50 / 3)
    none_fit = oracle({"1": _series([10], [300.0])}, {"1": 300.0}, p99_bound_ms=100.0)
    assert none_fit["best_static"] is None and none_fit["headroom_pct"] is None
    assert none_fit["intervals_without_eligible"] == 1


def test_the_oracle_refuses_series_of_different_intervals_and_counts_after_the_warmup() -> None:
    with pytest.raises(ValueError, match="intervals differ"):
        oracle({"1": _series([1, 2]), "inf": _series([1, 2, 3])})
    out = oracle({"1": _series([100, 1, 1]), "inf": _series([1, 2, 2])}, after_s=2.0)
    assert out["best_static"] == "inf" and len(out["intervals"]) == 2


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.floats(0, 1e5), min_size=3, max_size=3), min_size=1, max_size=5))
def test_the_oracle_is_never_below_the_best_static_limit(rates: list[list[float]]) -> None:
    out = oracle({str(i): _series(r) for i, r in enumerate(rates)})
    assert out["oracle_reply_rate_per_s"] >= out["best_static_reply_rate_per_s"] * (1 - 1e-12)
    assert math.isclose(out["best_static_reply_rate_per_s"], max(sum(r) / 3 for r in rates),
                        rel_tol=1e-12, abs_tol=1e-9)  # fmt: skip


def _acceptsim(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "acceptsim.cli", *args], capture_output=True,
                          text=True, timeout=120)  # fmt: skip


def test_the_oracle_command_runs_every_limit_and_reports_the_headroom() -> None:
    out = _acceptsim("oracle", "--server", "userver", "--rate", "20000", "--duration", "2",
                     "--interval", "1", "--candidates", "1,inf", "--jobs", "1", "--format", "json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert set(result["mean_reply_rate_per_s"]) == {"1", "inf"}
    assert len(result["intervals"]) == 2
    assert result["oracle_reply_rate_per_s"] >= result["best_static_reply_rate_per_s"]
    assert result["headroom_pct"] >= 0


@pytest.mark.parametrize(("args", "field"), [
    (["--interval", "0"], "interval"), (["--p99-ms", "-1"], "p99-ms"),
    (["--candidates", "1,1"], "candidates"), (["--interval", "5"], "interval"),
])  # fmt: skip
def test_the_oracle_refuses_bad_input_before_running(args: list[str], field: str) -> None:
    out = _acceptsim("oracle", "--rate", "1000", "--duration", "2", "--warmup", "0", *args)
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1 and field in out.stderr
    assert out.stdout == ""
