"""The domain: kernel listen path, clients, workloads, servers and accept policies.

Follow one connection top-down: :mod:`models.client` starts it and sends its
SYN, :mod:`models.kernel` queues or drops it, a server in
:mod:`models.servers` accepts and serves it, and :mod:`models.client`
receives the reply.  :mod:`models.experiment` wires one run together.
"""

from acceptsim import sim  # noqa: F401  (chooses the compiled hot path or its sources: sim.native)
from acceptsim.models.experiment import RunConfig, simulate

__all__ = ["RunConfig", "simulate"]
