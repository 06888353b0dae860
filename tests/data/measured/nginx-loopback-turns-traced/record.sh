#!/bin/sh
# nginx-loopback-turns-traced: nginx-loopback-turns' protocol again, each run with the
# kernel's task switches on the client CPU traced (--trace-turns on: client-turns.csv)
# (tests/data/measured/README.md, "nginx-loopback-turns-traced").
# Each repeat records both, one after the other.
set -e
for r in 1 2 3; do
  for interval in 0 0.1; do
    out=no-sampler; [ "$interval" = 0 ] || out=sampler
    acceptsim measure --server nginx --multi-accept off --rates 3000,5000,6000,7000 \
        --duration 8 --repeats 1 --first-repeat "$r" --timeout 1 \
        --server-cpu-quota 0.1 --server-cpu-period 10000 --sample-interval "$interval" \
        --trace-turns on --out "tests/data/measured/nginx-loopback-turns-traced/$out"
  done
done
