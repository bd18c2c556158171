#!/usr/bin/env bash
# Scale benchmark (seed 001): builds bench/bench_cluster_scale in Release, starts a private
# Redis Cluster of 3 masters (no persistence, no replicas) on free loopback ports in a temp
# dir, creates it with `redis-cli --cluster create`, runs the benchmark against it and prints
# its table: load rate and time for 10^9 items at m/n = 30, k = 8 (3.75 GB of bits), memory per
# master against theory, false negatives and the false-positive rate against the formula.
# Every server is killed by pid on exit, whatever happens.
#   scripts/bench-cluster.sh [--n=1e9] [--batch=1e8] [--absent=1e8] [--present=1e7]
# Needs about 16 GB of memory at the defaults (3.75 GB in Redis, the rest in the client's
# batch). The server binary is $REDBLOOM_REDIS_SERVER if set, else redis-server on PATH; the
# build dir is $REDBLOOM_BENCH_BUILD_DIR if set, else build-bench.
set -euo pipefail
cd "$(dirname "$0")/.."
masters=3

scripts/install-deps.sh --test
server_bin=${REDBLOOM_REDIS_SERVER:-$(command -v redis-server || true)}
cli_bin=$(command -v redis-cli || true)
if [[ -z "$server_bin" || -z "$cli_bin" ]]; then
  echo "bench-cluster: redis-server and redis-cli are needed (scripts/install-deps.sh --test)" >&2
  exit 1
fi
build=${REDBLOOM_BENCH_BUILD_DIR:-build-bench}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DREDBLOOM_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target bench_cluster_scale >/dev/null

dir=$(mktemp -d "${TMPDIR:-/tmp}/redbloom-bench-cluster.XXXXXX")
pids=()
bench=""
cleanup() {
  if [[ -n "$bench" ]] && kill -0 "$bench" 2>/dev/null; then
    kill "$bench" 2>/dev/null || true
    wait "$bench" 2>/dev/null || true
  fi
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

ports=()
for ((m = 0; m < masters; m++)); do
  started=""
  for ((attempt = 0; attempt < 8; attempt++)); do
    port=$((20000 + RANDOM % 20000))
    bus=$((port + 10000))
    if port_in_use "$port" || port_in_use "$bus"; then continue; fi
    mkdir -p "$dir/$port"
    "$server_bin" --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir/$port" \
      --cluster-enabled yes --cluster-config-file nodes.conf --cluster-port "$bus" \
      --logfile "$dir/$port/redis.log" --daemonize no >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 100); do
      grep -q "Ready to accept connections" "$dir/$port/redis.log" 2>/dev/null && break
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null && grep -q "Ready to accept connections" "$dir/$port/redis.log"
    then
      pids+=("$pid")
      ports+=("$port")
      started=1
      break
    fi
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [[ -z "$started" ]]; then
    echo "bench-cluster: could not start a cluster node on a loopback port" >&2
    exit 1
  fi
done
nodes=()
for port in "${ports[@]}"; do nodes+=("127.0.0.1:$port"); done
"$cli_bin" --cluster create "${nodes[@]}" --cluster-yes >"$dir/create.log" 2>&1 || {
  cat "$dir/create.log" >&2
  exit 1
}
for _ in $(seq 100); do
  "$cli_bin" -p "${ports[0]}" cluster info | grep -q "cluster_state:ok" && break
  sleep 0.1
done

echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB," \
  "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "servers: $("$server_bin" --version | head -n1), a cluster of $masters masters on ports" \
  "${ports[*]}, no persistence"
uri="redis+cluster://$(IFS=,; echo "${nodes[*]}")"
"$build/bench/bench_cluster_scale" --uri="$uri" "$@" &
bench=$!
wait "$bench"
