#!/usr/bin/env bash
# Records benchmark: redbloom dedup on whole lines against dedup with a key (--key-field on
# tab-separated lines, --key-field --csv on CSV lines, --json-key on JSON Lines), the same
# records each time, into a new local filter in a temp dir, output to /dev/null. Prints the
# median items/s (from the command's --json summary) of --reps runs of each case, interleaved,
# side by side with the whole-line rate of the same file.
#   scripts/bench-records.sh [--n=2000000] [--reps=5] [--build=DIR]
# The binary is DIR/redbloom (default build-bench, configured and built in Release if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
n=2000000
reps=5
build=${REDBLOOM_BENCH_BUILD_DIR:-build-bench}
for arg in "$@"; do
  case $arg in
    --n=*) n=${arg#--n=} ;;
    --reps=*) reps=${arg#--reps=} ;;
    --build=*) build=${arg#--build=} ;;
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
  }
}'

cases=(tsv-line tsv-key csv-line csv-key json-line json-key)
args_of() {
  case $1 in
    tsv-line) echo "$dir/r.tsv" ;;
    tsv-key) echo "--key-field 2 $dir/r.tsv" ;;
    csv-line) echo "$dir/r.csv" ;;
    csv-key) echo "--key-field 2 --csv $dir/r.csv" ;;
    json-line) echo "$dir/r.jsonl" ;;
    json-key) echo "--json-key event.id $dir/r.jsonl" ;;
  esac
}
declare -A rates
for ((rep = 0; rep < reps; rep++)); do
  for c in "${cases[@]}"; do
    rm -f "$dir/f.rbf"
    # shellcheck disable=SC2046
    rate=$("$redbloom" dedup -f "$dir/f.rbf" -n "$n" -p 0.001 --json $(args_of "$c") \
      2>&1 >/dev/null | sed -n 's/.*"items_per_second": \([0-9.]*\).*/\1/p')
    rates[$c]+="$rate "
  done
done
median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END {
  print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

echo "command: scripts/bench-records.sh --n=$n --reps=$reps ($(nproc) cores, $(date -u +%F))"
echo
echo "| input | whole-line items/s | keyed items/s | keyed / whole-line | key option |"
echo "|---|---|---|---|---|"
for pair in "tsv:--key-field 2" "csv:--key-field 2 --csv" "json:--json-key event.id"; do
  kind=${pair%%:*}
  line=$(median <<<"${rates[$kind-line]}")
  key=$(median <<<"${rates[$kind-key]}")
  awk -v k="$kind" -v l="$line" -v y="$key" -v o="${pair#*:}" \
    'BEGIN { printf "| %s | %.0f | %.0f | %.2f× | `%s` |\n", k, l, y, y / l, o }'
done
