#!/bin/sh
# How tests/data/measured/nginx-wrk-quiet-5 was recorded: nginx-wrk-quiet's protocol and
# fit (its record.sh) again on 2026-12-07 at about 09:25 UTC, the first set whose runs
# record where their cgroup's period timer fires against the ticks
# (server.cpu_period_offset_us, traced with perf after each run).
set -eu
D=tests/data/measured/nginx-wrk-quiet-5 exec sh tests/data/measured/nginx-wrk-quiet/record.sh
