#!/usr/bin/env bash
# Local filter benchmark: builds bench/bench_local in Release and prints the markdown table
# (medians of REPETITIONS runs, 5 by default) for n = 1e6 and 1e8 at p = 1%. Repetitions of
# all cases are interleaved in random order, so a slow spell of this shared machine spreads
# over every row instead of landing on one.
#   scripts/bench-local.sh [--store=file] [--n=1e6,1e8]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --test
build=${REDBLOOM_BENCH_BUILD_DIR:-build-bench}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DREDBLOOM_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target bench_local >/dev/null
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
  "AVX2 $(grep -q avx2 /proc/cpuinfo && echo yes || echo no)"
"$build/bench/bench_local" --benchmark_repetitions="${REPETITIONS:-5}" \
  --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true "$@"
