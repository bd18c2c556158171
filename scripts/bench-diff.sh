#!/usr/bin/env bash
# Diff benchmark (orphan detection: orphans among checked URLs): builds bench/bench_diff in
# Release, starts a private redis-server (no persistence) on a free loopback port in a temp dir,
# runs the benchmark against it (the file cases write their filters in the same temp dir) and
# prints its markdown table: redbloom's KnownSet (file and Redis, Bloom-only and exact) against
# the usual hand-written SETBIT + SADD / GETBIT + SISMEMBER method, 2M known vs 2M checked URLs by
# default, medians of --reps runs (3 by default), randomly interleaved. With --cluster the Redis
# cases run on a private 3-master Redis Cluster instead, and the hand-written one-server method is
# left out. The servers are killed by pid on exit, whatever happens.
#   scripts/bench-diff.sh [--cluster] [--n=2e6] [--p=0.01] [--reps=3] [--only=SUBSTRING]
#                         [--shuffle-seed=N]
# The server binary is $REDBLOOM_REDIS_SERVER if set, else redis-server on PATH; the build dir
# is $REDBLOOM_BENCH_BUILD_DIR if set, else build-bench.
set -euo pipefail
cd "$(dirname "$0")/.."
masters=0
args=()
for arg in "$@"; do
  if [[ $arg == --cluster ]]; then masters=3; else args+=("$arg"); fi
done
# shellcheck source=scripts/lib/private-redis.sh
source scripts/lib/private-redis.sh
private_redis_setup bench-diff bench_diff "$masters"

echo "command: scripts/bench-diff.sh $*"
private_redis_describe
private_redis_run "$build/bench/bench_diff" --uri="$uri" --dir="$dir" "${args[@]}"
