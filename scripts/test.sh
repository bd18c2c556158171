#!/usr/bin/env bash
# The test command: installs the test dependencies, builds everything with -Werror and runs
# the whole suite with ctest; then builds again as users and packagers do (Release, tests on)
# and runs the CLI checks on that build. CI runs exactly this (.ci/run).
#   REDBLOOM_BUILD_DIR   build directory (default: build; the Release build goes to DIR-rel)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --test
build=${REDBLOOM_BUILD_DIR:-build}
jobs=$(nproc)
# Debian's python3-* packages serve /usr/bin/python3, which need not be the first python3 on PATH.
python=(-DPython_EXECUTABLE=/usr/bin/python3)

echo "== RelWithDebInfo build and the whole suite ($build)"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREDBLOOM_WERROR=ON \
  -DREDBLOOM_BUILD_PYTHON=ON "${python[@]}" >/dev/null
cmake --build "$build" -j "$jobs"
(cd "$build" && ctest --output-on-failure -j "$jobs")

echo "== Release build ($build-rel) and the CLI checks on it"
cmake -S . -B "$build-rel" -DCMAKE_BUILD_TYPE=Release -DREDBLOOM_WERROR=ON "${python[@]}" >/dev/null
# A default build prints no toolchain messages (warnings are errors already; this catches the
# linker's and lto-wrapper's, which -Werror does not cover).
cmake --build "$build-rel" -j "$jobs" 2>&1 | tee "$build-rel/build.log"
if grep -E 'lto-wrapper|warning:|note:' "$build-rel/build.log"; then
  echo "FAIL: the Release build printed the toolchain messages above"
  exit 1
fi
(cd "$build-rel" && ctest --output-on-failure -j "$jobs" -R '^cli\.(commands|stream)$')
