"""The domain: kernel listen path, clients, workloads, servers and accept policies.

Follow one connection top-down: :mod:`acceptsim.models.client` starts it and sends
its SYN, :mod:`acceptsim.models.kernel` queues or drops it, a server in the package
``acceptsim.models.servers`` accepts and serves it, and :mod:`acceptsim.models.client`
receives the reply.  :mod:`acceptsim.models.experiment` runs one (its parts: the
configuration, the host wired from it, the record).
"""

from acceptsim import sim  # noqa: F401  (chooses the compiled hot path or its sources: sim.native)
from acceptsim.models.config import RunConfig
from acceptsim.models.experiment import simulate

__all__ = ["RunConfig", "simulate"]
