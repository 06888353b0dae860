#!/bin/sh
# How tests/data/measured/nginx-wrk-quiet-3 was recorded: nginx-wrk-quiet's protocol and
# fit (its record.sh) again on 2026-12-07 at 07:10 UTC, four hours later, to predict one
# connection with wake_reader_s measured (by measure-costs) right after the runs.
set -eu
D=tests/data/measured/nginx-wrk-quiet-3 exec sh tests/data/measured/nginx-wrk-quiet/record.sh
