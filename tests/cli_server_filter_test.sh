#!/usr/bin/env bash
# The CLI and redbloom's module on one server, both ways round: a filter the CLI made answers
# BF.* clients (redis-cli here) item for item, and a filter BF.RESERVE / BF.ADD made (the
# server's own Bloom engine) is used by dedup/add/exists/info through BF.* instead of refused;
# what cannot apply to it fails naming its kind. `info` names the engine each server uses.
# Usage: cli_server_filter_test.sh PATH/TO/redbloom PATH/TO/redbloom.so
module=$(realpath "$2")  # before cli_common.sh changes to its scratch directory
source "$(dirname "$0")/cli_common.sh"
source "$tests_dir/redis_shell.sh"

start_redis main --loadmodule "$module"
start_redis stock
U=$(redis_uri main)
S=$(redis_uri stock)
rcli_main() { redis-cli -p "${redis_port[main]}" "$@"; }

seq 1 10000 | sed 's/^/held-/' > held.txt
seq 1 10000 | sed 's/^/absent-/' > absent.txt

# --- a CLI filter, asked through BF.* ---
run create --redis "$U" --name cli -n 100000 -p 0.001 --partition-size 16KiB -q
check "create" 0 "$rc"
run add --redis "$U" --name cli -q held.txt
check "add" 0 "$rc"
# One BF.MEXISTS over every held item: each answers 1.
ones=$(xargs redis-cli -p "${redis_port[main]}" BF.MEXISTS cli < held.txt | grep -c '^1$')
check "BF.MEXISTS on 10000 items the CLI added" 10000 "$ones"
check "BF.EXISTS on one" 1 "$(rcli_main BF.EXISTS cli held-77)"
# Absent items: the CLI's own answers (its false positives too).
bf_absent=$(xargs redis-cli -p "${redis_port[main]}" BF.MEXISTS cli < absent.txt | grep -c '^1$')
run exists --redis "$U" --name cli -c absent.txt
check "BF.MEXISTS on absent items agrees with exists" "$out" "$bf_absent"
check "BF.ADD of a held item" 0 "$(rcli_main BF.ADD cli held-5)"
check "BF.ADD of a new item" 1 "$(rcli_main BF.ADD cli via-bf)"
run exists --redis "$U" --name cli -c <(echo via-bf)
check "the CLI sees an item BF.ADD added" 1 "$out"
check_contains "BF.CARD names the kind" "redbloom plain filter" "$(rcli_main BF.CARD cli 2>&1)"
check_contains "BF.RESERVE over it names the kind" "redbloom plain filter" \
  "$(rcli_main BF.RESERVE cli 0.01 100 2>&1)"

# --- info names the engine ---
run info --redis "$U" --name cli
check_contains "info: the module's commands" "module redbloom (commands version" "$out"
check_contains "info: which ones" "RB.PARTADDH / RB.PARTEXISTSH" "$out"
run create --redis "$S" --name cli -n 1000 -p 0.01 -q
run info --redis "$S" --name cli --json
check_contains "info json: stock engine" "\"engines\": [\"redis 127.0.0.1:${redis_port[stock]}: stock Redis commands: BITFIELD" "$out"

# --- -v: the summary line says it once ---
run dedup --redis "$U" --name cli -v held.txt
check_contains "dedup -v names the engine" "engine redis 127.0.0.1:${redis_port[main]}: module redbloom (commands version" "$err"
check "said once" 1 "$(grep -o 'engine redis' <<< "$err" | wc -l)"
run dedup --redis "$U" --name cli held.txt
check "not without -v" "" "$(grep -o 'engine redis' <<< "$err")"
run exists --redis "$S" --name cli --verbose -c held.txt
check_contains "exists --verbose names the engine" "engine redis 127.0.0.1:${redis_port[stock]}: stock Redis commands" "$err"
run load --redis "$U" --name cli -v held.txt
check_contains "load -v names the engine" "engine redis 127.0.0.1:${redis_port[main]}: module redbloom" "$err"
run dedup -f local.rbf -v held.txt
check "a local filter has no engine line" "" "$(grep -o 'engine' <<< "$err")"
run add --redis "$U" --name cli -v --json held.txt
check_contains "add -v --json" "\"engines\": [\"redis 127.0.0.1:${redis_port[main]}: module redbloom" "$err"

# --- a filter of the server's own engine, used by the CLI ---
check "BF.RESERVE" OK "$(rcli_main BF.RESERVE bf 0.001 100000)"
rcli_main BF.MADD bf held-1 held-2 held-3 > /dev/null
run dedup --redis "$U" --name bf held.txt
check "dedup on a BF filter" 0 "$rc"
check "dedup prints the items it had not seen" 9997 "$(wc -l <<< "$out")"
check_contains "dedup summary" "unique 9997, duplicates 3" "$err"
check "the server counts them" 10000 "$(rcli_main BF.CARD bf)"
run exists --redis "$U" --name bf -c held.txt
check "exists on a BF filter" 10000 "$out"
run exists --redis "$U" --name bf -c absent.txt
absent_hits=$out
check "exists agrees with BF.MEXISTS" \
  "$(xargs redis-cli -p "${redis_port[main]}" BF.MEXISTS bf < absent.txt | grep -c '^1$')" \
  "$absent_hits"
run info --redis "$U" --name bf
check "info on a BF filter" 0 "$rc"
check_contains "info: kind" "redbloom.so's BF filter (TYPE redbloomF)" "$out"
check_contains "info: capacity" "capacity          100000 items" "$out"
check_contains "info: items" "items inserted    10000" "$out"
check_contains "info: engine" "BF.INSERT / BF.MEXISTS" "$out"
run info --redis "$U" --name bf --json
check_contains "info json: server filter" "\"server_filter\": {\"type\": \"redbloomF\"" "$out"
run export --redis "$U" --name bf --to bf.rbf
check "export of a BF filter refused" 2 "$rc"
check_contains "export names the kind" "redbloom.so's BF filter (TYPE redbloomF)" "$err"
run add --redis "$U" --name bf -n 5000 -p 0.01 -q held.txt
check "sizing options on a BF filter refused" 2 "$rc"
check_contains "sizing options message" "has the parameters its server gave it" "$err"
# A full non-scaling filter stops the add with what was committed.
rcli_main BF.RESERVE small 0.01 100 NONSCALING > /dev/null
run add --redis "$U" --name small -q held.txt
check "add past a non-scaling filter's capacity" 3 "$rc"
check_contains "add past capacity: the server's reason" "non scaling filter is full" "$err"
check_contains "add past capacity: the items before the refused one are committed" \
  "committed the first 100 input items" "$err"
run drop --redis "$U" --name bf
check "drop a BF filter" 0 "$rc"
check "dropped" 0 "$(rcli_main EXISTS bf)"

# --- create --engine bf: BF.RESERVE from the usual options ---
run create --engine bf --redis "$U" --name made -n 50000 -p 0.001
check "create --engine bf" 0 "$rc"
check_contains "create says what it made" "redbloom.so's BF filter (TYPE redbloomF), capacity 50000, p=0.001, expansion 2" "$out"
check "a key of the server's engine" "redbloomF" "$(rcli_main TYPE made)"
check "its capacity" 50000 "$(rcli_main BF.INFO made CAPACITY)"
run create --engine bf --redis "$U" --name made -n 50000 -p 0.001
check "create --engine bf over an existing key" 2 "$rc"
check_contains "it says the key exists" "already exists" "$err"
run create --engine bf --redis "$U" --name made -n 200 -p 0.01 --growth 4 --force --json
check "create --engine bf --force" 0 "$rc"
check_contains "--growth is the EXPANSION" '"expansion": 4' "$out"
check "--force made it anew" 200 "$(rcli_main BF.INFO made CAPACITY)"
check "with that expansion" 4 "$(rcli_main BF.INFO made EXPANSION)"
run create --engine bf --redis "$U" --name fixed -n 100 --nonscaling -q
check "create --engine bf --nonscaling" 0 "$rc"
run info --redis "$U" --name fixed
check_contains "info: a non-scaling filter" "expansion         none" "$out"
for refused in "--layout blocked" "--partition-size 1MiB" "--window 10m" "--hashes 3 --bits 1000" \
  "--exact" "--nonscaling --growth 2"; do
  # shellcheck disable=SC2086
  run create --engine bf --redis "$U" --name other $refused
  check "create --engine bf $refused refused" 2 "$rc"
done
run create --engine bf --redis "$U" --name other --layout blocked
check_contains "the refusal says why" "--layout cannot apply to a filter of the server's Bloom engine (--engine bf): the engine picks its own layout" "$err"
run create --engine bf --redis "$U" --name other --window 10m
check_contains "no window over a BF key" "windows are redbloom's own" "$err"
check "nothing made by a refused create" 0 "$(rcli_main EXISTS other)"
run create --engine bf -f local-bf.rbf
check "create --engine bf on a file refused" 2 "$rc"
check_contains "a file cannot hold one" "give a Redis location" "$err"
run create --engine bf --redis "$S" --name nobf
check "create --engine bf without an engine on the server" 2 "$rc"
check_contains "no engine on the server" "has no Bloom engine of its own" "$err"
run create --nonscaling --redis "$U" --name other
check "--nonscaling without --engine bf refused" 2 "$rc"
run create --engine bf --redis "$U,$S" --name other
check "create --engine bf over several servers refused" 2 "$rc"
check_contains "one key of one server" "one key on one server" "$err"

# --- every command on it ---
run load --redis "$U" --name made held.txt
check "load into a BF key" 0 "$rc"
# Past its capacity of 200 it grew, and a growing filter's false positives are not counted.
check "load: the server counts them, but for false positives" 1 "$(( $(rcli_main BF.CARD made) >= 9800 ))"
check "load: it grew past its capacity of 200" 1 "$(( $(rcli_main BF.INFO made FILTERS) > 1 ))"
rcli_main BF.RESERVE grows 0.01 200 > /dev/null
run dedup --redis "$U" --name grows <(seq 1 1000 | sed 's/^/past-/')
check "dedup past a BF key's capacity" 0 "$rc"
check "no capacity warning: the engine grows (or refuses)" "" "$(grep -o 'past its capacity' <<< "$err")"
run add --redis "$U" --name made <(seq 1 100 | sed 's/^/held-/'; echo fresh-1)
check "add to a BF key" 0 "$rc"
run add --redis "$U" --name made --json <(echo fresh-2; echo held-9)
check_contains "add counts what was new" '"unique": 1, "duplicates": 1' "$err"
run diff --known "$U#made" --check <(cat held.txt; echo orphan-1; echo orphan-2)
check "diff against a BF key: the orphans" "orphan-1
orphan-2" "$out"
run exists --redis "$U" --name made held.txt
check "exists prints every held item" 10000 "$(wc -l <<< "$out")"
run info --redis "$U" --name made --json
check_contains "info json: its sizes" '"capacity": ' "$out"
check_contains "info json: items, as BF.CARD counts them" "\"items\": $(rcli_main BF.CARD made)" "$out"
check_contains "info json: expansion" '"expansion": 4' "$out"
# Lookups on a key deleted under an open filter are an error, not "absent": one process, so the
# key goes between its open and its lookups (a FIFO holds the input until then).
mkfifo slow-input
( "$redbloom" exists --redis "$U" --name made -c slow-input > gone.out 2> gone.err; echo $? > gone.rc ) &
gone_pid=$!
exec 7> slow-input
for _ in $(seq 1 100); do
  [[ "$(rcli_main CLIENT LIST | grep -c 'cmd=bf.info')" -ge 1 || -s gone.err ]] && break
  sleep 0.1
done
rcli_main DEL made > /dev/null
echo held-1 >&7
exec 7>&-
wait "$gone_pid"
check "exists on a key deleted after open" 3 "$(cat gone.rc)"
check_contains "it says the key is gone" "filter made is gone" "$(cat gone.err)"

# --- a key of the engine on several servers: refused by name ---
rcli_main BF.RESERVE twice 0.01 100 > /dev/null
run exists --redis "$U,$S" --name twice -c held.txt
check "a BF key opened as sharded refused" 2 "$rc"
check_contains "with the reason" "is one key of one server, not a filter sharded over 2 servers" "$err"

# --- many writers on one BF key: each item is new to exactly one of them ---
rcli_main BF.RESERVE shared 0.0001 100000 > /dev/null
seq 1 20000 | sed 's/^/event-/' > events.txt
writers=()
for w in 1 2 3 4; do
  shuf events.txt > "events-$w.txt"
  "$redbloom" dedup --redis "$U" --name shared -q "events-$w.txt" > "unique-$w.txt" &
  writers+=($!)
done
for w in "${writers[@]}"; do wait "$w"; done
cat unique-*.txt | sort > all-unique.txt
check "no item is new to two writers" "" "$(uniq -d all-unique.txt | head -3)"
check "the writers' new items are the server's count" "$(rcli_main BF.CARD shared)" "$(wc -l < all-unique.txt)"
check "every item but false positives is new to one" 1 "$(( $(wc -l < all-unique.txt) >= 19990 ))"

# --- a filter in RedisBloom's format (its own dump chunks, fed to BF.LOADCHUNK) ---
fixtures="$tests_dir/module/fixtures/redisbloom"
/usr/bin/python3 - "$fixtures" <<'PY' > chunks.txt
import json, sys
for iterator, data in json.load(open(sys.argv[1] + "/scandump.json"))["scaling"]:
    print(iterator, data)
PY
while read -r iterator data; do
  base64 -d <<< "$data" | redis-cli -p "${redis_port[main]}" -x BF.LOADCHUNK rb "$iterator" > /dev/null
done < chunks.txt
check "TYPE of a RedisBloom-format filter" "MBbloom--" "$(rcli_main TYPE rb)"
seq 0 1499 | sed 's/^/scaling:/' > rb-held.txt
seq 0 3999 | sed 's/^/absent:scaling:/' > rb-absent.txt
run exists --redis "$U#rb" -c rb-held.txt
check "exists on RedisBloom's filter finds every item it holds" 1500 "$out"
# Item for item, RedisBloom's own answers, false positives included.
expected=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["initial"]["scaling"]["absent"].count("1"))' "$fixtures/replies.json")
run exists --redis "$U#rb" -c rb-absent.txt
check "exists on RedisBloom's filter: RedisBloom's false positives" "$expected" "$out"
run info --redis "$U#rb"
check_contains "info names RedisBloom's format" "RedisBloom's BF filter (TYPE MBbloom--)" "$out"
check_contains "info names the module serving it" "a filter in RedisBloom's format, served by module redbloom version" "$out"

echo "$passes passed, $failures failed"
[[ $failures -eq 0 ]]
