"""A request's CPU cost with a spread: the server parameter ``request_cost``.

By default every request of a given reply size costs the same (``constant``:
``request_s + send_per_byte_s * bytes``, the paper's model).  The other choices
multiply that cost by a random factor of mean 1, drawn per request from the run's
stream ``request_cost.<worker>``, so the mean stays the calibrated one and only
the spread changes:

* ``exponential``: the factor is exponential (service times of an M/M/k queue);
* ``bimodal``: a share ``request_cost_share`` of the requests is
  ``request_cost_ratio`` times as costly as the rest (a slow request class that can
  stall one worker);
* ``lognormal``: the factor's logarithm is normal with standard deviation
  ``request_cost_sigma`` (a heavy right tail).

:class:`RequestCostParams` declares the four parameters once; a server's parameter
set that inherits them, and whose loop builds its request bursts with
:func:`request_bursts`, takes them (the userver, nginx and prefork).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from acceptsim.models.servers.base import DrawnRequestBurst, RequestBurst
from acceptsim.sim.params import Params, param
from acceptsim.sim.streams import Streams

#: the choices of ``request_cost``
REQUEST_COSTS: Final = ("constant", "exponential", "bimodal", "lognormal")


@dataclass(frozen=True)
class RequestCostParams(Params):
    """The spread of a request's CPU cost around its mean (the module's docstring)."""

    request_cost: str = param(
        "constant", unit="", choices=REQUEST_COSTS,
        doc="distribution of a request's CPU cost around its mean (request_s + "
        "send_per_byte_s x bytes): constant, exponential, bimodal or lognormal",
    )
    request_cost_share: float = param(
        0.1, unit="fraction", gt=0.0, le=0.99,
        doc="bimodal: the share of requests in the slow class",
    )
    request_cost_ratio: float = param(
        10.0, unit="", ge=1.0, le=1e6,
        doc="bimodal: a slow request's cost over a fast one's",
    )
    request_cost_sigma: float = param(
        1.0, unit="", gt=0.0, le=5.0,
        doc="lognormal: standard deviation of the cost factor's logarithm",
    )


def factor_draws(params: Any) -> Callable[[np.random.Generator, int], np.ndarray] | None:
    """How blocks of the cost factor (mean 1) are drawn, or None for ``constant``."""
    kind = params.request_cost
    if kind == "exponential":
        return lambda g, n: g.exponential(1.0, n)
    if kind == "lognormal":
        sigma = params.request_cost_sigma
        return lambda g, n: g.lognormal(-0.5 * sigma * sigma, sigma, n)
    if kind == "bimodal":
        share, ratio = params.request_cost_share, params.request_cost_ratio
        fast = 1.0 / (1.0 - share + share * ratio)  # so that the mean is 1
        return lambda g, n: np.where(g.random(n) < share, ratio * fast, fast)
    return None


def request_bursts(
    category: str, request_s: float, per_byte: float, params: Any, streams: Streams,
    worker: int,
) -> RequestBurst:
    """The request bursts of a server loop (worker ``worker``) whose parameters are
    ``params`` (a :class:`RequestCostParams`)."""
    draws = factor_draws(params)
    if draws is None:
        return RequestBurst(category, request_s, per_byte)
    factor = streams.sampler(f"request_cost.{worker}", draws)
    return DrawnRequestBurst(category, request_s, per_byte, factor)
