#!/usr/bin/env bash
# User-visible text names the user's job, never the project's internal words: no "seed 000",
# "the seed's algorithm" in the examples, benchmarks, scripts, Python package, CLI or docs
# (a random-number seed is fine). And the benchmarks print the row names docs/benchmarks.md
# shows, so a reader finds a printed row in the document.
# Usage: user_words_test.sh SOURCE_DIR
set -uo pipefail
cd "$1" || exit 1
failures=0

# Random-number seeds: --shuffle-seed and its value, Python's random.Random(seed) in tests,
# and bench_python.py's old option name --seed-items, kept as an alias of --redis-py-items.
internal=$(grep -rn -i -w -E 'seeds?' examples bench scripts python cli docs README.md |
  grep -v -E 'shuffle[-_]seed|\(seed %llu\)|--seed-items' |
  grep -v -E '^python/tests/[^:]*:[0-9]+:.*(def writer\(seed\)|random\.Random\(seed|for seed in|if seed %|args=\(seed,\))')
if [[ -n "$internal" ]]; then
  echo "FAIL: project-internal words in user-visible text:"
  echo "$internal"
  failures=$((failures + 1))
fi

# Row names the benchmarks print, as docs/benchmarks.md shows them.
for row in "5 hand-written: SETBIT+SADD / GETBIT+SISMEMBER" "hand-written SETBIT/GETBIT" \
  "redis-py filter add (Python, SETBIT pipelined)"; do
  if ! grep -rqF -- "$row" bench python/bench; then
    echo "FAIL: no benchmark prints the row '$row'"
    failures=$((failures + 1))
  fi
  if ! grep -qF -- "$row" docs/benchmarks.md; then
    echo "FAIL: docs/benchmarks.md has no row '$row'"
    failures=$((failures + 1))
  fi
done
echo "user_words_test: $failures failed"
((failures == 0))
