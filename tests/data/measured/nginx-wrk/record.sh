#!/bin/sh
# How tests/data/measured/nginx-wrk was recorded: nginx 1.22 (Debian's nginx-light, a
# 1024-byte file, backlog 128, multi_accept off) under wrk 4.1 (Debian's package, one
# thread, as its one CPU suggests, and its default 2-s timeout) on the other CPU, a cgroup
# CFS quota of 0.25 CPU per worker (4-ms period); 1 worker, and 2 workers sharing the
# listening socket, each in a cgroup of its own (two slow cores emulated on one CPU);
# keep-alive off (every request says Connection: close) and on; 1 to 256 connections;
# 2 repeats of 10-s runs.  Beside them, httperf runs at the same quota.  With the testbed
# lock held on a quiet machine (2026-11-27 20:49-21:05 UTC; every run's host_limits()
# empty).  The host's costs were measured before the sets (20:49) and right after them
# (21:10); the files use the one after, as the HAProxy sets do: the one before measured a
# wake-up latency of 255 +/- 376 us, its spread above its mean (21:10: 92 +/- 52 us).
set -eu
D=tests/data/measured/nginx-wrk
exec 9>/tmp/acceptsim-testbed.lock
flock 9
acceptsim measure --rates 2000,3000,5000 --multi-accept off --duration 10 --timeout 1 \
    --repeats 2 --pause 1 --server-cpu-quota 0.25 --out $D/httperf
W="--client wrk --multi-accept off --concurrency 1,4,16,64,256 --duration 10 --repeats 2"
W="$W --threads 1 --pause 1 --server-cpu-quota 0.25"
acceptsim measure $W --out $D/workers-1
acceptsim measure $W --workers 2 --server-cpu-quota-scope worker --out $D/workers-2
acceptsim measure $W --keepalive --out $D/workers-1
acceptsim measure $W --keepalive --workers 2 --server-cpu-quota-scope worker --out $D/workers-2
acceptsim measure-costs --out $D/host-costs.toml
# nginx's per-request work, its keep-alive wait and its own per-connection work, fitted to
# the httperf runs and the one-worker wrk runs of 64 connections alone (keep-alive off and
# on: the three client patterns); every other wrk run is a prediction
acceptsim calibrate $D/httperf/* $D/workers-1/*c-00064* \
    --fit request_s,keepalive_s,connection_s --params $D/host-costs.toml \
    --out $D/wrk.params.toml --jobs 2 --max-evaluations 120
