#!/usr/bin/env bash
# The streaming commands as a pipeline stage, with real processes, real signals and real failing
# outputs: a stop finishes the batch in hand and prints everything committed; a failed output
# saves the committed lines it could not write; a stalled stream's lines come out promptly; a
# filter past its capacity says so. Usage: cli_stream_test.sh PATH/TO/redbloom
source "$(dirname "$0")/cli_common.sh"

pids_to_kill=()
cleanup_stream() {
  local pid
  for pid in "${pids_to_kill[@]}"; do kill -KILL "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup_stream EXIT

# wait_blocking PID: until the process blocks SIGTERM, i.e. its stop handling is in place
# (bounded: 30 s).
wait_blocking() {
  local i mask
  for i in $(seq 1 3000); do
    mask=$(awk '/^SigBlk/ {print $2}' "/proc/$1/status" 2>/dev/null) || return 1
    [[ -n "$mask" ]] && (((16#$mask & 0x4000) != 0)) && return 0
    sleep 0.01
  done
  return 1
}

# wait_lines FILE N: until FILE has at least N lines (bounded: 60 s).
wait_lines() {
  local i
  for i in $(seq 1 6000); do
    [[ -f "$1" && $(wc -l < "$1") -ge $2 ]] && return 0
    sleep 0.01
  done
  return 1
}

# committed FILTER ITEMS: how many of ITEMS the filter holds (the filters here are sized so
# that false positives are ~1e-9: the count is the number committed).
committed() {
  "$redbloom" exists -f "$1" -c -q "$2"
}

seq 1 13000 | sed 's/^/ev/' > items.txt
seq 1 5000 | sed 's/^/good/' > good.txt
big=(-n 1e6 -p 1e-9)

# --- a stop signal while the input pipe stays open: every committed item is printed ---
for sig in TERM INT HUP; do
  rm -f f.rbf fifo && mkfifo fifo
  (cat items.txt; exec sleep 60) > fifo &
  writer=$!
  pids_to_kill+=("$writer")
  "$redbloom" dedup -f f.rbf "${big[@]}" < fifo > out.txt 2> err.txt &
  pid=$!
  wait_blocking "$pid" || echo "FAIL: SIG$sig: dedup never blocked the stop signals"
  wait_lines out.txt 13000 || echo "FAIL: SIG$sig: the items read never came out"
  kill "-$sig" "$pid"
  wait "$pid"
  rc=$?
  kill -KILL "$writer" 2>/dev/null
  wait "$writer" 2>/dev/null
  signo=$(kill -l "$sig")
  check "SIG$sig stop exit status" "$((128 + signo))" "$rc"
  check "SIG$sig: all printed" 13000 "$(wc -l < out.txt)"
  check "SIG$sig: printed = committed" 13000 "$(committed f.rbf items.txt)"
  check_contains "SIG$sig summary" "read 13000, unique 13000, duplicates 0" "$(cat err.txt)"
  check_contains "SIG$sig summary says why" "stopped by SIG$sig" "$(cat err.txt)"
done

# --- a stop in the middle of a trickling stream: printed = committed, whatever the moment ---
trickle() {  # 100 batches of 100 items, 10 ms apart
  local i
  for i in $(seq 0 99); do
    seq $((i * 100 + 1)) $((i * 100 + 100)) | sed 's/^/ev/'
    sleep 0.01
  done
}
for sig in TERM KILL; do
  rm -f f.rbf fifo && mkfifo fifo
  (trickle; exec sleep 60) > fifo &
  writer=$!
  pids_to_kill+=("$writer")
  "$redbloom" dedup -f f.rbf "${big[@]}" < fifo > out.txt 2> err.txt &
  pid=$!
  wait_blocking "$pid" || echo "FAIL: mid-stream SIG$sig: dedup never blocked the stop signals"
  wait_lines out.txt 1000 || echo "FAIL: mid-stream SIG$sig: no output"
  kill "-$sig" "$pid"
  wait "$pid" 2>/dev/null
  kill -KILL "$writer" 2>/dev/null
  wait "$writer" 2>/dev/null
  printed=$(wc -l < out.txt)
  held=$(committed f.rbf items.txt)
  check "mid-stream SIG$sig: every printed item is committed" "$printed" \
    "$("$redbloom" exists -f f.rbf -c -q out.txt)"
  if [[ $sig == TERM ]]; then
    check "mid-stream SIGTERM: printed = committed" "$held" "$printed"
  elif ((held - printed < 0 || held - printed > 4096)); then
    echo "FAIL: SIGKILL left $((held - printed)) committed items unprinted (at most one batch)"
    failures=$((failures + 1))
  else
    passes=$((passes + 1))
  fi
done

# --- output fails: /dev/full (ENOSPC) ---
rm -f f.rbf saved.txt ./redbloom-dedup-unprinted-*
"$redbloom" dedup -f f.rbf "${big[@]}" items.txt --unprinted saved.txt > /dev/full 2> err.txt
rc=$?
check "dev/full exit status" 4 "$rc"
check_contains "dev/full says why" "No space left on device" "$(cat err.txt)"
check_contains "dev/full gives the count" "4096 committed item(s)" "$(cat err.txt)"
check_contains "dev/full names the file" "saved.txt" "$(cat err.txt)"
check "dev/full: saved lines" 4096 "$(wc -l < saved.txt)"
check "dev/full: saved = committed" "$(committed f.rbf items.txt)" "$(wc -l < saved.txt)"
check "dev/full: saved in input order" "$(head -4096 items.txt)" "$(cat saved.txt)"
# Without --unprinted: a new file in the working directory.
rm -f f.rbf
"$redbloom" dedup -f f.rbf "${big[@]}" -q items.txt > /dev/full 2> err.txt
saved=$(ls redbloom-dedup-unprinted-*.txt 2>/dev/null)
check "dev/full default file" 1 "$(echo "$saved" | grep -c unprinted)"
check_contains "dev/full default file named" "$saved" "$(cat err.txt)"

# --- output fails part-way: a full 64 KiB tmpfs (in a private mount namespace) ---
rm -f f.rbf saved.txt
mkdir -p small
if ! unshare -rm bash -c "mount -t tmpfs -o size=64k tmpfs small && \
    '$redbloom' dedup -f f.rbf ${big[*]} -q items.txt --unprinted saved.txt > small/out.txt 2> err.txt; \
    echo \$? > rc.txt; cp small/out.txt out.txt"; then
  echo "FAIL: could not mount a small tmpfs (unshare -rm, mount -t tmpfs)"
  failures=$((failures + 1))
fi
check "tmpfs full exit status" 4 "$(cat rc.txt)"
written=$(grep -c '' out.txt)  # a last partial line counts as not written
[[ -n "$(tail -c1 out.txt)" ]] && written=$((written - 1))
check "tmpfs: written + saved = committed" "$(committed f.rbf items.txt)" \
  "$((written + $(wc -l < saved.txt)))"
check "tmpfs: saved continue the written lines" "$(head -$((written + $(wc -l < saved.txt))) \
  items.txt | tail -n +$((written + 1)))" "$(cat saved.txt)"

# --- output closed: dedup | head, exists | head ---
rm -f f.rbf ./redbloom-dedup-unprinted-*
"$redbloom" create -q -f f.rbf "${big[@]}"
"$redbloom" dedup -f f.rbf "${big[@]}" -q items.txt 2> err.txt | head -3 > out.txt
rc=${PIPESTATUS[0]}
check "closed pipe exit status" 141 "$rc"
check "closed pipe: head got its lines" $'ev1\nev2\nev3' "$(cat out.txt)"
check_contains "closed pipe says what it kept" "output closed" "$(cat err.txt)"
saved=$(ls redbloom-dedup-unprinted-*.txt)
check "closed pipe: one line of stderr" 1 "$(wc -l < err.txt)"
held=$(committed f.rbf items.txt)
# The saved lines are the end of what was committed, in input order, at most one batch (the
# pipe took the lines before them, or part of that batch's).
kept=$(wc -l < "$saved")
((kept >= 1 && kept <= 4096)) && passes=$((passes + 1)) ||
  { echo "FAIL: closed pipe saved $kept lines"; failures=$((failures + 1)); }
check "closed pipe: the saved lines end the committed input" \
  "$(head -n "$held" items.txt | tail -n "$kept")" "$(cat "$saved")"
check "closed pipe: saved items are committed" "$(wc -l < "$saved")" \
  "$("$redbloom" exists -f f.rbf -c -q "$saved")"
# Far more output than a pipe holds, so exists is still writing when head has gone.
seq 1 200000 | sed 's/^/many/' > many.txt
"$redbloom" add -q -f many.rbf -n 1e6 many.txt
"$redbloom" exists -f many.rbf many.txt 2> err.txt | head -1 > /dev/null
check "exists | head: exit status" 141 "${PIPESTATUS[0]}"
check "exists | head: quiet" "" "$(cat err.txt)"

# --- a later input that fails to read: what came before is committed and printed ---
rm -f f.rbf
run dedup -f f.rbf "${big[@]}" good.txt /proc/self/mem
check "failed input exit status" 2 "$rc"
check "failed input: first input printed" 5000 "$(grep -c good <<< "$out")"
check_contains "failed input message" "cannot read /proc/self/mem" "$err"
check_contains "failed input: what was committed" "committed the first 5000 input items" "$err"
check "failed input: committed = printed" 5000 "$(committed f.rbf good.txt)"

# --- a stalled stream: each line comes out promptly, not at 64 KiB or at the end ---
rm -f f.rbf fifo && mkfifo fifo
(for i in 1 2 3 4 5; do
  echo "ev$i"
  echo "$i $EPOCHREALTIME" >> sent.txt
  sleep 1
done) > fifo &
"$redbloom" dedup -f f.rbf -q < fifo | while read -r line; do
  echo "${line#ev} $EPOCHREALTIME" >> got.txt
done
latencies=$(join sent.txt got.txt | awk '{ printf "%d\n", ($3 - $2) * 1000 }')
echo "latency per line (ms): $(echo $latencies)"
check "stalled stream: five lines" 5 "$(echo "$latencies" | wc -l)"
median=$(echo "$latencies" | sort -n | sed -n 3p)
slowest=$(echo "$latencies" | sort -n | tail -1)
((median <= 200)) && passes=$((passes + 1)) ||
  { echo "FAIL: median line latency ${median} ms > 200"; failures=$((failures + 1)); }
((slowest <= 1000)) && passes=$((passes + 1)) ||
  { echo "FAIL: a line waited ${slowest} ms"; failures=$((failures + 1)); }

# --- capacity ---
rm -f f.rbf
run add -f f.rbf <<< "x"
check_contains "implicit create note" "created filter f.rbf" "$err"
check_contains "implicit create note says the default" "the default size, -n 1e6 -p 0.01" "$err"
check_contains "implicit create note says how to choose" "-n ITEMS -p RATE" "$err"
run add -f g.rbf -q <<< "x"
check_contains "implicit create: -q still says a filter was made" "created filter g.rbf" "$err"
check_contains "implicit create: -q says its size is the default" "the default size, -n 1e6 -p 0.01" "$err"
run dedup -f g.rbf -q <<< "x"
check "an existing filter under -q: nothing said" "" "$err"
run dedup -f gw.rbf --window 10m <<< "x"
check_contains "implicit windowed create: the default size" \
  "the default size, -n 1e6 items per window -p 0.01" "$err"
run dedup -f gp.rbf --window 10m -n 5000 <<< "x"
check_contains "implicit windowed create: the default rate" "the default error rate, -p 0.01" "$err"
run create -f gc.rbf
check_contains "create without a size: says the default" "(the default size, -n 1e6 -p 0.01)" "$out"
run create -f gs.rbf -n 5000 -p 0.001
check "create with a size: no default named" "" "$(grep default <<<"$out")"
run create -f small.rbf -n 1000 -p 0.01
seq 1 3000 > three-thousand.txt
run add -f small.rbf three-thousand.txt
check "over capacity: still exit 0" 0 "$rc"
check "over capacity: warned once" 1 "$(grep -c 'past its capacity of 1000' <<< "$err")"
check_contains "over capacity: the rate now" "false-positive rate is now about" "$err"
run info -f small.rbf
check_contains "info flags over capacity" "OVER CAPACITY" "$out"
run info -f small.rbf --json
check_contains "info json over capacity" '"over_capacity": true' "$out"
run info -f f.rbf --json
check_contains "info json not over capacity" '"over_capacity": false' "$out"
run create -f small.rbf -n 1000 -p 0.01 --force
run dedup -f small.rbf --on-full error three-thousand.txt
check "on-full error exit status" 3 "$rc"
check_contains "on-full error: committed count" \
  "committed the first 3000 input items (their output is printed)" "$err"
check "on-full error: they are committed" 3000 "$(committed small.rbf three-thousand.txt)"
check "on-full error: output = the new ones" "$(grep -c '' <<< "$out")" \
  "$("$redbloom" exists -f small.rbf -c -q <<< "$out")"
check_contains "on-full error: why" "past its capacity of 1000" "$err"
run dedup -f small.rbf --on-full error <<< "y"
check "on-full error on a full filter: exit 3 before anything" 3 "$rc"
check_contains "on-full error on a full filter: nothing committed" "committed the first 0" "$err"
run create -f small.rbf -n 1000 -p 0.01 --force
run load -f small.rbf three-thousand.txt
check_contains "load warns past capacity" "past its capacity of 1000" "$err"
run dedup -f small.rbf --on-full sometimes <<< "y"
check "bad --on-full" 2 "$rc"

# --- --json: stderr carries only JSON objects, one per line ---
rm -f j.rbf
printf 'a\n\nb\0c\nd\n' > mixed.txt
"$redbloom" dedup -f j.rbf -n 2 -p 0.01 --json mixed.txt > /dev/null 2> err.txt
err=$(cat err.txt)
check "json: every stderr line is an object" 0 "$(grep -cv '^{"type": ".*}$' <<< "$err")"
check_contains "json: the note" '"type": "note"' "$err"
check_contains "json: the NUL warning" '"type": "warning"' "$err"
check_contains "json: the summary" '"type": "summary", "command": "dedup"' "$err"
check_contains "json: empty count" '"empty": 1' "$err"
check_contains "json: NUL count" '"with_nul": 1' "$err"
check_contains "json: capacity warning" "past its capacity of 2" "$err"
run dedup -f j.rbf --json --on-full sometimes < /dev/null
check "json: a parse error is JSON too" 0 "$(grep -cv '^{"type": "error".*}$' <<< "$err")"
run exists -f missing.rbf --json < /dev/null
check_contains "json: an error" '{"type": "error", "command": "exists", "message": ' "$err"
run plan -n 1e6 -p 0.01 --json
check_contains "plan json" '"hashes": 7' "$out"
run create -f c.rbf -n 1e4 --json
check_contains "create json" '"created": "c.rbf"' "$out"
run drop -f c.rbf --json
check_contains "drop json" '"dropped": "c.rbf"' "$out"

# --- the summary counts empty lines and NUL lines in text only when there are some ---
"$redbloom" dedup -f j.rbf mixed.txt > /dev/null 2> err.txt
check_contains "text summary: empty lines" "empty lines 1" "$(cat err.txt)"
run dedup -f j.rbf good.txt
[[ "$err" != *"empty lines"* ]] && passes=$((passes + 1)) ||
  { echo "FAIL: text summary shows zero counts: $err"; failures=$((failures + 1)); }

# --- a windowed file filter of more live links than the usual soft limit of open files ---
# (slices of 10 ms in a window of 6 s: each line opens a slice that stays live even if a loaded
# machine feeds the lines slowly; each live link keeps a descriptor, and the CLI raises its soft
# limit to the hard one)
"$redbloom" create -f slices.rbf -n 1e4 -p 0.01 --window 6000ms --slices 600 -q
for i in $(seq 1 200); do echo "many-$i"; sleep 0.006; done |
  "$redbloom" add -f slices.rbf --flush-interval 1 -q - 2> err.txt
check "many slices: add exit status" 0 "$?"
links=$(ls slices.rbf.s* | wc -l)
[[ $links -gt 24 ]] && passes=$((passes + 1)) ||
  { echo "FAIL: only $links live links to open"; failures=$((failures + 1)); }
out=$( (ulimit -Sn 24; echo many-200 | "$redbloom" exists -f slices.rbf -q - 2>&1) )
check "many slices: opened under a soft limit of 24 open files" "many-200" "$out"

echo "cli_stream_test: $passes passed, $failures failed"
[[ $failures -eq 0 ]]
