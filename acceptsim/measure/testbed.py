"""The testbed's configuration of the servers ``acceptsim measure`` starts, declared once.

These are the testbed's settings, not the servers' own defaults (those are the models'
defaults: ``acceptsim servers nginx``).  The harness writes them into the configuration
it generates (:func:`acceptsim.measure.harness.nginx_conf`,
:func:`~acceptsim.measure.harness.haproxy_conf`) and into every run's ``run.toml``, and the
simulation of a measured run reads them from its ``run.toml``
(:func:`acceptsim.measure.calibrate.config_for`).  A run recorded before ``run.toml`` had
a field for one of them was measured with the value below, and :mod:`~acceptsim.measure.runfile`
fills it from here: :func:`recorded_max_connections`.
"""

from __future__ import annotations

from typing import Final

#: the listen backlog the testbed asks for (nginx ``listen ... backlog=``, HAProxy's bind
#: ``backlog``), in every run since the first (``run.toml`` ``server.backlog``)
BACKLOG: Final = 128
#: nginx ``worker_connections`` in the generated nginx.conf, in every run since the first
#: (``run.toml`` ``server.max_connections`` from issue 47 on; the runs before left it out)
NGINX_WORKER_CONNECTIONS: Final = 16384
#: nginx ``worker_rlimit_nofile`` in the generated nginx.conf (room for every connection)
NGINX_RLIMIT_NOFILE: Final = 20000
#: HAProxy's maxconn on the measuring host, where the configuration sets none and HAProxy
#: derives it from the open-file limit the harness ran with (20,000): read back from its
#: stats socket and recorded in ``server.max_connections`` by every HAProxy run since the
#: sets that recorded it; the runs before left it out and ran on the same host
HAPROXY_MAXCONN: Final = 9987

#: how long httperf's processes busy-polling on one of the testbed's client CPUs keep the
#: order of their turns, in the mean, when nothing of acceptsim's runs there beside them
#: (:data:`acceptsim.models.config.RunConfig.client_turn_order_s`), in seconds: fitted to
#: the fraction of the connections beyond the replies whose SYN the kernel retransmitted
#: (TcpExtTCPSynRetrans) at the 29 points of the three one-worker sets recorded without a
#: time series whose kernel retransmitted more than 50 SYNs a second (nginx-loopback-quota,
#: -quotas, -workers/workers-1; 4-12 processes per CPU; seed 1), by
#: ``python tools/fit_turn_order.py``: its root-mean-square error is least at 1.44 s of
#: 0.8-2.5 s (0.034; 0.039 at 1.2 s, 0.038 at 1.7 s, 0.138 with no order kept).
#: exp(-1 s / 1.44 s) = 0.5: half the steps find the order that started them at their 1-s
#: deadline (docs/design_log.md, "The order of httperf's turns").  Out of sample
#: (nginx-loopback-turns, another machine) it holds at 5 processes per CPU and not at 10,
#: where that machine's rounds lost their order: not one number for every machine and load.
#: So it is only for runs recorded without their client CPU's switches traced: a run with
#: them (``acceptsim measure --trace-turns``, ``client-turns.csv``) gives its own
#: (``calibrate.turn_settings``: where its deadlines fell; nginx-loopback-turns-traced)
CLIENT_TURN_ORDER_S: Final = 1.44

#: the most connections a run left unrecorded was measured with, per server
RECORDED_MAX_CONNECTIONS: Final = {"nginx": NGINX_WORKER_CONNECTIONS, "haproxy": HAPROXY_MAXCONN}


def recorded_max_connections(server: str) -> int:
    """The most connections a run of ``server`` that did not record them held: the
    testbed's configuration of the time; 0 for a server the testbed never ran (its model's
    default then applies)."""
    return RECORDED_MAX_CONNECTIONS.get(server, 0)
