#!/usr/bin/env bash
# Four `redbloom dedup` processes on one Redis filter, over overlapping inputs: the union of
# their outputs holds no item twice (each item's test-and-set is one atomic BITFIELD), and
# every distinct item is emitted unless it was a false positive: those are counted and must
# stay within the filter's rate. Usage: cli_redis_concurrent_dedup.sh PATH/TO/redbloom
source "$(dirname "$0")/cli_common.sh"
source "$tests_dir/redis_shell.sh"
start_redis main
U=$(redis_uri main)
distinct=200000
rate=0.001
processes=4
seq 1 "$distinct" | sed 's/^/url-/' > all.txt
for p in $(seq 1 "$processes"); do shuf --random-source=<(yes "$p") all.txt > "in$p.txt"; done
"$redbloom" create -q --redis "$U" --name shared -n "$distinct" -p "$rate"
pids=()
for p in $(seq 1 "$processes"); do
  "$redbloom" dedup -q --redis "$U" --name shared "in$p.txt" > "out$p.txt" &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || check "dedup worker exit" 0 "$?"; done
emitted=$(cat out*.txt | wc -l)
unique=$(cat out*.txt | sort -u | wc -l)
missing=$((distinct - unique))
echo "emitted $emitted lines, $unique distinct, $missing of $distinct never emitted"
check "no item emitted twice" "$unique" "$emitted"
# An item nobody emitted must be one the filter held before its first insert: a false
# positive. While filling, the rate stays below `rate`, so their count stays below n * rate.
check "never-emitted items within the false-positive budget" "yes" \
  "$(awk -v m="$missing" -v n="$distinct" -v p="$rate" 'BEGIN { print (m <= n * p) ? "yes" : "no" }')"
comm -23 <(sort all.txt) <(cat out*.txt | sort) > never.txt
check "every never-emitted item is in the filter" "$missing" \
  "$("$redbloom" exists -q --redis "$U" --name shared -c never.txt)"
# Eight workers start at once on a filter nobody created: one creates it (partitions of 64 KiB,
# so the creation takes a while), the others wait for it, every one succeeds, and each item
# comes out once. (Before, a worker that met the creation part way failed with "incomplete ...
# drop it", an advice that would destroy the live creator's filter.)
seq 1 20000 | sed 's/^/race-/' > race.txt
for round in 1 2 3; do
  pids=()
  for p in $(seq 1 8); do
    "$redbloom" dedup -q --redis "$U" --name "race$round" -n 2e6 --partition-size 64KiB \
      race.txt > "race$p.out" 2> "race$p.err" &
    pids+=($!)
  done
  failed=0
  for pid in "${pids[@]}"; do wait "$pid" || failed=$((failed + 1)); done
  check "round $round: every racing worker succeeded" 0 "$failed"
  # The creator says it made the filter (-q never hides that); nothing else is said.
  check "round $round: one worker created it" 1 "$(cat race*.err | grep -c 'note: created filter')"
  check "round $round: no worker printed an error" "" "$(cat race*.err | grep -v 'note: created filter')"
  check "round $round: each item once" 20000 "$(cat race*.out | sort -u | wc -l)"
  check "round $round: no item twice" 20000 "$(cat race*.out | wc -l)"
done

echo "$passes passed, $failures failed"
[[ $failures -eq 0 ]]
