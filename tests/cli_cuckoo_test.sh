#!/usr/bin/env bash
# Cuckoo filters from the command line: create, plan, add/dedup/exists, remove and count (the
# caveat said once, exit 1 for items not held), info (text and JSON), growth and a full filter
# (exit 3, what was committed), drop, and the option errors.
# Usage: cli_cuckoo_test.sh PATH/TO/redbloom
source "$(dirname "$0")/cli_common.sh"

# --- plan and create
run plan --kind cuckoo -n 1e6 -p 0.001
check "plan: exit" 0 "$rc"
check_contains "plan: fingerprint bits" "fingerprints      13 bits" "$out"
check_contains "plan: against Bloom" "Bloom instead     classic 14.38 bits per item" "$out"
# At p = 1e-6 the dedup counts below are exact but for a chance of about 1 in 100.
run create --kind cuckoo --filter c.rbf -n 20000 -p 1e-6
check "create: exit" 0 "$rc"
check_contains "create: says what" "cuckoo, 20000 items at p=1e-06 (23-bit fingerprints)" "$out"
run create --kind cuckoo --filter c.rbf -n 20000 -p 1e-6
check "create again: refused" 2 "$rc"

# --- dedup, exists, count, remove
out=$(seq 1 10000 | "$redbloom" dedup --filter c.rbf -q | wc -l)
check "dedup: every first occurrence" 10000 "$out"
out=$(seq 5001 15000 | "$redbloom" dedup --filter c.rbf -q | wc -l)
check "dedup: only the unseen half" 5000 "$out"
run exists --filter c.rbf -q <<<$'7\nnever-added'
check "exists: prints the present one" "7" "$out"
run count --filter c.rbf -q <<<$'7\nnever-added'
check "count: per item" $'1\t7\n0\tnever-added' "$out"
out=$(seq 1 2000 | "$redbloom" remove --filter c.rbf 2>remove.err | wc -l)
check "remove: prints each removed item" 2000 "$out"
check "remove: the caveat, once" 1 "$(grep -c 'never added can remove another item' remove.err)"
run exists --filter c.rbf -q <<<$'7\n2001'
check "exists: a removed item is gone, the next stays" "2001" "$out"
run remove --filter c.rbf -q <<<$'7\n2500'
check "remove: one not held: exit 1" 1 "$rc"
check "remove: prints only the removed one" "2500" "$out"
run remove --filter c.rbf -q -v <<<$'7'
check "remove -v: prints the one not held" "7" "$out"
out=$(seq 1 2000 | "$redbloom" dedup --filter c.rbf -q | wc -l)
check "dedup: removed items are new again" 2000 "$out"

# --- beside an exact set, remove takes only the items the set holds
run create --kind cuckoo --filter safe.rbf -n 10000 -p 0.001 --exact
check "create --exact: exit" 0 "$rc"
seq 1 5000 | "$redbloom" add --filter safe.rbf -q
out=$(seq 4991 5010 | "$redbloom" remove --filter safe.rbf 2>safe.err | wc -l)
check "safe remove: only the added ones" 10 "$out"
check_contains "safe remove: the others refused, counted" "refused (not in the exact set) 10" \
  "$(cat safe.err)"
check "safe remove: no caveat beside a set" 0 "$(grep -c 'never added can remove' safe.err)"
run count --filter safe.rbf -q <<<$'4990\n4991'
check "safe remove: the rest stays" $'1\t4990\n0\t4991' "$out"
run dedup --filter safe.rbf <<<"x"
check "dedup beside an exact set: refused" 2 "$rc"
check_contains "dedup beside an exact set: says why" "cannot print each item once" "$err"

# --- info
run info --filter c.rbf
check "info: exit" 0 "$rc"
check_contains "info: kind" "kind              cuckoo, 20000 items at p=1e-06" "$out"
check_contains "info: items stored" "items stored      14999" "$out"  # 15000 - 2001 removed + 2000 again
run info --filter c.rbf --json
check_contains "info --json: cuckoo" '"cuckoo": {"description": "cuckoo, 20000 items' "$out"
check_contains "info --json: links" '"links": [{"link": 0, "fingerprint_bits": 23' "$out"

# --- a full filter stops, saying what it committed; a growing one grows
run create --kind cuckoo --filter full.rbf -n 1000 -p 0.01
seq 1 5000 | "$redbloom" add --filter full.rbf -q 2>full.err
check "full: storage error exit" 3 "$?"
check_contains "full: says so" "is full" "$(cat full.err)"
check_contains "full: what was committed" "committed the first" "$(cat full.err)"
run create --kind cuckoo --filter grow.rbf -n 1000 -p 1e-6 --growth 2 --max-bytes 256KiB
out=$(seq 1 20000 | "$redbloom" dedup --filter grow.rbf -q | wc -l)
check "growing: every first occurrence" 20000 "$out"
run info --filter grow.rbf --json
check_contains "growing: five links" '{"link": 4,' "$out"

# --- a Bloom filter cannot remove or count; --kind cuckoo on a Bloom filter is refused
run create --filter b.rbf -n 1000
run remove --filter b.rbf <<<"x"
check "remove on Bloom: usage error" 2 "$rc"
check_contains "remove on Bloom: says why" "cannot forget an item" "$err"
run count --filter b.rbf <<<"x"
check "count on Bloom: usage error" 2 "$rc"
run add --kind cuckoo --filter b.rbf <<<"x"
check "--kind cuckoo on Bloom: refused" 2 "$rc"
check_contains "--kind cuckoo on Bloom: says why" "is a Bloom filter" "$err"

# --- option errors, each naming the problem
run create --kind cuckoo --filter bad.rbf --layout blocked
check "layout: usage error" 2 "$rc"
check_contains "layout: says why" "--layout cannot apply to a cuckoo filter" "$err"
run create --kind cuckoo --filter bad.rbf --window 10m
check "window: usage error" 2 "$rc"
run create --kind cuckoo --filter bad.rbf --max-bytes 1MiB
check "max-bytes without growth: usage error" 2 "$rc"
run create --kind cuckoo --filter bad.rbf -p 1e-12
check "rate out of reach: usage error" 2 "$rc"
check "nothing made by the refusals" 0 "$(ls bad.rbf* 2>/dev/null | wc -l)"

# --- drop
run drop --filter c.rbf
check "drop: exit" 0 "$rc"
check "drop: no file left" 0 "$(ls c.rbf 2>/dev/null | wc -l)"

echo "cli_cuckoo_test: $passes passed, $failures failed"
((failures == 0))
