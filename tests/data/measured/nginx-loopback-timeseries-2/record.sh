#!/bin/sh
# How tests/data/measured/nginx-loopback-timeseries-2 was recorded: the 4-ms half of
# nginx-loopback-timeseries' protocol (0.25 CPU per 4 ms, multi_accept on and off
# alternating, six repeats, each repeat of each setting its own `acceptsim measure` and so
# its own cgroup), now that every run records where its cgroup's period timer fires
# against the ticks (server.cpu_period_offset_us); the host's costs measured right after,
# and request_s fitted to the multi_accept=on runs as for that set.
set -eu
A=${ACCEPTSIM:-acceptsim}
D=${D:-tests/data/measured/nginx-loopback-timeseries-2}
exec 9>/tmp/acceptsim-testbed.lock
flock 9
for rep in 1 2 3 4 5 6; do
  for m in $([ $((rep % 2)) = 1 ] && echo on off || echo off on); do
    $A measure --server nginx --duration 8 --timeout 1 --pause 1 \
        --server-cpu-quota 0.25 --server-cpu-period 4000 --multi-accept $m \
        --rates 4000,5000,5500,6000 --repeats 1 --first-repeat $rep \
        --out $D/quota-0.25-period-4000us
  done
done
$A measure-costs --out $D/host-costs.toml
$A calibrate $D/quota-*/*multi_accept-on* --params $D/host-costs.toml \
    --out $D/params.toml --jobs 2 --max-evaluations 20
