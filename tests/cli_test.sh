#!/usr/bin/env bash
# End-to-end checks of the redbloom CLI: outputs, exit codes, and a clear message for every
# kind of bad input. Usage: cli_test.sh PATH/TO/redbloom
source "$(dirname "$0")/cli_common.sh"
# --- plan ---
run plan -n 1e9 -p 1e-9
check "plan exit" 0 "$rc"
check_contains "plan m" "43132762699 by the formula" "$out"
check_contains "plan k" "hashes (k)        30" "$out"
check_contains "plan memory" "5.02 GiB" "$out"
check_contains "plan partitions" "81 of" "$out"
check_contains "plan redis limit" "11 at Redis's 512 MiB limit" "$out"
run plan --table
check_contains "table 001" "30000000000    30   8   9.01e-06" "$out"
check_contains "table 002 row" "  22   15.2  2.67e-05" "$out"
run plan -n 0 -p 0.01
check "plan bad n" 2 "$rc"
check_contains "plan bad n message" "capacity must be a finite number of items, at least 1" "$err"
run plan -n 100 -p 1.5
check "plan bad p" 2 "$rc"
# Every bad size says what is wrong with the value given, and what to do.
run plan -n 1e20 -p 0.01
check "plan huge n" 2 "$rc"
check_contains "plan huge n message" "a filter for 1e+20 items at error rate 0.01 needs" "$err"
check_contains "plan huge n advice" "spread the items over several filters" "$err"
run plan -n 1.8e19 -p 0.01
check_contains "plan n near 2^64" "at most 2^63 bits" "$err"
run plan -n inf -p 0.01
check_contains "plan infinite n" "finite number of items, at least 1 (got inf)" "$err"
run plan -n 1e6 -p 0.9999
check_contains "plan p near 1" "error rate 0.9999 is too high" "$err"
check_contains "plan p near 1 advice" "at most 0.5 (0.01 is common)" "$err"
run plan -n 1e6 -p 1e-30 --layout blocked
check_contains "plan blocked tiny p" "error rate 1e-30 is below what a blocked filter can reach" \
  "$err"
check_contains "plan blocked tiny p advice" "use --layout classic" "$err"
run plan -n 3e18 -p 0.5
check_contains "plan too many partitions" "use a larger partition size" "$err"
run create -f big.rbf --bits 1e30 --hashes 7
check "create huge bits" 2 "$rc"
check_contains "create huge bits message" "--bits 1e+30 is too large" "$err"
run create -f tiny.rbf --bits 512 --hashes 1 -n 1e6
check_contains "create bits too few for n" "give more bits or a smaller capacity" "$err"
run dedupe -f x.rbf
check "mistyped command" 2 "$rc"
check_contains "mistyped command message" "unknown command 'dedupe' (did you mean 'dedup'?)" "$err"
check_contains "mistyped command lists the commands" "the commands are plan, create" "$err"
REDIS_URL=http://localhost:6379 run info --name urls
check "bad REDIS_URL" 2 "$rc"
check_contains "bad REDIS_URL is named" '$REDIS_URL (used because no Redis URI was given)' "$err"
run plan -n 100 -p 0.01 --layout Blocked
check "plan --layout Blocked: any case" 0 "$rc"
check_contains "plan --layout Blocked: the blocked layout" "layout            blocked" "$out"
REDIS_URL=redis://127.0.0.1:1 run info --name urls
check "REDIS_URL unreachable" 3 "$rc"
check_contains "REDIS_URL unreachable: says the server came from it" \
  'the server of $REDIS_URL, used because no Redis URI was given' "$err"
run info --filter redis://127.0.0.1:1#urls
check "explicit URI unreachable: no origin remark" "" "$(grep -F 'REDIS_URL' <<<"$err")"
run plan -n 100 -p 0.01 --layout fancy
check "plan bad layout" 2 "$rc"
check_contains "plan bad layout message" "unknown layout 'fancy'" "$err"
run plan
check "plan without args" 2 "$rc"
run frobnicate
check "unknown command" 2 "$rc"

# --- dedup: first occurrences, CRLF, empty lines, persistence ---
printf 'a\nb\na\r\n\nc\nb\n' > in.txt
run dedup -f f.rbf in.txt
check "dedup exit" 0 "$rc"
check "dedup output" $'a\nb\n\nc' "$out"
check_contains "dedup summary" "read 6, unique 4, duplicates 2" "$err"
check_contains "empty note" "1 empty line(s) counted as items" "$err"
run dedup -f f.rbf --skip-empty in.txt
check "dedup persisted" "" "$out"
check_contains "dedup persisted summary" "read 5, unique 0, duplicates 5" "$err"
run dedup -f g.rbf --dups in.txt
check "dedup --dups" $'a\nb' "$out"
printf 'x\0y\0x\0' > nul.bin
run dedup -f n.rbf -0 nul.bin
check "dedup -0" "xy" "$(printf '%s' "$out" | tr -d '\0')"
check "dedup -0 delimiters" "2" "$("$redbloom" dedup -f n2.rbf -0 -q nul.bin | tr -cd '\0' | wc -c)"
printf 'bin\0ary\nplain\n' > binary.txt
run dedup -f b.rbf binary.txt
check "binary line kept" "2" "$(printf '%s\n' "$out" | wc -l)"
check_contains "binary line warning" "contain NUL bytes (first: binary.txt line 1)" "$err"
check "binary bytes verbatim" "$(printf 'bin\0ary\nplain\n' | od -An -tx1)" \
  "$("$redbloom" dedup -f b2.rbf -q binary.txt | od -An -tx1)"
run dedup -f f.rbf -q < in.txt
check "dedup stdin quiet" "" "$err"

# --- --threads: the same output as one thread, from batches big enough to split ---
seq 1 30000 | sed 's/^/t-/' > t1.txt
{ cat t1.txt; seq 1 40000 | sed 's/^/t-/'; } > threads.txt
for layout in classic blocked; do
  "$redbloom" dedup -f one-$layout.rbf -n 100000 --layout $layout --partition-size 32KiB -q \
    < threads.txt > one.out
  run dedup -f two-$layout.rbf -n 100000 --layout $layout --partition-size 32KiB --threads 2 \
    threads.txt
  check "dedup --threads 2 exit ($layout)" 0 "$rc"
  check "dedup --threads 2 output ($layout)" "$(cat one.out)" "$out"
  check_contains "dedup --threads 2 summary ($layout)" "read 70000," "$err"
  # The bitmaps (after the 4096-byte header, which holds the creation time) are identical.
  check "--threads 2 bits ($layout)" "$(tail -c +4097 one-$layout.rbf | md5sum)" \
    "$(tail -c +4097 two-$layout.rbf | md5sum)"
  run exists -f two-$layout.rbf --threads 2 --count threads.txt
  check "exists --threads 2 ($layout)" "70000" "$out"
done
run dedup -f t0.rbf --threads 0 t1.txt
check "--threads 0" 2 "$rc"
check_contains "--threads 0 message" "threads" "$err"
run exists --name x --redis redis://127.0.0.1:1 --threads 2 t1.txt
check "--threads on redis" 2 "$rc"
check_contains "--threads on redis message" "--threads applies to local filters" "$err"

# --- exists: grep-like output and exit codes ---
run exists -f f.rbf <<< $'a\nzz\nc'
check "exists output" $'a\nc' "$out"
check "exists exit" 0 "$rc"
run exists -f f.rbf -v <<< $'a\nzz\nc'
check "exists -v" "zz" "$out"
run exists -f f.rbf --count <<< $'zz\nyy'
check "exists --count" "0" "$out"
check "exists nothing matched" 1 "$rc"
run exists -f f.rbf -c <<< $'a\nb\nzz'
check "exists -c" "2" "$out"
check_contains "exists summary" "redbloom exists: read 3, present 2, absent 1, " "$err"
run exists -f f.rbf -v --json <<< $'a\nb\nzz'
check "exists -v --json: the absent item" "zz" "$out"
check_contains "exists --json summary" '"read": 3, "present": 2, "absent": 1' "$err"
run exists -f f.rbf -q <<< $'a\nb\nzz'
check "exists -q: no summary" "" "$err"

# --- create, add, info, drop ---
run create -f c.rbf -n 1000 -p 0.001 --layout blocked
check "create exit" 0 "$rc"
check_contains "create says" "blocked" "$out"
run create -f c.rbf -n 1000 -p 0.001 --layout blocked
check "create existing" 2 "$rc"
check_contains "create existing message" "already exists" "$err"
run create -f c.rbf -n 1000 -p 0.001 --force -q
check "create --force" 0 "$rc"
run create -f s1.rbf --bits 350000000 --hashes 16 -n 7000000
check "create explicit m,k (seed 001)" 0 "$rc"
check_contains "explicit k" "k=16" "$out"
run create -f s2.rbf --bits 1000
check "bits without hashes" 2 "$rc"
run create -f s3.rbf --bits 1000 --hashes 99
check "too many hashes" 2 "$rc"
check_contains "too many hashes message" "between 1 and 64" "$err"
run create -f s4.rbf -n 1000 --partition-size 1TiB
check "bad partition size" 2 "$rc"
run create -f s5.rbf -n 1000 --partition-size 1GiB
check "partition over redis limit" 2 "$rc"
check_contains "redis limit message" "512 MiB string limit" "$err"
run add -f f.rbf -n 5 in.txt
check "other parameters" 2 "$rc"
check_contains "other parameters message" "created with other parameters" "$err"
run add -f f.rbf in.txt
check "add to existing without sizing options" 0 "$rc"
seq 1 1000 > nums.txt
run add -f new.rbf -n 5000 -p 0.01 --layout blocked nums.txt
check "add creates" 0 "$rc"
check_contains "add summary" "read 1000, unique 1000" "$err"
run info -f new.rbf
check_contains "info layout" "layout            blocked" "$out"
check_contains "info capacity" "capacity          5000 items" "$out"
run info -f new.rbf --json
check_contains "info json" '"layout": "blocked"' "$out"
est=$(printf '%s' "$out" | sed -E 's/.*"estimated_items": ([0-9.]+).*/\1/')
check "info estimate near 1000" "1" "$(awk -v e="$est" 'BEGIN { print (e > 950 && e < 1050) ? 1 : 0 }')"
run info -f missing.rbf
check "info missing" 2 "$rc"
check_contains "missing message" "does not exist" "$err"
run add -f f.rbf missing-input.txt
check "missing input" 2 "$rc"
check_contains "missing input message" "cannot open input missing-input.txt" "$err"
echo "just text" > foreign.rbf
run exists -f foreign.rbf <<< "a"
check "foreign file" 3 "$rc"
check_contains "foreign message" "not a redbloom filter" "$err"
head -c 5000 new.rbf > truncated.rbf
run info -f truncated.rbf
check "truncated file" 3 "$rc"
check_contains "truncated message" "truncated" "$err"
run drop -f foreign.rbf
check "drop foreign refused" 3 "$rc"
check "foreign kept" "just text" "$(cat foreign.rbf)"
run drop -f new.rbf
check "drop" 0 "$rc"
check "dropped" "no" "$([[ -e new.rbf ]] && echo yes || echo no)"
run drop -f new.rbf
check "drop missing" 2 "$rc"

echo "$passes passed, $failures failed"
[[ $failures -eq 0 ]]
