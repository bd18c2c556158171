# Sourced by the CLI shell tests: strict mode, the redbloom binary given as $1 (made absolute),
# a scratch directory as the working directory (removed on exit), and the check helpers.
set -uo pipefail
redbloom=$(realpath "$1")
tests_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

failures=0
passes=0

check() {  # check NAME EXPECTED ACTUAL
  if [[ "$2" == "$3" ]]; then
    passes=$((passes + 1))
  else
    echo "FAIL: $1"
    echo "  expected: $(printf %q "$2")"
    echo "  actual:   $(printf %q "$3")"
    failures=$((failures + 1))
  fi
}

check_contains() {  # check_contains NAME NEEDLE HAYSTACK
  if [[ "$3" == *"$2"* ]]; then
    passes=$((passes + 1))
  else
    echo "FAIL: $1: $(printf %q "$3") does not contain $(printf %q "$2")"
    failures=$((failures + 1))
  fi
}

run() {  # run ARGS... ; sets out, err, rc
  out=$("$redbloom" "$@" 2>"$work/stderr")
  rc=$?
  err=$(cat "$work/stderr")
}
