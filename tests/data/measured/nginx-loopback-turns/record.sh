#!/bin/sh
# nginx-loopback-turns: httperf's retransmitted SYNs with and without the time series'
# sampler on the client CPU (tests/data/measured/README.md, "nginx-loopback-turns").
# Each repeat records both, one after the other.  (nginx-loopback-turns-traced/record.sh
# runs it again with D and EXTRA set.)
set -e
D=${D:-tests/data/measured/nginx-loopback-turns}
for r in 1 2 3; do
  for interval in 0 0.1; do
    out=no-sampler; [ "$interval" = 0 ] || out=sampler
    acceptsim measure --server nginx --multi-accept off --rates 3000,5000,6000,7000 \
        --duration 8 --repeats 1 --first-repeat "$r" --timeout 1 \
        --server-cpu-quota 0.1 --server-cpu-period 10000 --sample-interval "$interval" \
        ${EXTRA:-} --out "$D/$out"
  done
done
