"""wrk as a client: its report's arithmetic, its output parsed, its closed loop simulated,
its runs' files checked, and `acceptsim measure --client wrk`'s options refused when bad."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acceptsim.measure.harness import Plan
from acceptsim.measure.parse_errors import ParseError
from acceptsim.measure.runfile import parse_run_info
from acceptsim.measure.wrk import parse_wrk, wrk_command
from acceptsim.models.config import RunConfig
from acceptsim.models.experiment import simulate
from acceptsim.models.wrk_report import corrected_histogram, wrk_latency_ms
from acceptsim.sim.errors import ConfigError

REPORT = """\
Running 10s test @ http://127.0.0.1:18080/f1024.html
  2 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     9.12ms    2.04ms   1.20s    80.12%
    Req/Sec     3.51k   210.33     4.02k    71.00%
  Latency Distribution
     50%  895.00us
     75%    9.80ms
     90%   11.02ms
     99%    1.02s
  70123 requests in 10.01s, 80.12MB read
  Socket errors: connect 0, read 2, write 0, timeout 3
  Non-2xx or 3xx responses: 5
Requests/sec:   7005.29
Transfer/sec:      8.00MB
"""


# -- wrk's report ----------------------------------------------------------------------------
def test_a_full_report_is_read_in_wrk_units() -> None:
    r = parse_wrk(REPORT)
    assert (r.threads, r.connections, r.requests) == (2, 64, 70123)
    assert r.runtime_s == pytest.approx(10.01)
    assert r.latency_mean_ms == pytest.approx(9.12) and r.latency_max_ms == pytest.approx(1200)
    assert r.percentiles_ms == pytest.approx({50.0: 0.895, 75.0: 9.8, 90.0: 11.02, 99.0: 1020})
    assert (r.errors_read, r.errors_timeout, r.non_2xx_3xx) == (2, 3, 5)
    assert r.bytes_read == pytest.approx(80.12 * 2**20)
    assert r.requests_per_s == pytest.approx(7005.29)


def test_the_lines_wrk_leaves_out_when_zero_read_as_zero() -> None:
    text = "\n".join(line for line in REPORT.splitlines()
                     if not line.strip().startswith(("Socket", "Non-2xx", "Latency Dist", "50%",
                                                     "75%", "90%", "99%")))
    r = parse_wrk(text)
    assert (r.errors_timeout, r.non_2xx_3xx, r.percentiles_ms) == (0, 0, {})


@pytest.mark.parametrize("text, says", [
    (REPORT.replace("Requests/sec", "Requests/min"), "unknown line"),
    (REPORT.replace("  70123 requests in 10.01s, 80.12MB read\n", ""), "'totals'"),
    (REPORT + "Requests/sec:   1.00\n", "repeated line"),
    (REPORT.replace("timeout 3", "timeout 70124"), "timeouts for 70123 requests"),
    (REPORT.replace("  Latency Distribution\n", ""), "before 'Latency Distribution'"),
    ("", "no wrk report"),
])
def test_output_that_is_no_wrk_report_is_refused_with_its_line(text: str, says: str) -> None:
    with pytest.raises(ParseError, match=says):
        parse_wrk(text, "wrk.txt")


def test_the_command_closes_each_connection_unless_keepalive() -> None:
    closing = wrk_command("http://127.0.0.1:1/f", 16, 2, 10, 2, keepalive=False)
    kept = wrk_command("http://127.0.0.1:1/f", 16, 2, 10, 2, keepalive=True)
    assert closing[-3:] == ["--header", "Connection: close", "http://127.0.0.1:1/f"]
    assert "Connection: close" not in kept
    assert {"--connections=16", "--threads=2", "--duration=10s", "--timeout=2s",
            "--latency"} <= set(kept)


# -- wrk's arithmetic -----------------------------------------------------------------------
def naive_correction(hist: np.ndarray, expected: int, high: int) -> np.ndarray:
    """wrk 4.1's stats_correct, loop by loop as its C reads."""
    out = hist.astype(np.int64).copy()
    for n in range(expected * 2, high + 1):
        count = out[n]
        m = n - expected
        while count and m > expected:
            out[m] += count
            m -= expected
    return out


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 400), min_size=1, max_size=60), st.integers(1, 90))
def test_the_correction_adds_what_wrks_loop_adds(values: list[int], expected: int) -> None:
    hist = np.bincount(values, minlength=max(values) + 1)
    high = max(values)
    assert corrected_histogram(hist, expected, high).tolist() == \
        naive_correction(hist, expected, high).tolist()


def test_percentiles_follow_wrks_rank_rule_and_timeouts_stay_out() -> None:
    # 100 requests on 1 connection over 1 s: expected = 10,000 us, so times of at most
    # 20 ms are not corrected; two reach the 1-s timeout
    times = [i * 1e-4 for i in range(1, 99)] + [1.5, 2.0]
    r = wrk_latency_ms(times, [1] * 100, runtime_s=1.0, connections=1, timeout_s=1.0)
    assert (r["requests"], r["timeouts"]) == (100, 2)
    # rank round(0.5 x 98 + 0.5) = 50: the 50th smallest, 5.0 ms
    assert r["p50"] == pytest.approx(5.0) and r["max"] == pytest.approx(9.8)
    assert r["mean"] == pytest.approx(np.mean(np.floor(np.array(times[:98]) * 1e6 + 1e-6))
                                      * 1e-3)


def test_a_slow_reply_adds_the_requests_its_connection_could_not_send() -> None:
    # one connection, 10 requests in 1 s: expected 100 ms; a 450-ms reply adds samples at
    # 350, 250 and 150 ms (each above expected)
    times = [0.001] * 9 + [0.45]
    r = wrk_latency_ms(times, [1] * 10, runtime_s=1.0, connections=1, timeout_s=2.0)
    assert r["p99"] == pytest.approx(450.0)
    assert r["mean"] == pytest.approx((9 * 1 + 450 + 350 + 250 + 150) / 13)


def test_no_reply_below_the_timeout_leaves_the_latencies_empty() -> None:
    r = wrk_latency_ms([3.0], [1], runtime_s=10.0, connections=4, timeout_s=2.0)
    assert r["timeouts"] == 1 and r["p50"] is None


# -- the simulated wrk ----------------------------------------------------------------------
BASE: dict[str, Any] = {"server": "nginx", "kernel": "linux-modern", "network": "loopback",
                        "client": "wrk", "duration_s": 1.0, "warmup_s": 0.0, "seed": 2}


def test_a_simulated_wrk_reports_its_latencies_and_gives_no_request_up() -> None:
    rec = simulate(RunConfig.from_dict({**BASE, "concurrency": 256, "timeout_s": 0.01,
                                        "cpu_quota": 0.1, "cpu_period_s": 0.01}))
    wrk = rec["wrk_latency_ms"]
    assert set(wrk) == {"mean", "p50", "p75", "p90", "p99", "max"}
    assert wrk["p50"] <= wrk["p75"] <= wrk["p90"] <= wrk["p99"] <= wrk["max"]
    # a 10-ms timeout under a 1-ms-per-10-ms quota: many replies pass it; wrk counts them
    # and still reads every reply (no client timeouts, nothing wasted)
    assert rec["wrk_timeouts_per_s"] > 0
    assert rec["client_timeouts_per_s"] == 0 and rec["wasted_replies_per_s"] == 0
    assert rec["response_time_ms"]["max"] >= 10.0


def test_the_same_loop_under_httperfs_rules_gives_up_what_wrk_waits_for() -> None:
    wrk = simulate(RunConfig.from_dict({**BASE, "concurrency": 256, "timeout_s": 0.01,
                                        "cpu_quota": 0.1, "cpu_period_s": 0.01}))
    httperf = simulate(RunConfig.from_dict({**BASE, "client": "httperf", "concurrency": 256,
                                            "timeout_s": 0.01, "cpu_quota": 0.1,
                                            "cpu_period_s": 0.01}))
    assert "wrk_latency_ms" not in httperf
    assert httperf["client_timeouts_per_s"] > 0 and wrk["client_timeouts_per_s"] == 0


@pytest.mark.parametrize("fields, field", [
    ({"client": "wrk"}, "client"),  # no concurrency
    ({"client": "curl", "concurrency": 4}, "client"),
])
def test_a_wrk_run_needs_a_closed_loop(fields: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as err:
        RunConfig.from_dict({"server": "nginx", "duration_s": 1.0, **fields})
    assert err.value.field == field


# -- a wrk run's files and options ----------------------------------------------------------
@pytest.mark.parametrize("load, key", [
    ({"tool": "wrk", "concurrency": 4, "threads": 2, "target_rate_per_s": 100},
     "target_rate_per_s"),
    ({"tool": "wrk", "threads": 2}, "concurrency"),
    ({"tool": "wrk", "concurrency": 4, "threads": 8}, "threads"),
    ({"tool": "httperf"}, "target_rate_per_s"),
    ({"tool": "httperf", "target_rate_per_s": 10, "concurrency": 4}, "concurrency"),
])
def test_run_toml_refuses_a_load_its_tool_cannot_run(load: dict[str, Any], key: str) -> None:
    data = {"format": "acceptsim-measured-run/1", "server": {"name": "nginx"},
            "load": {"duration_s": 10, "timeout_s": 2, **load}}
    with pytest.raises(ConfigError) as err:
        parse_run_info(data, "run.toml")
    assert err.value.field == f"run.toml: load.{key}"


PLAN: dict[str, Any] = {"server": "nginx", "multi_accept": False, "rates_per_s": (),
                        "duration_s": 10.0, "repeats": 1, "timeout_s": 2.0,
                        "file_size_bytes": 1024, "port": 18080, "spacing": "poisson",
                        "processes": None, "pause_s": 0.0, "client": "wrk",
                        "concurrencies": (4, 16)}


@pytest.mark.parametrize("change, option", [
    ({"rates_per_s": (100.0,)}, "--rates"),
    ({"concurrencies": ()}, "--concurrency"),
    ({"concurrencies": (0,)}, "--concurrency"),
    ({"wrk_threads": 8}, "--threads"),
    ({"duration_s": 2.5}, "--duration"),
    ({"timeout_s": 0.5}, "--timeout"),
    ({"client": "httperf", "rates_per_s": (100.0,), "concurrencies": (), "keepalive": True},
     "--keepalive"),
    ({"client": "ab"}, "--client"),
    ({"trace_turns": "on"}, "--trace-turns"),  # wrk's threads sleep: no turns to trace
    ({"trace_turns": "yes"}, "--trace-turns"),
])
def test_measure_refuses_wrk_options_before_anything_runs(change: dict[str, Any],
                                                          option: str) -> None:
    with pytest.raises(ConfigError) as err:
        Plan(**{**PLAN, **change})
    assert err.value.field == option


def test_a_wrk_plan_runs_each_concurrency_per_repeat() -> None:
    plan = Plan(**{**PLAN, "repeats": 2})
    assert plan.points() == [(4, 1, None), (4, 2, None), (16, 1, None), (16, 2, None)]
    assert math.isfinite(plan.duration_s)


def test_every_recorded_wrk_run_loads_and_its_record_adds_up() -> None:
    from acceptsim.measure import find_runs, load_run

    data = Path(__file__).resolve().parent / "data" / "measured" / "nginx-wrk"
    runs = [load_run(d) for d in find_runs(data) if "httperf" not in d.parent.name]
    assert len(runs) == 2 * 2 * 5 * 2  # workers x keep-alive x concurrency x repeats
    for run in runs:
        rec = run.record()
        assert rec["client"] == "wrk" and rec["concurrency"] == run.info.load.concurrency
        assert rec["reply_rate_per_s"] == pytest.approx(
            run.wrk.requests / run.wrk.runtime_s, rel=0.01)
        assert (rec["wrk_latency_ms.p50"] <= rec["wrk_latency_ms.p99"]
                <= rec["wrk_latency_ms.max"])
        assert not rec["client_limited"] and not rec["host_limit_reasons"], run.path.name


def test_validate_prints_a_wrk_runs_latencies_and_keepalives_gain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    import shutil

    from acceptsim.cli import main

    data = Path(__file__).resolve().parent / "data" / "measured" / "nginx-wrk"
    for ka in ("off", "on"):
        name = f"nginx-multi_accept-off-wrk-c-00064-keepalive-{ka}-rep-1"
        shutil.copytree(data / "workers-1" / name, tmp_path / name)
    assert main(["validate", str(tmp_path), "--params", str(data / "wrk.params.toml")]) == 0
    out = capsys.readouterr().out
    assert "wrk runs: latency (ms) measured / predicted" in out
    assert "keep-alive's gain, 1 worker(s), 64 connections: measured 1.8" in out


def test_wrks_sleeps_are_read_per_request_and_compared_with_the_models_wakes(
        tmp_path: Path) -> None:
    """A run that recorded wrk's voluntary context switches (``load.client_sleeps``,
    ``acceptsim measure`` reads them from its resource usage) gives them per request;
    ``validate`` sets the model's wrk thread wake-ups per reply beside them.  One kept
    connection: the model's thread is woken by every reply."""
    import shutil

    from acceptsim.config_io import load_params_file
    from acceptsim.measure import load_run
    from acceptsim.measure.calibrate import validate

    data = Path(__file__).resolve().parent / "data" / "measured" / "nginx-wrk-quiet"
    name = "nginx-multi_accept-off-wrk-c-00001-keepalive-on-rep-1"
    shutil.copytree(data / "workers-1" / name, tmp_path / name)
    toml = tmp_path / name / "run.toml"
    text = toml.read_text()
    assert "client_sleeps" not in text
    requests = load_run(tmp_path / name).wrk.requests
    toml.write_text(text.replace("client_cpu_s =", f"client_sleeps = {requests}\nclient_cpu_s =",
                                 1))
    run = load_run(tmp_path / name)
    assert run.info.load.client_sleeps == requests
    assert run.record()["client_sleeps_per_reply"] == pytest.approx(1.0)
    row = validate([run], load_params_file(data / "wrk.params.toml")[0])["runs"][0]
    assert row["measured"]["client_sleeps_per_reply"] == pytest.approx(1.0)
    assert row["predicted"]["client_sleeps_per_reply"] == pytest.approx(1.0, abs=0.01)
