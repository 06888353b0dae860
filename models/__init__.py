"""The domain: kernel listen path, clients, workloads, servers and accept policies.

Follow one connection top-down: :mod:`models.client` starts it and sends its
SYN, :mod:`models.kernel` queues or drops it, a server in
:mod:`models.servers` accepts and serves it, and :mod:`models.client`
receives the reply.  :mod:`models.experiment` runs one (its parts: configuration, host, record).
"""

from acceptsim import sim  # noqa: F401  (chooses the compiled hot path or its sources: sim.native)
from acceptsim.models.config import RunConfig
from acceptsim.models.experiment import simulate

__all__ = ["RunConfig", "simulate"]
