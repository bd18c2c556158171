#!/usr/bin/env bash
# `redbloom dedup` against what a shell user would run instead on the same input: the exact
# `awk '!seen[$0]++'` (keeps the first of each line, in order, all lines in memory) and
# `sort -u` (exact, but the output is sorted and nothing is printed before the input ends).
# Click-log-shaped lines, a third of them repeats; each run a fresh filter file; the tools run
# one after another in a rotating order, --runs times; wall seconds and peak memory (max RSS).
#   scripts/bench-dedup-tools.sh [--runs N] [--lines N] [--json FILE]
# Uses build-release/redbloom (scripts/demo.sh builds it), or $REDBLOOM_BIN. --json writes
# every run's figures (for scripts/plot-benchmarks.py).
set -euo pipefail
cd "$(dirname "$0")/.."
redbloom=$(realpath "${REDBLOOM_BIN:-build-release/redbloom}")
runs=5
lines=2000000
json=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --lines) lines=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    *) echo "usage: $0 [--runs N] [--lines N] [--json FILE]" >&2; exit 2 ;;
  esac
done
[[ -x "$redbloom" ]] || { echo "bench-dedup-tools: no $redbloom (run scripts/demo.sh first)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "bench-dedup-tools: needs /usr/bin/time (Debian package time)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

awk -v n="$lines" 'BEGIN { srand(7); for (i = 0; i < n; i++)
  printf "click:user%d:ad%d:%d\n", int(rand() * n / 30), int(rand() * 10), i % 3 }' > "$work/in.txt"

# run TOOL: prints "seconds max_rss_kib output_lines" for one run of TOOL over the input.
run() {
  local start end
  rm -f "$work/f.rbf"
  start=$EPOCHREALTIME
  # shellcheck disable=SC2016  # '!seen[$0]++' is awk's program, not the shell's
  case $1 in
    redbloom) /usr/bin/time -f %M -o "$work/rss" \
      "$redbloom" dedup -f "$work/f.rbf" -n "$lines" -p 0.001 -q "$work/in.txt" > "$work/out.txt" ;;
    awk) /usr/bin/time -f %M -o "$work/rss" awk '!seen[$0]++' "$work/in.txt" > "$work/out.txt" ;;
    sort-u) /usr/bin/time -f %M -o "$work/rss" sort -u "$work/in.txt" > "$work/out.txt" ;;
  esac
  end=$EPOCHREALTIME
  awk -v a="$start" -v b="$end" -v rss="$(cat "$work/rss")" -v out="$(wc -l < "$work/out.txt")" \
    'BEGIN { printf "%.3f %d %d\n", b - a, rss, out }'
}

tools=(redbloom awk sort-u)
declare -A results
for r in $(seq 1 "$runs"); do
  for i in 0 1 2; do
    tool=${tools[$(((r + i) % 3))]}
    results[$tool]+="$(run "$tool");"
  done
done

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "dedup of $lines lines, $runs runs each, $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "| tool | median s | lines/s | × redbloom's time | max RSS MiB | lines out |"
echo "|---|---|---|---|---|---|"
base=$(tr ';' '\n' <<< "${results[redbloom]}" | awk 'NF { print $1 }' | median)
for tool in "${tools[@]}"; do
  runs_of=$(tr ';' '\n' <<< "${results[$tool]}" | awk 'NF')
  t=$(awk '{ print $1 }' <<< "$runs_of" | median)
  rss=$(awk '{ print $2 }' <<< "$runs_of" | median)
  out=$(awk 'NR == 1 { print $3 }' <<< "$runs_of")
  awk -v tool="$tool" -v t="$t" -v n="$lines" -v b="$base" -v rss="$rss" -v out="$out" \
    'BEGIN { printf "| %s | %.3f | %.2fM | %.2f | %.1f | %d |\n", tool, t, n / t / 1e6, t / b, rss / 1024, out }'
done

if [[ -n "$json" ]]; then
  {
    printf '{"lines": %d, "runs": %d, "date": "%s", "cpu": "%s", "cores": %d, "tools": {' \
      "$lines" "$runs" "$(date -u +%Y-%m-%dT%H:%MZ)" \
      "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)" "$(nproc)"
    sep=""
    for tool in "${tools[@]}"; do
      printf '%s"%s": [' "$sep" "$tool"
      tr ';' '\n' <<< "${results[$tool]}" | awk 'NF { printf "%s{\"seconds\": %s, \"max_rss_kib\": %s, \"lines_out\": %s}", (NR > 1 ? ", " : ""), $1, $2, $3 }'
      printf ']'
      sep=", "
    done
    printf '}}\n'
  } > "$json"
fi
