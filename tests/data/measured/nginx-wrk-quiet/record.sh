#!/bin/sh
# How tests/data/measured/nginx-wrk-quiet was recorded: nginx-wrk's protocol (its record.sh)
# for one worker, 1 to 64 connections, on a machine measured quiet, with the host's costs
# measured right after the runs.  nginx 1.22 (Debian's nginx-light, a 1024-byte file,
# backlog 128, multi_accept off) in a cgroup of 0.25 CPU per 4 ms on CPU 0, wrk 4.1 with
# one thread on CPU 1, keep-alive off (Connection: close) and on, 2 repeats of 10 s; httperf
# runs at the same quota beside them.
set -eu
A=${ACCEPTSIM:-acceptsim}
D=${D:-tests/data/measured/nginx-wrk-quiet}  # (nginx-wrk-quiet-3/record.sh sets D)
exec 9>/tmp/acceptsim-testbed.lock
flock 9
$A measure --rates 2000,3000,5000 --multi-accept off --duration 10 --timeout 1 \
    --repeats 2 --pause 1 --server-cpu-quota 0.25 --out $D/httperf
W="--client wrk --multi-accept off --concurrency 1,4,16,64 --duration 10 --repeats 2"
W="$W --threads 1 --pause 1 --server-cpu-quota 0.25"
$A measure $W --out $D/workers-1
$A measure $W --keepalive --out $D/workers-1
$A measure-costs --out $D/host-costs.toml
# nginx's per-request work, its keep-alive wait and its own per-connection work, fitted to
# the httperf runs and the wrk runs of 64 connections alone, as for nginx-wrk; every other
# wrk run is a prediction
$A calibrate $D/httperf/* $D/workers-1/*c-00064* \
    --fit request_s,keepalive_s,connection_s --params $D/host-costs.toml \
    --out $D/wrk.params.toml --jobs 2 --max-evaluations 120
