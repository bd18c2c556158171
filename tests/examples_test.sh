#!/usr/bin/env bash
# Runs the programs in examples/ against a private redis-server: crawler workers sharing one
# filter fetch every URL exactly once; the cache guard never refuses an existing key and keeps
# absent keys from the store; the orphan finder gets the exact answer.
# Usage: examples_test.sh BUILD_DIR/examples  (the directory holding the example binaries)
examples=$(realpath "$1")
set -- "$examples/example_crawler_dedup"  # cli_common.sh takes a binary as $1
source "$(dirname "$0")/cli_common.sh"
source "$tests_dir/redis_shell.sh"
start_redis main
U=$(redis_uri main)

# --- crawler: 4 workers, overlapping frontiers (every URL in 2-4 of them), started together ---
seq 1 40000 | sed 's|^|https://example.com/page/|' > all.txt
for w in 1 2 3 4; do
  awk -v w="$w" 'NR % 4 != (w % 4) || NR % 3 == 0' all.txt | shuf --random-source=<(yes "$w") \
    > "frontier$w.txt"
done
check "every URL is in some frontier" 40000 "$(cat frontier*.txt | sort -u | wc -l)"
pids=()
for w in 1 2 3 4; do
  "$examples/example_crawler_dedup" "$U" crawl "$w" "frontier$w.txt" > "fetched$w.txt" 2> "worker$w.err" &
  pids+=($!)
done
for pid in "${pids[@]}"; do
  wait "$pid"
  check "crawler worker exit" 0 "$?"
done
fetched=$(cat fetched*.txt | wc -l)
distinct=$(cat fetched*.txt | sort -u | wc -l)
check "no URL fetched twice" "$distinct" "$fetched"
# At p = 1e-6 over 40,000 URLs a false positive (a URL never fetched) is a 4% event at most.
check "every URL fetched by some worker (allowing 1 false positive)" "yes" \
  "$([[ $distinct -ge 39999 ]] && echo yes || echo no)"
check_contains "worker summary" "skipped" "$(cat worker1.err)"

# --- cache-penetration guard ---
out=$("$examples/example_cache_guard" "$U" users 2> guard.err)
check "cache guard exit" 0 "$?"
check_contains "cache guard found every existing key" "found 100000," "$out"
reached=$(sed -n 's/.*reached the store \([0-9]*\).*/\1/p' <<< "$out")
# 100,000 existing keys must reach the store; of 100,000 absent ones only false positives
# (p = 0.1%: ~100) may.
check "absent keys kept from the store" "yes" \
  "$([[ $reached -ge 100000 && $reached -le 100400 ]] && echo yes || echo no)"

# --- orphans with the KnownSet API ---
out=$("$examples/example_orphans" "$U" s3 2> orphans.err)
check "orphans exact answer" 0 "$?"
check_contains "orphans count" "orphans 150000 (expected 150000)" "$out"

echo "$passes passed, $failures failed"
[[ $failures -eq 0 ]]
