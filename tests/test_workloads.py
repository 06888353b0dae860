"""SPECweb99-like and wsesslog workloads."""

from __future__ import annotations

import math

import numpy as np
import pytest

from acceptsim.models.experiment import RunConfig, simulate
from acceptsim.models.workloads import (
    SPECWEB_CLASS_SHARES,
    SpecWeb99,
    SpecWeb99Params,
    parse_wsesslog,
    specweb_file_table,
)
from acceptsim.sim.errors import ConfigError
from acceptsim.sim.streams import Streams


def test_specweb_mean_requests_per_connection_within_ci():
    wl = SpecWeb99(SpecWeb99Params(), Streams(3))
    n = 20000
    x = np.array([wl.requests_per_connection() for _ in range(n)])
    assert x.min() >= 1
    half = 3 * x.std(ddof=1) / math.sqrt(n)  # 3-sigma interval
    assert abs(x.mean() - 7.2) < half


def test_specweb_class_shares_within_ci():
    params = SpecWeb99Params()
    wl = SpecWeb99(params, Streams(4))
    sizes, _, classes = specweb_file_table(params)
    cls_of = dict(zip(sizes.tolist(), classes.tolist(), strict=True))
    n = 40000
    drawn = np.array([cls_of[wl.reply_bytes()] for _ in range(n)])
    for c, share in enumerate(SPECWEB_CLASS_SHARES):
        observed = float((drawn == c).mean())
        half = 3 * math.sqrt(share * (1 - share) / n)
        assert abs(observed - share) < half, (c, observed, share)


def test_specweb_file_sizes_span_the_classes():
    sizes, probs, _ = specweb_file_table(SpecWeb99Params(header_bytes=0))
    assert sizes.min() == 102 and sizes.max() == 921600
    assert probs.sum() == pytest.approx(1.0)
    assert len(sizes) == 36


def test_specweb_run_conserves_connections():
    for server in ("userver", "tux", "knot"):
        r = simulate(RunConfig(server=server, workload="specweb99", rate_per_s=1500.0,
                               duration_s=2.0, warmup_s=0.5))
        c = r["connections"]
        assert c["attempted"] == c["completed"] + c["timed_out"] + c["in_flight_at_end"]
        assert r["target_request_rate_per_s"] == pytest.approx(1500.0 * 7.2)
        # persistent connections: several replies per connection
        assert r["reply_rate_per_s"] > 4 * r["accept_rate_per_s"]


def _write(tmp_path, text):
    p = tmp_path / "sessions.log"
    p.write_text(text)
    return p


def test_wsesslog_parses_sessions_and_think_times(tmp_path):
    p = _write(tmp_path, "# two sessions\n/a.html think=1.5\n/b.gif size=3000\n\n/c.html\n")
    sessions = parse_wsesslog(p)
    assert [len(s) for s in sessions] == [2, 1]
    assert sessions[0][0].think_s == 1.5
    assert sessions[0][1].reply_bytes == 3000


@pytest.mark.parametrize(
    "text,needle",
    [
        ("/a think=x\n", ":1"),
        ("/a\n/b think=-1\n", ":2"),
        ("index.html\n", ":1"),
        ("/a colour=red\n", ":1"),
        ("/a size=0\n", ":1"),
        ("# nothing\n", "at least one request"),
    ],
)
def test_wsesslog_errors_name_file_and_line(tmp_path, text, needle):
    p = _write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        parse_wsesslog(p)
    assert str(p) in str(info.value) and needle in str(info.value)


def test_wsesslog_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError):
        RunConfig(workload="wsesslog", workload_file=str(tmp_path / "nope.log"))
    with pytest.raises(ConfigError):
        RunConfig(workload="wsesslog")


def test_wsesslog_think_time_delays_the_next_request(tmp_path):
    p = _write(tmp_path, "/a think=0.5\n/b\n")
    r = simulate(RunConfig(workload="wsesslog", workload_file=str(p), rate_per_s=200.0,
                           duration_s=3.0, warmup_s=1.0))
    c = r["connections"]
    assert c["attempted"] == c["completed"] + c["timed_out"] + c["in_flight_at_end"]
    # each connection lives at least its think time: about rate * 0.5 open on average
    assert r["open_connections_mean"] == pytest.approx(200.0 * 0.5, rel=0.25)


def test_specweb_think_time_mean_within_ci_and_off_when_zero():
    off = SpecWeb99(SpecWeb99Params(think_mean_s=0.0), Streams(1))
    assert off.think_time(None) == 0.0  # type: ignore[arg-type]
    wl = SpecWeb99(SpecWeb99Params(think_mean_s=0.02), Streams(5))
    n = 20000
    x = np.array([wl.think_time(None) for _ in range(n)])  # type: ignore[arg-type]
    assert abs(x.mean() - 0.02) < 3 * 0.02 / math.sqrt(n)
