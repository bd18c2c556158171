#!/usr/bin/env bash
# Scale benchmark (click-event dedup at full scale): builds bench/bench_cluster_scale in Release,
# starts a private Redis Cluster of 3 masters (no persistence, no replicas) on free loopback ports
# in a temp dir, creates it with `redis-cli --cluster create`, runs the benchmark against it and
# prints its table: load rate and time for 10^9 items at m/n = 30, k = 8 (3.75 GB of bits), memory
# per master against theory, false negatives and the false-positive rate against the formula. Every
# server is killed by pid on exit, whatever happens.
#   scripts/bench-cluster.sh [--n=1e9] [--batch=1e8] [--absent=1e8] [--present=1e7]
# Needs about 16 GB of memory at the defaults (3.75 GB in Redis, the rest in the client's
# batch). The server binary is $REDBLOOM_REDIS_SERVER if set, else redis-server on PATH; the
# build dir is $REDBLOOM_BENCH_BUILD_DIR if set, else build-bench.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/private-redis.sh
source scripts/lib/private-redis.sh
private_redis_setup bench-cluster bench_cluster_scale 3

private_redis_describe
private_redis_run "$build/bench/bench_cluster_scale" --uri="$uri" "$@"
