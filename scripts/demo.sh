#!/usr/bin/env bash
# The main job on the embedded default, no server: installs what is missing, builds, makes a
# sample click-log stream with duplicates (as a Kafka consumer sees redeliveries) and
# deduplicates it twice with one persistent filter file. The second run shows persistence:
# every event was already seen.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/build-progress.sh
source scripts/lib/build-progress.sh
echo "== dependencies (apt-get installs what is missing)"
scripts/install-deps.sh
build=${REDBLOOM_BUILD_DIR:-build-release}
echo "== building redbloom (Release) in $build: a few minutes the first time, seconds after"
started=$SECONDS
# The Python package is built for Debian's /usr/bin/python3 (its python3-* packages serve it).
# One line per finished target, and one at least every 10 s while a long step runs.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DREDBLOOM_BUILD_TESTS=OFF \
  -DREDBLOOM_BUILD_BENCH=OFF -DREDBLOOM_BUILD_PYTHON=ON -DPython_EXECUTABLE=/usr/bin/python3 |
  build_progress 10 "configuring"
cmake --build "$build" -j "$(nproc)" | build_progress 10
redbloom="$build/redbloom"
echo "   built $redbloom in $((SECONDS - started)) s"

work=${REDBLOOM_DEMO_DIR:-demo-output}
mkdir -p "$work"
events="$work/clicks.log"
filter="$work/clicks.rbf"
rm -f "$filter"

# 2,000,000 click events over 1,500,000 possible (user, ad) pairs: repeats are redeliveries.
awk 'BEGIN { srand(42); for (i = 0; i < 2000000; i++)
       printf "click:user%d:ad%d\n", int(rand() * 150000), int(rand() * 10) }' > "$events"
distinct=$(sort -u "$events" | wc -l)
echo "== sample: $events, $(wc -l < "$events") events, $distinct distinct (by sort -u)"

echo "== plan: a filter for 2e6 events at p = 1e-4"
"$redbloom" plan -n 2e6 -p 1e-4 --layout blocked

echo "== dedup, first run (creates $filter)"
"$redbloom" dedup -f "$filter" -n 2e6 -p 1e-4 --layout blocked "$events" > "$work/unique.log"
unique=$(wc -l < "$work/unique.log")
echo "   unique events written: $unique; exact: $distinct; new events wrongly taken for" \
     "repeats (false positives): $((distinct - unique))"

echo "== dedup, second run on the same file (everything was seen)"
"$redbloom" dedup -f "$filter" "$events" > "$work/unique-again.log"
echo "   unique events written: $(wc -l < "$work/unique-again.log")"

echo "== info"
"$redbloom" info -f "$filter"
