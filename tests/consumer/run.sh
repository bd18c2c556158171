#!/usr/bin/env bash
# Installs the build tree's redbloom into a scratch prefix, then configures, builds and runs
# tests/consumer against it with find_package(redbloom).
set -euo pipefail
build_dir=$1
consumer_src=$2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cmake --install "$build_dir" --prefix "$scratch/prefix" >/dev/null
cmake -S "$consumer_src" -B "$scratch/build" -DCMAKE_PREFIX_PATH="$scratch/prefix" >/dev/null
cmake --build "$scratch/build" >/dev/null
"$scratch/build/consumer"
