# Sourced by shell tests (after cli_common.sh): a redis-server set up the way managed services
# set theirs up, on a free loopback port in the scratch directory, stopped by pid on exit.
#   - no default user (`user default off`): every client authenticates;
#   - CONFIG renamed away (`rename-command CONFIG ""`), as many services do;
#   - the application's user `app` limited to keys `app:*`, all commands but @dangerous
#     (which holds CONFIG, DEBUG, MODULE, KEYS, INFO, ...);
#   - `admin`, for the test itself to look (ACL LOG, KEYS) and to add users;
#   - with MANAGED_TLS=1, TLS only (`port 0`, `tls-port`), with the TLS tests' certificates.
# start_managed_redis sets managed_port and managed_pid; managed_uri USER PASSWORD [DB] prints
# the URI (rediss:// with the test CA under MANAGED_TLS=1).
# managed_cli ARGS... runs redis-cli as admin. A missing redis-server is a failure, never a skip.
managed_port=""
managed_pid=""
managed_tls=${MANAGED_TLS:-0}
managed_dir="$work/managed-redis"
managed_extra_conf=""  # more redis.conf lines (e.g. loadmodule PATH)

stop_managed_redis() {
  if [[ -n "$managed_pid" ]]; then
    kill -KILL "$managed_pid" 2>/dev/null
    wait "$managed_pid" 2>/dev/null
  fi
  managed_pid=""
}

trap 'stop_managed_redis; rm -rf "$work"' EXIT

managed_tls_files() {  # the TLS tests' certificates (tests/support/make-tls-certs.sh)
  bash "$tests_dir/support/make-tls-certs.sh" "$managed_dir/tls" > /dev/null
}

start_managed_redis() {
  if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
    echo "FAIL: redis-server/redis-cli not found (scripts/install-deps.sh --test installs them)"
    exit 1
  fi
  mkdir -p "$managed_dir"
  if [[ "$managed_tls" == 1 ]]; then
    managed_tls_files || {
      echo "FAIL: could not make test certificates with openssl"
      exit 1
    }
  fi
  local attempt port i
  for attempt in $(seq 1 20); do
    port=$((20000 + RANDOM % 40000))
    {
      echo "bind 127.0.0.1"
      if [[ "$managed_tls" == 1 ]]; then
        echo "port 0"
        echo "tls-port $port"
        echo "tls-cert-file $managed_dir/tls/server.crt"
        echo "tls-key-file $managed_dir/tls/server.key"
        echo "tls-ca-cert-file $managed_dir/tls/ca.crt"
        echo "tls-auth-clients no"
      else
        echo "port $port"
      fi
      echo 'save ""'
      echo "appendonly no"
      echo "dir $managed_dir"
      echo "logfile $managed_dir/redis.log"
      echo 'rename-command CONFIG ""'
      echo "user default off"
      echo "user app on >app-secret ~app:* resetchannels +@all -@dangerous"
      echo "user admin on >admin-secret ~* &* +@all"
      [[ -n "$managed_extra_conf" ]] && echo "$managed_extra_conf"
    } > "$managed_dir/redis.conf"
    : > "$managed_dir/redis.log"
    redis-server "$managed_dir/redis.conf" --daemonize no > /dev/null 2>&1 &
    managed_pid=$!
    for i in $(seq 1 200); do
      grep -q "Ready to accept connections" "$managed_dir/redis.log" && break
      kill -0 "$managed_pid" 2>/dev/null || break  # could not bind: try another port
      sleep 0.05
    done
    if kill -0 "$managed_pid" 2>/dev/null && grep -q "Ready to accept connections" \
      "$managed_dir/redis.log"; then
      managed_port=$port
      return 0
    fi
    stop_managed_redis
  done
  echo "FAIL: could not start the managed-like redis-server (see $managed_dir/redis.log)"
  tail -5 "$managed_dir/redis.log"
  exit 1
}

managed_uri() {  # managed_uri USER PASSWORD [DB]
  local db=${3:+/$3}
  if [[ "$managed_tls" == 1 ]]; then
    echo "rediss://$1:$2@127.0.0.1:$managed_port$db?tls_ca=$managed_dir/tls/ca.crt"
  else
    echo "redis://$1:$2@127.0.0.1:$managed_port$db"
  fi
}

managed_cli() {
  local tls=()
  [[ "$managed_tls" == 1 ]] && tls=(--tls --cacert "$managed_dir/tls/ca.crt")
  redis-cli -p "$managed_port" "${tls[@]}" --user admin --pass admin-secret --no-auth-warning "$@"
}
