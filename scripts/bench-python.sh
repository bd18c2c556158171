#!/usr/bin/env bash
# Python benchmark (the figures in docs/benchmarks.md): builds the Python package and bench_local
# in Release, starts a private redis-server, and measures from /usr/bin/python3 1M URLs through
# redbloom (file and Redis; list of str and numpy array) beside a hand-written Python Redis Bloom
# filter (redis-py) and a Python set, on a server without and one with redbloom.so; then the C++
# batch path on the same kind of filter (file, blocked, 1e6 URLs), for the per-item ratio.
#   scripts/bench-python.sh [--runs 5] [--items 1000000] [--redis-py-items 100000]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/private-redis.sh
trap private_redis_cleanup EXIT
private_redis_setup bench-python bench_local
cmake -S . -B "$build" -DREDBLOOM_BUILD_PYTHON=ON -DPython_EXECUTABLE=/usr/bin/python3 >/dev/null
cmake --build "$build" -j "$(nproc)" --target _redbloom redbloom_module >/dev/null
private_redis_describe
# A second server with redbloom's module: the library sends per-item work through it.
private_redis_server_args=(--loadmodule "$PWD/$build/module/redbloom.so")
private_redis_start_server bench-python no
module_uri="redis://127.0.0.1:${ports[1]}"
echo "with redbloom.so: $module_uri"
echo "== Python ($(/usr/bin/python3 --version))"
# The C++ batch path of the same kind of filter runs once in each of Python's runs, so the
# per-item ratio compares runs made side by side, on the same load.
PYTHONPATH="$build/python" /usr/bin/python3 python/bench/bench_python.py --redis "$uri" \
  --redis-module "$module_uri" --cxx-bench "$build/bench/bench_local" "$@"
