#!/usr/bin/env bash
# A filter file that is not what it should be: one that shrinks under a running command
# (truncated, or replaced in place by a shorter filter) is reported and the command exits 3,
# instead of dying by SIGBUS without a word; a FIFO (or other non-regular file) at the filter's
# path is refused at once instead of hanging. A windowed or growing filter on a full disk stops
# with the exact count of what it committed; files named like its link files are left alone.
# Usage: cli_file_faults_test.sh PATH/TO/redbloom
source "$(dirname "$0")/cli_common.sh"

pids_to_kill=()
trap 'for p in "${pids_to_kill[@]}"; do kill -KILL "$p" 2>/dev/null; done; rm -rf "$work"' EXIT

seq 1 20000 | sed 's/^/item-/' > items.txt
seq 1 200 | sed 's/^/new-/' > fresh.txt
"$redbloom" create -q -f small.rbf -n 10

# shrink COMMAND HOW: COMMAND reads from a FIFO; once it has answered the first items, the
# filter is shrunk (HOW: truncate | cp), then more items arrive.
shrink() {
  local command=$1 how=$2
  rm -f f.rbf fifo out.txt err.txt && mkfifo fifo
  "$redbloom" add -q -f f.rbf -n 1e6 items.txt
  # The first 100 lines are answered (dedup prints them: they are new; exists prints the ones
  # present), the next 100 come after the shrink.
  local input=items.txt
  [[ $command == dedup ]] && input=fresh.txt
  rm -f shrunk
  (head -n 100 "$input"
    for _ in $(seq 1 1200); do [[ -e shrunk ]] && break; sleep 0.05; done
    tail -n 100 "$input"
    exec sleep 60) > fifo &
  local writer=$!
  pids_to_kill+=("$writer")
  "$redbloom" "$command" -q -f f.rbf --flush-interval 0 < fifo > out.txt 2> err.txt &
  local pid=$!
  for _ in $(seq 1 3000); do [[ -s out.txt ]] && break; sleep 0.01; done
  check "$command answered before the shrink" 100 "$(wc -l < out.txt)"
  if [[ $how == truncate ]]; then truncate -s 4096 f.rbf; else cp small.rbf f.rbf; fi
  touch shrunk
  wait "$pid"
  local rc=$?
  kill -KILL "$writer" 2>/dev/null
  wait "$writer" 2>/dev/null
  check "$command, filter shrunk by $how: exit 3" 3 "$rc"
  check_contains "$command, filter shrunk by $how: says so" \
    "the filter file f.rbf changed size while in use" "$(cat err.txt)"
}
shrink exists truncate
shrink exists cp
shrink dedup truncate
shrink dedup cp

# A FIFO at the filter's path: refused, not waited on (each command is given 20 s).
rm -f f.rbf && mkfifo f.rbf
for args in "info -f f.rbf" "exists -f f.rbf" "diff --known f.rbf --check items.txt" \
  "drop -f f.rbf" "add -f f.rbf items.txt"; do
  # shellcheck disable=SC2086
  out=$(timeout 20 "$redbloom" $args < /dev/null 2>&1)
  rc=$?
  check "$args on a FIFO: refused (not hung)" 3 "$rc"
  check_contains "$args on a FIFO: says what it is" "f.rbf is a FIFO, not a filter file" "$out"
done
rm -f f.rbf && mkdir f.rbf
out=$("$redbloom" info -f f.rbf 2>&1)
check "a directory at the path" 3 "$?"
check_contains "a directory at the path: says so" "f.rbf is a directory" "$out"

# --- a growing filter on a full disk: the link it needs cannot be made. Exit 3 with the exact
# count: the lines printed are those a fresh filter given only the committed items prints, and
# the filter holds exactly what that one does (nothing past the count was set).
rm -rf small && mkdir small
seq 1 100000 | sed 's/^/grow-/' > many.txt
# A 1 MiB tmpfs in a private mount namespace, cut down after the filter is created to what it
# holds plus 100 KiB: links 0 to 4 fit, link 5 does not.
if ! unshare -rm bash -c "mount -t tmpfs -o size=1m tmpfs small && \
    '$redbloom' create -q -f small/g.rbf --growth 2 -n 1000 -p 0.01 && \
    mount -o remount,size=\$((\$(df -B1 --output=used small | tail -n 1) + 102400)) small && \
    { '$redbloom' dedup -f small/g.rbf many.txt > out.txt 2> err.txt; echo \$? > rc.txt; } && \
    cp small/g.rbf* . && ls small > left.txt"; then
  echo "FAIL: could not mount a small tmpfs (unshare -rm, mount -t tmpfs)"
  failures=$((failures + 1))
fi
check "full disk while growing: exit 3" 3 "$(cat rc.txt)"
check_contains "full disk while growing: says why" "No space left on device" "$(cat err.txt)"
committed=$(grep -o 'committed the first [0-9]*' err.txt | grep -o '[0-9]*$')
check "full disk while growing: gives the count" 1 "$((${committed:-0} > 1000))"
rm -rf replay && mkdir replay
"$redbloom" create -q -f replay/g.rbf --growth 2 -n 1000 -p 0.01
head -n "${committed:-0}" many.txt | "$redbloom" dedup -q -f replay/g.rbf > replay/out.txt
check "full disk while growing: printed every committed first sight" \
  "$(md5sum < replay/out.txt)" "$(md5sum < out.txt)"
check "full disk while growing: nothing set past the count" \
  "$("$redbloom" exists -q -f replay/g.rbf many.txt | md5sum)" \
  "$("$redbloom" exists -q -f g.rbf many.txt | md5sum)"
check "full disk while growing: no file of the failed link left" \
  "$(cd replay && ls g.rbf*)" "$(cat left.txt)"

# --- files named like a filter's link files are the user's: rotation and drop leave them, and
# one where a new link must go stops the add (exit 3, the file named, the count given).
"$redbloom" create -q -f w.rbf --window 10m -n 1000 -p 0.01
echo x | "$redbloom" add -q -f w.rbf
names=("w.rbf.s5.0" "w.rbf.s 12.3" "w.rbf.s+5.1" "w.rbf.s-3.0" "w.rbf.s05.0")
for name in "${names[@]}"; do echo "mine" > "$name"; done
run drop -f w.rbf
check "drop of a windowed filter: exit" 0 "$rc"
check "drop of a windowed filter: the control file went" 0 "$(ls w.rbf 2>/dev/null | wc -l)"
kept=0
for name in "${names[@]}"; do echo mine | cmp -s - "$name" && kept=$((kept + 1)); done
check "drop of a windowed filter: user files named like links kept" "${#names[@]}" "$kept"
"$redbloom" create -q -f grow.rbf --growth 2 -n 100 -p 0.01
echo "mine" > grow.rbf.s0.1
run add -f grow.rbf items.txt
check "a user file where a link must go: exit 3" 3 "$rc"
check_contains "a user file where a link must go: named" "grow.rbf.s0.1: a file this filter did not write is in the way" "$err"
check_contains "a user file where a link must go: the count" "add: committed the first 10" "$err"
check "a user file where a link must go: left as it was" same \
  "$(echo mine | cmp -s - grow.rbf.s0.1 && echo same)"

echo "$passes passed, $failures failed"
[[ $failures -eq 0 ]]
