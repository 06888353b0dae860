#!/bin/sh
# How tests/data/measured/nginx-wrk-repeats was recorded: the nginx-wrk set's one-worker
# configuration (nginx 1.22, a 1024-byte file, backlog 128, multi_accept off, a cgroup CFS
# quota of 0.25 CPU per 4-ms period; wrk 4.1 with one thread on the other CPU) at the
# concurrencies where nginx sleeps between requests (1 and 4 connections), keep-alive off
# and on, 6 repeats of 5-s runs each, the repeats interleaved; then 1 connection with
# keep-alive under a quota of a whole CPU (never throttled), 6 repeats.  The host's costs
# measured before and after the runs.  With the testbed lock held on a quiet machine.
set -eu
D=tests/data/measured/nginx-wrk-repeats
exec 9>/tmp/acceptsim-testbed.lock
flock 9
acceptsim measure-costs --out $D/host-costs-before.toml
W="--client wrk --multi-accept off --duration 5 --repeats 6 --threads 1 --pause 1"
acceptsim measure $W --concurrency 1,4 --server-cpu-quota 0.25 --out $D/quota-0.25
acceptsim measure $W --concurrency 1,4 --keepalive --server-cpu-quota 0.25 --out $D/quota-0.25
acceptsim measure $W --concurrency 1 --keepalive --server-cpu-quota 1 --out $D/quota-1
acceptsim measure-costs --out $D/host-costs-after.toml
