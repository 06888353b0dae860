"""Parameters are validated data: bad values and unknown keys are named."""

from __future__ import annotations

import math

import pytest

from acceptsim.models import RunConfig
from acceptsim.models.costs import CLUSTER1, HostCosts
from acceptsim.sim.errors import ConfigError


def test_every_cost_has_a_unit_and_a_description() -> None:
    for row in HostCosts.describe():
        assert row["unit"], row["name"]
        assert len(row["doc"]) > 10, row["name"]


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("rate_per_s", -5, ">= 1"),
        ("rate_per_s", 1e-320, ">= 1"),
        ("accept_limit", 0, ">= 1"),
        ("accept_limit", 2.5, "integer"),
        ("server", "nosuch", "one of"),
        ("duration_s", 0, ">= 1e-06"),
        ("duration_s", 1e-320, ">= 1e-06"),
        ("warmup_s", 1e-320, "0 or >= 1e-06"),
        ("timeout_s", 1e-320, ">= 1e-06"),
        ("timeseries_interval_s", 1e-9, "0 or >= 1e-06"),
        ("accept_limit", 10**23, "<= 1e+09"),
        ("seed", 2**63, "64 bits"),
        ("spacing", "uniform", "one of"),
        ("seed", -1, ">= 0"),
    ],
)
def test_bad_run_values_name_the_field_value_and_what_is_allowed(field, value, fragment) -> None:
    with pytest.raises(ConfigError) as err:
        RunConfig.from_dict({field: value})
    message = str(err.value)
    assert message.startswith(f"{field}={value!r}")
    assert fragment in message


def test_unknown_keys_are_rejected_with_the_allowed_ones_listed() -> None:
    with pytest.raises(ConfigError, match="unknown key; allowed: .*accept_s"):
        HostCosts.from_dict({"acept_s": 1e-6})


def test_negative_cost_is_rejected() -> None:
    with pytest.raises(ConfigError, match=r"costs\.request_s=-1e-06"):
        CLUSTER1.replace(request_s=-1e-6)


def test_inf_accept_limit_is_accepted_in_every_spelling() -> None:
    for spelling in ("inf", "Inf", math.inf):
        assert RunConfig.from_dict({"accept_limit": spelling}).accept_limit == math.inf


def test_warmup_must_end_before_the_run() -> None:
    with pytest.raises(ConfigError, match="warmup_s"):
        RunConfig(duration_s=5, warmup_s=5)
