#!/usr/bin/env bash
# The click-log job's day, as far as this machine holds it: click-log lines (a third of them
# redeliveries) deduplicated within a 10-minute window by `redbloom dedup`, per-item answers
# (each first occurrence printed), through
#   1. a Redis Cluster of 3 masters with redbloom.so (plain TCP),
#   2. three sharded servers without the module, over TLS (as a managed service is reached),
#   3. the same three servers over plain TCP (to show what TLS costs there).
# The filter is the day's: -n 7e6 items per 10-minute window (1e9 a day is 6.94e6 per window),
# p = 1e-6, 4 slices. --events defaults to one window's worth, the state every window of the
# day runs in; the day is 1e9 events, so the script prints the measured events/s and the time
# 1e9 would take at that rate (an extrapolation: the run does not hold a day). Every case must
# print the same number of lines as the others of its input; the script fails if they differ.
# The servers without the module are far slower, so they take the first --stock-events lines.
# Prints `uptime` before and after, since the machine may be shared.
# --layout picks the filters' layout (classic, the default, or blocked: an item's bits in one
# 64-byte line of each slice, fewer cache lines an event at about a third more memory).
# --partition-size (default 1MiB) splits each slice's first link into about 4 partitions a
# master (server): the filter spreads over all 3 (with one partition, one of them holds it all
# and does all its work), and each round of the add gives each master several commands to
# work through while the client prepares the next.
#   scripts/bench-job-day.sh [--events=7e6] [--stock-events=2e5] [--reps=3] [--layout=classic]
#                            [--partition-size=1MiB]
# The build dir is $REDBLOOM_BENCH_BUILD_DIR if set, else build-bench (Release); the server is
# $REDBLOOM_REDIS_SERVER if set, else redis-server on PATH. Every server is killed by pid on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
events=7e6
stock_events=2e5
reps=3
layout=classic
partition_size=1MiB
for arg in "$@"; do
  case $arg in
    --events=*) events=${arg#--events=} ;;
    --stock-events=*) stock_events=${arg#--stock-events=} ;;
    --reps=*) reps=${arg#--reps=} ;;
    --layout=*) layout=${arg#--layout=} ;;
    --partition-size=*) partition_size=${arg#--partition-size=} ;;
    *)
      echo "usage: scripts/bench-job-day.sh [--events=7e6] [--stock-events=2e5] [--reps=3]" \
        "[--layout=classic] [--partition-size=1MiB]" >&2
      exit 2
      ;;
  esac
done
count=$(awk -v e="$events" 'BEGIN { printf "%d", e }')
stock_count=$(awk -v e="$stock_events" -v n="$count" 'BEGIN { printf "%d", (e < n) ? e : n }')

# The module is built first: the cluster's servers load it when they start.
module_build=${REDBLOOM_BENCH_BUILD_DIR:-build-bench}
cmake -S . -B "$module_build" -DCMAKE_BUILD_TYPE=Release -DREDBLOOM_BUILD_TESTS=OFF >/dev/null
cmake --build "$module_build" -j "$(nproc)" --target redbloom_module >/dev/null

# shellcheck source=scripts/lib/private-redis.sh
source scripts/lib/private-redis.sh
private_redis_tls=yes
private_redis_server_args=(--loadmodule "$(realpath "$module_build/module/redbloom.so")")
private_redis_setup bench-job-day redbloom_cli 3
cluster_uri=$uri
private_redis_server_args=()
for _ in 1 2 3; do private_redis_start_server bench-job-day no; done
ca="$dir/tls/ca.crt"
sharded_tls=""
sharded_tcp=""
for i in 3 4 5; do
  sharded_tls+="${sharded_tls:+,}rediss://127.0.0.1:${tls_ports[$i]}?tls_ca=$ca"
  sharded_tcp+="${sharded_tcp:+,}redis://127.0.0.1:${ports[$i]}"
done
cli=$build/redbloom

echo "uptime before: $(uptime)"
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB," \
  "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "servers: $("$server_bin" --version | head -n1), no persistence; a cluster of 3 masters" \
  "with redbloom.so (ports ${ports[*]:0:3}), three servers without it (ports ${ports[*]:3:3}," \
  "TLS ${tls_ports[*]:3:3})"
echo "events: $count click-log lines (the first $stock_count without the module), a third of" \
  "them repeats; layout $layout, partitions of at most $partition_size; reps: $reps (medians shown)"

# Click-log-shaped lines (as scripts/bench-stream.sh), a third of them redeliveries.
awk -v n="$count" 'BEGIN { srand(7); for (i = 0; i < n; i++)
  printf "click:user%d:ad%d:%d\n", int(rand() * n / 30), int(rand() * 10), i % 3 }' \
  >"$dir/events.txt"
head -n "$stock_count" "$dir/events.txt" >"$dir/stock-events.txt"

# seconds URI NAME INPUT: one dedup of INPUT into a fresh filter, output to a file.
seconds() {
  local start end
  start=$EPOCHREALTIME
  "$cli" dedup --redis "$1" --name "$2" -n 7e6 -p 1e-6 --window 10m --slices 4 --layout "$layout" \
    --partition-size "$partition_size" -q \
    "$3" >"$dir/out-$2.txt"
  end=$EPOCHREALTIME
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f\n", b - a }'
}
median() {
  sort -g | awk '{ v[NR] = $1 } END {
    print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

declare -A uris=([cluster-module]=$cluster_uri [sharded-stock-tls]=$sharded_tls
  [sharded-stock-tcp]=$sharded_tcp)
declare -A inputs=([cluster-module]=events [sharded-stock-tls]=stock-events
  [sharded-stock-tcp]=stock-events)
declare -A sizes=([events]=$count [stock-events]=$stock_count)
cases=(cluster-module sharded-stock-tls sharded-stock-tcp)
declare -A times lines
for r in $(seq 1 "$reps"); do
  for c in "${cases[@]}"; do
    # A fresh filter name per run: no run sees another's items.
    in=${inputs[$c]}
    times[$c]+="$(seconds "${uris[$c]}" "clicks-$c-$r" "$dir/$in.txt") "
    got=$(wc -l <"$dir/out-clicks-$c-$r.txt")
    rm -f "$dir/out-clicks-$c-$r.txt"
    if [[ -z "${lines[$in]:-}" ]]; then
      lines[$in]=$got
    elif [[ $got != "${lines[$in]}" ]]; then
      echo "bench-job-day: $c printed $got first occurrences, an earlier run ${lines[$in]}" >&2
      exit 1
    fi
  done
done

echo
echo "| store | events | seconds per run | median events/s | ns per event | 1e9 events at that rate |"
echo "|---|---:|---|---:|---:|---:|"
for c in "${cases[@]}"; do
  m=$(tr ' ' '\n' <<<"${times[$c]}" | grep . | median)
  n=${sizes[${inputs[$c]}]}
  awk -v c="$c" -v ts="${times[$c]}" -v t="$m" -v n="$n" 'BEGIN {
    printf "| %s | %d | %s| %.0f | %.0f | %.0f s (%.1f h) |\n",
      c, n, ts, n / t, t / n * 1e9, t / n * 1e9, t / n * 1e9 / 3600 }'
done
echo
echo "first occurrences printed by every run: ${lines[events]} of $count; of the first" \
  "$stock_count, ${lines[stock-events]}"
echo "uptime after: $(uptime)"
