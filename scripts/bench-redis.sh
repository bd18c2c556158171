#!/usr/bin/env bash
# Redis filter benchmark: builds bench/bench_redis in Release, starts a private redis-server (no
# persistence) on a free loopback port in a temp dir, runs the benchmark against it and prints its
# markdown table: the usual hand-written SETBIT/GETBIT filter against redbloom's per-item, bulk
# and dedup paths, and (row e) the blocked layout's per-item adds as one script per unit instead
# of BITFIELD, medians of --reps runs (3 by default), randomly interleaved. The server is
# killed by pid on exit, whatever happens.
#   scripts/bench-redis.sh [--n=1e6] [--reps=3] [--absent=1e5] [--only=SUBSTRING]
#   scripts/bench-redis.sh --tls [--n=1e6] [--reps=5]   TLS against plain TCP on the batched
#                                   paths of the CLI and Python (scripts/bench-tls.sh)
# The server binary is $REDBLOOM_REDIS_SERVER if set, else redis-server on PATH; the build dir
# is $REDBLOOM_BENCH_BUILD_DIR if set, else build-bench.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ " $* " == *" --tls "* ]]; then
  rest=()
  for arg in "$@"; do [[ $arg == --tls ]] || rest+=("$arg"); done
  exec scripts/bench-tls.sh "${rest[@]}"
fi
# shellcheck source=scripts/lib/private-redis.sh
source scripts/lib/private-redis.sh
private_redis_setup bench-redis bench_redis

private_redis_describe
private_redis_run "$build/bench/bench_redis" --uri="$uri" "$@"
