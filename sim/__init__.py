"""The engine side: nothing here knows about web servers.

* :mod:`sim.engine`: SimPy environment that drives the host CPU;
* :mod:`sim.cpu`: one processor, interrupt work pre-empting one task;
* :mod:`sim.streams`: per-run named random streams (SeedSequence);
* :mod:`sim.params`: validated, frozen, unit-named parameter sets;
* :mod:`sim.results`: flat result records.
"""

from sim.cpu import BLOCK, Cpu
from sim.engine import Environment
from sim.errors import ConfigError
from sim.params import Params, param
from sim.streams import Streams

__all__ = ["BLOCK", "ConfigError", "Cpu", "Environment", "Params", "Streams", "param"]
