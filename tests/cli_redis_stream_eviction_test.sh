#!/usr/bin/env bash
# Windowed and growing filters on Redis whose keys were evicted, and read from a replica:
# a missing live slice, roster or metadata is an error (exit 3), never "absent" or a filter
# made anew; lookups run on a read-only replica. DEL evicts deterministically; one run lets
# allkeys-lru evict for real. Usage: cli_redis_stream_eviction_test.sh PATH/TO/redbloom
# [PATH/TO/redbloom.so] (with the module, its RB.STREAM commands run instead of the script).
source "$(dirname "$0")/cli_common.sh"
source "$tests_dir/redis_shell.sh"

server_args=()
if [[ $# -ge 2 ]]; then server_args=(--loadmodule "$(realpath "$2")"); fi
start_redis main "${server_args[@]}"
U=$(redis_uri main)
seq 1 20000 | sed 's/^/item-/' > items.txt
seq 30001 30300 | sed 's/^/item-/' > few.txt  # new items: adding them writes

declare -A shape=([windowed]="--window 1h" [growing]="--growth 2")
for kind in windowed growing; do
  # shellcheck disable=SC2086
  run dedup --redis "$U" --name "$kind" ${shape[$kind]} -n 100000 -p 0.01 -q items.txt
  check "$kind: dedup" "0:20000" "$rc:$(wc -l <<< "$out")"
  # Every slice key and roster goes, as an allkeys-* policy may take them.
  mapfile -t keys < <(rcli main --scan --pattern "$kind:*")
  check "$kind: a slice and a roster" 2 "${#keys[@]}"
  rcli main del "${keys[@]}" > /dev/null
  run exists --redis "$U" --name "$kind" -c items.txt
  check "$kind: exists after eviction exits 3" 3 "$rc"
  check_contains "$kind: exists names the roster" "$kind:slices:bits:" "$err"
  check_contains "$kind: exists says evicted" "evicted" "$err"
  run dedup --redis "$U" --name "$kind" -q items.txt
  check "$kind: dedup after eviction exits 3 and prints nothing" "3:" "$rc:$out"
  check "$kind: nothing re-created" "" "$(rcli main --scan --pattern "$kind:*")"

  # The metadata evicted while the rest stays: never made anew over its keys.
  # shellcheck disable=SC2086
  run create --redis "$U" --name "$kind" ${shape[$kind]} -n 100000 -p 0.01 --force -q
  run dedup --redis "$U" --name "$kind" -q items.txt
  check "$kind: dedup again" "0:20000" "$rc:$(wc -l <<< "$out")"
  rcli main del "$kind" > /dev/null
  # shellcheck disable=SC2086
  run dedup --redis "$U" --name "$kind" ${shape[$kind]} -n 100000 -p 0.01 -q items.txt
  check "$kind: dedup without metadata exits 3 and prints nothing" "3:" "$rc:$out"
  check_contains "$kind: says the metadata is lost" "lost its metadata" "$err"
  # shellcheck disable=SC2086
  run create --redis "$U" --name "$kind" ${shape[$kind]} -n 100000 -p 0.01 --force -q
  check "$kind: --force starts it anew" 0 "$rc"
done

# --- a plain filter whose metadata was evicted, and a plain creation over a stream's keys ---
run dedup --redis "$U" --name plain -n 100000 -p 0.01 -q items.txt
check "plain: dedup" "0:20000" "$rc:$(wc -l <<< "$out")"
rcli main del plain > /dev/null
run dedup --redis "$U" --name plain -n 100000 -p 0.01 -q items.txt
check "plain: dedup without metadata exits 3 and prints nothing" "3:" "$rc:$out"
check_contains "plain: says why" "evicted" "$err"
check "plain: its partition is kept, nothing made" "plain:bits:{plain:0}" "$(rcli main --scan --pattern 'plain*')"
rcli main del windowed > /dev/null
run dedup --redis "$U" --name windowed -q items.txt
check "windowed without metadata, dedup without its window: exits 3, prints nothing" "3:" "$rc:$out"
check_contains "windowed without metadata: says so" "lost its metadata" "$err"
run create --redis "$U" --name windowed --window 1h -n 100000 -p 0.01 --force -q
check "windowed: --force starts it anew" 0 "$rc"

# --- reads from a read-only replica ---
start_redis replica "${server_args[@]}" --replicaof 127.0.0.1 "${redis_port[main]}"
R=$(redis_uri replica)
for kind in windowed growing; do
  run dedup --redis "$U" --name "$kind" -q items.txt
  check "$kind: filled for the replica" "0:20000" "$rc:$(wc -l <<< "$out")"
done
for i in $(seq 1 600); do
  master_offset=$(rcli main info replication | tr -d '\r' | sed -n 's/^master_repl_offset://p')
  replica_offset=$(rcli replica info replication | tr -d '\r' | sed -n 's/^master_repl_offset://p')
  [[ -n "$master_offset" && "$master_offset" == "$replica_offset" ]] && \
    [[ "$(rcli replica info replication | tr -d '\r' | sed -n 's/^master_link_status://p')" == up ]] && break
  sleep 0.1
done
for kind in windowed growing; do
  run exists --redis "$R" --name "$kind" -c items.txt
  check "$kind: exists on the replica" "0:20000" "$rc:$out"
  run info --redis "$R" --name "$kind"
  check "$kind: info on the replica" 0 "$rc"
  run dedup --redis "$R" --name "$kind" -q few.txt
  check "$kind: adding on the replica exits 3" 3 "$rc"
  check_contains "$kind: the replica says it is read-only" "READONLY" "$err"
done
stop_redis replica

# --- a real eviction: allkeys-lru with a limit just above what the server holds ---
# A growing filter's one slice key grows with every add; the adds name the filter's shape, as
# a script that creates it when missing does.
rcli main flushall > /dev/null
used=$(rcli main info memory | tr -d '\r' | sed -n 's/^used_memory://p')
rcli main config set maxmemory-policy allkeys-lru > /dev/null
rcli main config set maxmemory $((used + 4 * 1024 * 1024)) > /dev/null
added=()
for step in $(seq 1 60); do
  seq $((step * 20000)) $((step * 20000 + 19999)) | sed 's/^/r-/' > "batch$step.txt"
  run add --redis "$U" --name real --growth 2 -n 20000 -p 0.01 -q "batch$step.txt"
  [[ $rc -ne 0 ]] && break
  added+=("batch$step.txt")
  evicted=$(rcli main info stats | tr -d '\r' | sed -n 's/^evicted_keys://p')
  [[ $evicted -gt 0 ]] && break
done
evicted=$(rcli main info stats | tr -d '\r' | sed -n 's/^evicted_keys://p')
check "real: the server evicted" 1 "$((evicted > 0))"
wrong=0
errors=0
for f in "${added[@]}"; do
  run exists --redis "$U" --name real -c "$f"
  # Every lookup either fails (exit 3; exit 2 when every key of the filter went, its metadata
  # too: "no filter") or finds all of its items, never exit 1 or a short count.
  if [[ $rc -ge 2 ]]; then
    errors=$((errors + 1))
  elif [[ "$rc:$out" != "0:$(wc -l < "$f")" ]]; then
    wrong=$((wrong + 1))
  fi
done
echo "real eviction: $evicted keys evicted after ${#added[@]} adds; $errors of ${#added[@]} lookups failed, $wrong answered absent"
check "real: no lookup answered absent for an added item" 0 "$wrong"
rcli main config set maxmemory 0 > /dev/null

echo "$passes passed, $failures failed"
[[ $failures -eq 0 ]]
