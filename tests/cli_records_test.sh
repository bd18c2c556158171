#!/usr/bin/env bash
# End-to-end checks of records with keys (--key-field, --csv, --json-key, --on-bad-record) on
# dedup, add, exists, load and diff: the key decides, the whole record is printed byte for byte
# (CRLF, quotes, escapes as read), a line without the key stops the command with its line number
# (nothing after it committed), or is dropped or passed through as asked.
# Usage: cli_records_test.sh PATH/TO/redbloom
# The filter options (new) are words split on purpose:
# shellcheck disable=SC2046
source "$(dirname "$0")/cli_common.sh"

# same_bytes NAME EXPECTED_FILE ACTUAL_FILE: the files are identical, byte for byte.
same_bytes() {
  if cmp -s "$2" "$3"; then
    passes=$((passes + 1))
  else
    echo "FAIL: $1"
    echo "  expected: $(od -c "$2" | head -n 8)"
    echo "  actual:   $(od -c "$3" | head -n 8)"
    failures=$((failures + 1))
  fi
}

new() { echo "-f $1.rbf -n 100000 -p 0.0001"; }

# --- tab-separated fields: the key is field 2; every record printed as read, CR included.
printf 'a\tk1\tx\nb\tk2\r\nc\tk1\ny\nd\tk3\te\n' > t.tsv
printf 'a\tk1\tx\nb\tk2\r\nd\tk3\te\n' > t_expected.tsv
"$redbloom" dedup $(new tsv) --key-field 2 -q --on-bad-record skip t.tsv > t_out.tsv
check "dedup --key-field 2 skip exits 0" 0 $?
same_bytes "dedup --key-field 2 prints whole records, CRLF kept" t_expected.tsv t_out.tsv

# The default: a line without the field stops the command, names it and what was committed.
"$redbloom" dedup $(new tsv_err) --key-field 2 -q t.tsv > err_out.tsv 2> err.txt
check "a line without the key: exit 2" 2 $?
check_contains "the message names the line" "t.tsv line 4: no field 2 (the line has 1)" \
  "$(cat err.txt)"
check_contains "the message says what was committed" "committed the first 3 input items" \
  "$(cat err.txt)"
printf 'a\tk1\tx\nb\tk2\r\n' > err_expected.tsv
same_bytes "the records before the bad line are printed" err_expected.tsv err_out.tsv
# Nothing after the bad line was added: k3 is not in the filter, k1 and k2 are.
printf 'k1\nk2\nk3\n' > keys.txt
run exists -f tsv_err.rbf -q keys.txt
check "nothing after the bad line was committed" $'k1\nk2' "$out"

# pass: the bad line goes to the output in its place, unfiltered.
"$redbloom" dedup $(new tsv_pass) --key-field 2 --on-bad-record pass t.tsv > pass_out.tsv \
  2> pass_err.txt
printf 'a\tk1\tx\nb\tk2\r\ny\nd\tk3\te\n' > pass_expected.tsv
same_bytes "pass prints the line without key in its place" pass_expected.tsv pass_out.tsv
check_contains "pass: the summary counts it" "lines without key passed 1" "$(cat pass_err.txt)"
run dedup $(new tsv_json) --key-field 2 --on-bad-record skip --json t.tsv
check_contains "--json summary counts the bad records" '"bad_records": 1' "$err"

# --skip-empty drops an empty CRLF line as it does an empty LF line.
printf 'a\tk7\r\n\r\n\nb\tk8\r\n' > crlf.tsv
run dedup $(new crlf) --key-field 2 --skip-empty -q crlf.tsv
check "--skip-empty with CRLF records" 2 "$(printf '%s\n' "$out" | wc -l)"

# A key field and the whole line of the same text are the same item.
printf 'k1\nk9\n' > plain.txt
run exists -f tsv.rbf -q plain.txt
check "a field key equals the line of the same bytes" "k1" "$out"

# --- CSV: quoted fields hold the delimiter and doubled quotes; CRLF line ends.
printf 'id,name\r\n"1,a","say ""hi"""\r\n"1,a",other\r\n2,"say ""hi"""\r\n3,"x,y"\r\n' > t.csv
"$redbloom" dedup $(new csv1) --key-field 1 --csv -q t.csv > csv1_out.csv
printf 'id,name\r\n"1,a","say ""hi"""\r\n2,"say ""hi"""\r\n3,"x,y"\r\n' > csv1_expected.csv
same_bytes "CSV field 1: quoted delimiter, records byte for byte" csv1_expected.csv csv1_out.csv
"$redbloom" dedup $(new csv2) --key-field 2 --csv -q t.csv > csv2_out.csv
printf 'id,name\r\n"1,a","say ""hi"""\r\n"1,a",other\r\n3,"x,y"\r\n' > csv2_expected.csv
same_bytes "CSV field 2: doubled quotes decoded into one key" csv2_expected.csv csv2_out.csv
# Without --csv the comma-delimited field 1 of '"1,a",...' is '"1' for both lines: one key.
run dedup $(new csv3) --key-field 1 -d , -q t.csv
check "without --csv quotes are bytes" 4 "$(printf '%s\n' "$out" | wc -l)"
printf 'a;"b;c";d\n' > semi.csv
run dedup $(new semi) --key-field 2 --csv -d ';' -q semi.csv
check "--csv -d ';'" 'a;"b;c";d' "$out"
printf 'x,"open\n' > open.csv
run dedup $(new open) --key-field 2 --csv -q open.csv
check "an unclosed quote is a bad record: exit 2" 2 "$rc"
check_contains "an unclosed quote: message" "open.csv line 1: field 2 opens a quote" "$err"

# --- JSON Lines: dot paths, decoded strings, typed keys.
cat > t.jsonl <<'EOF'
{"event":{"id":"caf\u00e9"},"n":1}
{"event":{"id":"café"},"n":2}
{"event":{"id":7},"n":3}
{"event":{"id":"7"},"n":4}
{"event":{"id":7.0},"n":5}
{"event":{"other":1},"n":6}
{"event":{"id":"a\"b"},"n":7}
not json
{"event":{"id":"a\"b"},"n":9}
EOF
cat > json_expected.jsonl <<'EOF'
{"event":{"id":"caf\u00e9"},"n":1}
{"event":{"id":7},"n":3}
{"event":{"id":"7"},"n":4}
{"event":{"id":"a\"b"},"n":7}
EOF
"$redbloom" dedup $(new json) --json-key event.id --on-bad-record skip t.jsonl > json_out.jsonl \
  2> json_err.txt
same_bytes "--json-key: decoded strings one key, numbers and strings two" json_expected.jsonl \
  json_out.jsonl
check_contains "--json-key skip: counted" "lines without key skipped 2" "$(cat json_err.txt)"
run dedup $(new json_err) --json-key event.id -q t.jsonl
check "--json-key: a record without the key stops the command" 2 "$rc"
check_contains "--json-key: the missing member is named" "t.jsonl line 6: no member event.id" \
  "$err"
# Plain records (no escapes, integers), whose keys come from simdjson's first stage: a bad
# value after the key, or text after the object, still stops the command at its line, with the
# lines before it printed.
awk 'BEGIN { for (i = 1; i <= 5000; i++)
  printf "{\"ts\":\"t%d\",\"event\":{\"kind\":\"GET\",\"id\":\"k%d\"},\"n\":%d}\n", i, i, i }' \
  > plain.jsonl
for bad in '{"event":{"id":"k"},"x":tru}' '{"event":{"id":"k"}} x' \
  '{"event":{"id":"k"},"x":[1,]}'; do
  awk -v bad="$bad" 'NR == 3000 { print bad; next } { print }' plain.jsonl > plain_bad.jsonl
  run dedup $(new plain_bad) --json-key event.id -q plain_bad.jsonl
  check "plain JSON, $bad on line 3000: exit 2" 2 "$rc"
  check_contains "plain JSON, $bad: named" "plain_bad.jsonl line 3000: not valid JSON" "$err"
  check "plain JSON, $bad: the lines before it printed" 2999 "$(printf '%s\n' "$out" | wc -l)"
  rm -f plain_bad.rbf
done
run dedup $(new plain) --json-key event.id -q plain.jsonl
check "plain JSON: every record has its key" 5000 "$(printf '%s\n' "$out" | wc -l)"
# A NUL byte makes a JSON line invalid; with --key-field it is a byte of the key.
printf '{"id":"a\0b"}\n{"id":"ab"}\n' > nul.jsonl
run dedup $(new nul) --json-key id --on-bad-record skip -q nul.jsonl
check "a NUL byte in a JSON line: the line is skipped" '{"id":"ab"}' "$out"
printf 'x\tk\0y\nz\tk\0y\nw\tk\n' > nul.tsv
"$redbloom" dedup $(new nultsv) --key-field 2 -q nul.tsv > nul_out.tsv 2> /dev/null
printf 'x\tk\0y\nw\tk\n' > nul_expected.tsv
same_bytes "NUL bytes in a field key" nul_expected.tsv nul_out.tsv
# A very long line (4 MiB) is one record.
big=$(head -c 4194304 /dev/zero | tr '\0' 'z')
printf '{"pad":"%s","id":1}\n{"id":1}\n{"id":2}\n' "$big" > big.jsonl
run dedup $(new big) --json-key id -q big.jsonl
check "a 4 MiB JSON line: its key counts" '{"id":2}' "$(printf '%s\n' "$out" | tail -n 1)"
check "a 4 MiB JSON line: printed whole" 4194322 "$(printf '%s\n' "$out" | head -n 1 | wc -c)"

# --- add, exists, load and diff take the same keys.
printf '{"id":"u1","x":1}\n{"id":"u2","x":2}\n' > known.jsonl
printf '{"id":"u2","x":9}\n{"id":"u3","x":9}\n{"id":"u1","x":0}\n' > check.jsonl
run add $(new added) --json-key id -q known.jsonl
check "add --json-key" 0 "$rc"
run exists -f added.rbf --json-key id -q check.jsonl
check "exists --json-key prints the present records" \
  $'{"id":"u2","x":9}\n{"id":"u1","x":0}' "$out"
run exists -f added.rbf --json-key id -q -c check.jsonl
check "exists --json-key -c" 2 "$out"
run load $(new loaded) --json-key id -q known.jsonl
run diff --known loaded.rbf --json-key id -q --check check.jsonl
check "load and diff --json-key: the orphan record" '{"id":"u3","x":9}' "$out"
printf '{"id":"u3"}\nbroken\n{"id":"u1"}\n' > check_bad.jsonl
run diff --known loaded.rbf --json-key id -q --on-bad-record pass --check check_bad.jsonl
check "diff --on-bad-record pass" $'{"id":"u3"}\nbroken' "$out"
run load $(new load_err) --json-key id -q check_bad.jsonl
check "load: a bad record exits 2" 2 "$rc"
check_contains "load: says what was committed" "committed the first 1 input items" "$err"
run exists -f load_err.rbf -q keys.txt
run exists -f load_err.rbf --json-key id -q check_bad.jsonl --on-bad-record skip
check "load committed nothing after the bad record" '{"id":"u3"}' "$out"

# --- options that do not go together, and what selects nothing.
run dedup $(new o1) --key-field 1 --json-key id -q t.tsv
check "--key-field with --json-key: exit 2" 2 "$rc"
run dedup $(new o2) --csv -q t.tsv
check_contains "--csv without --key-field" "--csv needs --key-field N" "$err"
run dedup $(new o3) --key-field 0 -q t.tsv
check "--key-field 0 is refused" 2 "$rc"
run dedup $(new o4) --json-key 'a..b' -q t.jsonl
check_contains "an empty path member" "empty member name" "$err"
run dedup $(new o5) --key-field 1 -d '::' -q t.tsv
check_contains "a delimiter of two characters" "--delimiter takes one character" "$err"
run dedup $(new o6) --key-field 1 --on-bad-record maybe -q t.tsv
check "--on-bad-record takes error, skip or pass" 2 "$rc"
# None of the refused commands left a filter behind.
check "no filter from a refused command" "" "$(ls o?.rbf 2>/dev/null)"

echo "$passes passed, $failures failed"
[[ $failures -eq 0 ]]
