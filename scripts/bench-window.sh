#!/usr/bin/env bash
# Windowed and growing filters: builds bench/bench_window in Release, starts a private
# redis-server (no persistence) on a free loopback port in a temp dir, and runs
#   1. the simulated stream (driven clock) in memory: --windows windows of 1e5 items, p = 1%
#      and 0.1%, both layouts: false negatives, forgetting, FPR, memory against a plain filter
#      and APBF, then a burst of 10x the rate for one slice;
#   2. the same stream in Redis, shorter (--redis-windows windows of 2e4 items, p = 1%,
#      blocked);
#   3. add_many throughput on the real clock: plain, windowed and growing filters, in memory,
#      in files (under $TMPDIR or /tmp) and in Redis, --reps repetitions in random order.
# Prints bench_window's markdown tables; the server is killed by pid on exit, whatever happens.
#   scripts/bench-window.sh [--windows=100] [--redis-windows=6] [--reps=5] [--module]
# --module loads this build's redbloom.so into the server. Other --key=value arguments go to
# every bench_window run as they are (bench/bench_window.cpp). Exit status: 1 if a check failed
# (a false negative, a mean FPR over target), else 3 if a Redis part could not run, else 0.
# The server binary is $REDBLOOM_REDIS_SERVER if set, else redis-server on PATH; the build dir
# is $REDBLOOM_BENCH_BUILD_DIR if set, else build-bench.
set -euo pipefail
cd "$(dirname "$0")/.."

windows=100
redis_windows=6
reps=5
module=no
passed=()
for arg in "$@"; do
  case $arg in
    --windows=*) windows=${arg#--windows=} ;;
    --redis-windows=*) redis_windows=${arg#--redis-windows=} ;;
    --reps=*) reps=${arg#--reps=} ;;
    --module) module=yes ;;
    --help | -h)
      sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *) passed+=("$arg") ;;
  esac
done

# shellcheck source=scripts/lib/private-redis.sh
source scripts/lib/private-redis.sh
start=$SECONDS
if [[ $module == yes ]]; then
  # Built before the server starts, so the server can load it.
  module_build=${REDBLOOM_BENCH_BUILD_DIR:-build-bench}
  cmake -S . -B "$module_build" -DCMAKE_BUILD_TYPE=Release -DREDBLOOM_BUILD_TESTS=OFF >/dev/null
  cmake --build "$module_build" -j "$(nproc)" --target redbloom_module >/dev/null
  private_redis_server_args=(--loadmodule "$(realpath "$module_build/module/redbloom.so")")
fi
private_redis_setup bench-window bench_window
bench_bin=$build/bench/bench_window

private_redis_describe
if [[ $module == yes ]]; then echo "module: ${private_redis_server_args[1]}"; fi
echo "build: $(git rev-parse --short HEAD 2>/dev/null || echo '?')" \
  "$(git diff --quiet HEAD -- src include 2>/dev/null || echo '(library sources modified)')"
echo "the benchmark and the server share these $(nproc) cores"
echo

# The worst status so far: a failed check (1) outranks a Redis part that could not run (3).
status=0
record() {
  local code=$1
  if ((code == 1)); then
    status=1
  elif ((code != 0 && status == 0)); then
    status=$code
  fi
}

code=0
private_redis_run "$bench_bin" --part=stream --store=memory --windows="$windows" \
  "${passed[@]}" || code=$?
record "$code"
code=0
private_redis_run "$bench_bin" --part=stream --store=redis --redis="$uri" \
  --windows="$redis_windows" --items-per-window=2e4 --probes=2e4 --error-rate=0.01 \
  --layout=blocked "${passed[@]}" || code=$?
record "$code"
code=0
private_redis_run "$bench_bin" --part=throughput --redis="$uri" --reps="$reps" \
  --dir="$dir" "${passed[@]}" || code=$?
record "$code"

echo "total time: $((SECONDS - start)) s"
exit "$status"
