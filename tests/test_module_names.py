"""One module, one name: the engine and the domain are folders of the package
(acceptsim/sim, acceptsim/models), not top-level folders, so from the checkout ``sim``
and ``models`` are no modules at all and no module is ever loaded twice (as
``sim.engine`` beside ``acceptsim.sim.engine``), compiled or from source."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import importlib, json, sys
sys.path.insert(0, sys.argv[1])  # the checkout on the path, as `python -m pytest` or a REPL
out = {}
for bare, proper in (("sim.engine", "acceptsim.sim.engine"),
                     ("models.kernel", "acceptsim.models.kernel"),
                     ("models.servers.userver", "acceptsim.models.servers.userver")):
    try:
        module = importlib.import_module(bare)
    except ImportError as exc:
        out[bare] = {"refused": str(exc)}
    else:
        out[bare] = {"same": module is importlib.import_module(proper)}
from acceptsim.models.kernel import LINUX_24
from acceptsim.models.config import RunConfig
out["run_config_takes_the_profile"] = RunConfig(kernel=LINUX_24).kernel is LINUX_24
out["loaded_twice"] = sorted(
    name for name in sys.modules if name.split(".")[0] in ("sim", "models")
)
print(json.dumps(out))
"""


@pytest.mark.parametrize("pure", [False, True], ids=["compiled-if-built", "python-sources"])
def test_a_bare_import_from_the_checkout_finds_nothing_and_never_loads_a_second_copy(
    pure: bool,
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "ACCEPTSIM_PURE_PYTHON"}
    if pure:
        env["ACCEPTSIM_PURE_PYTHON"] = "1"
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", CHILD, str(ROOT)],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    out = json.loads(done.stdout)
    for bare in ("sim.engine", "models.kernel", "models.servers.userver"):
        outcome = out[bare]
        if "same" in outcome:  # an alias would do too, if it gave the very same module
            assert outcome["same"], bare
            continue
        package = bare.split(".")[0]
        assert outcome["refused"] == f"No module named '{package}'", outcome
    assert out["loaded_twice"] == []
    assert out["run_config_takes_the_profile"]
