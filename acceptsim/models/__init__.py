"""The domain: kernel listen path, clients, workloads, servers and accept policies.

Follow one connection top-down: :mod:`acceptsim.models.client` starts it and sends
its SYN, :mod:`acceptsim.models.kernel` queues or drops it, a server in the package
``acceptsim.models.servers`` accepts and serves it, and :mod:`acceptsim.models.client`
receives the reply.  :mod:`acceptsim.models.experiment` runs one (its parts: the
configuration, the host wired from it, the record).
"""

# One module, one name: with the checkout on the import path the folder models/ is also
# importable as ``models``, which would load every module a second time beside
# ``acceptsim.models`` (two sets of classes, compiled and not).  Refused, before anything loads.
if __name__ != "acceptsim.models":
    raise ImportError(
        f"import acceptsim.models, not {__name__}: "
        "the folder models/ is the package acceptsim.models"
    )


from acceptsim import sim  # noqa: F401  (chooses the compiled hot path or its sources: sim.native)
from acceptsim.models.config import RunConfig
from acceptsim.models.experiment import simulate

__all__ = ["RunConfig", "simulate"]
