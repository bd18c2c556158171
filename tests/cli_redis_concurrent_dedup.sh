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
echo "$passes passed, $failures failed"
[[ $failures -eq 0 ]]
