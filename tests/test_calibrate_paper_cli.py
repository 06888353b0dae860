"""``acceptsim calibrate-paper``: the paper calibrations' command line, in the acceptsim CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from acceptsim.cli import main
from acceptsim.commands import cmd_calibrate as calibrate_paper
from acceptsim.models import calibration
from acceptsim.models.host import Host


@pytest.fixture
def no_simulation(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a simulation started")

    monkeypatch.setattr(Host, "run", refuse)


def test_help_lists_every_problem(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["calibrate-paper", "--help"])
    out = capsys.readouterr().out
    for name in [*calibration.PROBLEMS, *calibration.RATIO_PROBLEMS,
                 *calibration.OVERLOAD_PROBLEMS, *calibration.JOINT_PROBLEMS, "section7"]:
        assert name in out, name
    assert "``" not in out  # plain text, not reST


def test_write_from_an_installed_copy_is_refused_before_any_simulation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    no_simulation: None,
) -> None:
    installed = tmp_path / "site-packages" / "acceptsim" / "models"
    installed.mkdir(parents=True)
    results = installed / calibration.RESULTS.name
    results.write_text("# installed data\n")
    monkeypatch.setattr(calibration, "RESULTS", results)
    assert main(["calibrate-paper", "tux", "--write"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "--write" in err and str(results) in err and "checkout" in err
    assert results.read_text() == "# installed data\n"


def test_the_checkouts_results_file_may_be_written() -> None:
    calibrate_paper.check_writable_results(calibration.RESULTS)  # this checkout's: no error


@pytest.mark.parametrize(("option", "value"), [("--maxfev", "0"), ("--maxfev", "x"),
                                               ("--jobs", "0")])
def test_a_bad_count_names_the_option(
    option: str, value: str, capsys: pytest.CaptureFixture[str], no_simulation: None,
) -> None:
    assert main(["calibrate-paper", "tux", option, value]) == 2
    assert option in capsys.readouterr().err


def test_the_model_module_has_no_command_line_of_its_own() -> None:
    source = Path(calibration.__file__).read_text()
    assert "argparse" not in source and "__main__" not in source
