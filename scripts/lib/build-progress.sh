# shellcheck shell=bash
# Sourced by scripts/demo.sh. build_progress [SECONDS [STEP]] reads a `cmake --build` output
# on stdin and prints one line per finished target, plus one at least every SECONDS (default
# 10) while a long step runs (a big source file, a link; STEP names the one before the first
# line, e.g. configuring), so that a slow build always shows it is moving. Compiler messages
# go to stderr and pass by it.
build_progress() {
  local every=${1:-10} step=${2:-starting} started=$SECONDS shown=$SECONDS line="" partial=""
  local status
  while true; do
    if IFS= read -r -t "$every" line; then
      line=$partial$line
      partial=""
      [[ $line =~ ^\[\ *[0-9]+(%|/[0-9]+)\]\  ]] || continue  # make's [ 42%], Ninja's [7/80]
      step=$line
      # A finished target, or any step once SECONDS passed without a line: many quick
      # compiles in a row print steps but no finished target for a long time.
      if [[ $line == *"Built target"* ]] || ((SECONDS - shown >= every)); then
        echo "   $line"
        shown=$SECONDS
      fi
    else
      status=$?
      ((status > 128)) || break # the build's output ended
      partial+=$line            # a timeout keeps what it read of an unfinished line
      echo "   ... $((SECONDS - started)) s, still at: $step"
      shown=$SECONDS
    fi
  done
}
