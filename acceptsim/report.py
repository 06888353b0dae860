"""Figures, tables and the markdown report of ``acceptsim reproduce``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure  # no pyplot: importing this never changes the backend

from acceptsim.sim.errors import ConfigError
from acceptsim.sim.files import atomic_path
from acceptsim.sim.scenario import Scenario

LABELS = {
    "target_rate_per_s": "target rate (connections/s)",
    "target_request_rate_per_s": "target request rate (requests/s)",
    "reply_rate_per_s": "replies/s",
    "drops_per_s.total": "queue drops/s",
    "drops_per_s.accept_q_full": "SYNs dropped/s: accept queue full",
    "drops_per_s.drop_request": "SYNs dropped/s: SYN queue nearly full (DropRequest)",
    "drops_per_s.listen_overflow": "ACKs dropped/s: accept queue full (ListenOverflow)",
    "drops_per_s.syn_q_full": "SYNs dropped/s: SYN queue full",
    "response_time_ms.mean": "mean response time (ms)",
    "idle_connections": "idle persistent connections",
    "cpu_share.idle": "CPU idle share",
    "cpu_share.getevents": "CPU share in getevents",
    "response_time_ms.mean.normalised": "foreground response time / unloaded",
    "bg_rate_per_s": "background connections/s",
    "files.dataset_mb": "data set (MB)",
}


#: the keys of a scenario's ``[plot]`` table, and the type each takes
PLOT_KEYS: dict[str, tuple[type, ...]] = {
    "x": (str,), "y": (list,), "series": (str, list), "logy": (list,), "table": (str,),
    "normalise": (dict,),
}  # fmt: skip
#: the keys of an ``[[expect]]`` entry besides its selectors (run fields to match)
EXPECT_KEYS = {"what": (str,), "metric": (str,), "paper": (int, float), "note": (str,),
               "over": (dict,)}  # fmt: skip


def check_spec(scenario: Scenario) -> None:
    """Refuse a ``[plot]`` or ``[[expect]]`` the report could not use, before any run
    (a ConfigError naming the scenario's field, the value and what is allowed): keys and
    types, empty lists, and columns (:func:`check_names`)."""
    where = f"{scenario.name}: plot"
    for key, value in scenario.plot.items():
        if key not in PLOT_KEYS:
            raise ConfigError(f"{where}.{key}", value, "one of " + ", ".join(PLOT_KEYS))
        if not isinstance(value, PLOT_KEYS[key]):
            raise ConfigError(f"{where}.{key}", value, "a " + PLOT_KEYS[key][0].__name__)
        if isinstance(value, list) and not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where}.{key}", value, "a list of column names")
    normalise = scenario.plot.get("normalise")
    at = normalise.get("at") if normalise is not None else None
    if normalise is not None and (
        not isinstance(normalise.get("metric"), str)
        or not isinstance(at, (int, float)) or isinstance(at, bool)
    ):  # fmt: skip
        raise ConfigError(f"{where}.normalise", normalise,
                          "a table with metric = COLUMN and at = NUMBER")  # fmt: skip
    for i, exp in enumerate(scenario.expect):
        field = f"{scenario.name}: expect[{i}]"
        if not isinstance(exp, dict):
            raise ConfigError(field, exp, "a table ([[expect]])")
        if not isinstance(exp.get("metric"), str):
            raise ConfigError(f"{field}.metric", exp.get("metric"),
                              "a column name, or peak:COLUMN")  # fmt: skip
        for key, kinds in EXPECT_KEYS.items():
            if key in exp and (not isinstance(exp[key], kinds) or isinstance(exp[key], bool)):
                raise ConfigError(f"{field}.{key}", exp[key], "a " + kinds[0].__name__)
        kind = exp["metric"].rpartition(":")[0]
        if kind not in ("", "peak"):
            raise ConfigError(f"{field}.metric", exp["metric"], "a column name, or peak:COLUMN")
        for key, value in _selector(exp).items():
            if isinstance(value, (dict, list)):
                raise ConfigError(f"{field}.{key}", value, "a value to match a run field")
    for key in ("y", "series"):
        if isinstance(scenario.plot.get(key), list) and not scenario.plot[key]:
            raise ConfigError(f"{where}.{key}", [], "a non-empty list of column names")
    ys = scenario.plot.get("y", DEFAULT_Y)
    for y in scenario.plot.get("logy", []):
        if y not in ys:
            raise ConfigError(f"{where}.logy", y, "one of plot.y: " + ", ".join(ys))
    check_names(scenario)


def check_request(listing: bool, names: list[str], rates: str | None) -> None:
    """``acceptsim reproduce``'s own arguments, before anything: ``--list`` takes no
    scenario names (it lists them all), and ``--rates`` names at least one rate."""
    if listing and names:
        raise ConfigError("--list", " ".join(names), "given alone: it lists every scenario "
                          "(leave out the names)")
    if rates is not None and not [r for r in rates.split(",") if r.strip()]:
        raise ConfigError("--rates", rates, "at least one target rate: R1,R2,...")


#: the plot's defaults
DEFAULT_X, DEFAULT_Y, DEFAULT_SERIES, DEFAULT_TABLE = (
    "target_rate_per_s", ["reply_rate_per_s"], "accept_limit", "reply_rate_per_s")


def named_columns(scenario: Scenario) -> list[tuple[str, str, bool]]:
    """Every column the scenario's ``[plot]`` and ``[[expect]]`` name: (its field, the
    column, whether it must hold numbers)."""
    spec = scenario.plot
    named = [(f"{scenario.name}: plot.x", spec.get("x", DEFAULT_X), False)]
    named += [(f"{scenario.name}: plot.y", y, True) for y in spec.get("y", DEFAULT_Y)]
    series = spec.get("series", DEFAULT_SERIES)
    named += [(f"{scenario.name}: plot.series", c, False)
              for c in (series if isinstance(series, list) else [series])]
    named.append((f"{scenario.name}: plot.table", spec.get("table", DEFAULT_TABLE), True))
    if spec.get("normalise") is not None:
        named.append((f"{scenario.name}: plot.normalise.metric", spec["normalise"]["metric"],
                      True))
    for i, exp in enumerate(scenario.expect):
        field = f"{scenario.name}: expect[{i}]"
        named.append((f"{field}.metric", exp["metric"].rpartition(":")[2], True))
        named += [(f"{field}.{key}", key, False) for key in _selector(exp)]
        named += [(f"{field}.over.{key}", key, False) for key in exp.get("over", {})]
    return named


def _normalised(scenario: Scenario) -> set[str]:
    """The column ``[plot.normalise]`` adds (none without it)."""
    spec = scenario.plot.get("normalise")
    return {spec["metric"] + ".normalised"} if spec is not None else set()


def check_names(scenario: Scenario, named: list[tuple[str, str, bool]] | None = None) -> None:
    """Before any run: every column the scenario names is one its runs' records can have
    (a field of the run record, of the run configuration or of the sweep, or a measure of
    the scenario's servers' own), and one that must hold numbers is not a text field (the
    server's name, the workload's), a list (one value per NIC, CPU or worker) or a table
    named without its key (``drops_per_s`` for ``drops_per_s.total``).  A server's own
    measures are found by a run of a few simulated milliseconds of the first point on each
    server, made only when a name is none of the others; a table's keys are checked
    against the runs' frame (:func:`check_columns`).

    ``named``: (field, column, numbers needed) for each column (default: the scenario's
    :func:`named_columns`)."""
    from acceptsim.models.config import RunConfig
    from acceptsim.models.record import METRICS, SHAPES
    from acceptsim.sim.sweep import META_COLUMNS

    fields = RunConfig.__dataclass_fields__
    text = {name for name, f in fields.items() if f.type in ("str", str)} | {"policy_name"}
    known = {m.name for m in METRICS} | set(fields) | {
        part for key in scenario.sweep for part in key.split("+")
    } | set(META_COLUMNS) | set(MSER_COLUMNS)
    extras: set[str] | None = None
    for field, column, numeric in named_columns(scenario) if named is None else named:
        if column in _normalised(scenario):  # checked as plot.normalise.metric
            continue
        base = column.split(".")[0]
        if numeric and column in text:
            raise ConfigError(field, column, "a column of numbers (this one holds names)")
        if numeric and SHAPES.get(base) == "list":
            raise ConfigError(field, column, "a column of numbers (this one holds a list: "
                              "one value per NIC, CPU or worker)")
        if SHAPES.get(base) == "table" and column == base:
            raise ConfigError(field, column, f"a column: the table {base} has one per key, "
                              f"e.g. {base}.<key> (`acceptsim run --format json` shows them)")
        if base in known:
            continue
        if extras is None:
            extras = {name.split(".")[0] for name in _probe(scenario)}
        if base not in extras:
            raise ConfigError(field, column, "a column of the runs' records, e.g. "
                              + ", ".join(DEFAULT_Y + ["drops_per_s.total",
                                                       "response_time_ms.mean"])
                              + " (`acceptsim run --help` lists them)")


#: the columns of a reply series' MSER-5 summary (acceptsim.models.runner.run_point)
MSER_COLUMNS = ("warmup_mser5_s", "warmup_mser5_reliable", "reply_rate_mser5_per_s")


def _probe(scenario: Scenario) -> dict[str, Any]:
    """The columns of a record of each server the scenario runs (its own measures among
    them), from a run of a few simulated milliseconds of its first point: column -> value
    (the union over the servers)."""
    from acceptsim.models import runner
    from acceptsim.sim.results import flatten, json_safe

    firsts: dict[str, dict[str, Any]] = {}
    for point in scenario.points():
        firsts.setdefault(str(point.get("server")), point)
    columns: dict[str, Any] = {}
    for point in firsts.values():
        probe = {**point, "duration_s": PROBE_S, "warmup_s": 0.0, "series_interval_s": 0.0,
                 "timeseries_interval_s": 0.0}
        try:
            record = runner.run_point(probe, checked=False)  # within the work bounds
        except ConfigError:  # the point is refused on its own later, naming its field
            continue
        for column, value in flatten(json_safe(record)).items():
            if columns.get(column) is None:
                columns[column] = value
    return columns


#: simulated seconds of the run that finds a server's own measures
PROBE_S = 0.005


def check_columns(scenario: Scenario, frame: pd.DataFrame) -> None:
    """After the runs, before the figure and tables: every column the scenario names is
    in ``frame`` (a nested field, e.g. ``drops_per_s.nosuch``, is known only here), and
    one that must hold numbers holds them."""
    added = _normalised(scenario)
    for field, column, numeric in named_columns(scenario):
        if column in added:
            continue
        if column not in frame.columns:
            near = sorted(c for c in frame.columns if c.split(".")[0] == column.split(".")[0])
            raise ConfigError(field, column, "a column of the runs' records"
                              + (": one of " + ", ".join(near[:12]) if near else ""))
        if numeric:
            values = frame[column].dropna()
            if len(values) and pd.to_numeric(values, errors="coerce").isna().any():
                raise ConfigError(field, column, "a column of numbers (this one holds "
                                  f"{values.iloc[0]!r})")


def add_normalised(scenario: Scenario, frame: pd.DataFrame) -> pd.DataFrame:
    """``[plot.normalise] metric = M, at = X0``: add column ``M.normalised``, each series'
    ``M`` divided by its value where the x column equals ``X0`` (e.g. the unloaded run)."""
    check_columns(scenario, frame)  # the first use of the runs' frame: before any figure
    spec = scenario.plot.get("normalise")
    if not spec:
        return frame
    x = scenario.plot.get("x", "target_rate_per_s")
    series = scenario.plot.get("series", "accept_limit")
    metric = spec["metric"]
    frame = frame.copy()

    def divide(group: pd.DataFrame) -> pd.Series:
        base = group.loc[group[x] == spec["at"], metric]
        return group[metric] / (float(base.iloc[0]) if len(base) else float("nan"))

    parts = [divide(g) for _, g in frame.groupby(series, sort=False)]
    frame[metric + ".normalised"] = pd.concat(parts)
    return frame


def plot(scenario: Scenario, frame: pd.DataFrame, path: Path) -> None:
    spec = scenario.plot
    x = spec.get("x", "target_rate_per_s")
    ys = spec.get("y", ["reply_rate_per_s"])
    series = spec.get("series", "accept_limit")
    # a panel of nothing but zeros says nothing: left out, and named under the figure
    empty = [y for y in ys if len(ys) > 1 and not pd.to_numeric(frame[y], errors="coerce")
             .fillna(0).abs().gt(0).any()]  # fmt: skip
    if len(empty) == len(ys):  # all zeros: drawn all the same (a figure has a panel)
        empty = []
    ys = [y for y in ys if y not in empty]
    fig = Figure(figsize=(5.5 * len(ys), 4.2))
    axes = fig.subplots(1, len(ys), squeeze=False)
    for ax, y in zip(axes[0], ys, strict=True):
        for key, group in frame.groupby(series, sort=False):
            group = group.sort_values(x)
            ax.plot(group[x], group[y], marker="o", ms=3, label=_label(series, key))
        if y in spec.get("logy", []):
            ax.set_yscale("log")
        ax.set_xlabel(LABELS.get(x, x))
        ax.set_ylabel(LABELS.get(y, y))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(scenario.title, fontsize=10)
    if empty:
        fig.text(0.5, 0.01, "zero at every point, not drawn: " + "; ".join(
            LABELS.get(y, y) for y in empty), ha="center", fontsize=8)  # fmt: skip
    _set_margins(fig, len(ys), note=bool(empty))
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110)


#: a figure's margins, in inches: what matplotlib's tight_layout finds for the widest
#: labels of every figure (tick values up to 30,000 and a label's line of text), set
#: directly: tight_layout measures every text of the figure, and cost as much as drawing it
MARGIN_IN = {"left": 0.9, "right": 0.2, "bottom": 0.6, "top": 0.48, "gap": 0.95, "note": 0.17}


def _set_margins(fig: Figure, panels: int, note: bool) -> None:
    """Place ``panels`` side by side with :data:`MARGIN_IN` around them (and room for a
    line of text under them if ``note``)."""
    m = MARGIN_IN
    width, height = fig.get_size_inches()
    axis_in = (width - m["left"] - m["right"] - (panels - 1) * m["gap"]) / panels
    fig.subplots_adjust(
        left=m["left"] / width, right=1 - m["right"] / width,
        bottom=(m["bottom"] + (m["note"] if note else 0.0)) / height, top=1 - m["top"] / height,
        wspace=m["gap"] / axis_in,
    )  # fmt: skip


def _label(series: Any, key: Any) -> str:
    """Legend text: ``accept_limit 10``, or ``server tux, accept_limit 1`` for several."""
    if isinstance(series, list):
        keys = key if isinstance(key, tuple) else (key,)
        return ", ".join(f"{s} {k}" for s, k in zip(series, keys, strict=False))
    return f"{series} {key}"


def _selector(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in ("what", "metric", "paper", "note", "over")}


def _select(frame: pd.DataFrame, selector: dict[str, Any]) -> pd.DataFrame:
    """Rows whose columns equal the selector's values (numbers compared as numbers)."""
    for key, value in selector.items():
        try:
            mask = pd.to_numeric(frame[key]) == float(value)
        except (TypeError, ValueError):
            mask = frame[key].astype(str) == str(value)
        frame = frame[mask]
    return frame


def expectation_rows(scenario: Scenario, frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Each published number of the scenario beside the simulator's.

    An expectation selects rows by its other keys and reads ``metric`` (its
    first value, or the maximum with ``peak:``); with ``over = {key = value}``
    it is a ratio: that value divided by the one of the rows selected with
    ``over``'s keys changed (e.g. accept-limit inf over accept-limit 1).
    """
    rows = []
    for exp in scenario.expect:
        kind, _, metric = exp["metric"].rpartition(":")

        def value(selector: dict[str, Any], kind: str = kind, metric: str = metric) -> Any:
            sel = _select(frame, selector)
            if sel.empty:
                return None
            return float(sel[metric].max()) if kind == "peak" else float(sel[metric].iloc[0])

        sim_value = value(_selector(exp))
        if "over" in exp and sim_value is not None:  # a ratio: over the row `over` selects
            below = value({**_selector(exp), **exp["over"]})
            sim_value = None if not below else sim_value / below
        paper = exp.get("paper")
        rows.append(
            {
                "what": exp.get("what", metric),
                "paper": paper,
                "simulated": sim_value,
                "error_pct": None
                if sim_value is None or not paper
                else 100.0 * (sim_value - paper) / paper,
            }
        )
    return rows


def markdown_table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return ""
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = []
        for c in cols:
            v = r[c]
            if isinstance(v, float):  # ratios and shares keep three decimals
                cells.append(f"{v:,.3f}" if abs(v) < 10 else f"{v:,.1f}")
            else:
                cells.append(str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def pivot_text(scenario: Scenario, frame: pd.DataFrame, metric: str = "reply_rate_per_s") -> str:
    x = scenario.plot.get("x", "target_rate_per_s")
    series = scenario.plot.get("series", "accept_limit")
    table = frame.pivot_table(index=x, columns=series, values=metric, sort=False)
    if isinstance(series, list):
        table.columns = [_label(series, c) for c in table.columns]
    else:
        table.columns = [f"{series}={c}" for c in table.columns]
    digits = 0 if table.abs().min().min() >= 100 else 3  # shares, ratios and ms keep decimals
    return table.round(digits).to_string()


#: the load at which the report's Equation 1 table is taken
EQUATION1_RATE_PER_S = 24000.0


def equation1_rows(
    frames: list[pd.DataFrame], rate_per_s: float = EQUATION1_RATE_PER_S
) -> list[dict[str, Any]]:
    """The paper's Equation 1 factors for TUX and the userver at each accept-limit.

    accept_rate = accept phases per second * mean accepts per phase, taken from
    every one-packet run at ``rate_per_s`` among the scenarios that were run.
    """
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for frame in frames:
        need = {"server", "workload", "accept_limit", "target_rate_per_s", "accept_rate_per_s"}
        if not need <= set(frame.columns):
            continue
        sel = frame[
            frame["server"].isin(["userver", "tux"])
            & (frame["workload"] == "one-packet")
            & (frame["target_rate_per_s"].astype(float) == rate_per_s)
        ]
        for _, r in sel.iterrows():
            key = (str(r["server"]), str(r["accept_limit"]))
            rows.setdefault(
                key,
                {
                    "server": key[0],
                    "accept_limit": key[1],
                    "accept_phases_per_s": float(r["accept_phases_per_s"]),
                    "accepts_per_phase": float(r["accepts_per_phase"]),
                    "accept_rate_per_s": float(r["accept_rate_per_s"]),
                    "reply_rate_per_s": float(r["reply_rate_per_s"]),
                },
            )

    def order(key: tuple[str, str]) -> tuple[str, float]:
        return key[0], float(key[1])

    return [rows[k] for k in sorted(rows, key=order)]


def equation1_section(frames: list[pd.DataFrame], rate_per_s: float = EQUATION1_RATE_PER_S) -> str:
    rows = equation1_rows(frames, rate_per_s)
    if not rows:
        return ""
    text = (
        f"## Equation 1 at {rate_per_s:,.0f} target connections/s (one-packet)\n\n"
        "accept_rate = accept phases/s x accepts per phase.  The paper: lowering the limit "
        "raises TUX's accept rate (many more phases) and lowers the userver's (every extra "
        "accept phase costs a select() call).\n\n" + markdown_table(rows) + "\n\n"
    )
    for server in ("tux", "userver"):
        mine = [r for r in rows if r["server"] == server]
        if len(mine) >= 2:
            low, high = mine[0], mine[-1]
            went = "raises" if low["accept_rate_per_s"] > high["accept_rate_per_s"] else "lowers"
            text += (
                f"- {server}: accept-limit {low['accept_limit']} -> {went} the accept rate "
                f"against {high['accept_limit']} ({low['accept_rate_per_s']:,.0f} vs "
                f"{high['accept_rate_per_s']:,.0f}/s)\n"
            )
    return text + "\n"


def section7_section(
    targets: list[Any], values: list[float], fitted: set[str], frame: pd.DataFrame,
    runs: int, wall_s: float,
) -> str:
    """Brief section 7's overload numbers beside the simulated ones (two-minute runs
    from the start, the paper's protocol), and Equation 1 under overload."""
    rows = []
    for t, v in zip(targets, values, strict=True):
        rows.append({
            "what": t.what, "paper": t.paper, "simulated": v,
            "error_pct": 100.0 * (v - t.paper) / t.paper,
            "fitted": "yes" if t.name in fitted else "no",
        })  # fmt: skip
    text = (
        "## Past saturation: brief section 7 under the paper's protocol\n\n"
        "Two-minute runs measured from their start, seed 1, default parameter sets "
        "(`acceptsim calibrate-paper section7`).  Past saturation the figures above, "
        "from shorter runs, are higher: the clients' held sockets, and with them the "
        "collapse, build up over the first timeout and the SYN retransmissions.  `fitted`: "
        "the number was a target of `acceptsim calibrate-paper overload`.\n\n"
        + markdown_table(rows) + "\n\n"
    )
    for rate in sorted({float(r) for r in frame["target_rate_per_s"]}):
        eq1 = equation1_rows([frame], rate)
        if eq1:
            text += (f"Equation 1 at {rate:,.0f} connections/s (two-minute runs):\n\n"
                     + markdown_table(eq1) + "\n\n")
    return text + f"({runs} runs, {wall_s:.0f} s wall)\n\n"
