#!/bin/sh
# nginx-loopback-turns-traced: nginx-loopback-turns' protocol again, each run with the
# kernel's task switches on the client CPU traced (--trace-turns on: client-turns.csv)
# (tests/data/measured/README.md, "nginx-loopback-turns-traced").
# Each repeat records both, one after the other.
set -e
D=tests/data/measured/nginx-loopback-turns-traced EXTRA="--trace-turns on" \
    sh tests/data/measured/nginx-loopback-turns/record.sh
# 21:06 UTC: the 4-ms protocol of nginx-loopback-timeseries-2 (0.25 CPU per 4 ms,
# multi_accept on and off alternating), traced, without the sampler, two repeats
for rep in 1 2; do
  for m in $([ $((rep % 2)) = 1 ] && echo on off || echo off on); do
    acceptsim measure --server nginx --duration 8 --timeout 1 --pause 1 \
        --server-cpu-quota 0.25 --server-cpu-period 4000 --multi-accept $m \
        --rates 4000,5000,5500,6000 --repeats 1 --first-repeat $rep --sample-interval 0 \
        --trace-turns on --out tests/data/measured/nginx-loopback-turns-traced/quota-0.25-period-4000us
  done
done
# the host's costs right after, and nginx's request_s fitted to the 4-ms runs' replies
# (multi_accept on) from them, as for nginx-loopback-timeseries-2
acceptsim measure-costs --out tests/data/measured/nginx-loopback-turns-traced/host-costs.toml
acceptsim calibrate tests/data/measured/nginx-loopback-turns-traced/quota-*/*multi_accept-on* \
    --params tests/data/measured/nginx-loopback-turns-traced/host-costs.toml \
    --out tests/data/measured/nginx-loopback-turns-traced/params.toml --jobs 2 --max-evaluations 40
