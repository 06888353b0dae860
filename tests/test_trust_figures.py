"""What the figures and records say (issue 46): heat-map labels readable on every colour,
epoll servers' calls named epoll_wait, validate's verdict on a difference measured within
the noise and its plot without legend entries for a setting with no runs."""

from __future__ import annotations

import math

import matplotlib
import pandas as pd
import pytest

from acceptsim import plots
from acceptsim.commands import cmd_calibrate
from acceptsim.models import RunConfig, simulate

matplotlib.use("Agg")


def _contrast(rgb_a, rgb_b) -> float:
    def lum(rgb) -> float:
        lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb[:3]]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    hi, lo = sorted((lum(rgb_a), lum(rgb_b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@pytest.mark.parametrize("values", [
    [19_900.0, 19_950.0, 20_000.0, 19_990.0],  # close together: the map spans all colours
    [0.0, 1_000.0, 5_000.0, 20_000.0],
    [-50.0, -10.0, 0.0, 10.0],
])  # fmt: skip
def test_heatmap_labels_read_on_every_cell(values) -> None:
    from matplotlib.colors import to_rgb

    frame = pd.DataFrame({"accept_limit": [1, 1, 10, 10], "rate_per_s": [1, 2, 1, 2],
                          "reply_rate_per_s": values})
    ax = plots.heatmap(frame, "accept_limit", "rate_per_s")
    image = ax.images[0]
    for text in ax.texts:
        value = float(text.get_text().replace(",", ""))
        cell = image.cmap(image.norm(value))
        ink = to_rgb(text.get_color())
        other = (1.0, 1.0, 1.0) if ink == (0.0, 0.0, 0.0) else (0.0, 0.0, 0.0)
        assert _contrast(ink, cell) >= _contrast(other, cell), (value, text.get_color())
        assert _contrast(ink, cell) >= 4.5, (value, text.get_color())  # WCAG AA
    matplotlib.pyplot.close(ax.figure)


@pytest.mark.parametrize(("server", "epoll"), [
    ("nginx", True), ("haproxy", True), ("userver-epoll", True), ("userver", False),
    ("tux", False),
])  # fmt: skip
def test_epoll_servers_report_epoll_wait_calls(server, epoll) -> None:
    record = simulate(RunConfig(server=server, rate_per_s=2000, duration_s=0.2, warmup_s=0.05))
    calls = record["epoll_wait_calls_per_s"]
    assert (calls is not None and calls > 0) if epoll else calls is None


def _point(measured: float, se: float, predicted: float, right) -> dict:
    return {"measured_off_minus_on": measured, "measured_diff_stderr": se,
            "predicted_off_minus_on": predicted, "direction_right": right}


def test_a_prediction_far_from_a_difference_within_noise_is_not_called_within_noise() -> None:
    verdict = cmd_calibrate.direction_verdict
    assert verdict(_point(100, 80, 300, None), 2.0).endswith("WRONG size")  # 3x the measured
    assert verdict(_point(100, 80, 150, None), 2.0) == "measured within noise, predicted too"
    assert verdict(_point(500, 80, 300, True), 2.0) == "right"
    assert verdict(_point(500, 80, -300, False), 2.0) == "WRONG"
    assert "not judged" in verdict(_point(100, math.nan, 300, None), 2.0)


def test_validate_plot_has_no_legend_entry_for_a_setting_without_runs(tmp_path,
                                                                      monkeypatch) -> None:
    import matplotlib.pyplot as plt

    seen = []
    monkeypatch.setattr(plt, "close", lambda fig: seen.append(fig))
    runs = [{"multi_accept": True, "target_rate_per_s": r,
             "measured": {"reply_rate_per_s": r}, "predicted": {"reply_rate_per_s": r}}
            for r in (1000.0, 2000.0)]
    cmd_calibrate.plot({"runs": runs}, tmp_path / "v.png")
    labels = [t.get_text() for t in seen[0].axes[0].get_legend().get_texts()]
    assert labels == ["measured, multi_accept on", "predicted, multi_accept on"]


def test_the_records_tables_and_lists_are_declared() -> None:
    """record.SHAPES names every field that is no single number (what a metric check
    refuses before any run), as a record of several workers, a series and a quota has them."""
    from acceptsim.models.record import METRICS, SHAPES

    record = simulate(RunConfig(server="nginx", cpus=2, rate_per_s=1000, duration_s=0.2,
                                warmup_s=0.05, series_interval_s=0.01,
                                timeseries_interval_s=0.05, cpu_quota=1.5))
    names = {m.name for m in METRICS}
    found = {k: "list" if isinstance(v, list) else "table" for k, v in record.items()
             if k in names and isinstance(v, (list, dict))}
    assert found == {k: v for k, v in SHAPES.items() if k in record}
    assert set(SHAPES) <= names


def test_validate_per_limit_sign_within_noise_says_whether_the_prediction_is(capsys) -> None:
    cells = [{"accept_limit": lim, "measured_mean": 1000.0, "measured_stderr": 40.0,
              "predicted": 1000.0} for lim in (1.0, 4.0, math.inf)]
    point = {"target_rate_per_s": 3000.0, "limits": cells, "measured_best": 1.0,
             "predicted_best": 1.0, "best_right": True,
             "one_minus_inf": {"measured": 50.0, "measured_stderr": 56.0, "predicted": 400.0,
                               "sign_right": None}}
    cmd_calibrate.print_limits({"limits": {"rates": [point], "noise_sigmas": 2.0,
                                           "best_right": 1, "best_wrong": 0}})
    out = capsys.readouterr().out
    assert "predicted +400: measured within noise, predicted 6.2 standard errors" in out, out
