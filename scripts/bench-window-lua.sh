#!/usr/bin/env bash
# How a stock-Redis script should read a blocked filter's bits: bench/window_lua_read.lua looks
# the same random items up in one link (random bytes: about half its bits set, as a link in use)
# by BITFIELD_RO rounds, as the stream store's script reads a classic item's bits, by one
# GETRANGE of each item's line with offsets computed in Lua (numbers as the command's arguments),
# and as the script reads a blocked item's line (the offsets as text and the line's (byte, mask)
# pairs, as the client sends them). Starts a private redis-server (no persistence) on a free loopback port in a temp dir,
# killed by pid on exit; prints the median microseconds a lookup of --reps runs, the two ways
# interleaved, and their ratio. Exit status 1 if the two ways found different items.
#   scripts/bench-window-lua.sh [--items=5000] [--bytes=1200000] [--hashes=7] [--reps=5]
# The server binary is $REDBLOOM_REDIS_SERVER if set, else redis-server on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
items=5000
bytes=1200000
hashes=7
reps=5
for arg in "$@"; do
  case $arg in
    --items=*) items=${arg#--items=} ;;
    --bytes=*) bytes=${arg#--bytes=} ;;
    --hashes=*) hashes=${arg#--hashes=} ;;
    --reps=*) reps=${arg#--reps=} ;;
    *) echo "bench-window-lua: unknown argument $arg" >&2; exit 2 ;;
  esac
done
server_bin=${REDBLOOM_REDIS_SERVER:-redis-server}
dir=$(mktemp -d)
pid=""
cleanup() {
  if [[ -n $pid ]]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$dir"
}
trap cleanup EXIT
for ((attempt = 0; attempt < 8; attempt++)); do
  port=$((20000 + RANDOM % 30000))
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && continue
  "$server_bin" --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" \
    --daemonize no >"$dir/redis.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do
    if redis-cli -p "$port" ping >/dev/null 2>&1; then break 2; fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pid=""
done
if [[ -z $pid ]]; then
  echo "bench-window-lua: could not start $server_bin" >&2
  exit 3
fi
cli=(redis-cli -p "$port")
head -c "$bytes" /dev/urandom >"$dir/bits"
"${cli[@]}" -x SET link <"$dir/bits" >/dev/null
script=$("${cli[@]}" SCRIPT LOAD "$(cat bench/window_lua_read.lua)")

declare -A times found
for ((rep = 0; rep < reps; rep++)); do
  for way in rounds line text-line; do
    mapfile -t reply < <("${cli[@]}" EVALSHA "$script" 1 link "$items" "$way" "$hashes" "$rep")
    times[$way]+="${reply[1]} "
    found[$way]+="${reply[0]} "
  done
done
median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END {
  print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
echo "command: scripts/bench-window-lua.sh --items=$items --bytes=$bytes --hashes=$hashes" \
  "--reps=$reps (redis $("$server_bin" --version | sed -n 's/.*v=\([^ ]*\).*/\1/p'), $(nproc) cores, $(date -u +%F))"
echo
echo "| way | items found a run | µs a lookup (median) | × rounds |"
echo "|---|---|---|---|"
rounds=$(median <<<"${times[rounds]}")
for way in rounds line text-line; do
  t=$(median <<<"${times[$way]}")
  awk -v w="$way" -v f="${found[$way]% }" -v t="$t" -v r="$rounds" -v n="$items" \
    'BEGIN { printf "| %s | %s | %.2f | %.2f× |\n", w, f, t / n, t / r }'
done
for way in line text-line; do
  if [[ ${found[rounds]} != "${found[$way]}" ]]; then
    echo "bench-window-lua: rounds and $way found different items: ${found[rounds]}/ ${found[$way]}" >&2
    exit 1
  fi
done
