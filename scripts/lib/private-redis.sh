# shellcheck shell=bash
# Sourced by the Redis benchmark scripts (bench-redis.sh, bench-diff.sh, bench-cluster.sh),
# from the repository root, under `set -euo pipefail`: builds a benchmark in Release and runs it
# against private redis-servers (no persistence) on free loopback ports in a temp dir: one
# server, or a Redis Cluster of several masters (no replicas, created with
# `redis-cli --cluster create`). Every server is killed by pid on exit, whatever happens.
#   private_redis_setup NAME TARGET [MASTERS]
#                               install the test dependencies, find the server, build TARGET,
#                               make the temp dir, start one server (MASTERS 0 or absent) or a
#                               cluster of MASTERS masters. NAME (as bench-diff) prefixes
#                               messages and names the temp dir.
#   private_redis_describe      print the machine and the servers
#   private_redis_run COMMAND...  run the benchmark, in the background, and wait for it
# After setup: $build (the build dir), $dir (the temp dir), $uri (redis://127.0.0.1:PORT, or
# redis+cluster:// with every master), $ports and $pids (arrays, one entry per server).
# With private_redis_tls=yes set before setup, every server also takes TLS on a second port
# ($tls_ports, same index), with certificates made in $dir/tls (tests/support/make-tls-certs.sh);
# $tls_uri is then rediss://127.0.0.1:TLS_PORT?tls_ca=... for the first server.
# The server binary is $REDBLOOM_REDIS_SERVER if set, else redis-server on PATH; the build dir
# is $REDBLOOM_BENCH_BUILD_DIR if set, else build-bench.

server_bin=""
build=""
dir=""
uri=""
ports=()
pids=()
bench=""
private_redis_tls=${private_redis_tls:-no}
tls_ports=()
tls_uri=""

private_redis_cleanup() {
  if [[ -n "$bench" ]] && kill -0 "$bench" 2>/dev/null; then
    kill "$bench" 2>/dev/null || true
    wait "$bench" 2>/dev/null || true
  fi
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [[ -n "$dir" ]]; then rm -rf "$dir"; fi
}

private_redis_port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Starts one server on a free port (and, for a cluster node, a free bus port 10000 above it)
# in its own directory under $dir; appends to $ports and $pids. If another process takes the
# port before the server binds, the server exits and the next port is tried.
# Extra arguments for every server started after they are set (e.g. --loadmodule PATH).
private_redis_server_args=()

private_redis_start_server() {
  local name=$1 cluster=$2 attempt port pid node_dir
  local extra=()
  if [[ $private_redis_tls == yes && ! -f "$dir/tls/ca.crt" ]]; then
    bash tests/support/make-tls-certs.sh "$dir/tls" >&2 || exit 1
  fi
  for ((attempt = 0; attempt < 8; attempt++)); do
    port=$((20000 + RANDOM % 30000))
    private_redis_port_in_use "$port" && continue
    extra=()
    if [[ $private_redis_tls == yes ]]; then
      # The TLS port is the plain one + 1: the same server answers both, side by side.
      private_redis_port_in_use $((port + 1)) && continue
      extra=(--tls-port $((port + 1)) --tls-cert-file "$dir/tls/server.crt"
        --tls-key-file "$dir/tls/server.key" --tls-ca-cert-file "$dir/tls/ca.crt"
        --tls-auth-clients no)
    fi
    if [[ $cluster == yes ]]; then
      private_redis_port_in_use $((port + 10000)) && continue
      extra+=(--cluster-enabled yes --cluster-config-file nodes.conf
        --cluster-port $((port + 10000)))
    fi
    node_dir="$dir/$port"
    mkdir -p "$node_dir"
    "$server_bin" --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$node_dir" \
      --logfile "$node_dir/redis.log" --daemonize no "${extra[@]}" \
      "${private_redis_server_args[@]}" >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 100); do
      grep -q "Ready to accept connections" "$node_dir/redis.log" 2>/dev/null && break
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null && grep -q "Ready to accept connections" "$node_dir/redis.log"
    then
      ports+=("$port")
      pids+=("$pid")
      [[ $private_redis_tls == yes ]] && tls_ports+=($((port + 1)))
      return 0
    fi
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  echo "$name: could not start $server_bin on a loopback port; its last log:" >&2
  tail -n 20 "$node_dir/redis.log" >&2 2>/dev/null || true
  exit 1
}

private_redis_setup() {
  local name=$1 target=$2 masters=${3:-0}
  scripts/install-deps.sh --test
  server_bin=${REDBLOOM_REDIS_SERVER:-$(command -v redis-server || true)}
  if [[ -z "$server_bin" || ! -x "$server_bin" ]]; then
    echo "$name: redis-server not found (install it: scripts/install-deps.sh --test," \
      "or set REDBLOOM_REDIS_SERVER to its path)" >&2
    exit 1
  fi
  if ((masters > 0)) && ! command -v redis-cli >/dev/null; then
    echo "$name: redis-cli is needed to create a cluster (scripts/install-deps.sh --test)" >&2
    exit 1
  fi

  build=${REDBLOOM_BENCH_BUILD_DIR:-build-bench}
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DREDBLOOM_BUILD_TESTS=OFF >/dev/null
  cmake --build "$build" -j "$(nproc)" --target "$target" >/dev/null

  dir=$(mktemp -d "${TMPDIR:-/tmp}/redbloom-$name.XXXXXX")
  trap private_redis_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM

  if ((masters == 0)); then
    private_redis_start_server "$name" no
    uri="redis://127.0.0.1:${ports[0]}"
    if [[ $private_redis_tls == yes ]]; then
      tls_uri="rediss://127.0.0.1:${tls_ports[0]}?tls_ca=$dir/tls/ca.crt"
    fi
    return
  fi
  local m nodes=()
  for ((m = 0; m < masters; m++)); do private_redis_start_server "$name" yes; done
  for m in "${ports[@]}"; do nodes+=("127.0.0.1:$m"); done
  redis-cli --cluster create "${nodes[@]}" --cluster-yes >"$dir/create.log" 2>&1 || {
    cat "$dir/create.log" >&2
    exit 1
  }
  for _ in $(seq 100); do
    redis-cli -p "${ports[0]}" cluster info | grep -q "cluster_state:ok" && break
    sleep 0.1
  done
  uri="redis+cluster://$(IFS=,; echo "${nodes[*]}")"
}

private_redis_describe() {
  echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB," \
    "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  if ((${#ports[@]} == 1)); then
    echo "server: $("$server_bin" --version | head -n1), pid ${pids[0]}, port ${ports[0]}," \
      "no persistence"
  else
    echo "servers: $("$server_bin" --version | head -n1), a cluster of ${#ports[@]} masters on" \
      "ports ${ports[*]}, no persistence"
  fi
}

private_redis_run() {
  # In the background, so that a signal to the script runs the trap at once (bash runs traps
  # only between foreground commands); the trap then stops the benchmark and the servers.
  "$@" &
  bench=$!
  wait "$bench"
}
