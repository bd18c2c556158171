#!/usr/bin/env bash
# TLS against plain TCP on the batched paths, side by side in one run: per-item dedup through
# the CLI (`redbloom dedup` of n distinct items into a fresh filter) and `add_many` through
# Python, on a server without the module (BITFIELD) and on one that loads redbloom.so. Each
# server answers on a plain port and on a TLS port (certificates made in the temp dir), so both
# transports meet the same server. Cases run --reps times in a random order per repetition; the
# table shows the median items/s of each, TLS as a share of plain, and the CPU time per item of
# the client process and of the server (its INFO cpu), which a busy machine disturbs less than
# the wall time.
#   scripts/bench-tls.sh [--n=1e6] [--reps=5] [--baseline=OLD_REDBLOOM] [--build=DIR]
#                        [--module-only]
# --build uses an existing build directory as it is (its CLI, module and Python package; the
# table names its build type) instead of building build-bench in Release.
# --baseline adds rows for another redbloom binary (a build from before a change) on both
# transports, in the same shuffled runs, to compare before and after.
# --module-only leaves out the server without the module (its BITFIELD runs take most of the
# time), so that more repetitions fit.
# The server binary is $REDBLOOM_REDIS_SERVER if set, else redis-server on PATH; the build dir
# is $REDBLOOM_BENCH_BUILD_DIR if set, else build-bench (Release; the Python package too).
set -euo pipefail
cd "$(dirname "$0")/.."

n=1000000
reps=5
baseline=""
existing_build=""
servers="0 1"
for arg in "$@"; do
  case "$arg" in
    --n=*) n=$(python3 -c "print(int(float('${arg#--n=}')))") ;;
    --reps=*) reps=${arg#--reps=} ;;
    --baseline=*) baseline=$(realpath "${arg#--baseline=}") ;;
    --build=*) existing_build=$(realpath "${arg#--build=}") ;;
    --module-only) servers="1" ;;
    *)
      echo "usage: scripts/bench-tls.sh [--n=1e6] [--reps=5] [--baseline=OLD_REDBLOOM]" \
        "[--build=DIR] [--module-only]" >&2
      exit 2
      ;;
  esac
done

# shellcheck source=scripts/lib/private-redis.sh
source scripts/lib/private-redis.sh
private_redis_tls=yes
if [[ -z "$existing_build" ]]; then
  private_redis_setup bench-tls redbloom_cli
  cmake -S . -B "$build" -DREDBLOOM_BUILD_PYTHON=ON -DPython_EXECUTABLE=/usr/bin/python3 >/dev/null
  cmake --build "$build" -j "$(nproc)" --target redbloom_module _redbloom >/dev/null
else
  # private_redis_setup without its build step.
  build=$existing_build
  server_bin=${REDBLOOM_REDIS_SERVER:-$(command -v redis-server || true)}
  [[ -x "$server_bin" ]] || {
    echo "bench-tls: redis-server not found (scripts/install-deps.sh --test)" >&2
    exit 1
  }
  dir=$(mktemp -d "${TMPDIR:-/tmp}/redbloom-bench-tls.XXXXXX")
  trap private_redis_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  private_redis_start_server bench-tls no
fi
module=$build/module/redbloom.so
pydir=$build/python
[[ -f "$module" && -f "$pydir/redbloom/__init__.py" ]] || {
  echo "bench-tls: the module or the Python package did not build" >&2
  exit 1
}
private_redis_server_args=(--loadmodule "$(realpath "$module")")
private_redis_start_server bench-tls no
ca="$dir/tls/ca.crt"

echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB," \
  "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "servers: $("$server_bin" --version | head -n1), no persistence; one without a module" \
  "(ports ${ports[0]} plain, ${tls_ports[0]} TLS), one with redbloom.so (ports ${ports[1]}" \
  "plain, ${tls_ports[1]} TLS); OpenSSL $(openssl version | cut -d' ' -f2)"
echo "build: $(grep -m1 CMAKE_BUILD_TYPE: "$build/CMakeCache.txt" | cut -d= -f2), n = $n," \
  "reps = $reps (medians shown), case order shuffled per rep"

seq 1 "$n" | sed 's/^/https:\/\/example.com\/item-/' >"$dir/items.txt"
cli=$build/redbloom

# server index (0: no module, 1: module) and transport → URI
uri_of() {
  if [[ $2 == tls ]]; then
    echo "rediss://127.0.0.1:${tls_ports[$1]}?tls_ca=$ca"
  else
    echo "redis://127.0.0.1:${ports[$1]}"
  fi
}

# The server's CPU seconds so far (user + sys), asked on its plain port.
server_cpu() {
  redis-cli -p "${ports[$1]}" info cpu | tr -d '\r' |
    awk -F: '/^used_cpu_(user|sys):/ {s += $2} END {printf "%.6f\n", s}'
}

# One case: prints "items/s client-CPU-µs/item server-CPU-µs/item".
run_case() {  # run_case cli|baseline|python SERVER TRANSPORT NAME
  local where before after
  where="$(uri_of "$2" "$3")#$4"
  before=$(server_cpu "$2")
  if [[ $1 == cli || $1 == baseline ]]; then
    local start end program=$cli
    [[ $1 == baseline ]] && program=$baseline
    start=$(date +%s.%N)
    /usr/bin/time -f "%U %S" -o "$dir/time.txt" \
      "$program" dedup -q -f "$where" -n "$n" -p 0.01 "$dir/items.txt" >/dev/null
    end=$(date +%s.%N)
    after=$(server_cpu "$2")
    "$cli" drop -f "$where" >/dev/null
    read -r user sys <"$dir/time.txt"
    python3 -c "print($n / ($end - $start), ($user + $sys) * 1e6 / $n, ($after - $before) * 1e6 / $n)"
  else
    local out
    out=$(PYTHONPATH="$pydir" /usr/bin/python3 - "$where" "$dir/items.txt" <<'PY'
import sys, time
import redbloom
where, path = sys.argv[1], sys.argv[2]
with open(path) as f:
    items = f.read().split("\n")[:-1]
with redbloom.open(where, capacity=len(items), error_rate=0.01) as f:
    start, cpu = time.perf_counter(), time.process_time()
    f.add_many(items)
    took, cpu = time.perf_counter() - start, time.process_time() - cpu
print(len(items) / took, cpu * 1e6 / len(items))
PY
)
    after=$(server_cpu "$2")
    "$cli" drop -f "$where" >/dev/null
    read -r rate client <<<"$out"
    python3 -c "print($rate, $client, ($after - $before) * 1e6 / $n)"
  fi
}

declare -A results client_cpu server_cpu_of
cases=()
for tool in cli python; do
  for server in $servers; do
    for transport in plain tls; do cases+=("$tool $server $transport"); done
  done
done
if [[ -n "$baseline" ]]; then
  for server in $servers; do
    for transport in plain tls; do cases+=("baseline $server $transport"); done
  done
fi
for ((rep = 1; rep <= reps; rep++)); do
  mapfile -t order < <(printf '%s\n' "${cases[@]}" | shuf)
  for c in "${order[@]}"; do
    read -r tool server transport <<<"$c"
    read -r rate client servercpu < <(run_case "$tool" "$server" "$transport" \
      "bench-$rep-$tool-$transport")
    printf 'rep %d/%d  %-8s %-9s %-5s %12.0f items/s  client %.3f  server %.3f CPU µs/item\n' \
      "$rep" "$reps" "$tool" "$([[ $server == 0 ]] && echo no-module || echo module)" \
      "$transport" "$rate" "$client" "$servercpu" >&2
    results[$c]+="$rate "
    client_cpu[$c]+="$client "
    server_cpu_of[$c]+="$servercpu "
  done
done

median() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
echo
echo "| Path | Server | plain items/s | TLS items/s | TLS / plain | client CPU µs/item plain / TLS | server CPU µs/item plain / TLS |"
echo "|---|---|---:|---:|---:|---:|---:|"
for tool in cli python; do
  for server in $servers; do
    plain=$(median "${results[$tool $server plain]}")
    tls=$(median "${results[$tool $server tls]}")
    printf '| %s | %s | %.0f | %.0f | %.2f | %.3f / %.3f | %.3f / %.3f |\n' \
      "$([[ $tool == cli ]] && echo "CLI dedup, per item" || echo "Python add_many")" \
      "$([[ $server == 0 ]] && echo "no module (BITFIELD)" || echo "redbloom.so")" \
      "$plain" "$tls" "$(python3 -c "print($tls / $plain)")" \
      "$(median "${client_cpu[$tool $server plain]}")" "$(median "${client_cpu[$tool $server tls]}")" \
      "$(median "${server_cpu_of[$tool $server plain]}")" \
      "$(median "${server_cpu_of[$tool $server tls]}")"
  done
done
if [[ -n "$baseline" ]]; then
  echo
  echo "This build against $baseline, CLI dedup per item:"
  echo
  echo "| Server | transport | baseline items/s | this build items/s | this build / baseline | client CPU µs/item baseline / this build | server CPU µs/item baseline / this build |"
  echo "|---|---|---:|---:|---:|---:|---:|"
  for server in $servers; do
    for transport in plain tls; do
      old=$(median "${results[baseline $server $transport]}")
      new=$(median "${results[cli $server $transport]}")
      printf '| %s | %s | %.0f | %.0f | %.2f | %.3f / %.3f | %.3f / %.3f |\n' \
        "$([[ $server == 0 ]] && echo "no module (BITFIELD)" || echo "redbloom.so")" \
        "$transport" "$old" "$new" "$(python3 -c "print($new / $old)")" \
        "$(median "${client_cpu[baseline $server $transport]}")" \
        "$(median "${client_cpu[cli $server $transport]}")" \
        "$(median "${server_cpu_of[baseline $server $transport]}")" \
        "$(median "${server_cpu_of[cli $server $transport]}")"
    done
    old_ratio=$(python3 -c "print($(median "${results[baseline $server tls]}") / $(median "${results[baseline $server plain]}"))")
    new_ratio=$(python3 -c "print($(median "${results[cli $server tls]}") / $(median "${results[cli $server plain]}"))")
    printf '| %s | TLS / plain | %.2f | %.2f | | | |\n' \
      "$([[ $server == 0 ]] && echo "no module (BITFIELD)" || echo "redbloom.so")" \
      "$old_ratio" "$new_ratio"
  done
fi
