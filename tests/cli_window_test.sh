#!/usr/bin/env bash
# Windowed and growing filters from the command line: create, dedup, exists, info (text and
# JSON), a real window that forgets, growth stopped by --max-bytes (exit 3, what was
# committed), and the option errors. Usage: cli_window_test.sh PATH/TO/redbloom
source "$(dirname "$0")/cli_common.sh"

# --- create and dedup on a windowed file filter
run create --filter w.rbf --window 10m --rate 1000/s -p 0.001 --layout blocked
check "create windowed: exit" 0 "$rc"
check_contains "create windowed: says what" "windowed 10m in 4 slices of 2.5m, 600000 items per window" "$out"
out=$(seq 1 20000 | "$redbloom" dedup --filter w.rbf -q | wc -l)
check "dedup: every first occurrence" 20000 "$out"
out=$(seq 10001 30000 | "$redbloom" dedup --filter w.rbf -q | wc -l)
check "dedup: only the unseen half" 10000 "$out"
run exists --filter w.rbf -q <<<$'5\nnever-added'
check "exists: prints the present one" "5" "$out"
run info --filter w.rbf
check "info: exit" 0 "$rc"
check_contains "info: the stream" "stream            windowed 10m" "$out"
check_contains "info: one live link" "live links        1," "$out"
check_contains "info: counted items" "30000 / 165000" "$out"
run info --filter w.rbf --json
check_contains "info --json: links" '"links": [{"slice": ' "$out"
check_contains "info --json: window" '"window_ns": 600000000000' "$out"
check "link files: control file and one link" 2 "$(ls w.rbf* | wc -l)"

# --- the same options again are accepted; others are refused, naming both
run add --filter w.rbf --window 10m --rate 1000/s -p 0.001 --layout blocked <<<"x"
check "same options: accepted" 0 "$rc"
run add --filter w.rbf --window 20m <<<"x"
check "other window: usage error" 2 "$rc"
check_contains "other window: names both" "the options ask for windowed 20m" "$err"
run add --filter w.rbf --exact <<<"x"
check "exact on a window: refused" 2 "$rc"
check_contains "exact on a window: why" "forgets items" "$err"

# --- a real window of 4 s in 2 slices: items leave it (4 s: the "seen" check has time to
# spare on a loaded machine)
run create --filter short.rbf --window 4s --slices 2 -n 1000 -p 0.001
check "short window: created" 0 "$rc"
out=$(printf 'a\nb\n' | "$redbloom" dedup --filter short.rbf -q)
check "short window: first sight" $'a\nb' "$out"
out=$(printf 'a\nb\n' | "$redbloom" dedup --filter short.rbf -q)
check "short window: seen" "" "$out"
sleep 6.2  # window + one slice
out=$(printf 'a\nc\n' | "$redbloom" dedup --filter short.rbf -q)
check "short window: forgotten after window + slice" $'a\nc' "$out"
run create --filter gone.rbf --window 200ms -n 1000 -p 0.01
printf 'a\nb\n' | "$redbloom" add --filter gone.rbf -q
sleep 0.6  # every slice has left the window
run info --filter gone.rbf
check_contains "no live slice: the rate now is 0, not -0" "rate now          0 (target" "$out"
run info --filter gone.rbf --json
check "no live slice: JSON has no -0" "" "$(grep -o -- '-0[,}]' <<<"$out")"
run info --filter w.rbf
check_contains "info on a window: no exact set, and why" \
  "a windowed filter cannot have one: it forgets items and the set would not" "$out"
check "info on a window: suggests no --exact load" "" "$(grep -- 'load --exact' <<<"$out")"

# --- growth and its byte limit
run create --filter g.rbf --growth 2 -n 1000 -p 0.01 --max-bytes 20KiB
check "growing: created" 0 "$rc"
out=$(seq 1 5000 | "$redbloom" add --filter g.rbf -q 2>"$work/stderr"); rc=$?
check "growing: within the limit" 0 "$rc"
run info --filter g.rbf --json
check_contains "growing: three links" '"link": 2' "$out"
seq 1 100000 | "$redbloom" dedup --filter g.rbf -q 2>"$work/stderr" > printed.txt
err=$(cat "$work/stderr")
check "growing: full is exit 3" 3 "$(seq 1 100000 | "$redbloom" add --filter g.rbf -q 2>/dev/null; echo $?)"
check_contains "growing: says the limit" "over the limit of 20.00 KiB" "$err"
check_contains "growing: says what was committed" "and the rest of the input were not added" "$err"
# Printed: exactly what the same filter given only the committed items prints (the committed
# items it leaves out were present before they came: false positives, not lost lines).
committed=$(grep -o 'committed the first [0-9]*' <<<"$err" | grep -o '[0-9]*$')
"$redbloom" create -q --filter replay.rbf --growth 2 -n 1000 -p 0.01 --max-bytes 20KiB
seq 1 5000 | "$redbloom" add -q --filter replay.rbf
seq 1 "${committed:-0}" | "$redbloom" dedup -q --filter replay.rbf > replayed.txt
check "growing: a replay of the committed items" 0 "$?"
check "growing: printed every committed first sight" "$(md5sum < replayed.txt)" \
  "$(md5sum < printed.txt)"
check "growing: printed some" 1 "$(($(wc -l < printed.txt) > 1000))"

# --- option errors, each naming the problem
run create --filter bad.rbf --window 10x
check "bad duration: usage error" 2 "$rc"
check_contains "bad duration: says how" "give a number and a unit" "$err"
run create --filter bad.rbf --slices 4
check "slices without window: usage error" 2 "$rc"
run create --filter bad.rbf --max-bytes 1GiB
check "max-bytes alone: usage error" 2 "$rc"
check_contains "max-bytes alone: says why" "--max-bytes limits a windowed or growing filter" "$err"
run create --filter bad.rbf --window 10m --rate fast
check "bad rate: usage error" 2 "$rc"
check_contains "bad rate: example" "12000/s" "$err"
run create --filter bad.rbf --growth 1
check "growth 1: usage error" 2 "$rc"
check "nothing made by the refusals" 0 "$(ls bad.rbf* 2>/dev/null | wc -l)"

# --- drop removes every file of it
run drop --filter w.rbf
check "drop: exit" 0 "$rc"
check "drop: no file left" 0 "$(ls w.rbf* 2>/dev/null | wc -l)"

echo "cli_window_test: $passes passed, $failures failed"
((failures == 0))
