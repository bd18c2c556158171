#!/usr/bin/env bash
# Server Bloom engines benchmark: per-item adds with answers on a key of the server's own Bloom
# engine (BF.*) through redbloom (the CLI's dedup, Python's add_many, the C++ library's
# add_many) against a raw pipelined BF.MADD client (bench/bench_engines.cpp, the same batch of
# items per command and commands in flight; also sending the library's BF.INSERT), and against
# redbloom's own filter on the same kind of server without a module (BITFIELD), with
# redbloom.so (RB.PARTADD), and in the process's memory (the CLI's and Python's own per-item
# work, no server). Builds in Release, starts private redis-servers (no persistence) on free
# loopback ports in a temp dir: one without modules, one with redbloom.so and, with
# --redisbloom, one with that RedisBloom build.
# Each case runs --reps times (5 by default), cases shuffled in each round, on a fresh key
# sized for the --n items (no growth); the table has the medians. The servers are killed by pid
# on exit, whatever happens.
#   scripts/bench-engines.sh [--n=1e6] [--reps=5] [--batch=1000] [--redisbloom=PATH.so]
# The server binary is $REDBLOOM_REDIS_SERVER if set, else redis-server on PATH; the build dir
# is $REDBLOOM_BENCH_BUILD_DIR if set, else build-bench.
set -euo pipefail
cd "$(dirname "$0")/.."

n=1e6
reps=5
batch=1000
redisbloom=""
while (($# > 0)); do
  case $1 in
    --n=*) n=${1#--n=} ;;
    --reps=*) reps=${1#--reps=} ;;
    --batch=*) batch=${1#--batch=} ;;
    --redisbloom=*) redisbloom=${1#--redisbloom=} ;;
    --redisbloom)
      shift
      redisbloom=${1:-}
      ;;
    --help | -h)
      sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "bench-engines: unknown argument $1 (see --help)" >&2
      exit 2
      ;;
  esac
  shift
done
if [[ -n "$redisbloom" && ! -r "$redisbloom" ]]; then
  echo "bench-engines: --redisbloom $redisbloom: no such readable file" >&2
  exit 2
fi
if [[ -n "$redisbloom" ]]; then redisbloom=$(realpath "$redisbloom"); fi
count=$(awk -v n="$n" 'BEGIN { printf "%d", n }')

# shellcheck source=scripts/lib/private-redis.sh
source scripts/lib/private-redis.sh
private_redis_setup bench-engines bench_engines # builds bench_engines, starts the stock server
cmake --build "$build" -j "$(nproc)" --target redbloom_cli redbloom_module _redbloom >/dev/null
module=$(realpath "$build/module/redbloom.so")
cli=$(realpath "$build/redbloom")
python_dir=$(realpath "$build/python")
export PYTHONPATH="$python_dir${PYTHONPATH:+:$PYTHONPATH}"

# A server with a module: a wrapper that execs the real server with --loadmodule (the pid
# private_redis_start_server records is the server's).
stock_server=$server_bin
with_module() { # NAME MODULE
  local wrapper="$dir/$1.sh"
  printf '#!/bin/sh\nexec %q "$@" --loadmodule %q\n' "$stock_server" "$2" >"$wrapper"
  chmod +x "$wrapper"
  server_bin=$wrapper
  private_redis_start_server bench-engines no
  server_bin=$stock_server
}
declare -A port_of
port_of[stock]=${ports[0]}
with_module redbloom "$module"
port_of[redbloom.so]=${ports[-1]}
engines=(redbloom.so)
if [[ -n "$redisbloom" ]]; then
  with_module redisbloom "$redisbloom"
  port_of[RedisBloom]=${ports[-1]}
  engines+=(RedisBloom)
fi

echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB," \
  "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load average" \
  "$(cut -d' ' -f1-3 /proc/loadavg)"
echo "servers: $("$server_bin" --version | head -n1), no persistence: stock on ${port_of[stock]}, redbloom.so ($module) on ${port_of[redbloom.so]}" \
  "${redisbloom:+, RedisBloom ($redisbloom) on ${port_of[RedisBloom]}}"
echo "client and servers share these $(nproc) cores; one case runs at a time"
echo "items: $count a run, new ones each run; $batch items a command, 8 commands in flight"

rcli() { redis-cli -p "$1" "${@:2}"; }
# The items of run R: the same text as bench_engines' (s3://bucket/dir/file<id>.pdf).
items_of() {
  awk -v first="$(($1 * count))" -v n="$count" \
    'BEGIN { for (i = 0; i < n; i++) printf "s3://bucket/dir/file%d.pdf\n", first + i }'
}

# One case: SERVER PATH RUN; appends "SERVER|PATH|items/s" to $dir/results. SERVER "memory":
# the CLI and Python on a filter in their own memory, what they do per item without a server.
run_case() {
  local server=$1 path=$2 run=$3 port=${port_of[$1]:-} rate
  local key="bench:$run" uri="redis://127.0.0.1:$port"
  if [[ $server == memory ]]; then
    items_of "$run" >"$dir/items.txt"
    case $path in
      cli) rate=$("$cli" dedup -f memory: -n "$count" -p 0.01 --json "$dir/items.txt" 2>&1 >/dev/null |
        /usr/bin/python3 -c 'import json, sys
for line in sys.stdin:
    record = json.loads(line)
    if record.get("type") == "summary": print(round(record["items_per_second"]))') ;;
      python) rate=$(/usr/bin/python3 - "$count" "$dir/items.txt" <<'PY'
import sys, time
import redbloom
items = open(sys.argv[2], "rb").read().split(b"\n")[:-1]
with redbloom.open("memory:", capacity=int(sys.argv[1]), error_rate=0.01) as seen:
    start = time.perf_counter()
    new = sum(seen.add_many(items))
    print(round(len(items) / (time.perf_counter() - start)))
PY
        ) ;;
    esac
    echo "$server|$path|$rate" >>"$dir/results"
    return
  fi
  case $path in
    raw*) rcli "$port" BF.RESERVE "$key" 0.01 "$count" >/dev/null ;;
    *bf) "$cli" create --engine bf --redis "$uri" --name "$key" -n "$count" -p 0.01 -q ;;
    *) "$cli" create --redis "$uri" --name "$key" -n "$count" -p 0.01 -q ;;
  esac
  items_of "$run" >"$dir/items.txt"
  case $path in
    raw | raw-insert)
      rate=$("$build/bench/bench_engines" --uri="$uri" --key="$key" --mode=raw \
        --command="$([[ $path == raw ]] && echo madd || echo insert)" \
        --first=$((run * count)) --n="$count" --batch="$batch" | awk '{ print $8 }')
      ;;
    library*)
      rate=$("$build/bench/bench_engines" --uri="$uri" --key="$key" --mode=library \
        --first=$((run * count)) --n="$count" | awk '{ print $8 }')
      ;;
    cli*)
      rate=$("$cli" dedup --redis "$uri" --name "$key" --json "$dir/items.txt" 2>&1 >/dev/null |
        /usr/bin/python3 -c 'import json, sys
for line in sys.stdin:
    record = json.loads(line)
    if record.get("type") == "summary": print(round(record["items_per_second"]))')
      ;;
    python*)
      rate=$(/usr/bin/python3 - "$uri#$key" "$dir/items.txt" <<'PY'
import sys, time
import redbloom
items = open(sys.argv[2], "rb").read().split(b"\n")[:-1]
with redbloom.open(sys.argv[1]) as seen:
    start = time.perf_counter()
    new = sum(seen.add_many(items))
    print(round(len(items) / (time.perf_counter() - start)))
PY
      )
      ;;
  esac
  # A fresh key each run: the memory of the last one is given back.
  "$cli" drop --redis "$uri" --name "$key"
  echo "$server|$path|$rate" >>"$dir/results"
}

cases=()
for engine in "${engines[@]}"; do
  cases+=("$engine raw" "$engine raw-insert" "$engine library-bf" "$engine cli-bf" "$engine python-bf")
done
cases+=("stock library" "stock cli" "stock python" "redbloom.so library" "redbloom.so cli"
  "redbloom.so python" "memory cli" "memory python")
: >"$dir/results"
run=0
for ((rep = 0; rep < reps; rep++)); do
  while read -r server path; do
    run_case "$server" "$path" "$run"
    run=$((run + 1))
  done < <(printf '%s\n' "${cases[@]}" | shuf)
done

/usr/bin/python3 - "$dir/results" "${engines[@]}" <<'PY'
import statistics, sys
results = {}
for line in open(sys.argv[1]):
    server, path, rate = line.strip().split("|")
    results.setdefault((server, path), []).append(float(rate))
engines = sys.argv[2:]
def cell(server, path):
    runs = results.get((server, path))
    if not runs: return "-"
    return f"{statistics.median(runs) / 1e6:.2f}M"
def ratio(server, path):
    runs, raw = results.get((server, path)), results.get((server, "raw"))
    if not runs or not raw: return ""
    return f" ({statistics.median(runs) / statistics.median(raw):.2f}x raw)"
print()
print("per-item adds with answers, items/s, median of %d runs" % len(results[(engines[0], "raw")]))
print()
print("| path | " + " | ".join(f"{e}'s BF.* key" for e in engines) +
      " | redbloom's filter, stock Redis (BITFIELD) | redbloom's filter, redbloom.so (RB.PARTADD) "
      "| redbloom's filter in the process's memory (no server) |")
print("|---|" + "---|" * (len(engines) + 3))
rows = [("raw BF.MADD client (hiredis)", "raw", None),
        ("raw client sending the library's `BF.INSERT … NOCREATE`", "raw-insert", None),
        ("C++ library `add_many`", "library-bf", "library"),
        ("CLI `dedup`", "cli-bf", "cli"),
        ("Python `add_many`", "python-bf", "python")]
for label, bf, own in rows:
    cells = [cell(e, bf) + ratio(e, bf) if bf != "raw" else cell(e, bf) for e in engines]
    cells.append(cell("stock", own) if own else "-")
    cells.append(cell("redbloom.so", own) if own else "-")
    cells.append(cell("memory", own) if own in ("cli", "python") else "-")
    print(f"| {label} | " + " | ".join(cells) + " |")
PY
