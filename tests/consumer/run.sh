#!/usr/bin/env bash
# Builds and runs programs against an installed redbloom: with find_package(redbloom) (the full
# library, and redbloom::core alone, whose link line must not name hiredis), and with
# pkg-config. PREFIX: where it is installed; without it, the build tree is installed into a
# scratch prefix first.
# Usage: run.sh BUILD_DIR CONSUMER_SRC [PREFIX]
set -euo pipefail
build_dir=$1
consumer_src=$2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
prefix=${3:-}
if [[ -z "$prefix" ]]; then
  prefix=$scratch/prefix
  cmake --install "$build_dir" --prefix "$prefix" >/dev/null
fi
cmake -S "$consumer_src" -B "$scratch/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$scratch/build" --verbose > "$scratch/build.log"
"$scratch/build/consumer"
"$scratch/build/core_consumer"
"$scratch/build/kafka_consumer"
if readelf -d "$scratch/build/consumer" | grep -q rdkafka; then
  echo "FAIL: a consumer of redbloom::redbloom needs librdkafka at run time"
  exit 1
fi
link_line=$(grep -E 'core_consumer( |$)' "$scratch/build.log" | grep -- '-o core_consumer' || true)
if [[ -z "$link_line" ]]; then
  echo "FAIL: no link line for core_consumer in the build log"
  exit 1
fi
if grep -q hiredis <<< "$link_line"; then
  echo "FAIL: redbloom::core's link line names hiredis: $link_line"
  exit 1
fi
if readelf -d "$scratch/build/core_consumer" | grep -q hiredis; then
  echo "FAIL: core_consumer needs libhiredis at run time"
  exit 1
fi
echo "core consumer: no hiredis on its link line"
# pkg-config, for build systems that are not CMake.
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig:$prefix/lib/x86_64-linux-gnu/pkgconfig"
# shellcheck disable=SC2046
g++ -o "$scratch/pc_consumer" "$consumer_src/main.cpp" $(pkg-config --cflags --libs redbloom)
"$scratch/pc_consumer"
# shellcheck disable=SC2046
g++ -o "$scratch/pc_core_consumer" "$consumer_src/core_main.cpp" \
  $(pkg-config --cflags --libs redbloom-core)
"$scratch/pc_core_consumer"
# shellcheck disable=SC2046
g++ -o "$scratch/pc_kafka_consumer" "$consumer_src/kafka_main.cpp" \
  $(pkg-config --cflags --libs redbloom-kafka)
"$scratch/pc_kafka_consumer"
echo "pkg-config consumers: ok"
