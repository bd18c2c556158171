#!/usr/bin/env bash
# A filter file that is not what it should be: one that shrinks under a running command
# (truncated, or replaced in place by a shorter filter) is reported and the command exits 3,
# instead of dying by SIGBUS without a word; a FIFO (or other non-regular file) at the filter's
# path is refused at once instead of hanging. Usage: cli_file_faults_test.sh PATH/TO/redbloom
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

echo "$passes passed, $failures failed"
[[ $failures -eq 0 ]]
