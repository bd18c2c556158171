#!/usr/bin/env bash
# End-to-end checks of redbloom diff and the exact companion (--exact on load/add/create), on a
# file and on Redis: the exact output is B \ A exactly (as comm computes it), the Bloom-only
# output a subset of it; summaries and exit codes; bad inputs and refusals; the companion lives
# and dies with its filter. Usage: cli_diff_test.sh PATH/TO/redbloom
# The location options (loc, known) are words split on purpose:
# shellcheck disable=SC2046,SC2086
source "$(dirname "$0")/cli_common.sh"
source "$tests_dir/redis_shell.sh"

# same_as NAME FILE TEXT: TEXT is the file's content; a mismatch shows the first differences.
same_as() {
  if [[ "$(cat "$2")" == "$3" ]]; then
    passes=$((passes + 1))
  else
    echo "FAIL: $1 (diff $2 actual):"
    diff <(cat "$2") <(printf '%s\n' "$3") | head -n 6
    failures=$((failures + 1))
  fi
}

start_redis main
U=$(redis_uri main)

# A: 20000 known URLs. B: 30000 checked, half of them known, in a scrambled order, every
# absent one and some known ones twice (7919 is prime to 20000: i * 7919 % 20000 runs through
# every residue once per 20000 values of i).
seq 1 20000 | sed 's|^|s3://bucket/obj-|' > a.txt
awk 'BEGIN { for (i = 0; i < 30000; i++) printf "s3://bucket/obj-%d\n", 10001 + (i * 7919) % 20000 }' \
  > b.txt
head -n 17000 b.txt > b1.txt
tail -n +17001 b.txt > b2.txt
# B \ A in input order, repeats kept; and as a set, by comm.
awk 'NR == FNR { known[$0]; next } !($0 in known)' a.txt b.txt > expected.txt
LC_ALL=C comm -13 <(LC_ALL=C sort -u a.txt) <(LC_ALL=C sort -u b.txt) > expected_set.txt
same_as "the expected set is B minus A by comm" expected_set.txt \
  "$(LC_ALL=C sort -u expected.txt)"
check "the checked input repeats items" "yes" \
  "$([[ $(wc -l < expected.txt) -gt $(wc -l < expected_set.txt) ]] && echo yes || echo no)"
# C: some of the absent items, added later without --exact.
head -n 500 expected_set.txt > c.txt
awk 'NR == FNR { known[$0]; next } !($0 in known)' <(cat a.txt c.txt) b.txt > expected_ac.txt

json_field() {  # json_field KEY JSON: the number after "KEY":
  sed -n "s/.*\"$1\": \([0-9.e+-]*\).*/\1/p" <<< "$2"
}

# companion NAME: "yes" if filter NAME of the current store has an exact set (file or keys).
companion() {
  if [[ $store == file ]]; then
    [[ -e "$1.exact" ]] && echo yes || echo no
  else
    [[ -n "$(rcli main --scan --pattern "$1:exact*")" ]] && echo yes || echo no
  fi
}

# suite STORE: every check, with the filters on STORE (file or redis). loc NAME gives the
# location options of filter NAME.
suite() {
  store=$1
  local t="[$store]"
  loc() { if [[ $store == file ]]; then echo "-f $1.rbf"; else echo "--redis $U --name $1"; fi; }
  known() { if [[ $store == file ]]; then echo "--known $1.rbf"; else loc "$1"; fi; }
  cname() { if [[ $store == file ]]; then echo "$1.rbf"; else echo "$1"; fi; }
  local k expected_count bloom_count fp verified
  k=$(loc k)

  # --- load --exact, then diff: Bloom-only and exact ---
  run load --exact $k -n 20000 -p 0.2 a.txt
  check "$t load --exact" 0 "$rc"
  check_contains "$t load summary" "exact set entries 20000" "$err"
  check "$t companion made" yes "$(companion "$(cname k)")"
  run info $k
  check_contains "$t info shows the exact set" "exact entries     20000" "$out"
  check_contains "$t info: false-match probability" "false match       " "$out"
  run info $k --json
  check_contains "$t info --json exact entries" '"entries": 20000' "$out"
  run diff $(known k) --check b.txt --exact
  check "$t diff --exact exit" 0 "$rc"
  same_as "$t diff --exact = B \\ A in input order" expected.txt "$out"
  same_as "$t diff --exact as a set = comm" expected_set.txt "$(LC_ALL=C sort -u <<< "$out")"
  expected_count=$(wc -l < expected.txt)
  check_contains "$t exact summary counts" "checked 30000, missing $expected_count" "$err"
  check_contains "$t exact summary mode" "mode exact, verified " "$err"
  check_contains "$t exact summary false positives" "false positives caught" "$err"

  run diff $(known k) --check b.txt
  check "$t diff Bloom-only exit" 0 "$rc"
  printf '%s\n' "$out" > bloom.txt
  check "$t Bloom-only output is a subset of B \\ A" "" \
    "$(LC_ALL=C comm -23 <(LC_ALL=C sort -u bloom.txt) expected_set.txt)"
  check "$t Bloom-only never prints a known item" "" \
    "$(LC_ALL=C comm -12 <(LC_ALL=C sort -u bloom.txt) <(LC_ALL=C sort -u a.txt))"
  check "$t Bloom-only keeps the input order" "$out" "$(grep -xF -f bloom.txt expected.txt)"
  bloom_count=$(wc -l < bloom.txt)
  check "$t Bloom-only hides some orphans at p = 0.2" "yes" \
    "$([[ $bloom_count -gt 0 && $bloom_count -lt $expected_count ]] && echo yes || echo no)"
  check_contains "$t Bloom-only summary" "checked 30000, missing $bloom_count" "$err"
  check_contains "$t Bloom-only summary mode" "mode bloom-only" "$err"
  check_contains "$t Bloom-only caveat" "use --exact to verify" "$err"

  # JSON summaries: the counts agree with each other and with the outputs.
  run diff $(known k) --check b.txt --exact --json -q
  check "$t --json -q prints no summary" "" "$err"
  run diff $(known k) --check b.txt --exact --json
  check_contains "$t json command" '"command": "diff"' "$err"
  check "$t json checked" 30000 "$(json_field checked "$err")"
  check "$t json missing" "$expected_count" "$(json_field missing "$err")"
  check_contains "$t json mode" '"mode": "exact"' "$err"
  fp=$(json_field false_positives "$err")
  verified=$(json_field verified "$err")
  check "$t json false_positives = exact - Bloom-only" "$((expected_count - bloom_count))" "$fp"
  check "$t false positives were caught" "yes" "$([[ ${fp:-0} -gt 0 ]] && echo yes || echo no)"
  check "$t json verified = items the filter called present" "$((30000 - bloom_count))" "$verified"
  check_contains "$t json false-match probability" '"false_match_probability": ' "$err"
  run diff $(known k) --check b.txt --json
  check "$t json Bloom-only missing" "$bloom_count" "$(json_field missing "$err")"
  check_contains "$t json Bloom-only expected_hidden" '"expected_hidden": ' "$err"

  # Several inputs (repeats across them), and standard input.
  run diff $(known k) --exact -q --check b1.txt --check b2.txt
  same_as "$t two check files" expected.txt "$out"
  out=$("$redbloom" diff $(known k) --exact -q < b.txt)
  same_as "$t standard input" expected.txt "$out"

  # Nothing missing: exit 1 (as grep), no output.
  run diff $(known k) --check a.txt --exact
  check "$t nothing missing: exit 1" 1 "$rc"
  check "$t nothing missing: no output" "" "$out"
  check_contains "$t nothing missing summary" "checked 20000, missing 0" "$err"
  run diff $(known k) --check a.txt
  check "$t Bloom-only nothing missing: exit 1" 1 "$rc"

  # --- bad inputs ---
  run diff $(known k) --check nope.txt --exact
  check "$t missing check file: exit 2" 2 "$rc"
  check_contains "$t missing check file message" "cannot open input nope.txt" "$err"
  : > empty.txt
  run diff $(known k) --check empty.txt --exact
  check "$t empty input: exit 1" 1 "$rc"
  check "$t empty input: no output" "" "$out"
  check_contains "$t empty input summary" "checked 0, missing 0" "$err"
  run diff $(known nothere) --check b.txt --exact
  check "$t missing filter: exit 2" 2 "$rc"

  # Binary lines: raw bytes, exactly; a warning about the NULs.
  printf 'bin\0ary\nx\ty\n\nlast\r\n' > bin_known.txt
  printf 'bin\0ary\nbin\0arz\nx\ty\nx\tz\n\nlast\nnew\0\n' > bin_check.txt
  "$redbloom" load --exact -q $(loc kb) -n 10 -p 0.3 bin_known.txt 2> /dev/null
  "$redbloom" diff $(known kb) --check bin_check.txt --exact > bin_out.bin 2> bin.err
  check "$t binary: exit" 0 "$?"
  check "$t binary: exactly the absent raw lines" "$(printf 'bin\0arz\nx\tz\nnew\0\n' | od -An -tx1)" \
    "$(od -An -tx1 < bin_out.bin)"
  check_contains "$t binary: NUL warning" "3 line(s) contain NUL bytes (first: bin_check.txt line 1)" \
    "$(cat bin.err)"
  # NUL-delimited items with newlines inside.
  printf 'a\nb\0c\0\0' > z_known.bin
  printf 'a\nb\0a\nc\0c\0\0a\nb\0' > z_check.bin
  "$redbloom" load --exact -q -0 $(loc kz) -n 10 -p 0.3 z_known.bin
  check "$t -0: exactly the absent items" "$(printf 'a\nc\0' | od -An -tx1)" \
    "$("$redbloom" diff -0 -q $(known kz) --check z_check.bin --exact | od -An -tx1)"

  # --- refusals ---
  "$redbloom" add -q $(loc plain) -n 20000 a.txt
  run diff $(known plain) --check b.txt --exact
  check "$t diff --exact without an exact set: exit 2" 2 "$rc"
  check_contains "$t ... says it has none" "has no exact set" "$err"
  # A filter that holds items cannot take an exact set: the advice is a new filter.
  check_contains "$t ... says how to build it" "build a new filter with its exact set from the same source" "$err"
  check "$t ... prints nothing" "" "$out"
  run diff $(known plain) --check b.txt
  check "$t Bloom-only works without one" 0 "$rc"
  run info $(loc plain) --json
  check_contains "$t info --json without one" '"exact": null' "$out"
  run add --exact $(loc plain) c.txt
  check "$t add --exact to a filter holding items: exit 2" 2 "$rc"
  check_contains "$t ... refused" "already holds items but has no exact set" "$err"
  check "$t ... no companion made" no "$(companion "$(cname plain)")"
  run load --exact $(loc plain) c.txt
  check "$t load --exact likewise" 2 "$rc"
  run load --exact --layout blocked $k a.txt
  check "$t other parameters: exit 2" 2 "$rc"
  check_contains "$t other parameters message" "created with other parameters" "$err"
  run diff $(known k) --check b.txt --exact -q
  same_as "$t the refused load changed nothing" expected.txt "$out"

  # --- writers without --exact keep an existing companion up to date ---
  run add $k c.txt
  check "$t add without --exact" 0 "$rc"
  check_contains "$t ... updates the exact set" "exact set entries 20500" "$err"
  run diff $(known k) --check b.txt --exact -q
  same_as "$t diff --exact after add without --exact" expected_ac.txt "$out"
  run dedup -q $k c.txt
  check "$t dedup: nothing new" "" "$out"
  run diff $(known k) --check c.txt --exact -q
  check "$t c.txt all known" 1 "$rc"

  # --- create --force: the stale companion goes; --exact makes a new, empty one ---
  run create $k -n 20000 -p 0.2 --force -q
  check "$t create --force" 0 "$rc"
  check "$t create --force drops the companion" no "$(companion "$(cname k)")"
  run diff $(known k) --check b.txt --exact
  check "$t ... and diff --exact says so" 2 "$rc"
  "$redbloom" load -q $k a.txt
  run create $k -n 20000 -p 0.2 --force --exact -q
  check "$t create --force --exact" 0 "$rc"
  check "$t ... makes a companion" yes "$(companion "$(cname k)")"
  run diff $(known k) --check c.txt --exact -q
  same_as "$t ... empty: everything missing" c.txt "$out"
  run add $k a.txt
  check_contains "$t add to an empty filter with a companion" "exact set entries 20000" "$err"
  run diff $(known k) --check b.txt --exact -q
  same_as "$t diff --exact after create --exact + add" expected.txt "$out"
  # add --exact creating the filter and the companion at once.
  run add --exact $(loc k3) -n 20000 -p 0.2 a.txt
  check "$t add --exact on a new filter" 0 "$rc"
  run diff $(known k3) --check b.txt --exact -q
  same_as "$t ... diff --exact" expected.txt "$out"

  # --- a damaged companion: a clear error, and the advised rebuild works ---
  if [[ $store == file ]]; then
    # 8 bytes overwritten in the middle: before, diff --exact called known items orphans.
    cp k.rbf.exact pristine.exact
    printf 'XXXXXXXX' | dd of=k.rbf.exact bs=1 seek=$((56 + 8 * 100)) conv=notrunc 2>/dev/null
    run diff $(known k) --check b.txt --exact
    check "$t overwritten companion: exit 3" 3 "$rc"
    check_contains "$t overwritten companion: damaged" "the exact set is damaged" "$err"
    check "$t overwritten companion: no orphans printed" "" "$out"
    run info $(loc k)
    check "$t info of an overwritten companion: exit 3" 3 "$rc"
    cp pristine.exact k.rbf.exact
    truncate -s -3 k.rbf.exact
    damage="the exact set is damaged"
  else
    rcli main append "$(rcli main --scan --pattern 'k:exact:*' | head -n 1)" xyz > /dev/null
    damage="not a whole number of tags"
  fi
  run diff $(known k) --check b.txt --exact
  check "$t damaged companion: exit 3" 3 "$rc"
  check_contains "$t damaged companion message" "$damage" "$err"
  if [[ $store == redis ]]; then
    # The companion is written first: its error stops the add before the filter holds any of
    # the batch, and the add says so. (a.txt's first batch reaches every bucket.)
    run add $k a.txt
    check "$t add into a damaged companion: exit 3" 3 "$rc"
    check_contains "$t ... names the damage" "$damage" "$err"
    check_contains "$t ... says what it committed" "add: committed the first 0 input items" "$err"
  fi
  run create $k -n 20000 -p 0.2 --force --exact -q
  check "$t create --force --exact replaces a damaged companion" 0 "$rc"
  "$redbloom" load --exact -q $k a.txt
  run diff $(known k) --check b.txt --exact -q
  same_as "$t rebuilt: diff --exact" expected.txt "$out"

  # --- drop takes the companion with the filter ---
  for name in k kb kz k3 plain; do
    run drop $(loc $name)
    check "$t drop $name" 0 "$rc"
    check "$t drop $name: companion gone" no "$(companion "$(cname $name)")"
  done
}

suite file
check "file: nothing left" "" "$(ls ./*.rbf* 2> /dev/null)"
suite redis
check "redis: nothing left" "" "$(rcli main keys '*' | sort | xargs)"

# --- Redis: keys that are not a companion ---
# A filter named k4:exact holds its metadata where filter k4's companion would: k4 works
# without --exact, can be dropped, and neither is ever taken for the other.
"$redbloom" create -q --redis "$U" --name 'k4:exact' -n 1000
"$redbloom" add -q --redis "$U" --name 'k4:exact' <<< "kept"
run load --redis "$U" --name k4 -n 1000 a.txt
check "filter NAME:exact does not block NAME" 0 "$rc"
run diff --redis "$U" --name k4 --check b.txt --exact
check "... nor pass for its exact set" 3 "$rc"
check_contains "... message" "'k4:exact' on redis 127.0.0.1:${redis_port[main]} is a Redis hash but not a redbloom exact set" "$err"
run drop --redis "$U" --name k4
check "drop k4 beside filter k4:exact" 0 "$rc"
run load --exact --redis "$U" --name k4 -n 1000 a.txt
check "load --exact refuses to claim k4:exact" 3 "$rc"
check_contains "... message" "'k4:exact' on redis 127.0.0.1:${redis_port[main]} is a Redis hash but not a redbloom exact set" "$err"
run exists --redis "$U" --name 'k4:exact' <<< "kept"
check "filter k4:exact intact" "kept" "$out"
check "its metadata untouched" "" "$(rcli main hget 'k4:exact' bucket_bits)"
# Another program's string at NAME:exact.
rcli main set 'k5:exact' text > /dev/null
"$redbloom" create -q --redis "$U" --name k5 -n 1000
run diff --redis "$U" --name k5 --check b.txt --exact
check "string at NAME:exact: exit 3" 3 "$rc"
check_contains "... message" "'k5:exact' on redis 127.0.0.1:${redis_port[main]} holds a string, not a redbloom exact set" "$err"
run add --exact --redis "$U" --name k5 a.txt
check "add --exact over a string at NAME:exact: exit 3" 3 "$rc"
check_contains "... message" "'k5:exact' on redis 127.0.0.1:${redis_port[main]} holds a string, not a redbloom exact set" "$err"
run drop --redis "$U" --name k5
check "drop k5 keeps the string" "text" "$(rcli main get 'k5:exact')"

# --- export / import / copy carry the exact set: file -> Redis -> Redis -> file, exact after each
# (before, the copies held the bits only, and diff --exact on them said "add or load --exact")
"$redbloom" load -q --exact -f t.rbf -n 20000 -p 0.2 a.txt
run import --from t.rbf --redis "$U" --name t1
check "import with an exact set" 0 "$rc"
check_contains "import says the exact set went too" "exact set entries 20000" "$err"
run diff --redis "$U" --name t1 --check b.txt --exact -q
same_as "imported: diff --exact" expected.txt "$out"
run copy --redis "$U" --name t1 --to-name t2
check "copy with an exact set" 0 "$rc"
run diff --redis "$U" --name t2 --check b.txt --exact -q
same_as "copied: diff --exact" expected.txt "$out"
run export --redis "$U" --name t2 --to t3.rbf
check "export with an exact set" 0 "$rc"
run diff --known t3.rbf --check b.txt --exact -q
same_as "exported: diff --exact" expected.txt "$out"
run info -f t3.rbf --json
check_contains "exported: the exact set keeps fewer fingerprint bits" '"exact": {"location": "file t3.rbf.exact", "entries": 20000' "$out"
run add --exact -f t3.rbf b.txt
check "exported: the exact set takes new items" 0 "$rc"
run diff --known t3.rbf --check b.txt --exact -q
check "exported: everything known after adding B" "" "$out"
# An export over a leftover companion of another filter replaces it.
"$redbloom" create -q -f t4.rbf -n 100 --exact
rm t4.rbf
run export --redis "$U" --name t2 --to t4.rbf
check "export over a leftover companion" 0 "$rc"
run diff --known t4.rbf --check b.txt --exact -q
same_as "export over a leftover companion: diff --exact" expected.txt "$out"

echo "$passes passed, $failures failed"
[[ $failures -eq 0 ]]
