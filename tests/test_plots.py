"""``acceptsim plot`` and acceptsim.plots: the figures of a stored sweep."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from acceptsim import plots  # noqa: E402
from acceptsim.cli import main  # noqa: E402
from acceptsim.sim import sweep as sweep_mod  # noqa: E402

RUN = {"duration_s": 0.4, "warmup_s": 0.1}


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sweep") / "out"
    points = [{**RUN, "accept_limit": limit, "rate_per_s": rate}
              for limit in (1, math.inf) for rate in (8000.0, 24000.0)]
    points += [{**RUN, "policy": "aimd", "rate_per_s": rate} for rate in (8000.0, 24000.0)]
    sweep_mod.sweep(points, replications=2, jobs=2, out=out, progress=False)
    return out


def test_the_command_writes_every_figure_of_a_stored_sweep(stored: Path, tmp_path: Path,
                                                           capsys) -> None:
    to = tmp_path / "figs"
    assert main(["plot", str(stored), "--to", str(to), "--policy", "aimd"]) == 0
    written = capsys.readouterr().out.split()
    assert sorted(Path(p).name for p in written) == ["curves.png", "paired.png"]
    for path in written:
        assert Path(path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(to.glob(".*"))  # no temporary file left beside them


def test_curves_have_one_line_per_other_setting_with_bands_and_units(stored: Path) -> None:
    frame, varied = plots.load(stored)
    ax = plots.curves(frame, varied)
    assert ax.get_xlabel() == "rate_per_s (connections/s)"
    assert "replies/s" in ax.get_ylabel()
    labels = [line.get_label() for line in ax.get_lines()]
    assert len(labels) == len(frame.drop_duplicates([c for c in varied if c != "rate_per_s"]))
    assert len(ax.collections) == len(labels)  # a 95% band per line
    plt.close(ax.figure)


def test_the_heat_map_has_a_cell_per_pair_with_its_mean(stored: Path) -> None:
    frame, _ = plots.load(stored)
    static = frame[frame["policy"] == "static"]
    ax = plots.heatmap(static, "accept_limit", "rate_per_s")
    texts = [t.get_text() for t in ax.texts]
    assert len(texts) == 4
    mean = static[(static["accept_limit"] == 1) & (static["rate_per_s"] == 8000.0)][
        "reply_rate_per_s"].mean()
    assert f"{mean:,.0f}" in texts
    assert [t.get_text() for t in ax.get_yticklabels()] == ["1", "inf"]
    plt.close(ax.figure)


def test_a_file_that_no_sweep_wrote_is_refused(tmp_path: Path, capsys) -> None:
    import pandas as pd

    path = tmp_path / "results.parquet"
    pd.DataFrame({"reply_rate_per_s": [1.0]}).to_parquet(path)
    assert main(["plot", str(path)]) == 2
    assert "no sweep description" in capsys.readouterr().err
    assert main(["plot", str(tmp_path / "missing")]) == 2
