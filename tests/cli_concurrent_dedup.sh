#!/usr/bin/env bash
# Several `redbloom dedup` processes on one filter file, over overlapping inputs: the union of
# their outputs must hold no item twice, and every distinct item once (bar false positives,
# far below one expected at p = 1e-9). Usage: cli_concurrent_dedup.sh PATH/TO/redbloom
source "$(dirname "$0")/cli_common.sh"
set -e
distinct=300000
processes=4
# Each worker gets all items, shuffled differently: maximal overlap, different orders.
seq 1 "$distinct" | sed 's/^/url-/' > all.txt
for p in $(seq 1 "$processes"); do shuf --random-source=<(yes "$p") all.txt > "in$p.txt"; done
"$redbloom" create -q -f shared.rbf -n "$distinct" -p 1e-9
pids=()
for p in $(seq 1 "$processes"); do
  "$redbloom" dedup -q -f shared.rbf "in$p.txt" > "out$p.txt" &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
emitted=$(cat out*.txt | wc -l)
unique=$(cat out*.txt | sort -u | wc -l)
echo "emitted $emitted lines, $unique distinct, of $distinct items"
fails=0
[[ $emitted -eq $unique ]] || { echo "FAIL: an item was emitted by two processes"; fails=1; }
[[ $unique -ge $((distinct - 1)) ]] || { echo "FAIL: items missing from every output"; fails=1; }
if [[ $fails -eq 0 ]]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; fi
exit $fails
