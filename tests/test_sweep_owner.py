"""A sweep directory has one owner and one identity: a second sweep on it is refused, a
resume continues exactly the stored sweep, and a part that is not the sweep's own is
set aside and its run made again."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from acceptsim.cli import main
from acceptsim.sim import sweep as sweep_mod
from acceptsim.sim.errors import ConfigError

SCENARIO = textwrap.dedent('''
    name = "{name}"
    title = "a tiny sweep"
    [base]
    duration_s = 0.3
    warmup_s = 0.1
    [sweep]
    rate_per_s = [6000.0, 12000.0]
''')
METRICS = ["run_key", "reply_rate_per_s", "accepts_per_phase", "drops_per_s.total"]


def scenario(tmp_path: Path, name: str = "tiny") -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(SCENARIO.format(name=name))
    return path


def table(frame):  # the deterministic columns, in run-key order
    return frame[METRICS].sort_values("run_key").reset_index(drop=True)


def test_the_readmes_resume_keeps_the_replications(tmp_path: Path) -> None:
    out = tmp_path / "out"
    path = scenario(tmp_path)
    assert main(["sweep", str(path), "--replications", "3", "--out", str(out), "--quiet",
                 "--jobs", "1"]) == 0
    whole, _ = sweep_mod.read_results(out)
    for part in sorted((out / "parts").glob("*.parquet"))[:2]:
        part.unlink()  # as if interrupted
    assert main(["sweep", str(path), "--out", str(out), "--resume", "--quiet",
                 "--jobs", "1"]) == 0
    resumed, description = sweep_mod.read_results(out)
    assert description["replications"] == 3 and len(resumed) == 6
    assert table(resumed).equals(table(whole))
    assert json.loads((out / "manifest.json").read_text())["replications"] == 3


@pytest.mark.parametrize(("args", "field"), [
    (["--replications", "2"], "replications"),
    (["--target-ci", "0.05"], "stop"),
    (["--vary", "rate_per_s=7000"], "points"),
])  # fmt: skip
def test_a_resume_that_contradicts_the_stored_sweep_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], field: str,
) -> None:
    out = tmp_path / "out"
    path = scenario(tmp_path)
    assert main(["sweep", str(path), "--replications", "3", "--out", str(out), "--quiet",
                 "--jobs", "1"]) == 0
    capsys.readouterr()
    assert main(["sweep", str(path), "--out", str(out), "--resume", "--quiet", *args]) == 2
    err = capsys.readouterr().err
    assert f"{field}=" in err and "stored sweep" in err


def test_a_resume_with_another_scenario_is_refused(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["sweep", str(scenario(tmp_path)), "--out", str(out), "--quiet",
                 "--jobs", "1"]) == 0
    other = scenario(tmp_path, "other")
    assert main(["sweep", str(other), "--out", str(out), "--resume", "--quiet"]) == 2
    assert "scenario='other'" in capsys.readouterr().err


def test_a_foreign_or_corrupt_part_is_set_aside_and_its_run_made_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    out, other = tmp_path / "out", tmp_path / "other"
    path = scenario(tmp_path)
    assert main(["sweep", str(path), "--replications", "2", "--out", str(out), "--quiet",
                 "--jobs", "1"]) == 0
    whole, _ = sweep_mod.read_results(out)
    assert main(["sweep", str(path), "--replications", "2", "--out", str(other), "--quiet",
                 "--jobs", "1", "--set", "duration_s=0.25"]) == 0
    parts = sorted((out / "parts").glob("*.parquet"))
    foreign = sorted((other / "parts").glob("*.parquet"))[0]
    shutil.copy(foreign, parts[0])  # another sweep's run under an expected name
    parts[1].write_bytes(b"not parquet")  # a corrupt part
    capsys.readouterr()
    assert main(["sweep", str(path), "--out", str(out), "--resume", "--quiet",
                 "--jobs", "1"]) == 0
    err = capsys.readouterr().err
    assert err.count("set aside") == 2
    resumed, _ = sweep_mod.read_results(out)
    assert table(resumed).equals(table(whole))
    assert len(list((out / "parts").glob("*.rejected"))) == 2


def test_a_second_sweep_on_a_directory_in_use_is_refused_naming_the_holder(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f'''
            import time
            from acceptsim.sim.sweep import Store
            store = Store({str(out)!r}, resume=False)
            print("held", flush=True)
            time.sleep(30)
        ''')], stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        started = time.perf_counter()
        with pytest.raises(ConfigError, match=f"held by pid {holder.pid}"):
            sweep_mod.sweep([{"duration_s": 0.3, "warmup_s": 0.1}], out=out, resume=True,
                            progress=False, jobs=1)
        assert time.perf_counter() - started < 5
    finally:
        holder.kill()
        holder.wait()
    # its holder killed, the lock is free again: taken over with a note
    frame = sweep_mod.sweep([{"duration_s": 0.3, "warmup_s": 0.1}], out=out, resume=True,
                            progress=False, jobs=1)
    assert len(frame) == 1
    assert (out / ".lock").read_text() == ""  # released at the end
