# Sourced by shell tests that need Redis (after cli_common.sh): starts redis-server processes
# on free loopback ports in the scratch directory and stops them by pid on exit. A missing
# redis-server is a failure, never a skip.
declare -A redis_pid redis_port redis_args

stop_all_redis() {
  local name
  for name in "${!redis_pid[@]}"; do
    kill -KILL "${redis_pid[$name]}" 2>/dev/null
    wait "${redis_pid[$name]}" 2>/dev/null
  done
  rm -rf "$work"
}
trap stop_all_redis EXIT

# start_redis NAME [redis-server options...]: sets redis_port[NAME], redis_pid[NAME]; reuses
# the previous port and directory when NAME was started before (a restart).
start_redis() {
  local name=$1
  shift
  if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
    echo "FAIL: redis-server/redis-cli not found (scripts/install-deps.sh --test installs them)"
    exit 1
  fi
  local dir="$work/redis-$name"
  mkdir -p "$dir"
  [[ $# -gt 0 || -z "${redis_args[$name]+x}" ]] && redis_args[$name]="$*"
  local attempt port pid i
  for attempt in $(seq 1 20); do
    port=${redis_port[$name]:-$((20000 + RANDOM % 40000))}
    # shellcheck disable=SC2086
    redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" \
      --logfile "$dir/redis.log" --daemonize no ${redis_args[$name]} &
    pid=$!
    for i in $(seq 1 200); do
      if [[ "$(redis-cli -p "$port" ping 2>/dev/null)" == "PONG" ]]; then
        redis_pid[$name]=$pid
        redis_port[$name]=$port
        return 0
      fi
      kill -0 "$pid" 2>/dev/null || break  # could not bind: try another port
      sleep 0.05
    done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    [[ -n "${redis_port[$name]:-}" ]] && break  # a restart must keep its port
  done
  echo "FAIL: could not start redis-server $name (see $dir/redis.log)"
  cat "$dir/redis.log" 2>/dev/null | tail -5
  exit 1
}

# stop_redis NAME [SIGNAL]: kills the server (default TERM: a clean shutdown) and waits.
stop_redis() {
  local name=$1 signal=${2:-TERM}
  kill "-$signal" "${redis_pid[$1]}" 2>/dev/null
  wait "${redis_pid[$1]}" 2>/dev/null
  unset "redis_pid[$name]"
}

redis_uri() { echo "redis://127.0.0.1:${redis_port[$1]}"; }
rcli() {  # rcli NAME ARGS...: redis-cli against server NAME
  local name=$1
  shift
  redis-cli -p "${redis_port[$name]}" "$@"
}
