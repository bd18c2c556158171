# Sourced by the CLI shell tests: strict mode, the redbloom binary given as $1 (made absolute),
# and a scratch directory as the working directory, removed on exit.
set -uo pipefail
redbloom=$(realpath "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
