"""httperf 0.9 summaries: the committed real files, and broken ones."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from measure_samples import HTTPERF_ONE, RUN_DIRS, SESSION_LINES, replay

from acceptsim.measure import ParseError, RunInfo, parse_httperf, read_httperf, read_run_info
from acceptsim.measure.httperf import HttperfReport

_READ: dict[Path, tuple[RunInfo, list[HttperfReport]]] = {}


def recorded(run_dir: Path) -> tuple[RunInfo, list[HttperfReport]]:
    """A recorded folder's run.toml and httperf.txt, read once for this module's checks
    (each reads them, none changes them)."""
    if run_dir not in _READ:
        _READ[run_dir] = (read_run_info(run_dir / "run.toml"),
                          read_httperf(run_dir / "httperf.txt"))
    return _READ[run_dir]


def _leaves(obj: object) -> list[object]:
    if dataclasses.is_dataclass(obj):
        return [v for f in dataclasses.fields(obj) for v in _leaves(getattr(obj, f.name))]
    return [obj]


def test_there_are_recorded_runs_for_both_multi_accept_settings() -> None:
    settings = {read_run_info(d / "run.toml").server.multi_accept for d in RUN_DIRS}
    assert settings == {True, False}
    assert len(RUN_DIRS) >= 10


def test_recorded_summaries_parse_every_field(run_set: list[Path]) -> None:
    replay(run_set, recorded_summaries_parse_every_field)


def recorded_summaries_parse_every_field(run_dir: Path) -> None:
    info, reports = recorded(run_dir)
    assert len(reports) == info.load.processes
    for r in reports:
        # every numeric field was read (the only optional ones are sessions and burst/connect)
        for value in _leaves(r.totals) + _leaves(r.errors) + _leaves(r.reply_rate):
            assert isinstance(value, (int, float)) and not isinstance(value, bool)
        assert r.max_connect_burst is not None and r.connect_time_ms is not None
        assert r.sessions is None
        assert r.options["server"] == "127.0.0.1"
        assert r.options["port"] == str(info.load.port)
        assert float(r.options["timeout"]) == info.load.timeout_s


def test_recorded_summaries_are_consistent(run_set: list[Path]) -> None:
    replay(run_set, recorded_summaries_are_consistent)


def recorded_summaries_are_consistent(run_dir: Path) -> None:
    info, reports = recorded(run_dir)
    for r in reports:
        t, e = r.totals, r.errors
        # httperf's own identities
        assert e.total == (
            e.client_timo + e.socket_timo + e.connrefused + e.connreset
            + e.fd_unavail + e.addrunavail + e.ftab_full + e.other
        )
        assert t.replies <= t.requests <= t.connections
        # connections that found no descriptor are not counted as connections
        assert t.connections + e.fd_unavail == int(r.options["num-conns"])
        status = r.reply_status
        assert status.s1xx + status.s2xx + status.s3xx + status.s4xx + status.s5xx == t.replies
        # rates are totals over the test duration (httperf keeps more digits of the time)
        conn_rate = t.connections / t.test_duration_s
        assert r.connection_rate.per_s == pytest.approx(conn_rate, rel=2e-3, abs=0.06)
        req_rate = t.requests / t.test_duration_s
        assert r.request_rate.per_s == pytest.approx(req_rate, rel=2e-3, abs=0.06)
        rr = r.reply_rate
        if rr.samples:
            assert rr.min_per_s - 0.05 <= rr.avg_per_s <= rr.max_per_s + 0.05
            assert rr.stddev_per_s >= 0
        ct = r.connection_time
        assert ct.min_ms - 0.05 <= ct.avg_ms <= ct.max_ms + 0.05
        # httperf's median is read off its histogram of 1-ms bins (a bin's centre): with
        # every connection under 1 ms it says 0.5 ms, above the maximum
        assert ct.min_ms - 0.55 <= ct.median_ms <= ct.max_ms + 0.55
        size = r.reply_size
        assert size.total_bytes == pytest.approx(
            size.header_bytes + size.content_bytes + size.footer_bytes, abs=0.15
        )
        if t.replies:
            assert size.content_bytes == info.load.file_size_bytes
        cpu = r.cpu_time
        assert cpu.total_pct == pytest.approx(cpu.user_pct + cpu.system_pct, abs=0.15)
        assert cpu.total_pct / 100 * t.test_duration_s == pytest.approx(
            cpu.user_s + cpu.system_s, abs=0.02 + 0.01 * t.test_duration_s
        )
        if t.replies:
            assert r.connection_length_replies == pytest.approx(1.0, abs=1e-3)


def test_total_connections_are_rate_times_duration(run_set: list[Path]) -> None:
    replay(run_set, total_connections_are_rate_times_duration)


def total_connections_are_rate_times_duration(run_dir: Path) -> None:
    info, reports = recorded(run_dir)
    asked = sum(int(r.options["num-conns"]) for r in reports)
    expected = info.load.target_rate_per_s * info.load.duration_s
    assert asked == pytest.approx(expected, rel=0.01)
    made = sum(r.totals.connections + r.errors.fd_unavail for r in reports)
    assert made == asked


def test_a_single_summary_parses_to_its_printed_values() -> None:
    (r,) = parse_httperf(HTTPERF_ONE, "h.txt")
    assert isinstance(r, HttperfReport)
    assert r.totals.connections == 2500 and r.totals.test_duration_s == 4.998
    assert r.connection_rate.max_concurrent == 4
    assert r.connection_time.stddev_ms == 0.9
    assert r.request_size_bytes == 72.0
    assert r.reply_rate.samples == 0
    assert r.reply_size.content_bytes == 900.0
    assert r.reply_status.s2xx == 2500
    assert r.cpu_time.total_pct == 66.2
    assert r.net_io.kb_per_s == 591.0 and r.net_io.mbit_per_s == 4.8
    assert r.errors.ftab_full == 0
    assert r.options["rate"] == "500"
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.totals.replies = 3  # type: ignore[misc]


def test_session_lines_are_parsed_when_present() -> None:
    (r,) = parse_httperf(HTTPERF_ONE + SESSION_LINES)
    assert r.sessions is not None
    assert r.sessions.rate.completed == 100 and r.sessions.rate.avg_per_s == 10.0
    assert r.sessions.connections_per_session == 3.0
    assert r.sessions.length_histogram == (0, 0, 0, 100)


def test_partial_session_block_is_an_error() -> None:
    text = HTTPERF_ONE + "\n".join(SESSION_LINES.splitlines()[:3]) + "\n"
    with pytest.raises(ParseError, match="session summary ends early"):
        parse_httperf(text, "s.txt")


def test_several_summaries_follow_each_other() -> None:
    reports = parse_httperf(HTTPERF_ONE + HTTPERF_ONE)
    assert len(reports) == 2
    # also without httperf's echo of its command line
    body = HTTPERF_ONE.split("\n", 1)[1]
    assert len(parse_httperf(body + body)) == 2


def test_nan_values_are_read_as_nan() -> None:
    text = HTTPERF_ONE.replace(
        "Connection length [replies/conn]: 1.000", "Connection length [replies/conn]: -nan"
    )
    (r,) = parse_httperf(text)
    assert math.isnan(r.connection_length_replies)


def test_truncated_summary_names_file_and_last_line(tmp_path: Path) -> None:
    lines = HTTPERF_ONE.splitlines()
    path = tmp_path / "httperf.txt"
    path.write_text("\n".join(lines[:12]) + "\n")
    with pytest.raises(ParseError) as info:
        read_httperf(path)
    assert info.value.path == str(path) and info.value.line == 12
    assert "ends early" in str(info.value) and "Reply rate" in str(info.value)
    assert str(info.value).startswith(f"{path}:12:")


@given(st.integers(min_value=1, max_value=len(HTTPERF_ONE.splitlines()) - 1))
def test_any_truncation_before_the_last_line_is_an_error(cut: int) -> None:
    text = "\n".join(HTTPERF_ONE.splitlines()[:cut])
    with pytest.raises(ParseError) as info:
        parse_httperf(text, "cut.txt")
    assert 1 <= info.value.line <= cut


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("Reply status: 1xx=0 2xx=2500", "Reply status: 1xx=0 2xx=25x0", "garbled 'Reply status'"),
        ("Net I/O: 591.0 KB/s", "Net I/O: 591.0 MB/s", "garbled 'Net I/O'"),
        ("Errors: fd-unavail 0", "Errors: fd-unavail", "garbled 'Errors: fd-unavail'"),
        ("Request size [B]: 72.0", "Request sighs [B]: 72.0", "unknown line"),
        ("Total: connections 2500", "Total: connections -2500", "garbled 'Total:'"),
    ],
)
def test_garbled_or_unknown_line_names_its_line(old: str, new: str, message: str) -> None:
    assert old in HTTPERF_ONE
    text = HTTPERF_ONE.replace(old, new)
    expected_line = next(i for i, ln in enumerate(text.splitlines(), 1) if ln.startswith(new))
    with pytest.raises(ParseError, match=message) as info:
        parse_httperf(text, "g.txt")
    assert info.value.line == expected_line


def test_repeated_line_is_an_error() -> None:
    line = "Net I/O: 591.0 KB/s (4.8*10^6 bps)"
    doubled = HTTPERF_ONE.replace(line, line + "\n" + line)
    with pytest.raises(ParseError, match="repeated 'Net I/O'"):
        parse_httperf(doubled)


@pytest.mark.parametrize("text", ["", "\n\n", "hello world\n", "\x00\x01"])
def test_empty_or_foreign_files_are_errors(text: str) -> None:
    with pytest.raises(ParseError):
        parse_httperf(text, "x.txt")


def test_missing_or_binary_file(tmp_path: Path) -> None:
    with pytest.raises(ParseError, match="file not found"):
        read_httperf(tmp_path / "nope.txt")
    binary = tmp_path / "b.txt"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ParseError, match="not text"):
        read_httperf(binary)


def test_httperf_diagnostics_merged_from_stderr_are_skipped() -> None:
    warning = "httperf: warning: open file limit > FD_SETSIZE; limiting max. # of open files\n"
    (r,) = parse_httperf(warning + HTTPERF_ONE)
    assert r.totals.replies == 2500
