#!/usr/bin/env bash
# scripts/demo.sh's build progress (scripts/lib/build-progress.sh): finished targets are
# shown, other output is not, a step that stays silent longer than the interval still gets a
# line saying the build is at it (here a 1 s interval and a 3 s silent step), and a run of
# quick steps with no finished target shows one of them at least once an interval.
set -uo pipefail
# shellcheck source=scripts/lib/build-progress.sh
source "$(dirname "$0")/../scripts/lib/build-progress.sh"
failures=0
fail() { echo "FAIL: $1"; failures=$((failures + 1)); }

fake_build() {
  echo "[ 10%] Building CXX object CMakeFiles/a.dir/a.cpp.o"
  echo "[ 20%] Built target a"
  echo "[ 30%] Linking CXX shared module big.so"
  sleep 3
  echo "some tool's chatter on stdout"
  printf '[ 90%%] Built tar'  # an unfinished line across an interval
  sleep 2
  echo "get big"
}
out=$(fake_build | build_progress 1)
echo "$out"
grep -qxF "   [ 20%] Built target a" <<< "$out" || fail "the finished target is not shown"
grep -qxF "   [ 90%] Built target big" <<< "$out" || fail "a line split by a wait is not shown whole"
grep -q "still at: \[ 30%\] Linking CXX shared module big.so" <<< "$out" ||
  fail "no progress line during the silent link"
others=$(grep -vE '^   (\[ *[0-9]+%\] |\.\.\. [0-9]+ s, still at: )' <<< "$out")
[[ -z "$others" ]] || fail "other output is shown: $others"
# Quick compiles, a line every 0.3 s for about 3 s, no finished target among them.
quick_steps() {
  for i in $(seq 1 10); do
    echo "[ 5${i: -1}%] Building CXX object CMakeFiles/b.dir/b$i.cpp.o"
    sleep 0.3
  done
  echo "[ 60%] Built target b"
}
out=$(quick_steps | build_progress 1)
echo "$out"
steps_shown=$(grep -c "Building CXX object" <<< "$out")
((steps_shown >= 2)) || fail "a run of quick steps showed $steps_shown lines in about 3 s (1 s interval)"
[[ $failures -eq 0 ]] && echo "PASS"
[[ $failures -eq 0 ]]
