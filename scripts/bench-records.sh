#!/usr/bin/env bash
# Records benchmark: redbloom dedup on whole lines against dedup with a key (--key-field on
# tab-separated lines, --key-field --csv on CSV lines, --json-key on JSON Lines, plain and with
# escaped slashes), the same records each time, into a new local filter in a temp dir, output
# to /dev/null. Prints the median items/s (from the command's --json summary) of --reps runs of
# each case, interleaved, side by side with the whole-line rate of the same file, and the same
# ratio by CPU time (user + system, from bash's time).
#   scripts/bench-records.sh [--n=2000000] [--reps=5] [--build=DIR] [--before=BINARY]
# The binary is DIR/redbloom (default build-bench, configured and built in Release if missing).
# --before: another redbloom binary (an older build) whose --json-key runs are interleaved with
# the others, for a before/after row measured side by side under the same load.
set -euo pipefail
cd "$(dirname "$0")/.."
n=2000000
reps=5
build=${REDBLOOM_BENCH_BUILD_DIR:-build-bench}
before=
for arg in "$@"; do
  case $arg in
    --n=*) n=${arg#--n=} ;;
    --reps=*) reps=${arg#--reps=} ;;
    --build=*) build=${arg#--build=} ;;
    --before=*) before=$(realpath "${arg#--before=}") ;;
    *) echo "bench-records: unknown argument $arg" >&2; exit 2 ;;
  esac
done
if [[ ! -x $build/redbloom ]]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DREDBLOOM_BUILD_TESTS=OFF \
    -DREDBLOOM_BUILD_PYTHON=OFF >/dev/null
  cmake --build "$build" -j2 --target redbloom_cli >/dev/null
fi
redbloom=$(realpath "$build/redbloom")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# n records, a key repeated once in four (n*3/4 distinct keys), a payload around the key so that
# the key is neither the first nor the last field; the key field is the same bytes in all three.
awk -v n="$n" -v dir="$dir" 'BEGIN {
  for (i = 0; i < n; i++) {
    key = sprintf("user-%09d", (i * 7919) % int(n * 3 / 4))
    t = sprintf("2026-11-26T08:%02d:%02dZ", i % 60, i % 59)
    p = sprintf("/items/%d?page=%d", i, i % 13)
    printf "%s\t%s\tGET\t%s\t200\n", t, key, p > dir "/r.tsv"
    printf "%s,%s,GET,\"%s,x\",200\n", t, key, p > dir "/r.csv"
    printf "{\"ts\":\"%s\",\"event\":{\"kind\":\"GET\",\"id\":\"%s\",", t, key > dir "/r.jsonl"
    printf "\"path\":\"%s\"},\"status\":200}\n", p > dir "/r.jsonl"
    # The same JSON with its slashes escaped, as some encoders write them.
    e = p
    gsub("/", "\\/", e)
    printf "{\"ts\":\"%s\",\"event\":{\"kind\":\"GET\",\"id\":\"%s\",", t, key > dir "/r-esc.jsonl"
    printf "\"path\":\"%s\"},\"status\":200}\n", e > dir "/r-esc.jsonl"
  }
}'

cases=(tsv-line tsv-key csv-line csv-key json-line json-key json-esc-line json-esc-key)
[[ -n $before ]] && cases+=(json-key-before json-esc-key-before)
args_of() {
  case $1 in
    tsv-line) echo "$dir/r.tsv" ;;
    tsv-key) echo "--key-field 2 $dir/r.tsv" ;;
    csv-line) echo "$dir/r.csv" ;;
    csv-key) echo "--key-field 2 --csv $dir/r.csv" ;;
    json-line) echo "$dir/r.jsonl" ;;
    json-key | json-key-before) echo "--json-key event.id $dir/r.jsonl" ;;
    json-esc-line) echo "$dir/r-esc.jsonl" ;;
    json-esc-key | json-esc-key-before) echo "--json-key event.id $dir/r-esc.jsonl" ;;
  esac
}
declare -A rates cpus
TIMEFORMAT='%3U %3S'
for ((rep = 0; rep < reps; rep++)); do
  for c in "${cases[@]}"; do
    rm -f "$dir/f.rbf"
    binary=$redbloom
    [[ $c == *-before ]] && binary=$before
    # shellcheck disable=SC2046
    { time rate=$("$binary" dedup -f "$dir/f.rbf" -n "$n" -p 0.001 --json $(args_of "$c") \
      2>&1 >/dev/null | sed -n 's/.*"items_per_second": \([0-9.]*\).*/\1/p'); } 2>"$dir/cpu"
    rates[$c]+="$rate "
    # Items per second of CPU time (user + system), which other jobs' load changes less.
    cpus[$c]+="$(awk -v n="$n" '{ print n / ($1 + $2) }' "$dir/cpu") "
  done
done
median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END {
  print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

echo "command: scripts/bench-records.sh --n=$n --reps=$reps${before:+ --before=$before} ($(nproc) cores, $(date -u +%F), load average $(cut -d' ' -f1-3 /proc/loadavg))"
echo
echo "| input | whole-line items/s | keyed items/s | keyed / whole-line | by CPU time | key option |"
echo "|---|---|---|---|---|---|"
# One row: the medians of the whole-line case and of a keyed case, by wall time and CPU time.
row() {
  local name=$1 keyed=$2 option=$3 line key cpu_line cpu_key
  line=$(median <<<"${rates[${name%% *}-line]}")
  key=$(median <<<"${rates[$keyed]}")
  cpu_line=$(median <<<"${cpus[${name%% *}-line]}")
  cpu_key=$(median <<<"${cpus[$keyed]}")
  awk -v k="$name" -v l="$line" -v y="$key" -v cl="$cpu_line" -v cy="$cpu_key" -v o="$option" \
    'BEGIN { printf "| %s | %.0f | %.0f | %.2f× | %.2f× | `%s` |\n", k, l, y, y / l, cy / cl, o }'
}
row tsv tsv-key "--key-field 2"
row csv csv-key "--key-field 2 --csv"
row json json-key "--json-key event.id"
row json-esc json-esc-key "--json-key event.id"
if [[ -n $before ]]; then
  row "json (before: $before)" json-key-before "--json-key event.id"
  row "json-esc (before: $before)" json-esc-key-before "--json-key event.id"
fi
