"""A policy class of the user's is a sweep dimension like a built-in policy: by the
class itself or MODULE:CLASS, with parallel runs, replications, resume, and its paired
difference against every static limit (acceptsim.analysis.compare_policy)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from acceptsim import sim
from acceptsim.analysis import compare_policy
from acceptsim.cli import main
from acceptsim.models.config import RunConfig
from acceptsim.models.experiment import simulate
from acceptsim.sim.errors import ConfigError

MODULE = '''
import math
from acceptsim.models.policies import Policy


class Halve(Policy):
    """Accept half the queue, at least one connection."""

    name = "halve"

    def __init__(self, share: float = 0.5) -> None:
        self.share = share

    def accept_limit(self, view):
        return max(1, math.floor(view.accept_queue_len * self.share))
'''
RUN = {"rate_per_s": 20000.0, "duration_s": 0.5, "warmup_s": 0.1}


@pytest.fixture
def policy_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> object:
    name = f"halve_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    return importlib.import_module(name)


def test_a_class_and_its_spec_run_the_same_and_the_record_names_it(policy_module) -> None:
    cls = policy_module.Halve
    config = RunConfig(policy=cls, **RUN)
    module = cls.__module__
    assert config.policy.startswith(f"{module}:Halve@")
    by_class = simulate(config)
    by_spec = simulate(RunConfig(policy=f"{module}:Halve", **RUN))
    by_object = simulate(RunConfig(**RUN), policy=cls)
    for record in (by_class, by_spec, by_object):
        assert record["policy_name"] == "halve"
    strip = lambda r: {k: v for k, v in r.items() if not k.startswith(("sim_", "policy"))}  # noqa: E731
    assert strip(by_class) == strip(by_spec) == strip(by_object)
    quarter = simulate(RunConfig(policy=f"{module}:Halve:share=0.25", **RUN))
    assert quarter["accepts_per_phase"] < by_spec["accepts_per_phase"]


@pytest.mark.parametrize(("spec", "fragment"), [
    ("no_such_module_xyz:Halve", "an importable module"),
    ("{module}:Nope", "a class or factory defined in"),
    ("{module}:Halve:bogus=1", "arguments Halve takes"),
    ("nonsense", "MODULE:CLASS"),
])  # fmt: skip
def test_a_bad_custom_spec_is_refused_before_any_run(policy_module, spec: str,
                                                     fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        RunConfig(policy=spec.format(module=policy_module.__name__), **RUN)


def test_a_class_made_inside_a_function_is_refused_with_the_reason() -> None:
    class Local:
        def accept_limit(self, view):  # type: ignore[no-untyped-def]
            return 1

    with pytest.raises(ConfigError, match="module's top level"):
        RunConfig(policy=Local, **RUN)


def test_a_sweep_of_a_custom_policy_with_replications_resumes_and_compares(
    policy_module, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    points = [{**RUN, "policy": policy_module.Halve},
              {**RUN, "policy": "static", "accept_limit": 1},
              {**RUN, "policy": "static", "accept_limit": float("inf")}]
    out = tmp_path / "sweep"
    whole = sim.sweep(points, replications=3, jobs=2, out=out, progress=False)
    assert len(whole) == 9
    parts = sorted((out / "parts").glob("*.parquet"))
    parts[0].unlink()  # as if the sweep had stopped before its last run
    resumed = sim.sweep(points, replications=3, jobs=2, out=out, resume=True, progress=False)
    assert len(resumed) == 9
    columns = ["run_key", "reply_rate_per_s", "accepts_per_phase"]
    key = lambda f: f[columns].sort_values("run_key").reset_index(drop=True)  # noqa: E731
    assert key(resumed).equals(key(whole))
    table = compare_policy(resumed, policy_module.Halve)
    assert len(table) == 2 and table["pairs"].eq(3).all() and table["best_static"].sum() == 1
    for _, row in table.iterrows():
        assert row["diff_low"] <= row["diff"] <= row["diff_high"]
        assert row["diff"] == pytest.approx(row["policy_mean"] - row["static_mean"])
    assert main(["compare", str(out), "--policy", f"{policy_module.__name__}:Halve",
                 "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["static"] for r in rows] == list(table["static"])


def test_a_class_defined_in_a_scripts_main_is_swept_by_forked_workers(tmp_path: Path) -> None:
    script = tmp_path / "notebook_like.py"
    script.write_text(textwrap.dedent('''
        from acceptsim import sim
        from acceptsim.models.policies import Policy

        class Twice(Policy):
            name = "twice"
            def accept_limit(self, view):
                return 2

        if __name__ == "__main__":
            point = {"policy": Twice, "rate_per_s": 20000.0, "duration_s": 0.4, "warmup_s": 0.1}
            frame = sim.sweep([point], replications=2, jobs=2, progress=False)
            print(sorted(set(frame["policy_name"])), len(frame))
    '''))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          check=True, cwd=tmp_path)
    assert done.stdout.strip().endswith("['twice'] 2")


def test_the_sweep_command_takes_a_custom_policy_as_a_dimension(
    policy_module, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    scenario = tmp_path / "tiny.toml"
    scenario.write_text(textwrap.dedent('''
        name = "tiny"
        title = "a custom policy beside a static limit"
        [base]
        rate_per_s = 20000.0
        duration_s = 0.4
        warmup_s = 0.1
        [sweep]
        accept_limit = [1]
    '''))
    out = tmp_path / "out"
    module = policy_module.__name__
    assert main(["sweep", str(scenario), "--out", str(out), "--jobs", "1", "--quiet",
                 "--policy", "static", "--policy", f"{module}:Halve:share=0.25"]) == 0
    frame, _ = sim.sweep.read_results(out)
    assert sorted(frame["policy"]) == sorted(["static", f"{module}:Halve:share=0.25"])
    assert main(["sweep", str(scenario), "--out", str(tmp_path / "o2"), "--policy", "static",
                 "--vary", "policy=static"]) == 2
    assert "--policy" in capsys.readouterr().err


def test_a_policy_that_sets_its_own_limit_is_not_crossed_with_static_limits(
    policy_module, tmp_path: Path,
) -> None:
    """The scenario's static accept_limit list and a policy are two dimensions: static
    runs once per limit, a policy that ignores the limit once per replication, and the
    comparison pairs each replication once; its record says what it accepted per phase,
    not a limit it ignored."""
    scenario = tmp_path / "limits.toml"
    scenario.write_text(textwrap.dedent('''
        name = "limits"
        title = "a custom policy beside three static limits"
        [base]
        rate_per_s = 20000.0
        duration_s = 0.3
        warmup_s = 0.1
        [sweep]
        accept_limit = [1, 4, "inf"]
    '''))
    out = tmp_path / "out"
    custom = f"{policy_module.__name__}:Halve:share=0.25"
    assert main(["sweep", str(scenario), "--out", str(out), "--jobs", "1", "--quiet",
                 "--replications", "2", "--policy", "static", "--policy", custom,
                 "--policy", "aimd"]) == 0
    frame, description = sim.sweep.read_results(out)
    assert description["points_merged"] == 4  # custom and aimd: 3 limits each, run once
    runs = frame.groupby("policy").size().to_dict()
    assert runs == {"static": 6, custom: 2, "aimd": 2}
    mine = frame[frame["policy"] == custom]
    assert mine["accept_limit"].isna().all() and (mine["accepts_per_phase"] > 0).all()
    static = frame[frame["policy"] == "static"]
    assert sorted(static["accept_limit"]) == [1, 1, 4, 4, math.inf, math.inf]
    pairs = compare_policy(frame, custom)
    assert len(pairs) == 3 and set(pairs["pairs"]) == {2}
