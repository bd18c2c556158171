#!/usr/bin/env bash
# dedup as a pipeline stage: throughput on a 10M-line file (fresh filter file each run), and the
# latency of each line of a stream that sends one line a second.
#   scripts/bench-stream.sh [--baseline PATH/TO/old/redbloom] [--runs N] [--lines N]
# With --baseline, the two binaries run alternately on the same input and the table gives both
# medians and their ratio. Uses build-release/redbloom (scripts/demo.sh builds it), or
# $REDBLOOM_BIN.
set -euo pipefail
cd "$(dirname "$0")/.."
redbloom=$(realpath "${REDBLOOM_BIN:-build-release/redbloom}")
baseline=""
runs=5
lines=10000000
while [[ $# -gt 0 ]]; do
  case $1 in
    --baseline) baseline=$(realpath "$2"); shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --lines) lines=$2; shift 2 ;;
    *) echo "usage: $0 [--baseline PATH] [--runs N] [--lines N]" >&2; exit 2 ;;
  esac
done
[[ -x "$redbloom" ]] || { echo "bench-stream: no $redbloom (run scripts/demo.sh first)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Click-log-shaped lines, a third of them repeats.
awk -v n="$lines" 'BEGIN { srand(7); for (i = 0; i < n; i++)
  printf "click:user%d:ad%d:%d\n", int(rand() * n / 30), int(rand() * 10), i % 3 }' > "$work/in.txt"

# seconds BINARY: one dedup of the whole file into a fresh filter, output to a file.
seconds() {
  rm -f "$work/f.rbf"
  local start end
  start=$EPOCHREALTIME
  "$1" dedup -f "$work/f.rbf" -n "$lines" -p 0.001 -q "$work/in.txt" > "$work/out.txt"
  end=$EPOCHREALTIME
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f\n", b - a }'
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

new_times=()
old_times=()
for r in $(seq 1 "$runs"); do
  [[ -n "$baseline" ]] && old_times+=("$(seconds "$baseline")")
  new_times+=("$(seconds "$redbloom")")
done
new_median=$(printf '%s\n' "${new_times[@]}" | median)
echo "dedup of $lines lines, $runs runs each (seconds): this build ${new_times[*]}"
awk -v n="$lines" -v t="$new_median" \
  'BEGIN { printf "this build: median %.3f s, %.2fM lines/s\n", t, n / t / 1e6 }'
if [[ -n "$baseline" ]]; then
  old_median=$(printf '%s\n' "${old_times[@]}" | median)
  echo "baseline: ${old_times[*]}"
  awk -v n="$lines" -v t="$old_median" -v u="$new_median" 'BEGIN {
    printf "baseline:   median %.3f s, %.2fM lines/s; this build takes %.3fx the baseline time\n",
      t, n / t / 1e6, u / t }'
fi

# Latency: ten lines, one a second, through a FIFO; the time from writing a line to reading
# its output.
latency() {  # latency BINARY
  rm -f "$work/s.rbf" "$work/fifo" "$work/sent" "$work/got"
  mkfifo "$work/fifo"
  (for i in $(seq 1 10); do
    echo "ev$i"
    echo "$i $EPOCHREALTIME" >> "$work/sent"
    sleep 1
  done) > "$work/fifo" &
  "$1" dedup -f "$work/s.rbf" -q < "$work/fifo" | while read -r line; do
    echo "${line#ev} $EPOCHREALTIME" >> "$work/got"
  done
  wait
  join <(sort "$work/sent") <(sort "$work/got") | awk '{ printf "%.0f\n", ($3 - $2) * 1000 }' |
    sort -n | tr '\n' ' '
}
echo "latency per line, 1 line/s, ms (sorted): this build $(latency "$redbloom")"
if [[ -n "$baseline" ]]; then
  echo "latency per line, 1 line/s, ms (sorted): baseline   $(latency "$baseline")"
fi
