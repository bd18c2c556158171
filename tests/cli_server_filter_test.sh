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
check_contains "info: which ones" "RB.PARTADD / RB.PARTEXISTS" "$out"
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
run drop --redis "$U" --name bf
check "drop a BF filter" 0 "$rc"
check "dropped" 0 "$(rcli_main EXISTS bf)"

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
