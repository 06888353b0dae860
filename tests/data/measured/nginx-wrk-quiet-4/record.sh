#!/bin/sh
# How tests/data/measured/nginx-wrk-quiet-4 was recorded: nginx-wrk-quiet's protocol and
# fit (its record.sh) again on 2026-12-07 at about 08:00 UTC, the first set whose runs
# record wrk's sleeps (its voluntary context switches: load.client_sleeps).
set -eu
D=tests/data/measured/nginx-wrk-quiet-4 exec sh tests/data/measured/nginx-wrk-quiet/record.sh
