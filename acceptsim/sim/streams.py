"""Random streams owned by one run.

Every source of randomness in a model (arrival spacing, file sizes, session
lengths, ...) asks the run's :class:`Streams` for a stream by *name*.  Each
name maps to its own ``numpy.random.SeedSequence`` child, derived from the run
seed and a stable hash of the name, so

* two runs with the same seed see the same numbers from every source;
* adding a new source to a model never shifts the numbers of another one, so
  policies compared under one seed see the same arrivals (common random
  numbers);
* there is no module-global random state anywhere.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from itertools import chain, repeat

import numpy as np

from acceptsim.sim.engine import Draws
from acceptsim.sim.errors import ConfigError

#: numbers drawn per refill of a block sampler; large enough to amortise the
#: numpy call, small enough not to matter for memory
BLOCK_SIZE = 4096


class Streams:
    """The named random streams of one run."""

    def __init__(self, seed: int) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ConfigError("seed", seed, "a non-negative integer (runs are always seeded)")
        self.seed = seed

    def seed_sequence(self, name: str) -> np.random.SeedSequence:
        return np.random.SeedSequence(self.seed, spawn_key=(zlib.crc32(name.encode()),))

    def generator(self, name: str) -> np.random.Generator:
        """A numpy Generator private to the source ``name``."""
        return np.random.Generator(np.random.PCG64(self.seed_sequence(name)))

    def sampler(self, name: str, draw: Callable[[np.random.Generator, int], np.ndarray]) -> Sampler:
        """A fast scalar sampler: ``draw(gen, n)`` is called for blocks of n values."""
        return _block_sampler(self.generator(name), draw)

    def draws(self, name: str, draw: Callable[[np.random.Generator, int], np.ndarray]) -> Draws:
        """The values :meth:`sampler` gives, in the same blocks, as a
        :class:`~acceptsim.sim.engine.Draws` (which the compiled hot path reads natively);
        for a stream of floats."""
        gen = self.generator(name)
        return Draws(lambda: draw(gen, BLOCK_SIZE).tolist())

    def exponential(self, name: str, mean: float) -> Sampler:
        return self.sampler(name, lambda g, n: g.exponential(mean, n))


#: a scalar sampler: each call returns the next float of its stream
Sampler = Callable[[], float]


def _block_sampler(
    gen: np.random.Generator, draw: Callable[[np.random.Generator, int], np.ndarray]
) -> Sampler:
    """Values drawn from numpy in blocks of :data:`BLOCK_SIZE`, one per call.

    The sampler is the ``__next__`` of a C-level iterator chaining the
    blocks, so a call costs about as much as a builtin call (a block is
    drawn only when the previous one is used up).
    """
    blocks = map(lambda _: draw(gen, BLOCK_SIZE).tolist(), repeat(None))
    return chain.from_iterable(blocks).__next__
