#!/usr/bin/env bash
# The test command: installs the test dependencies, builds everything with -Werror and runs
# the whole suite with ctest. CI runs exactly this (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --test
build=${REDBLOOM_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREDBLOOM_WERROR=ON >/dev/null
cmake --build "$build" -j "$(nproc)"
cd "$build"
ctest --output-on-failure -j "$(nproc)"
