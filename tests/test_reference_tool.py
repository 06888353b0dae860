"""tools/reference.py: records written before a change and compared after it."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest


def test_differences_name_every_changed_leaf(reference_tool: ModuleType) -> None:
    reference = reference_tool
    old = {"a": 1.0, "b": {"c": [1, 2], "d": "x"}}
    new = {"a": 1.0000000000000002, "b": {"c": [1, 3], "e": "x"}}
    assert reference.differences(old, new) == [
        "a: 1.0 -> 1.0000000000000002", "b.c[1]: 2 -> 3", "b.d: 'x' -> '<missing>'",
        "b.e: '<missing>' -> 'x'",
    ]
    assert reference.differences(old, json.loads(json.dumps(old))) == []
    # a count that turns into a float is a change of the record a user reads (0 -> 0.0)
    assert reference.differences({"n": 0}, {"n": 0.0}) == ["n: 0 -> 0.0"]


def test_check_passes_on_its_own_records_and_fails_on_a_changed_one(
    reference_tool: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    reference = reference_tool
    small = [p for p in reference.reference_set() if p["server"] in ("userver", "knot")][:3]
    monkeypatch.setattr(reference, "reference_set", lambda: small)
    path = tmp_path / "ref.json"
    assert reference.main(["write", str(path)]) == 0
    assert reference.main(["check", str(path)]) == 0
    saved = json.loads(path.read_text())
    saved["records"][1]["reply_rate_per_s"] += 1e-9
    path.write_text(json.dumps(saved))
    assert reference.main(["check", str(path)]) == 1
    assert "reply_rate_per_s" in capsys.readouterr().out
    monkeypatch.setattr(reference, "reference_set", lambda: small[:2])
    assert reference.main(["check", str(path)]) == 2  # the set itself changed


def test_a_nan_field_is_no_difference_but_nan_against_a_number_is(
    reference_tool: ModuleType,
) -> None:
    nan = float("nan")
    assert reference_tool.differences({"accept_limit": nan}, {"accept_limit": nan}) == []
    assert reference_tool.differences({"accept_limit": nan}, {"accept_limit": 1.0}) != []
