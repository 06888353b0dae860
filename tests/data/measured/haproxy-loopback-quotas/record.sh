#!/bin/sh
# How tests/data/measured/haproxy-loopback-quotas was recorded: HAProxy 2.6 (Debian's
# package, one thread, `http-request return` of a 1024-byte file, bind backlog 128) under
# two cgroup CFS quotas, tune.maxaccept 1, 2, 4, 8, 16, 64 and -1 (inf) alternated within
# each repeat, 3 repeats of 10-s httperf runs per rate; with the testbed lock held on a
# quiet machine (2026-11-27 18:27-18:54 UTC; every run's host_limits() empty).  The
# host's costs right after the sets (18:59); each set's request_s: the last lines.
set -eu
D=tests/data/measured/haproxy-loopback-quotas
L=1,2,4,8,16,64,inf
Q="--server haproxy --accept-limit $L --duration 10 --timeout 1 --repeats 3 --pause 1"
exec 9>/tmp/acceptsim-testbed.lock
flock 9
# 1 ms of CPU per 20-ms period
acceptsim measure $Q --server-cpu-quota 0.05 --server-cpu-period 20000 \
    --rates 800,2000,3000 --out $D/quota-0.05-period-20ms
# 1 ms of CPU per 10-ms period
acceptsim measure $Q --server-cpu-quota 0.1 --server-cpu-period 10000 \
    --rates 1200,3000,4500 --out $D/quota-0.1-period-10ms
# (limit 16 at 800/s, repeat 1, recorded again alone: a command ran beside the first one)
# the host's costs, with HAProxy's CPU per reply and the cost of a turn of its loop
acceptsim measure-costs --server haproxy --out $D/host-costs.toml
# each set's request_s, fitted to its limit-4 runs alone
for S in quota-0.05-period-20ms quota-0.1-period-10ms; do
    acceptsim calibrate $D/$S/*maxaccept-4-* --params $D/host-costs.toml \
        --out $D/$S.params.toml --jobs 2
done
