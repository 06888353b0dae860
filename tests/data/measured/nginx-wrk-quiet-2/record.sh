#!/bin/sh
# How tests/data/measured/nginx-wrk-quiet-2 was recorded: nginx-wrk's protocol (its record.sh)
# again, in full, right after nginx-wrk-quiet (2026-12-07 03:01-03:11 UTC, the testbed lock
# held, nothing else running), the host's costs measured right after the runs.  nginx 1.22
# (Debian's nginx-light, a 1024-byte file, backlog 128, multi_accept off) under wrk 4.1 with
# one thread on the other CPU, a cgroup CFS quota of 0.25 CPU per worker (4-ms period);
# 1 worker, and 2 workers sharing the listening socket, each in a cgroup of its own (two
# slow cores emulated on one CPU); keep-alive off (Connection: close) and on; 1 to 256
# connections; 2 repeats of 10 s; httperf runs at the same quota beside them.
set -eu
A=${ACCEPTSIM:-acceptsim}
D=tests/data/measured/nginx-wrk-quiet-2
exec 9>/tmp/acceptsim-testbed.lock
flock 9
$A measure --rates 2000,3000,5000 --multi-accept off --duration 10 --timeout 1 \
    --repeats 2 --pause 1 --server-cpu-quota 0.25 --out $D/httperf
W="--client wrk --multi-accept off --concurrency 1,4,16,64,256 --duration 10 --repeats 2"
W="$W --threads 1 --pause 1 --server-cpu-quota 0.25"
$A measure $W --out $D/workers-1
$A measure $W --workers 2 --server-cpu-quota-scope worker --out $D/workers-2
$A measure $W --keepalive --out $D/workers-1
$A measure $W --keepalive --workers 2 --server-cpu-quota-scope worker --out $D/workers-2
$A measure-costs --out $D/host-costs.toml
# nginx's per-request work, its keep-alive wait and its own per-connection work, fitted to
# the httperf runs and the one-worker wrk runs of 64 connections alone, as for nginx-wrk;
# every other wrk run is a prediction
$A calibrate $D/httperf/* $D/workers-1/*c-00064* \
    --fit request_s,keepalive_s,connection_s --params $D/host-costs.toml \
    --out $D/wrk.params.toml --jobs 2 --max-evaluations 120
