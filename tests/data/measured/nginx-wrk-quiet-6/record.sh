#!/bin/sh
# How tests/data/measured/nginx-wrk-quiet-6 was recorded: nginx-wrk's protocol (1 worker,
# and 2 workers each in a cgroup of 0.25 CPU per 4 ms on CPU 0; wrk 4.1 with one thread on
# CPU 1; 1 to 256 connections; keep-alive off and on; 2 repeats of 10 s; httperf beside
# them), but with one worker's run and two workers' run at each point taken one right
# after the other, so that the two see the same state of the host: nginx's CPU per reply
# moves by a third within minutes on this machine (docs/design_log.md, "nginx's speed
# moves within a run"), and nginx-wrk-quiet-2, which ran all one-worker runs before all
# two-worker runs, read that drift as a cost of two workers.
set -eu
A=${ACCEPTSIM:-acceptsim}
D=${D:-tests/data/measured/nginx-wrk-quiet-6}
exec 9>/tmp/acceptsim-testbed.lock
flock 9
$A measure --rates 2000,3000,5000 --multi-accept off --duration 10 --timeout 1 \
    --repeats 2 --pause 1 --server-cpu-quota 0.25 --out $D/httperf
W="--client wrk --multi-accept off --duration 10 --threads 1 --pause 1 --server-cpu-quota 0.25"
for rep in 1 2; do
    for ka in "" --keepalive; do
        for c in 1 4 16 64 256; do
            $A measure $W $ka --concurrency $c --repeats 1 --first-repeat $rep \
                --out $D/workers-1
            $A measure $W $ka --concurrency $c --repeats 1 --first-repeat $rep \
                --workers 2 --server-cpu-quota-scope worker --out $D/workers-2
        done
    done
done
$A measure-costs --out $D/host-costs.toml
# nginx's per-request work, its keep-alive wait and its own per-connection work, fitted to
# the httperf runs and the one-worker wrk runs of 64 connections alone, as for nginx-wrk;
# every other wrk run, and every two-worker run, is a prediction
$A calibrate $D/httperf/* $D/workers-1/*c-00064* \
    --fit request_s,keepalive_s,connection_s --params $D/host-costs.toml \
    --out $D/wrk.params.toml --jobs 2 --max-evaluations 120
