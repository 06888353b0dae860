"""The architecture servers keep the `acceptsim run` JSON contract; their options fail cleanly."""

from __future__ import annotations

import json

import pytest

from tests.test_cli import KEYS, acceptsim


@pytest.mark.parametrize(
    ("args", "extra"),
    [
        (["--server", "userver-rtsig", "--idle-connections", "252",
          "--server-param", "rtsig_max=64"], "dispatch"),
        (["--server", "flash-amped", "--workload", "fileset",
          "--workload-param", "dataset_bytes=50e6"], "files"),
        (["--server", "twoclass", "--server-param", "bg_rate_per_s=20"], "background"),
    ],
)
def test_run_prints_the_contract_keys_and_the_servers_own(args: list[str], extra: str) -> None:
    out = acceptsim("run", *args, "--rate", "3000", "--duration", "1", "--warmup", "0.3",
                    "--format", "json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert KEYS <= set(result) and extra in result


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--server", "userver", "--idle-connections", "10"], "idle_connections=10"),
        (["--server", "userver-epoll", "--server-param", "nosuch=1"], "server.nosuch=1"),
        (["--server", "userver-rtsig", "--server-param", "rtsig_max"], "server-param"),
        (["--workload", "fileset", "--workload-param", "dataset_bytes=-1"], "dataset_bytes"),
    ],
)
def test_bad_architecture_options_exit_2_with_one_line(args: list[str], field: str) -> None:
    out = acceptsim("run", *args, "--rate", "1000", "--duration", "1")
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and field in lines[0]
