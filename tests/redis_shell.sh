# Sourced by shell tests that need Redis (after cli_common.sh): starts redis-server processes
# on free loopback ports in the scratch directory and stops them by pid on exit. A missing
# redis-server is a failure, never a skip.
declare -A redis_pid redis_port redis_args redis_tls
tls_certs=""

stop_all_redis() {
  local name
  for name in "${!redis_pid[@]}"; do
    kill -KILL "${redis_pid[$name]}" 2>/dev/null
    wait "${redis_pid[$name]}" 2>/dev/null
  done
  rm -rf "$work"
}
trap stop_all_redis EXIT

# make_tls_certs: the TLS tests' certificates in $work/tls (tests/support/make-tls-certs.sh),
# once; sets tls_certs to that directory.
make_tls_certs() {
  [[ -n "$tls_certs" ]] && return 0
  tls_certs="$work/tls"
  bash "$tests_dir/support/make-tls-certs.sh" "$tls_certs" || {
    echo "FAIL: cannot make the test certificates"
    exit 1
  }
}

# start_redis_tls NAME tls|mutual [redis-server options...]: start_redis for a server that takes
# TLS only, with the test certificates (mutual: a client certificate is required too);
# redis_uri and rcli then use TLS.
start_redis_tls() {
  local name=$1 mode=$2
  shift 2
  make_tls_certs
  redis_tls[$name]=$mode
  start_redis "$name" "$@"
}

# The redis-cli options for server NAME (TLS ones in TLS mode).
redis_cli_tls_args() {
  case "${redis_tls[$1]:-}" in
    tls) echo "--tls --cacert $tls_certs/ca.crt" ;;
    mutual) echo "--tls --cacert $tls_certs/ca.crt --cert $tls_certs/client.crt --key $tls_certs/client.key" ;;
  esac
}

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
    local listen=(--port "$port")
    if [[ -n "${redis_tls[$name]:-}" ]]; then
      listen=(--port 0 --tls-port "$port" --tls-cert-file "$tls_certs/server.crt"
        --tls-key-file "$tls_certs/server.key" --tls-ca-cert-file "$tls_certs/ca.crt"
        --tls-auth-clients "$([[ ${redis_tls[$name]} == mutual ]] && echo yes || echo no)")
    fi
    # shellcheck disable=SC2086
    redis-server "${listen[@]}" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" \
      --logfile "$dir/redis.log" --daemonize no ${redis_args[$name]} &
    pid=$!
    for i in $(seq 1 200); do
      # shellcheck disable=SC2046
      if [[ "$(redis-cli $(redis_cli_tls_args "$name") -p "$port" ping 2>/dev/null)" == "PONG" ]]
      then
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

# redis://127.0.0.1:PORT; in TLS mode rediss:// with the test CA (and client certificate).
redis_uri() {
  case "${redis_tls[$1]:-}" in
    tls) echo "rediss://127.0.0.1:${redis_port[$1]}?tls_ca=$tls_certs/ca.crt" ;;
    mutual) echo "rediss://127.0.0.1:${redis_port[$1]}?tls_ca=$tls_certs/ca.crt&tls_cert=$tls_certs/client.crt&tls_key=$tls_certs/client.key" ;;
    *) echo "redis://127.0.0.1:${redis_port[$1]}" ;;
  esac
}
rcli() {  # rcli NAME ARGS...: redis-cli against server NAME
  local name=$1
  shift
  # shellcheck disable=SC2046
  redis-cli $(redis_cli_tls_args "$name") -p "${redis_port[$name]}" "$@"
}
