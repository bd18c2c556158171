#!/usr/bin/env bash
# redbloom.so benchmark: builds bench/bench_module and the module in Release, starts private
# redis-servers (no persistence) on free loopback ports in a temp dir: one without modules, one
# with redbloom.so (default LAYOUT blocked), one with redbloom.so LAYOUT classic, one with
# redbloom.so DEFAULT_FORMAT redisbloom (RedisBloom-format filters), one with the no-op floor
# (bench/noop_module.cpp: BF.MADD / BF.MEXISTS that only reply) and, with --redisbloom, one with
# that RedisBloom module. Then, per --n, runs bench_module against them all (BF.MADD /
# BF.MEXISTS, RB.MADD / RB.MEXISTS, redbloom's own filter through the module and through stock
# Redis, RedisBloom; 1 and 4 commands in flight; memory per filter) and prints its
# markdown tables, medians of --reps runs, randomly interleaved; then redis-benchmark's BF.ADD
# latency against each module's server. The servers are killed by pid on exit, whatever happens.
# --before=PATH.so adds a server with another build of redbloom.so, DEFAULT_FORMAT redisbloom,
# for a before/after comparison in the same run.
#   scripts/bench-module.sh [--n=1e6,1e7] [--reps=3] [--redisbloom=PATH.so] [--before=PATH.so]
#                           [--only=SUBSTRING]
# Other --key=value arguments go to bench_module as they are (bench/bench_module.cpp).
# The server binary is $REDBLOOM_REDIS_SERVER if set, else redis-server on PATH; the build dir
# is $REDBLOOM_BENCH_BUILD_DIR if set, else build-bench.
set -euo pipefail
cd "$(dirname "$0")/.."

sizes=1e6,1e7
reps=3
redisbloom=""
before=""
passed=()
for arg in "$@"; do
  case $arg in
    --n=*) sizes=${arg#--n=} ;;
    --reps=*) reps=${arg#--reps=} ;;
    --redisbloom=*) redisbloom=${arg#--redisbloom=} ;;
    --before=*) before=${arg#--before=} ;;
    --help | -h)
      sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *) passed+=("$arg") ;;
  esac
done
if [[ -n "$redisbloom" && ! -r "$redisbloom" ]]; then
  echo "bench-module: --redisbloom=$redisbloom: no such readable file" >&2
  exit 2
fi
if [[ -n "$redisbloom" ]]; then redisbloom=$(realpath "$redisbloom"); fi
if [[ -n "$before" && ! -r "$before" ]]; then
  echo "bench-module: --before=$before: no such readable file" >&2
  exit 2
fi
if [[ -n "$before" ]]; then before=$(realpath "$before"); fi

# shellcheck source=scripts/lib/private-redis.sh
source scripts/lib/private-redis.sh
start=$SECONDS
private_redis_setup bench-module bench_module # builds bench_module, starts the stock server
cmake --build "$build" -j "$(nproc)" --target redbloom_module bench_noop_module >/dev/null
module=$(realpath "$build/module/redbloom.so")
noop_module=$(realpath "$build/bench/bench_noop_module.so")

# A server with a module: private_redis_start_server runs $server_bin, so it runs a wrapper
# that execs the real server with the module's arguments (the pid is the server's).
stock_server=$server_bin
with_module() { # NAME MODULE-ARGS...
  local wrapper="$dir/$1.sh"
  shift
  printf '#!/bin/sh\nexec %q "$@" --loadmodule' "$stock_server" >"$wrapper"
  printf ' %q' "$@" >>"$wrapper"
  printf '\n' >>"$wrapper"
  chmod +x "$wrapper"
  server_bin=$wrapper
  private_redis_start_server bench-module no
  server_bin=$stock_server
  echo "redis://127.0.0.1:${ports[-1]}"
}
stock_uri=$uri
# Not in $(...): the subshell would lose ports and pids. Each URI is the last line it printed.
with_module blocked "$module" >"$dir/uri"
blocked_uri=$(tail -n1 "$dir/uri")
with_module classic "$module" LAYOUT classic >"$dir/uri"
classic_uri=$(tail -n1 "$dir/uri")
with_module rbformat "$module" DEFAULT_FORMAT redisbloom >"$dir/uri"
rbformat_uri=$(tail -n1 "$dir/uri")
with_module floor "$noop_module" >"$dir/uri"
floor_uri=$(tail -n1 "$dir/uri")
servers=(--stock="$stock_uri" --blocked="$blocked_uri" --classic="$classic_uri"
  --rbformat="$rbformat_uri" --floor="$floor_uri")
if [[ -n "$redisbloom" ]]; then
  with_module redisbloom "$redisbloom" >"$dir/uri"
  servers+=(--redisbloom="$(tail -n1 "$dir/uri")")
fi
if [[ -n "$before" ]]; then
  with_module before "$before" DEFAULT_FORMAT redisbloom >"$dir/uri"
  servers+=(--rbformat-before="$(tail -n1 "$dir/uri")")
fi

echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB," \
  "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "servers: $("$server_bin" --version | head -n1), no persistence, pids ${pids[*]}" \
  "(stock, redbloom.so, redbloom.so LAYOUT classic, redbloom.so DEFAULT_FORMAT redisbloom," \
  "no-op floor${redisbloom:+, $redisbloom}${before:+, $before DEFAULT_FORMAT redisbloom})"
echo "module: $module"
echo "client and servers share these $(nproc) cores; one case runs at a time"

IFS=, read -r -a ns <<<"$sizes"
for n in "${ns[@]}"; do
  private_redis_run "$build/bench/bench_module" "${servers[@]}" --n="$n" --reps="$reps" \
    "${passed[@]}"
done
if command -v redis-benchmark >/dev/null; then
  echo
  redis-benchmark --version | head -n1
  private_redis_run "$build/bench/bench_module" "${servers[@]}" --reps="$reps" \
    --redis-benchmark="$(command -v redis-benchmark)" --latency-only "${passed[@]}"
else
  echo "redis-benchmark not found: no latency table (scripts/install-deps.sh --test)" >&2
fi
echo
echo "total time: $((SECONDS - start)) s"
