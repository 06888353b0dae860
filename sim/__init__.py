"""The engine side: nothing here knows about web servers.

* :mod:`sim.engine`: SimPy environment that drives the host CPU;
* :mod:`sim.cpu`: one processor, interrupt work pre-empting one task;
* :mod:`sim.streams`: per-run named random streams (SeedSequence);
* :mod:`sim.params`: validated, frozen, unit-named parameter sets;
* :mod:`sim.results`: flat result records;
* :mod:`sim.stats`: confidence intervals, MSER-5 warm-up detection, a stopping rule;
* ``sim.sweep(...)``: many runs with replications, in parallel or on a Dask
  cluster, resumable, as a tidy DataFrame (the function; its module's helpers
  are imported with ``from sim.sweep import run_many, ...``).
"""

from sim.cpu import BLOCK, Cpu
from sim.engine import Environment
from sim.errors import ConfigError
from sim.params import Params, param
from sim.streams import Streams
from sim.sweep import sweep  # noqa: I001  (the function shadows its module as ``sim.sweep``)

__all__ = ["BLOCK", "ConfigError", "Cpu", "Environment", "Params", "Streams", "param", "sweep"]
