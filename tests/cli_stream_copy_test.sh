#!/usr/bin/env bash
# export/import/copy of windowed and growing filters from the command line: a file into one
# Redis server, that server's filter to another server, back into a file; every item is still
# seen, each live slice keeps its number, items and retirement time, and a growing filter's
# exact set goes along. Usage: cli_stream_copy_test.sh PATH/TO/redbloom
source "$(dirname "$0")/cli_common.sh"
source "$tests_dir/redis_shell.sh"

start_redis a
start_redis b
A=$(redis_uri a)
B=$(redis_uri b)
seq 1 30000 | sed 's/^/ev-/' > items.txt

# The live links as info --json lists them: slice, link, expiry and items of each.
links_of() {  # links_of FILTER-OPTIONS...
  "$redbloom" info "$@" --json | grep -o '"slice": [0-9]*, "link": [0-9]*, "created_unix_ns": [0-9]*, "expires_unix_ns": [0-9]*, "items": [0-9]*' |
    sed 's/"created_unix_ns": [0-9]*, //'
}

for kind in windowed growing; do
  if [[ $kind == windowed ]]; then
    opts=(--window 10m -n 20000 -p 0.001 --partition-size 4KiB)
  else
    opts=(--growth 2 -n 5000 -p 0.001 --partition-size 4KiB)
  fi
  run create --filter "$kind.rbf" "${opts[@]}"
  check "$kind: created" 0 "$rc"
  if [[ $kind == growing ]]; then
    "$redbloom" add -q --exact --filter "$kind.rbf" < items.txt
  else
    "$redbloom" add -q --filter "$kind.rbf" < items.txt
  fi
  check "$kind: added" 0 "$?"
  source_links=$(links_of --filter "$kind.rbf")
  check "$kind: the source has links" 1 "$(($(wc -l <<<"$source_links") >= 1))"

  run import --from "$kind.rbf" --redis "$A" --name "$kind"
  check "$kind: import exit" 0 "$rc"
  check_contains "$kind: import says the bytes" "bytes" "$err"
  [[ $kind == growing ]] && check_contains "$kind: the exact set went along" "exact set entries 30000" "$err"
  run copy --redis "$A" --name "$kind" --to-redis "$B"
  check "$kind: copy exit" 0 "$rc"
  run export --redis "$B" --name "$kind" --to "back-$kind.rbf"
  check "$kind: export exit" 0 "$rc"
  for where in "--redis $A --name $kind" "--redis $B --name $kind" "--filter back-$kind.rbf"; do
    # shellcheck disable=SC2086
    check "$kind at $where: the same live slices, items and expiries" "$source_links" \
      "$(links_of $where)"
    # shellcheck disable=SC2086
    check "$kind at $where: every item seen" "" "$("$redbloom" dedup -q $where < items.txt)"
  done
  run copy --redis "$A" --name "$kind" --to-redis "$B"
  check "$kind: a second copy onto it is refused" 2 "$rc"
  check_contains "$kind: and says so" "already exists" "$err"
done

echo "cli_stream_copy_test: $passes passed, $failures failed"
[[ $failures -eq 0 ]]
