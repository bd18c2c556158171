#!/usr/bin/env bash
# Eight `redbloom dedup --exact` processes start at once on a filter file that does not exist
# yet (over a leftover exact set of a deleted filter): one creates the filter, all keep its
# exact set. Afterwards every item is known to diff --exact, in every round. (Before the
# companion was bound to its filter, the creator removed "the leftover" after linking the new
# filter, sometimes while a racing process was already appending to the new companion.)
# Usage: cli_concurrent_exact_create.sh PATH/TO/redbloom [ROUNDS]
source "$(dirname "$0")/cli_common.sh"
rounds=${2:-30}
processes=8
seq 1 2000 | sed 's/^/item-/' > all.txt
for p in $(seq 1 "$processes"); do shuf --random-source=<(yes "$p") all.txt > "in$p.txt"; done
# A leftover companion: the exact set of a filter that was deleted by hand.
"$redbloom" create -q -f old.rbf -n 1e4 --exact
"$redbloom" add -q -f old.rbf --exact all.txt
cp old.rbf.exact leftover.exact
bad=0
for round in $(seq 1 "$rounds"); do
  rm -f f.rbf f.rbf.exact
  cp leftover.exact f.rbf.exact
  pids=()
  for p in $(seq 1 "$processes"); do
    "$redbloom" dedup -q -f f.rbf -n 1e4 -p 1e-6 --exact "in$p.txt" > "out$p.txt" 2> "err$p.txt" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid"; done
  # The creator says it made the filter (-q never hides that); nothing else is said.
  creators=$(cat err*.txt | grep -c 'note: created filter f.rbf')
  if [[ $creators -ne 1 ]]; then
    echo "round $round: $creators workers said they created the filter"
    bad=$((bad + 1))
  fi
  for p in $(seq 1 "$processes"); do
    if grep -v -q 'note: created filter f.rbf' "err$p.txt"; then
      echo "round $round: worker $p: $(grep -v 'note: created filter f.rbf' "err$p.txt" | head -c 300)"
      bad=$((bad + 1))
    fi
  done
  orphans=$("$redbloom" diff -q --known f.rbf --check all.txt --exact | wc -l)
  if [[ $orphans -ne 0 ]]; then
    echo "round $round: diff --exact reports $orphans known items as orphans"
    bad=$((bad + 1))
  fi
  emitted=$(cat out*.txt | wc -l)
  if [[ $emitted -ne 2000 ]]; then
    echo "round $round: $emitted lines emitted for 2000 distinct items"
    bad=$((bad + 1))
  fi
done
echo "$((rounds - bad)) passed, $bad failed"
[[ $bad -eq 0 ]]
