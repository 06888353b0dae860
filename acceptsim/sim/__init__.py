"""The engine side: nothing here knows about web servers.

* :mod:`acceptsim.sim.native`: whether the compiled hot path or its Python sources run;
* :mod:`acceptsim.sim.engine`: SimPy environment that drives the host CPU;
* :mod:`acceptsim.sim.cpu`: one processor, interrupt work pre-empting one task;
* :mod:`acceptsim.sim.streams`: per-run named random streams (SeedSequence);
* :mod:`acceptsim.sim.params`: validated, frozen, unit-named parameter sets;
* :mod:`acceptsim.sim.results`: flat result records;
* :mod:`acceptsim.sim.stats`: confidence intervals, MSER-5 warm-up detection, a stopping rule;
* :mod:`acceptsim.sim.sweep`: many runs with replications, in parallel or on a Dask
  cluster, resumable, as a tidy DataFrame.  The module is callable:
  ``sim.sweep(...)`` is :func:`acceptsim.sim.sweep.sweep`.
"""

from acceptsim.sim import native

native.install()  # compiled hot path or its Python sources: chosen before they are imported

from acceptsim.sim.cpu import BLOCK, Cpu  # noqa: E402
from acceptsim.sim.engine import Environment  # noqa: E402
from acceptsim.sim.errors import ConfigError  # noqa: E402
from acceptsim.sim.params import Params, param  # noqa: E402
from acceptsim.sim.streams import Streams  # noqa: E402

__all__ = ["BLOCK", "ConfigError", "Cpu", "Environment", "Params", "Streams", "param", "sweep"]


def __getattr__(name: str) -> object:
    # ``sim.sweep`` (pandas, scipy, ...) is imported on first use, so that ``import sim`` and
    # every simulation stay quick to start; the module is callable: ``sim.sweep(...)``
    if name == "sweep":
        import importlib

        return importlib.import_module("acceptsim.sim.sweep")
    raise AttributeError(f"module 'sim' has no attribute {name!r}")
