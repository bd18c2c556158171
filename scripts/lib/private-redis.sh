# shellcheck shell=bash
# Sourced by scripts/bench-redis.sh and scripts/bench-diff.sh, from the repository root, under
# `set -euo pipefail`: builds a benchmark in Release and runs it against a private redis-server
# (no persistence) on a free loopback port in a temp dir, killed by pid on exit, whatever
# happens.
#   private_redis_setup NAME TARGET   install the test dependencies, find the server, build
#                                     TARGET, make the temp dir, start the server. NAME (as
#                                     bench-diff) prefixes messages and names the temp dir.
#   private_redis_describe            print the machine and the server
#   private_redis_run COMMAND...      run the benchmark, in the background, and wait for it
# After setup: $build (the build dir), $dir (the temp dir), $port (the server's), $pid.
# The server binary is $REDBLOOM_REDIS_SERVER if set, else redis-server on PATH; the build dir
# is $REDBLOOM_BENCH_BUILD_DIR if set, else build-bench.

server_bin=""
build=""
dir=""
pid=""
port=""
bench=""

private_redis_cleanup() {
  if [[ -n "$bench" ]] && kill -0 "$bench" 2>/dev/null; then
    kill "$bench" 2>/dev/null || true
    wait "$bench" 2>/dev/null || true
  fi
  if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  if [[ -n "$dir" ]]; then rm -rf "$dir"; fi
}

private_redis_setup() {
  local name=$1 target=$2
  scripts/install-deps.sh --test
  server_bin=${REDBLOOM_REDIS_SERVER:-$(command -v redis-server || true)}
  if [[ -z "$server_bin" || ! -x "$server_bin" ]]; then
    echo "$name: redis-server not found (install it: scripts/install-deps.sh --test," \
      "or set REDBLOOM_REDIS_SERVER to its path)" >&2
    exit 1
  fi

  build=${REDBLOOM_BENCH_BUILD_DIR:-build-bench}
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DREDBLOOM_BUILD_TESTS=OFF >/dev/null
  cmake --build "$build" -j "$(nproc)" --target "$target" >/dev/null

  dir=$(mktemp -d "${TMPDIR:-/tmp}/redbloom-$name.XXXXXX")
  trap private_redis_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM

  # Free port: one nobody listens on; if another process takes it before the server binds, the
  # server exits and the next port is tried.
  local attempt
  for ((attempt = 0; attempt < 8; attempt++)); do
    port=$((20000 + RANDOM % 40000))
    private_redis_port_in_use "$port" && continue
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
    echo "$name: could not start $server_bin on a loopback port; its last log:" >&2
    tail -n 20 "$dir/redis.log" >&2 2>/dev/null || true
    exit 1
  fi
}

private_redis_port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

private_redis_describe() {
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  echo "server: $("$server_bin" --version | head -n1), pid $pid, port $port, no persistence"
}

private_redis_run() {
  # In the background, so that a signal to the script runs the trap at once (bash runs traps
  # only between foreground commands); the trap then stops the benchmark and the server.
  "$@" &
  bench=$!
  wait "$bench"
}
