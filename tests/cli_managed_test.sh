#!/usr/bin/env bash
# The whole CLI tour on a server set up like a managed service (tests/managed_redis.sh: no
# default user, CONFIG renamed away, an ACL user limited to keys app:* without @dangerous; TLS
# only with MANAGED_TLS=1). Every command works there, or fails with a message naming the
# permission it lacks. No command reads or writes a key outside its filter's own names: each
# filter is used by a user whose key patterns allow only that filter's names (NAME, NAME:*),
# and the server's ACL LOG must show no refused key. MANAGED_TLS=1 runs it all over TLS.
# With PATH/TO/redbloom.so, the same server again with the module loaded (a service with a
# Bloom engine): the module's commands for redbloom's filters, BF.* for a BF key.
# Usage: cli_managed_test.sh PATH/TO/redbloom [PATH/TO/redbloom.so]
module=""
[[ $# -ge 2 ]] && module=$(realpath "$2")  # before cli_common.sh changes directory
source "$(dirname "$0")/cli_common.sh"
source "$tests_dir/managed_redis.sh"

start_managed_redis
APP=$(managed_uri app app-secret)
seq 1 20000 | sed 's/^/url-/' > a.txt
seq 10001 30000 | sed 's/^/url-/' > b.txt

# A user for one filter: its keys only, every command but @dangerous.
user_for() {  # user_for NAME... : prints the URI of a user allowed exactly those filters' keys
  # (in database $db, when set)
  local user="u$RANDOM$RANDOM" patterns=() name
  for name in "$@"; do patterns+=("~$name" "~$name:*"); done
  managed_cli acl setuser "$user" on ">pw-$user" resetkeys "${patterns[@]}" resetchannels \
    +@all -@dangerous > /dev/null
  managed_uri "$user" "pw-$user" "${db:-}"
}
refused_keys() {  # the keys the server refused anyone since the last call, one line each
  managed_cli acl log | awk 'prev == "reason" {r = $0} prev == "object" && r == "key" {print} {prev = $0}'
  managed_cli acl log reset > /dev/null
}
managed_cli acl log reset > /dev/null

# --- a plain filter: create, dedup, add, exists, info, diff, export, import, copy, drop ---
U=$(user_for app:urls)
run create --redis "$U" --name app:urls -n 100000 -p 0.001
check "create" 0 "$rc"
check_contains "create: made" "created app:urls on redis 127.0.0.1:$managed_port" "$out"
check_contains "create: the eviction policy that could not be checked is named" \
  "its maxmemory-policy could not be read" "$err"
run dedup --redis "$U" --name app:urls a.txt
check "dedup" 0 "$rc"
check "dedup: every line new" 20000 "$(wc -l <<< "$out")"
run dedup --redis "$U" --name app:urls b.txt
check "dedup: only the new half" "$(seq 20001 30000 | sed 's/^/url-/')" "$out"
run add --redis "$U" --name app:urls a.txt
check "add" 0 "$rc"
check_contains "add: all seen" "unique 0, duplicates 20000" "$err"
run exists --redis "$U" --name app:urls -c b.txt
check "exists" 20000 "$out"
seq 1 5000 | sed 's/^/absent-/' > absent.txt
run diff --known "$U#app:urls" --check absent.txt -q
check "diff: the absent items are orphans" "$(wc -l < absent.txt)" "$(wc -l <<< "$out")"
run info --redis "$U" --name app:urls --json
check "info" 0 "$rc"
check_contains "info: capacity" "\"capacity\": 100000" "$out"
run export --redis "$U" --name app:urls --to urls.rbf -q
check "export" 0 "$rc"
run exists -f urls.rbf -c b.txt
check "export: the file answers the same" 20000 "$out"
I=$(user_for app:imported)
run import --from urls.rbf --redis "$I" --name app:imported -q
check "import" 0 "$rc"
run exists --redis "$I" --name app:imported -c b.txt
check "import: answers the same" 20000 "$out"
C=$(user_for app:urls app:copied)
run copy --redis "$C" --name app:urls --to-redis "$C#app:copied" -q
check "copy on one server" 0 "$rc"
run exists --redis "$C" --name app:copied -c b.txt
check "copy: answers the same" 20000 "$out"
run copy --redis "$C" --name app:urls -q
check "copy onto itself refused (INFO refused: compared by address)" 2 "$rc"

# --- a bulk load into a filter it creates, with the exact set ---
E=$(user_for app:exact)
seq 1 200000 | sed 's/^/s3:\/\/bucket\/f/' > big.txt
run load --redis "$E" --name app:exact -n 300000 --exact big.txt
check "load --exact" 0 "$rc"
check_contains "load: exact entries" "exact set entries 200000" "$err"
{ head -n 1000 big.txt; seq 1 1000 | sed 's/^/s3:\/\/other\/f/'; } > check.txt
run diff --known "$E#app:exact" --check check.txt --exact -q
check "diff --exact: exactly the orphans" "$(seq 1 1000 | sed 's/^/s3:\/\/other\/f/')" "$out"
run info --redis "$E" --name app:exact
check "info of a filter with an exact set" 0 "$rc"

# --- windowed and growing filters ---
W=$(user_for app:window)
run create --redis "$W" --name app:window --window 10m --rate 1000/s -p 0.001
check "create --window" 0 "$rc"
run dedup --redis "$W" --name app:window a.txt
check "windowed dedup" 20000 "$(wc -l <<< "$out")"
run dedup --redis "$W" --name app:window b.txt
check "windowed dedup: only the new half" "$(seq 20001 30000 | sed 's/^/url-/')" "$out"
run exists --redis "$W" --name app:window -c a.txt
check "windowed exists" 20000 "$out"
run info --redis "$W" --name app:window
check_contains "windowed info" "windowed" "$out"
G=$(user_for app:growing)
run create --redis "$G" --name app:growing --growth 2 -n 2000 -p 0.001
check "create --growth" 0 "$rc"
run add --redis "$G" --name app:growing a.txt
check "growing add" 0 "$rc"
run exists --redis "$G" --name app:growing -c a.txt
check "growing: no false negatives" 20000 "$out"
run info --redis "$G" --name app:growing
check_contains "growing info" "growing" "$out"

# --- sharded over two databases (INFO refused: the servers told apart by address) ---
S="$(db=0 user_for app:sharded),$(db=1 user_for app:sharded)"
run dedup --redis "$S" --name app:sharded -n 100000 --partition-size 8KiB a.txt
check "sharded dedup" 20000 "$(wc -l <<< "$out")"
run exists --redis "$S" --name app:sharded -c b.txt
check "sharded exists" 10000 "$out"
run drop --redis "$S" --name app:sharded
check "sharded drop" 0 "$rc"

# --- the password from the environment, not the command line ---
NOPASS=${APP/:app-secret@/:@}
out=$(REDBLOOM_REDIS_PASSWORD=app-secret "$redbloom" exists --redis "$NOPASS" --name app:urls -c b.txt \
  2> "$work/stderr")
check "a user with the password in REDBLOOM_REDIS_PASSWORD" "0 20000" "$? $out"
run exists --redis "$NOPASS" --name app:urls -c b.txt
check "a user without a password logs in as that user, refused" 3 "$rc"
check_contains "the refusal is the server's" "WRONGPASS" "$err"

# --- drop everything, each with its own user ---
run drop --redis "$W" --name app:window
check "drop windowed" 0 "$rc"
run drop --redis "$G" --name app:growing
check "drop growing" 0 "$rc"
run drop --redis "$E" --name app:exact
check "drop with exact set" 0 "$rc"
run drop --redis "$I" --name app:imported
check "drop imported" 0 "$rc"
run drop --redis "$C" --name app:copied
check "drop copied" 0 "$rc"
run drop --redis "$U" --name app:urls
check "drop" 0 "$rc"
check "nothing left behind" "" "$(managed_cli --scan)"
check "no key outside a filter's own names was touched" "" "$(refused_keys)"

# --- what the user may not do is named ---
run create --redis "$APP" --name elsewhere -n 1000
check "a name outside the user's keys" 3 "$rc"
check_contains "names the key permission" "the Redis user may not use a key of this filter" "$err"
check_contains "says what would allow it" "~NAME ~NAME:*" "$err"
managed_cli acl setuser noscript on ">pw" "~app:*" resetchannels +@all -@dangerous -@scripting \
  > /dev/null
run create --redis "$(managed_uri noscript pw)" --name app:x -n 1000
check "no scripts allowed" 3 "$rc"
check_contains "names the command" "the Redis user may not run EVAL (NOPERM" "$err"
managed_cli acl setuser noload on ">pw" "~app:*" resetchannels +@all -@dangerous -script\|load \
  > /dev/null
run create --redis "$APP" --name app:w2 --window 1m --rate 10/s -q
# A windowed filter calls its script by the SHA1 computed on the client (EVALSHA, then EVAL once
# where the server does not have it yet): a user without SCRIPT LOAD uses it all the same.
run dedup --redis "$(managed_uri noload pw)" --name app:w2 a.txt
check "no SCRIPT LOAD needed" 0 "$rc"
check_contains "it read every line" "read 20000" "$err"
run drop --redis "$APP" --name app:w2
check "drop by the app user" 0 "$rc"
run exists --redis "$(managed_uri app wrong)" --name app:urls a.txt
check "wrong password" 3 "$rc"
check "the password is never printed" "no" "$([[ "$err" == *wrong@* ]] && echo yes || echo no)"

# --- a service with a Bloom engine (the module loaded) ---
if [[ -n "$module" ]]; then
  stop_managed_redis
  managed_extra_conf="loadmodule $module"
  start_managed_redis
  managed_cli acl log reset > /dev/null
  U=$(user_for app:urls)
  run dedup --redis "$U" --name app:urls -n 100000 a.txt
  check "module: dedup" 20000 "$(wc -l <<< "$out")"
  run dedup --redis "$U" --name app:urls -v b.txt
  check "module: dedup, only the new half" "$(seq 20001 30000 | sed 's/^/url-/')" "$out"
  check_contains "module: the module does the work" "RB.PARTADD" "$err"
  run exists --redis "$U" --name app:urls -c b.txt
  check "module: exists" 20000 "$out"
  B=$(user_for app:bf)
  managed_cli bf.reserve app:bf 0.001 100000 > /dev/null
  run dedup --redis "$B" --name app:bf a.txt
  check "BF key: dedup" 20000 "$(wc -l <<< "$out")"
  run exists --redis "$B" --name app:bf -c b.txt
  check "BF key: exists" 10000 "$out"
  run info --redis "$B" --name app:bf
  check "BF key: info (MODULE LIST refused)" 0 "$rc"
  run drop --redis "$B" --name app:bf
  check "BF key: drop" 0 "$rc"
  run drop --redis "$U" --name app:urls
  check "module: drop" 0 "$rc"
  check "module: nothing left behind" "" "$(managed_cli --scan)"
  check "module: no key outside a filter's own names was touched" "" "$(refused_keys)"
fi

echo "$passes passed, $failures failed"
[[ $failures -eq 0 ]]
