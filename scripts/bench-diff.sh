#!/usr/bin/env bash
# Diff benchmark (seed 000: orphans among checked URLs): builds bench/bench_diff in Release,
# starts a private redis-server (no persistence) on a free loopback port in a temp dir, runs the
# benchmark against it (the file cases write their filters in the same temp dir) and prints its
# markdown table: redbloom's KnownSet (file and Redis, Bloom-only and exact) against the seed's
# SETBIT + SADD / GETBIT + SISMEMBER algorithm, 2M known vs 2M checked URLs by default, medians
# of --reps runs (3 by default), randomly interleaved. The server is killed by pid on exit,
# whatever happens.
#   scripts/bench-diff.sh [--n=2e6] [--p=0.01] [--reps=3] [--only=SUBSTRING] [--shuffle-seed=N]
# The server binary is $REDBLOOM_REDIS_SERVER if set, else redis-server on PATH; the build dir
# is $REDBLOOM_BENCH_BUILD_DIR if set, else build-bench.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --test
server_bin=${REDBLOOM_REDIS_SERVER:-$(command -v redis-server || true)}
if [[ -z "$server_bin" || ! -x "$server_bin" ]]; then
  echo "bench-diff: redis-server not found (install it: scripts/install-deps.sh --test," \
    "or set REDBLOOM_REDIS_SERVER to its path)" >&2
  exit 1
fi

build=${REDBLOOM_BENCH_BUILD_DIR:-build-bench}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DREDBLOOM_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target bench_diff >/dev/null

dir=$(mktemp -d "${TMPDIR:-/tmp}/redbloom-bench-diff.XXXXXX")
pid=""
bench=""
cleanup() {
  if [[ -n "$bench" ]] && kill -0 "$bench" 2>/dev/null; then
    kill "$bench" 2>/dev/null || true
    wait "$bench" 2>/dev/null || true
  fi
  if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Free port: one nobody listens on; if another process takes it before the server binds, the
# server exits and the next port is tried.
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for ((attempt = 0; attempt < 8; attempt++)); do
  port=$((20000 + RANDOM % 40000))
  port_in_use "$port" && continue
  "$server_bin" --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" \
    --logfile "$dir/redis.log" --daemonize no >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 100); do
    grep -q "Ready to accept connections" "$dir/redis.log" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null && grep -q "Ready to accept connections" "$dir/redis.log"; then
    break
  fi
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pid=""
done
if [[ -z "$pid" ]]; then
  echo "bench-diff: could not start $server_bin on a loopback port; its last log:" >&2
  tail -n 20 "$dir/redis.log" >&2 2>/dev/null || true
  exit 1
fi

echo "command: scripts/bench-diff.sh $*"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "server: $("$server_bin" --version | head -n1), pid $pid, port $port, no persistence"
# In the background, so that a signal to this script runs the trap at once (bash runs traps
# only between foreground commands); the trap then stops the benchmark and the server.
"$build/bench/bench_diff" --uri="redis://127.0.0.1:$port" --dir="$dir" "$@" &
bench=$!
wait "$bench"
