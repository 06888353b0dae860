"""Write a simulated run in the measured-run format.

The simulator's record becomes a run directory like the ones ``acceptsim
measure`` records (``run.toml``, an httperf 0.9 summary, nstat counters
before and after, and with the simulator's time series a ``timeseries.csv`` of the
columns both have), so predictions and measurements go through the same parsers, and
calibration can be checked on runs whose true parameters are known.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from acceptsim.measure.timeseries_csv import NAMES, SHARED, TIMESERIES_FILE, write_timeseries
from acceptsim.models.config import RunConfig

#: nstat counters written for a simulated run (the ones the record reads)
COUNTERS = (
    "TcpExtListenOverflows",
    "TcpExtListenDrops",
    "TcpExtTCPReqQFullDrop",
    "TcpExtTCPReqQFullDoCookies",
    "TcpExtSyncookiesSent",
)


def write_run(directory: str | Path, config: RunConfig, result: dict[str, Any]) -> Path:
    """Write ``result`` (of ``simulate(config)``) as a measured-run directory."""
    if config.warmup_s != 0:
        raise ValueError("a measured run has no warm-up: simulate with warmup_s=0")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    window = config.duration_s
    multi = math.isinf(config.accept_limit)
    params = config.build_server_params()  # the simulated server's: its run.toml says them
    quota = (
        f"cpu_quota = {config.cpu_quota!r}\ncpu_period_us = {round(config.cpu_period_s * 1e6)}\n"
        if config.cpu_quota else ""
    )
    series = result.get("timeseries")
    sampling = (
        f"\n[timeseries]\ninterval_s = {config.timeseries_interval_s!r}\n" if series else ""
    )
    (directory / "run.toml").write_text(
        f"""format = "acceptsim-measured-run/1"
label = "simulated {config.server} accept_limit={config.accept_limit} {config.rate_per_s:g}/s"

[server]
name = "{config.server}"
multi_accept = {"true" if multi else "false"}
backlog = {params.backlog}
max_connections = {params.max_connections}
{quota}
[kernel]
profile = "{config.kernel.name}"

[load]
target_rate_per_s = {config.rate_per_s!r}
duration_s = {config.duration_s!r}
timeout_s = {config.timeout_s!r}
processes = 1
spacing = "{config.spacing}"

[counters]
before = ["counters-before.txt"]
after = ["counters-after.txt"]
{sampling}"""
    )
    if series:
        write_timeseries(directory / TIMESERIES_FILE, timeseries_rows(series, config))
    h = result["httperf"]
    conns = h["total_connections"]
    replies = h["replies"]
    rate = h["reply_rate_per_s"]
    rt = result["response_time_ms"]["mean"] or 0.0
    timeouts = h["errors"]["client_timo"]
    samples = rate["samples"]

    def f(value: float | None) -> str:
        return f"{(value or 0.0):.1f}"

    (directory / "httperf.txt").write_text(
        f"""httperf --timeout={config.timeout_s:g} --client=0/1 --server=simulated --port=80 \
--uri=/one-packet --rate={config.rate_per_s:g} --num-conns={conns} --num-calls=1
Maximum connect burst length: {h["max_connect_burst"]}

Total: connections {conns} requests {h["requests"]} replies {replies} test-duration {window:.3f} s

Connection rate: {conns / window:.1f} conn/s ({1e3 * window / max(conns, 1):.1f} ms/conn, \
<=1 concurrent connections)
Connection time [ms]: min 0.0 avg {rt:.1f} max 0.0 median 0.0 stddev 0.0
Connection time [ms]: connect 0.0
Connection length [replies/conn]: 1.000

Request rate: {h["requests"] / window:.1f} req/s ({1e3 * window / max(h["requests"], 1):.1f} ms/req)
Request size [B]: 72.0

Reply rate [replies/s]: min {f(rate["min"])} avg {f(rate["avg"])} max {f(rate["max"])} \
stddev {f(rate["stddev"])} ({samples} samples)
Reply time [ms]: response {rt:.1f} transfer 0.0
Reply size [B]: header 239.0 content 1221.0 footer 0.0 (total 1460.0)
Reply status: 1xx=0 2xx={replies} 3xx=0 4xx=0 5xx=0

CPU time [s]: user 0.00 system 0.00 (user 0.0% system 0.0% total 0.0%)
Net I/O: 0.0 KB/s (0.0*10^6 bps)

Errors: total {timeouts} client-timo {timeouts} socket-timo 0 connrefused 0 connreset 0
Errors: fd-unavail 0 addrunavail 0 ftab-full 0 other 0
"""
    )
    nstat = result["nstat_per_s"]
    before = "\n".join(f"{name:32s}{0:<19d}0.0" for name in COUNTERS)
    after = "\n".join(f"{name:32s}{round(nstat[name] * window):<19d}0.0" for name in COUNTERS)
    (directory / "counters-before.txt").write_text(f"#kernel\n{before}\n")
    (directory / "counters-after.txt").write_text(f"#kernel\n{after}\n")
    return directory


def timeseries_rows(
    series: dict[str, list[Any]], config: RunConfig
) -> list[dict[str, float | None]]:
    """The simulator's time series (a column each) as ``timeseries.csv`` rows: the columns
    the two share (:data:`acceptsim.measure.timeseries_csv.SHARED`), each interval exactly
    ``config.timeseries_interval_s``; the others empty."""
    interval = config.timeseries_interval_s
    rows = []
    for i, t in enumerate(series["time_s"]):
        row: dict[str, float | None] = dict.fromkeys(NAMES)
        row["time_s"] = t
        row["interval_s"] = interval
        for name in SHARED:
            row[name] = series[name][i]
        rows.append(row)
    return rows
