#!/usr/bin/env bash
# `redbloom dedup` against what a shell user would run instead on the same input: the exact
# `awk '!seen[$0]++'` (keeps the first of each line, in order, all lines in memory) and
# `sort -u` (exact, but the output is sorted and nothing is printed before the input ends).
# Click-log-shaped lines, a third of them repeats; each run a fresh filter file; the tools run
# one after another in a rotating order, --runs times; wall seconds, CPU seconds (user + system:
# on a busy machine they move less than wall time) and peak memory (max RSS).
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

# run TOOL: prints "seconds max_rss_kib output_lines cpu_seconds" for one run of TOOL.
run() {
  local start end
  rm -f "$work/f.rbf"
  start=$EPOCHREALTIME
  # shellcheck disable=SC2016  # '!seen[$0]++' is awk's program, not the shell's
  case $1 in
    redbloom) /usr/bin/time -f "%M %U %S" -o "$work/rss" \
      "$redbloom" dedup -f "$work/f.rbf" -n "$lines" -p 0.001 -q "$work/in.txt" > "$work/out.txt" ;;
    awk) /usr/bin/time -f "%M %U %S" -o "$work/rss" awk '!seen[$0]++' "$work/in.txt" > "$work/out.txt" ;;
    sort-u) /usr/bin/time -f "%M %U %S" -o "$work/rss" sort -u "$work/in.txt" > "$work/out.txt" ;;
  esac
  end=$EPOCHREALTIME
  read -r rss user sys < "$work/rss"
  awk -v a="$start" -v b="$end" -v rss="$rss" -v out="$(wc -l < "$work/out.txt")" \
    -v cpu="$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')" \
    'BEGIN { printf "%.3f %d %d %.2f\n", b - a, rss, out, cpu }'
}

load_before=$(cut -d' ' -f1 /proc/loadavg)
tools=(redbloom awk sort-u)
declare -A results
for r in $(seq 1 "$runs"); do
  for i in 0 1 2; do
    tool=${tools[$(((r + i) % 3))]}
    results[$tool]+="$(run "$tool");"
  done
done

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "dedup of $lines lines, $runs runs each, $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
  "load average $load_before before, $(cut -d' ' -f1 /proc/loadavg) after"
echo "| tool | median s | lines/s | × redbloom's time | CPU s | × redbloom's CPU | max RSS MiB | lines out |"
echo "|---|---|---|---|---|---|---|---|"
base=$(tr ';' '\n' <<< "${results[redbloom]}" | awk 'NF { print $1 }' | median)
base_cpu=$(tr ';' '\n' <<< "${results[redbloom]}" | awk 'NF { print $4 }' | median)
for tool in "${tools[@]}"; do
  runs_of=$(tr ';' '\n' <<< "${results[$tool]}" | awk 'NF')
  t=$(awk '{ print $1 }' <<< "$runs_of" | median)
  rss=$(awk '{ print $2 }' <<< "$runs_of" | median)
  cpu=$(awk '{ print $4 }' <<< "$runs_of" | median)
  out=$(awk 'NR == 1 { print $3 }' <<< "$runs_of")
  awk -v tool="$tool" -v t="$t" -v n="$lines" -v b="$base" -v rss="$rss" -v out="$out" \
    -v c="$cpu" -v bc="$base_cpu" 'BEGIN { printf "| %s | %.3f | %.2fM | %.2f | %.2f | %.2f | %.1f | %d |\n",
      tool, t, n / t / 1e6, t / b, c, c / bc, rss / 1024, out }'
done

if [[ -n "$json" ]]; then
  {
    printf '{"lines": %d, "runs": %d, "date": "%s", "load_average": [%s, %s], "cpu": "%s", "cores": %d, "tools": {' \
      "$lines" "$runs" "$(date -u +%Y-%m-%dT%H:%MZ)" "$load_before" "$(cut -d' ' -f1 /proc/loadavg)" \
      "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)" "$(nproc)"
    sep=""
    for tool in "${tools[@]}"; do
      printf '%s"%s": [' "$sep" "$tool"
      tr ';' '\n' <<< "${results[$tool]}" | awk 'NF { printf "%s{\"seconds\": %s, \"max_rss_kib\": %s, \"lines_out\": %s, \"cpu_seconds\": %s}", (NR > 1 ? ", " : ""), $1, $2, $3, $4 }'
      printf ']'
      sep=", "
    done
    printf '}}\n'
  } > "$json"
fi
