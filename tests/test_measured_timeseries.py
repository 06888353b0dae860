"""Time series of measured runs (issue 28): the access log binned into intervals, the
sampler's counters turned into rows, ``timeseries.csv`` written and checked, the
simulator's columns of the same names, and ``acceptsim validate --timeseries``.

The sampler itself (its thread, the fake /proc tree, the cgroup's usage) is tested in
``tests/measure/test_timeseries_sampler.py``.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from acceptsim.cli import main
from acceptsim.config_io import load_params_file
from acceptsim.measure import find_runs, load_run
from acceptsim.measure.parse_errors import ParseError
from acceptsim.measure.runfile import parse_run_info
from acceptsim.measure.synthetic import write_run
from acceptsim.measure.timeseries_check import compare, mean_table
from acceptsim.measure.timeseries_csv import (
    NAMES,
    SHARED,
    TIMESERIES_FILE,
    LogLine,
    bin_replies,
    parse_access_line,
    parse_access_log,
    read_timeseries,
    rows_from_samples,
    write_timeseries,
)
from acceptsim.models.config import RunConfig
from acceptsim.models.costs import CLUSTER1
from acceptsim.models.experiment import simulate
from acceptsim.models.run_series import COLUMNS
from acceptsim.sim.errors import ConfigError

DATA = Path(__file__).resolve().parent / "data" / "measured"
DEMO = DATA / "timeseries-demo"


# -- the access log ---------------------------------------------------------------------------
def line(msec: float, request_time: float = 0.0, pid: int = 7, status: int = 200) -> LogLine:
    return LogLine(msec, request_time, pid, status)


def test_an_access_log_line_is_msec_request_time_pid_status() -> None:
    assert parse_access_line("1764140000.123 0.004 4242 200\n") == LogLine(
        1764140000.123, 0.004, 4242, 200)
    lines = parse_access_log([b"1.000 0.000 1 200\n", b"\n", b"2.500 0.001 2 499\n"])
    assert [x.pid for x in lines] == [1, 2]


@pytest.mark.parametrize("text", ["4242", "1.0 0.0 4242", "1.0 0.0 x 200", "1.0 nan 1 200",
                                  "1.0 -0.5 1 200", "a b c d", "1.0 0.0 1 200 extra"])
def test_a_malformed_access_log_line_names_its_file_and_line(text: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_access_log(["1.0 0.0 1 200", text], "logs/access.log")
    assert err.value.path == "logs/access.log" and err.value.line == 2
    assert repr(text.strip()) in str(err.value)


def test_replies_are_binned_by_their_time_into_half_open_intervals() -> None:
    edges = [100.0, 100.1, 100.2, 100.35]
    log = [
        line(99.9),  # before the load (the start's probe): left out
        line(100.0),  # at the first sample: not after it, left out
        line(100.05, 0.002), line(100.1, 0.004),  # (100.0, 100.1]
        line(100.15, status=499),  # the client had gone: no reply
        line(100.2, 0.010),  # (100.1, 100.2]
        line(100.3, 0.0), line(100.35, 0.001),  # (100.2, 100.35]
        line(100.5),  # after the last sample: left out
    ]
    bins = bin_replies(log, edges)
    assert [b[0] for b in bins] == [2, 1, 2]
    assert bins[0][1] == pytest.approx(3.0) and bins[0][2] == pytest.approx(4.0)
    assert bins[1][1:] == (pytest.approx(10.0), pytest.approx(10.0))
    assert bins[2][1:] == (pytest.approx(0.5), pytest.approx(1.0))
    assert bin_replies([line(100.15, status=499)], edges)[1] == (0, None, None)


# -- rows from samples ------------------------------------------------------------------------
def samples() -> list[dict[str, float]]:
    base = {"TcpExtListenOverflows": 10, "TcpExtListenDrops": 12, "TcpExtTCPSynRetrans": 0,
            "user_ticks": 100, "system_ticks": 50, "softirq_ticks": 5, "busy_ticks": 155,
            "nr_throttled": 3, "throttled_us": 1000, "usage_us": 5000, "accept_queue_len": 0}
    second = {**base, "wall_s": 1000.1, "TcpExtListenOverflows": 60, "TcpExtListenDrops": 72,
              "TcpExtTCPSynRetrans": 4, "user_ticks": 101, "system_ticks": 52,
              "softirq_ticks": 5, "busy_ticks": 158, "nr_throttled": 13,
              "throttled_us": 81000, "usage_us": 15000, "accept_queue_len": 129}
    third = {"wall_s": 1000.25, "TcpExtListenOverflows": 60, "TcpExtListenDrops": 72,
             "accept_queue_len": 3}  # the CPU and cgroup sources failed meanwhile
    return [{**base, "wall_s": 1000.0}, second, third]


def test_rows_are_deltas_over_the_actual_intervals() -> None:
    log = [line(1000.05), line(1000.09), line(1000.2)]
    first, second = rows_from_samples(samples(), log, tick_ms=10.0)
    assert list(first) == list(NAMES)
    assert first["time_s"] == pytest.approx(0.1) and first["interval_s"] == pytest.approx(0.1)
    assert first["reply_rate_per_s"] == pytest.approx(20.0)
    assert first["listen_overflows_per_s"] == pytest.approx(500.0)
    assert first["listen_drops_per_s"] == pytest.approx(600.0)
    assert first["syn_retrans_per_s"] == pytest.approx(40.0)
    assert (first["throttled_periods"], first["throttled_ms"], first["usage_ms"]) == (
        10, pytest.approx(80.0), pytest.approx(10.0))
    assert first["server_cpu_user_ms"] == pytest.approx(10.0)
    assert first["server_cpu_system_ms"] == pytest.approx(20.0)
    assert first["server_cpu_softirq_ms"] == 0
    assert first["server_cpu_busy_ms"] == pytest.approx(30.0)
    assert first["accept_queue_len"] == 129
    # the second interval is 0.15 s long, as sampled; the sources that failed are empty
    assert second["time_s"] == pytest.approx(0.25) and second["interval_s"] == pytest.approx(0.15)
    assert second["reply_rate_per_s"] == pytest.approx(1 / 0.15)
    assert second["listen_overflows_per_s"] == 0 and second["syn_retrans_per_s"] is None
    assert second["throttled_ms"] is None and second["server_cpu_busy_ms"] is None


def test_without_an_access_log_the_replies_are_empty_and_a_reset_counter_is_refused() -> None:
    (row, _) = rows_from_samples(samples(), None)
    assert row["reply_rate_per_s"] is None
    assert row["listen_overflows_per_s"] == pytest.approx(500.0)
    bad = samples()
    bad[1]["TcpExtListenDrops"] = 1
    with pytest.raises(ValueError, match="TcpExtListenDrops went down"):
        rows_from_samples(bad, None)
    assert rows_from_samples(samples()[:1], None) == []


# -- timeseries.csv ---------------------------------------------------------------------------
def test_the_file_round_trips_with_empty_cells_as_nan(tmp_path: Path) -> None:
    rows = rows_from_samples(samples(), [line(1000.05)])
    path = write_timeseries(tmp_path / TIMESERIES_FILE, rows)
    header = path.read_text().splitlines()[0]
    assert header.split(",") == list(NAMES)
    frame = read_timeseries(path)
    assert list(frame.columns) == list(NAMES) and len(frame) == 2
    assert frame["reply_rate_per_s"][0] == pytest.approx(10.0)
    assert math.isnan(frame["throttled_ms"][1]) and frame["accept_queue_len"][1] == 3


@pytest.mark.parametrize(("text", "line_no", "words"), [
    ("", 1, ["empty", "time_s"]),
    ("time_s,interval_s,replies\n", 1, ["unknown column 'replies'", "allowed: time_s"]),
    ("time_s,reply_rate_per_s\n0.1,3\n", 1, ["no column 'interval_s'"]),
    ("time_s,interval_s,time_s\n", 1, ["'time_s' appears twice"]),
    ("time_s,interval_s\n0.1,0.1\n0.2\n", 3, ["1 cells, the header has 2"]),
    ("time_s,interval_s,usage_ms\n0.1,0.1,abc\n", 2,
     ["column 'usage_ms'", "value 'abc' is not a number", "or empty"]),
    ("time_s,interval_s,usage_ms\n0.1,0.1,-3\n", 2, ["'usage_ms'", "'-3'", ">= 0"]),
    ("time_s,interval_s,usage_ms\n0.1,0.1,inf\n", 2, ["'usage_ms'", "'inf'", "finite"]),
    ("time_s,interval_s,accept_queue_len\n0.1,0.1,2.5\n", 2,
     ["'accept_queue_len'", "'2.5' is not a whole number"]),
    ("time_s,interval_s\n0.1,0\n", 2, ["'interval_s'", "'0' is zero"]),
    ("time_s,interval_s\n0.1,\n", 2, ["'interval_s'", "'' is not a number"]),
    ("time_s,interval_s\n0.2,0.1\n0.2,0.1\n", 3, ["'time_s'", "0.2", "after the previous"]),
])  # fmt: skip
def test_a_malformed_file_names_the_file_line_column_and_value(
    tmp_path: Path, text: str, line_no: int, words: list[str]
) -> None:
    path = tmp_path / TIMESERIES_FILE
    path.write_text(text)
    with pytest.raises(ParseError) as err:
        read_timeseries(path)
    assert err.value.path == str(path) and err.value.line == line_no
    for word in words:
        assert word in err.value.message


def test_recorded_runs_without_a_series_still_load_and_have_none() -> None:
    runs = [d for d in find_runs(DATA) if not (d / TIMESERIES_FILE).exists()]
    assert len(runs) > 100
    for directory in runs[::25]:
        run = load_run(directory)
        assert run.timeseries() is None and run.info.timeseries.interval_s == 0
        assert "[timeseries]" not in run.info.to_toml()


def test_a_runs_sampling_is_in_run_toml_and_checked() -> None:
    base = {"format": "acceptsim-measured-run/1", "server": {"name": "nginx"},
            "load": {"target_rate_per_s": 1.0, "duration_s": 1.0, "timeout_s": 1.0}}
    info = parse_run_info({**base, "timeseries": {"interval_s": 0.1, "sampler_cpu_s": 0.02}})
    assert info.timeseries.interval_s == 0.1
    assert "[timeseries]\ninterval_s = 0.1\nsampler_cpu_s = 0.02" in info.to_toml()
    for bad, field in (({"interval_s": -1}, "timeseries.interval_s"),
                       ({"interval_s": 1e-9}, "timeseries.interval_s"),
                       ({"every": 1}, "timeseries.every")):
        with pytest.raises(ConfigError) as err:
            parse_run_info({**base, "timeseries": bad}, "x/run.toml")
        assert err.value.field == f"x/run.toml: {field}"


def test_a_runs_malformed_series_is_an_error_when_read(tmp_path: Path) -> None:
    source = find_runs(DATA / "nginx-loopback-quota")[0]
    run_dir = tmp_path / "run"
    shutil.copytree(source, run_dir)
    (run_dir / TIMESERIES_FILE).write_text("time_s,interval_s\n0.1,0.1\n0.05,0.1\n")
    run = load_run(run_dir)  # the whole-run record does not need it
    assert run.record()["reply_rate_per_s"] > 0
    with pytest.raises(ParseError, match=r"timeseries.csv:3: column 'time_s'"):
        run.timeseries()
    (run_dir / TIMESERIES_FILE).unlink()
    (run_dir / TIMESERIES_FILE).symlink_to("/etc/hostname")
    with pytest.raises(ConfigError, match="outside"):
        run.timeseries()


# -- the simulator's columns ------------------------------------------------------------------
NO_KERNEL_COST = CLUSTER1.replace(rx_segment_s=0.0, tx_segment_s=0.0, syn_queue_s=0.0,
                                  child_socket_s=0.0)


def test_the_simulated_series_has_the_measured_names_for_what_means_the_same() -> None:
    assert set(SHARED) <= set(COLUMNS)
    assert "reply_rate_per_s" in COLUMNS and "replies_per_s" not in COLUMNS


def test_a_saturated_server_under_a_quota_is_throttled_as_period_accounting_says() -> None:
    """The server always has work (10x its capacity) and no kernel work delays it: it
    runs until a scheduler tick (4 ms on linux-modern) finds its quota used up, then waits
    throttled until a period's refill has paid what it overran.  Per 0.1-s interval (ten
    10-ms periods): usage + throttled = the interval, and every period is throttled; over
    the run the usage is q x the run, within one tick's overrun.  (The first interval's
    first period starts before the first request arrives: it is throttled a little
    less.)"""
    q, period, interval, tick = 0.25, 0.01, 0.1, 0.004
    r = simulate(server="nginx", rate_per_s=40000, duration_s=0.6, warmup_s=0.0,
                 cpu_quota=q, cpu_period_s=period, timeseries_interval_s=interval,
                 costs=NO_KERNEL_COST, accept_limit=math.inf, kernel="linux-modern")
    ts = pd.DataFrame(r["timeseries"])
    assert len(ts) == 6
    assert list(ts["throttled_periods"]) == [10] * 6
    both = (ts["usage_ms"] + ts["throttled_ms"]).tolist()
    assert both[1:] == pytest.approx([1e3 * interval] * 5, abs=1e-9)
    assert 0 < 1e3 * interval - both[0] < 1.0
    assert ts["usage_ms"].sum() == pytest.approx(1e3 * q * 0.6, abs=1e3 * tick)
    # the quota is noticed at ticks: usage per interval is not q x interval (fails with
    # the quota enforced at once)
    assert ts["usage_ms"].max() - ts["usage_ms"].min() >= 1.0
    assert ts["server_cpu_busy_ms"].tolist() == pytest.approx(ts["usage_ms"].tolist())


def test_kernel_work_shortens_the_throttled_time_by_at_most_itself() -> None:
    """With per-packet kernel work the server runs for less of each interval than it
    is not throttled: the time neither used nor throttled is at most the kernel's."""
    q, interval = 0.1, 0.1
    r = simulate(server="nginx", rate_per_s=6000, duration_s=0.5, warmup_s=0.0, cpu_quota=q,
                 cpu_period_s=0.01, timeseries_interval_s=interval, accept_limit=1)
    ts = pd.DataFrame(r["timeseries"])
    kernel = ts["server_cpu_busy_ms"] - ts["usage_ms"]
    shortfall = 1e3 * interval - ts["usage_ms"] - ts["throttled_ms"]
    assert (shortfall > 0).all() and (shortfall <= kernel + 1e-9).all()
    tick = RunConfig().kernel.sched_tick_s
    assert ts["usage_ms"].sum() == pytest.approx(1e3 * q * 0.5, abs=1e3 * tick)


@pytest.mark.parametrize("layout", [
    {},
    {"cpus": 2, "workers": 2, "cpu_quota_scope": "worker"},
    {"cpus": 2, "workers": 2, "cpu_quota_scope": "server", "listen": "reuseport"},
], ids=["one", "a-cgroup-per-worker", "one-cgroup-reuseport"])  # fmt: skip
def test_the_series_adds_up_to_the_whole_runs_counters(layout: dict) -> None:
    interval, duration = 0.1, 0.5
    quota = 0.2 * layout.get("workers", 1)
    r = simulate(server="nginx", rate_per_s=30000, duration_s=duration, warmup_s=0.0,
                 cpu_quota=quota, cpu_period_s=0.01, timeseries_interval_s=interval, **layout)
    ts = pd.DataFrame(r["timeseries"])
    assert ts["throttled_periods"].sum() == r["cfs"]["throttled_periods"]
    assert ts["throttled_ms"].sum() / 1e3 / duration == pytest.approx(
        r["cfs"]["throttled_share"])
    assert (ts["listen_overflows_per_s"] * interval).sum() / duration == pytest.approx(
        r["nstat_per_s"]["TcpExtListenOverflows"])
    assert (ts["listen_drops_per_s"] * interval).sum() / duration == pytest.approx(
        r["nstat_per_s"]["TcpExtListenDrops"])
    assert r["nstat_per_s"]["TcpExtListenOverflows"] > 0
    busy = sum(v for k, v in r["cpu_share"].items() if k != "idle")
    assert ts["server_cpu_busy_ms"].sum() / 1e3 / duration == pytest.approx(busy)


def test_without_a_quota_the_cfs_columns_do_not_apply() -> None:
    r = simulate(server="nginx", rate_per_s=2000, duration_s=0.35, warmup_s=0.0,
                 timeseries_interval_s=0.1)
    ts = r["timeseries"]
    assert len(ts["time_s"]) == 3
    for name in ("throttled_periods", "throttled_ms", "usage_ms"):
        assert ts[name] == [None, None, None]
    assert ts["listen_overflows_per_s"] == [0.0, 0.0, 0.0]
    assert all(v > 0 for v in ts["server_cpu_busy_ms"])


# -- validate --timeseries --------------------------------------------------------------------
SYNTHETIC = {"server": "nginx", "rate_per_s": 4000.0, "duration_s": 0.8, "warmup_s": 0.0,
             "accept_limit": 1, "cpu_quota": 0.1, "cpu_period_s": 0.01,
             "timeseries_interval_s": 0.1, "timeout_s": 1.0, "seed": 3}


@pytest.fixture(scope="module")
def synthetic_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A simulated run written as a measured one, with its time series: simulated as
    validate simulates a measured run (config_for), so that the two are the same model."""
    from acceptsim.measure.calibrate import config_for

    directory = tmp_path_factory.mktemp("synthetic") / "run"
    config = RunConfig.from_dict(SYNTHETIC)
    write_run(directory, config, simulate(config))
    config = config_for(load_run(directory), CLUSTER1, seed=3).replace(
        timeseries_interval_s=SYNTHETIC["timeseries_interval_s"])
    return write_run(directory, config, simulate(config))


def test_a_synthetic_run_compares_equal_to_its_own_simulation(synthetic_run: Path) -> None:
    run = load_run(synthetic_run)
    measured = run.timeseries()
    assert len(measured) == 8 and run.info.timeseries.interval_s == 0.1
    assert run.info.server.cpu_quota == 0.1
    comparison = compare(run, CLUSTER1, seed=3)
    means = comparison.means.set_index("column")
    for name in SHARED:
        assert means.loc[name, "measured_mean"] == pytest.approx(
            means.loc[name, "simulated_mean"], rel=1e-6, abs=1e-6), name
    assert "syn_retrans_per_s" in SHARED  # simulated too: the kernel counts both kinds
    # a throttle in each of an interval's ten periods: the clients start at a random
    # instant of the kernel's grid (models.host.start_phase), so an interval's edges fall
    # inside periods, and one may count the throttles of nine or eleven
    throttles = measured["throttled_periods"]
    assert throttles.between(9, 11).all() and throttles.mean() == pytest.approx(10, abs=0.25)


def test_means_cover_only_the_times_both_series_have() -> None:
    measured = pd.DataFrame({"time_s": [0.1, 0.2, 0.3], "interval_s": [0.1] * 3,
                             "reply_rate_per_s": [10.0, 20.0, 99.0]})
    simulated = pd.DataFrame({"time_s": [0.1, 0.2], "reply_rate_per_s": [30.0, 50.0],
                              "throttled_ms": [None, None]})
    table = mean_table(measured, simulated).set_index("column")
    assert table.loc["reply_rate_per_s", "measured_mean"] == 15.0
    assert table.loc["reply_rate_per_s", "simulated_mean"] == 40.0
    assert table.loc["reply_rate_per_s", "measured_intervals"] == 2
    assert math.isnan(table.loc["throttled_ms", "simulated_mean"])
    assert math.isnan(table.loc["usage_ms", "measured_mean"])


def test_validate_timeseries_prints_the_means_and_plots_the_panels(
    synthetic_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    png = tmp_path / "series.png"
    assert main(["validate", "--timeseries", str(synthetic_run), "--seed", "3",
                 "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert "means over 8 measured and 8 simulated intervals of 0.1 s" in out
    for name in SHARED:
        assert name in out
    assert png.stat().st_size > 10_000
    assert main(["validate", "--timeseries", str(synthetic_run), "--seed", "3",
                 "--format", "json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["interval_s"] == 0.1 and len(record["measured"]["time_s"]) == 8
    assert {row["column"] for row in record["means"]} == set(SHARED)
    assert record["measured"]["syn_retrans_per_s"] == record["simulated"]["syn_retrans_per_s"]


def test_validate_timeseries_refuses_what_it_cannot_do_before_simulating(
    synthetic_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import acceptsim.measure.timeseries_check as timeseries_check

    def no_simulation(*args: object, **kwargs: object) -> None:
        raise AssertionError("simulated before the inputs were checked")

    monkeypatch.setattr(timeseries_check, "simulated_series", no_simulation)
    # the plot's path is checked first
    assert main(["validate", "--timeseries", str(synthetic_run), "--plot", str(tmp_path)]) == 2
    assert "--plot" in capsys.readouterr().err
    # a run without a time series
    plain = find_runs(DATA / "nginx-loopback-quota")[0]
    assert main(["validate", "--timeseries", str(plain)]) == 2
    err = capsys.readouterr().err
    assert "--timeseries" in err and "timeseries.csv" in err
    # several runs
    assert main(["validate", "--timeseries", str(DATA / "nginx-loopback-quota")]) == 2
    assert "exactly one run directory" in capsys.readouterr().err


def test_the_recorded_demo_run_has_every_column_and_validates() -> None:
    (run_dir,) = find_runs(DEMO)
    run = load_run(run_dir)
    ts = run.timeseries()
    # every column of its day, in the file's order (columns added since are absent)
    assert list(ts.columns) == [n for n in NAMES if n in ts.columns]
    assert {*SHARED, "time_s", "interval_s", "syn_retrans_per_s", "server_cpu_user_ms",
            "server_cpu_system_ms", "server_cpu_softirq_ms", "request_time_max_ms"} <= set(
        ts.columns)
    assert run.info.timeseries.interval_s == 0.1 and run.info.server.cpu_quota == 0.1
    # sampled every 0.1 s, give or take the sampler's lateness on the busy client CPU; the
    # last interval ends when the load does
    assert ts["interval_s"][:-1].between(0.08, 0.13).all()
    assert ts["interval_s"][:-1].mean() == pytest.approx(0.1, rel=0.01)
    # the access log's replies add up to httperf's
    replies = (ts["reply_rate_per_s"] * ts["interval_s"]).sum()
    assert replies == pytest.approx(run.record()["connections.completed"], rel=0.01)
    # nginx saturated: throttled in most periods, the accept queue full at times
    assert ts["throttled_periods"].max() >= 8 and ts["accept_queue_len"].max() >= 100
    # the sampler cost little CPU (about 1% of one)
    assert run.info.timeseries.sampler_cpu_s < 0.05 * ts["time_s"].max()
    # simulated under that machine's costs, at the same interval: the CFS columns agree
    costs = load_params_file(DATA / "nginx-loopback-workers.params.toml")[0]
    means = compare(run, costs).means.set_index("column")
    for name in ("throttled_periods", "usage_ms"):
        assert means.loc[name, "simulated_mean"] == pytest.approx(
            means.loc[name, "measured_mean"], rel=0.05), name


@pytest.mark.parametrize(("duration", "interval", "rows"), [(4.0, 0.1, 40), (0.3, 0.1, 3),
                                                           (2.0, 0.3, 6), (1.0, 0.25, 4)])
def test_the_simulated_series_has_a_sample_at_every_multiple_of_its_interval(
    duration: float, interval: float, rows: int
) -> None:
    """Sample k is due at k x interval, not at a sum of k intervals, whose rounding put
    the last one past the run's end (4 s in 0.1-s steps gave 39 rows)."""
    r = simulate(server="nginx", rate_per_s=200, duration_s=duration, warmup_s=0.0,
                 timeseries_interval_s=interval)
    times = r["timeseries"]["time_s"]
    assert len(times) == rows
    assert times == pytest.approx([interval * k for k in range(1, rows + 1)], abs=1e-9)


def test_the_simulated_syn_retransmissions_add_up_to_the_kernels_counts() -> None:
    """Overloaded behind a long CFS stall, the clients retransmit dropped SYNs and the
    server its SYN-ACKs; the series' syn_retrans_per_s over its intervals adds up to the
    listening socket's two counts, and stays 0 below saturation."""
    from acceptsim.models.host import Host

    def run(rate: float) -> tuple[dict, Host]:
        host = Host(RunConfig.from_dict(dict(
            server="nginx", rate_per_s=rate, duration_s=3.0, warmup_s=0.0,
            kernel="linux-modern", network="loopback", cpu_quota=0.1, cpu_period_s=0.1,
            timeseries_interval_s=0.5)))
        return host.run(), host

    record, host = run(20000)
    series = record["timeseries"]
    total = sum(r * 0.5 for r in series["syn_retrans_per_s"])
    counted = sum(s.syn_retransmits + s.synack_retransmits for s in host.listens)
    assert counted > 10000
    assert total == pytest.approx(counted)
    quiet, _ = run(500)
    assert set(quiet["timeseries"]["syn_retrans_per_s"]) == {0.0}
