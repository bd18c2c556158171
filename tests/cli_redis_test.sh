#!/usr/bin/env bash
# End-to-end checks of the redbloom CLI on Redis: every command with --redis/--name, clear
# errors for bad keys and URIs, byte-for-byte export/import/copy, persistence across a restart,
# and a server killed in the middle of a dedup. Usage: cli_redis_test.sh PATH/TO/redbloom
source "$(dirname "$0")/cli_common.sh"
source "$tests_dir/redis_shell.sh"

start_redis main
U=$(redis_uri main)
seq 1 20000 | sed 's/^/url-/' > a.txt
seq 10001 30000 | sed 's/^/url-/' > b.txt

# --- create, dedup, exists, info ---
run create --redis "$U" --name urls -n 100000 -p 0.001
check "create" 0 "$rc"
check_contains "create says where" "created urls on redis 127.0.0.1:${redis_port[main]}" "$out"
run create --redis "$U" --name urls -n 100000 -p 0.001
check "create existing" 2 "$rc"
check_contains "create existing message" "already exists (use --force to replace it)" "$err"
run create --redis "$U" --name urls -n 100000 -p 0.001 --force -q
check "create --force" 0 "$rc"
run dedup --redis "$U" --name urls a.txt
check "dedup a" 0 "$rc"
check "dedup a lines" 20000 "$(wc -l <<< "$out")"
check_contains "dedup summary" "unique 20000, duplicates 0" "$err"
run dedup --redis "$U" --name urls b.txt
check "dedup b: only the new half" "$(seq 20001 30000 | sed 's/^/url-/')" "$out"
run dedup --redis "$U" --name urls --dups b.txt
check "dedup --dups: all repeats" "$(cat b.txt)" "$out"
run exists --redis "$U" --name urls -c a.txt
check "exists count" 20000 "$out"
seq 50001 60000 | sed 's/^/url-/' > absent.txt
run exists --redis "$U" --name urls absent.txt
check "exists none: grep exit 1" 1 "$rc"
out=$(REDIS_URL="$U" "$redbloom" exists --name urls -c b.txt)
check "REDIS_URL is the default server" 20000 "$out"
run info --redis "$U" --name urls --json
check "info json" 0 "$rc"
check_contains "info json location" "\"location\": \"redis 127.0.0.1:${redis_port[main]} filter urls\"" "$out"
check_contains "info json capacity" "\"capacity\": 100000" "$out"
run create --redis "$U" --name small -n 100 -p 0.01 -q
run add --redis "$U" --name small a.txt
check_contains "past capacity: names the filter once" \
  "warning: redis 127.0.0.1:${redis_port[main]} filter small holds about" "$err"
run drop --redis "$U" --name small
run add --redis "$U" --name urls -n 5 a.txt
check "other parameters" 2 "$rc"
check_contains "other parameters message" "created with other parameters" "$err"

# --- a server that may evict the filter's keys is named at create ---
run create --redis "$U" --name calm -q
check "no warning on a server without eviction" "0:" "$rc:$err"
rcli main config set maxmemory 1gb > /dev/null
rcli main config set maxmemory-policy allkeys-lru > /dev/null
run create --redis "$U" --name evictable -q
check "create on an evicting server" 0 "$rc"
check_contains "eviction warning" "redbloom: warning: redis 127.0.0.1:${redis_port[main]} evicts keys when full (maxmemory 1073741824 bytes, maxmemory-policy allkeys-lru)" "$err"
rcli main config set maxmemory-policy noeviction > /dev/null
rcli main config set maxmemory 0 > /dev/null
run drop --redis "$U" --name evictable
check "drop evictable" 0 "$rc"
run drop --redis "$U" --name calm
check "drop calm" 0 "$rc"

# --- what is not a filter, bad names and URIs ---
rcli main set plain text > /dev/null
run exists --redis "$U" --name plain a.txt
check "string key" 3 "$rc"
check_contains "string key message" "key 'plain' on redis 127.0.0.1:${redis_port[main]} holds a string, not a redbloom filter" "$err"
run create --redis "$U" --name plain -q
check "create over a string key refused" 3 "$rc"
check "string key kept" "text" "$(rcli main get plain)"
rcli main hset foreign field value > /dev/null
run info --redis "$U" --name foreign
check "foreign hash" 3 "$rc"
check_contains "foreign hash message" "is a Redis hash but not a redbloom filter" "$err"
run exists --redis "$U" --name nope a.txt
check "missing filter" 2 "$rc"
check_contains "missing filter message" "no filter 'nope' on redis 127.0.0.1:${redis_port[main]}" "$err"
run create --redis "$U" --name 'a{b}'
check "brace in name" 2 "$rc"
check_contains "brace message" "contains '{' or '}'" "$err"
run exists --redis "http://127.0.0.1:1" --name urls a.txt
check "bad scheme" 2 "$rc"
check_contains "bad scheme message" "bad Redis URI: unknown scheme" "$err"
run exists --redis "redis://user:s3cret@127.0.0.1:notaport" --name urls a.txt
check "bad port" 2 "$rc"
check "password never printed" "no" "$([[ "$err" == *s3cret* ]] && echo yes || echo no)"
closed_port=$((redis_port[main] + 1))
run exists --redis "redis://127.0.0.1:$closed_port" --name urls a.txt
check "nothing listening" 3 "$rc"
check_contains "refused message" "redis 127.0.0.1:$closed_port: connect: " "$err"
run exists -f x.rbf --name urls a.txt
check "--filter and --name" 2 "$rc"
run exists a.txt
check "no filter at all" 2 "$rc"
check_contains "no filter message" "no filter given" "$err"

# --- one location syntax: -f URI#NAME and --redis URI#NAME as Location::parse takes them ---
run create -f "$U#hashed" -n 1000 -q
check "create -f URI#NAME" 0 "$rc"
check "create -f URI#NAME: made in Redis" 1 "$(rcli main exists hashed)"
run add -f "$U#hashed" a.txt
check "add -f URI#NAME" 0 "$rc"
check_contains "add -f URI#NAME: the summary" "read 20000" "$err"
run exists --redis "$U#hashed" -c a.txt
check "exists --redis URI#NAME, no --name" 20000 "$out"
run exists -f "$U" --name hashed -c a.txt
check "exists -f URI --name NAME" 20000 "$out"
run info -f "$U#hashed"
check_contains "info -f URI#NAME: the user's filter named" "hashed" "$out"
run dedup -f "$U#fresh" b.txt
check "dedup -f URI#NAME creates it" 0 "$rc"
check_contains "dedup -f URI#NAME: the note names it" "created filter fresh on redis 127.0.0.1:${redis_port[main]}" "$err"
check "dedup -f URI#NAME: no file made" "" "$(ls | grep -F '#' || true)"
run export --redis "$U#hashed" --to hashed.rbf -q
check "export --redis URI#NAME" 0 "$rc"
run import --from hashed.rbf --redis "$U#hashed2" -q
check "import --redis URI#NAME" 0 "$rc"
run copy --redis "$U#hashed2" --to-redis "$U#hashed3" -q
check "copy --redis URI#NAME --to-redis URI#NAME" 0 "$rc"
run exists -f "$U#hashed3" -c a.txt
check "the copy answers" 20000 "$out"
for name in hashed hashed2 hashed3 fresh; do
  run drop -f "$U#$name"
  check "drop -f URI#$name" 0 "$rc"
done

# --- damaged filters ---
run create --redis "$U" --name damaged -n 1000 -q
rcli main del "damaged:bits:{damaged:0}" > /dev/null
run exists --redis "$U" --name damaged a.txt
check "deleted partition" 3 "$rc"
check_contains "deleted partition message" "partition key 'damaged:bits:{damaged:0}' is missing" "$err"
rcli main setrange "damaged:bits:{damaged:0}" 0 short > /dev/null
run exists --redis "$U" --name damaged a.txt
check "short partition" 3 "$rc"
check_contains "short partition message" "holds 5 bytes, expected" "$err"

# --- drop ---
run drop --redis "$U" --name damaged
check "drop" 0 "$rc"
run drop --redis "$U" --name urls
check "drop urls" 0 "$rc"
check "only foreign keys remain" "foreign plain" "$(rcli main keys '*' | sort | xargs)"
run drop --redis "$U" --name plain
check "drop a string key refused" 3 "$rc"
run drop --redis "$U" --name urls
check "drop missing" 2 "$rc"

# --- load (bulk) ---
seq 1 300000 | sed 's/^/s3:\/\/bucket\/dir\/file/' > big.txt
run load --redis "$U" --name big -n 300000 big.txt
check "load" 0 "$rc"
check_contains "load summary" "read 300000" "$err"
run exists --redis "$U" --name big -c big.txt
check "load: no false negatives" 300000 "$out"
run load --redis "$U" --name big big.txt
check "load again (idempotent)" 0 "$rc"

# --- export / import / copy: the same bytes in every store ---
"$redbloom" add -q -f local.rbf --layout blocked -n 50000 --partition-size 16KiB a.txt
partitions=$("$redbloom" info --json -f local.rbf | sed 's/.*"partitions": \([0-9]*\).*/\1/')
check "local filter has several partitions" "yes" "$([[ $partitions -gt 1 ]] && echo yes || echo no)"
run import --from local.rbf --redis "$U" --name imp
check "import" 0 "$rc"
run import --from local.rbf --redis "$U" --name imp
check "import over an existing filter" 2 "$rc"
run export --redis "$U" --name imp --to back.rbf
check "export" 0 "$rc"
check "export = the local bitmap, byte for byte" "same" \
  "$(cmp -s <(tail -c +4097 local.rbf) <(tail -c +4097 back.rbf) && echo same || echo differ)"
# The Redis string itself holds the local bytes: partition 1 follows partition 0 in the file.
pbytes=$("$redbloom" info --json -f local.rbf | sed 's/.*"partition_bytes": \([0-9]*\).*/\1/')
check "partition 1 in Redis = bytes of the file" \
  "$(tail -c +$((4096 + pbytes + 1)) local.rbf | head -c "$pbytes" | od -An -tx1 | md5sum)" \
  "$(rcli main --raw getrange "imp:bits:{imp:1}" 0 -1 | head -c "$pbytes" | od -An -tx1 | md5sum)"
check "same answers: local and imported" "$("$redbloom" exists -f local.rbf -c b.txt)" \
  "$("$redbloom" exists --redis "$U" --name imp -c b.txt)"
start_redis second
run copy --redis "$U" --name imp --to-redis "$(redis_uri second)"
check "copy to another server" 0 "$rc"
check "copy answers the same" "$("$redbloom" exists -f local.rbf -c b.txt)" \
  "$("$redbloom" exists --redis "$(redis_uri second)" --name imp -c b.txt)"
run copy --redis "$U" --name imp
check "copy onto itself refused" 2 "$rc"
run copy --redis "$U" --name imp --to-redis "redis://localhost:${redis_port[main]}" --force
check "copy onto itself under another address refused" 2 "$rc"
check "source kept" "$("$redbloom" exists -f local.rbf -c b.txt)" \
  "$("$redbloom" exists --redis "$U" --name imp -c b.txt)"

# --- sharded over three servers: --redis A,B,C and --redis-file ---
start_redis shard2
start_redis shard3
S="$U,$(redis_uri shard2),$(redis_uri shard3)"
run create --redis "$S" --name one-partition -n 1000
check "a filter of one partition on three servers is made" 0 "$rc"
check_contains "and the warning says only one server works, and how to spread it" \
  "has 1 partition, so only 1 of its 3 servers holds it" "$err"
check_contains "the partition size that spreads it" "or less spreads it over all" "$err"
spread=$(sed -n 's/.*\(--partition-size [0-9]*[KMG]*i*B\) or less spreads it.*/\1/p' <<< "$err")
"$redbloom" drop --redis "$S" --name one-partition >/dev/null
run create --redis "$S" --name one-partition -n 1000 $spread
check "the warning's partition size ($spread) spreads the filter over the three servers" \
  "0 no" "$rc $(grep -q 'so only' <<< "$err" && echo yes || echo no)"
run create --redis "$S" --name four-partitions -n 100000 --partition-size 32KiB
check "four partitions on three servers: made" 0 "$rc"
check "four partitions on three servers: no such warning" "no" \
  "$(grep -q 'so only' <<< "$err" && echo yes || echo no)"
"$redbloom" drop --redis "$S" --name one-partition >/dev/null
"$redbloom" drop --redis "$S" --name four-partitions >/dev/null
run dedup --redis "$S" --name sharded -n 100000 --partition-size 8KiB a.txt
check "sharded dedup" 0 "$rc"
check "a filter spread over the three servers: no warning" "no" \
  "$(grep -q 'so only' <<< "$err" && echo yes || echo no)"
check "sharded dedup lines" 20000 "$(wc -l <<< "$out")"
run dedup --redis "$S" --name sharded b.txt
check "sharded dedup: only the new half" "$(seq 20001 30000 | sed 's/^/url-/')" "$out"
for server in main shard2 shard3; do
  check "every server holds partitions" "yes" \
    "$([[ $(rcli "$server" --scan --pattern 'sharded:bits:*' | grep -c .) -gt 0 ]] && echo yes || echo no)"
done
printf '# shards, in order\n%s\n%s\n%s\n' "$U" "$(redis_uri shard2)" "$(redis_uri shard3)" > servers.txt
run exists --redis-file servers.txt --name sharded -c a.txt
check "--redis-file" 20000 "$out"
run exists --redis "$(redis_uri shard2),$U,$(redis_uri shard3)" --name sharded -c a.txt
check "servers in another order refused" 3 "$rc"
check_contains "order message" "give the servers it was created on, in the same order" "$err"
run exists --redis "$U" --name sharded -c a.txt
check "one server of a sharded filter refused" 3 "$rc"
"$redbloom" add -q -f sharded-local.rbf -n 100000 --partition-size 8KiB a.txt b.txt
run export --redis "$S" --name sharded --to sharded-back.rbf
check "export of a sharded filter = the local bitmap" "same" \
  "$(cmp -s <(tail -c +4097 sharded-local.rbf) <(tail -c +4097 sharded-back.rbf) && echo same || echo differ)"
run drop --redis "$S" --name sharded
check "sharded drop" 0 "$rc"
check "sharded keys gone" "0 0 0" \
  "$(for s in main shard2 shard3; do rcli "$s" --scan --pattern 'sharded*' | grep -c .; done | xargs)"

# --- persistence: an AOF server restarted answers the same ---
start_redis persist --appendonly yes
P=$(redis_uri persist)
"$redbloom" dedup -q --redis "$P" --name kept -n 100000 a.txt > /dev/null
before=$("$redbloom" exists --redis "$P" --name kept -c b.txt)
stop_redis persist
start_redis persist
check "after restart" "$before" "$("$redbloom" exists --redis "$P" --name kept -c b.txt)"

# --- a server killed mid-dedup: exit 3, what was printed is in the filter ---
start_redis fault --appendonly yes --appendfsync always
F=$(redis_uri fault)
seq 1 3000000 | sed 's/^/event-/' > events.txt
"$redbloom" create -q --redis "$F" --name events -n 3000000 -p 0.001
"$redbloom" dedup -q --redis "$F" --name events events.txt > emitted.txt 2> dedup.err &
dedup_pid=$!
for i in $(seq 1 400); do  # until some output is committed (at most 20 s)
  [[ -s emitted.txt ]] && break
  sleep 0.05
done
stop_redis fault KILL
wait "$dedup_pid"
check "dedup exit when redis dies" 3 "$?"
check_contains "says which server" "redis 127.0.0.1:${redis_port[fault]}" "$(cat dedup.err)"
check_contains "says what was committed" "dedup: committed the first" "$(cat dedup.err)"
emitted=$(wc -l < emitted.txt)
check "some but not all emitted" "yes" "$([[ $emitted -gt 0 && $emitted -lt 3000000 ]] && echo yes || echo no)"
start_redis fault
run exists --redis "$F" --name events -v -c emitted.txt
check "every printed item is in the filter after restart" 0 "$out"
committed=$(sed -n 's/.*committed the first \([0-9]*\) input items.*/\1/p' dedup.err)
check "the printed items are the committed prefix" "$emitted" "$committed"
run load --redis "$F" --name events events.txt
check "re-run after the failure" 0 "$rc"

# --- a stop signal during export: the incomplete copy is dropped, the status says why ---
run create --redis "$U" --name stopme -n 2e8 -p 0.01 --partition-size 512MiB -q
check "create a large filter" 0 "$rc"
"$redbloom" export --redis "$U" --name stopme --to stopme.rbf 2> export.err &
pid=$!
for _ in $(seq 1 3000); do  # until the export blocks SIGTERM (its stop handling is in place)
  mask=$(awk '/^SigBlk/ {print $2}' "/proc/$pid/status" 2>/dev/null) || break
  [[ -n "$mask" ]] && (((16#$mask & 0x4000) != 0)) && break
  sleep 0.01
done
kill -TERM "$pid"
wait "$pid"
check "export stopped: exit status" 143 "$?"
check_contains "export stopped: why" "export stopped by SIGTERM" "$(cat export.err)"
check_contains "export stopped: the copy was dropped" "the incomplete copy was dropped" \
  "$(cat export.err)"
check "export stopped: no file left" "" "$(ls stopme.rbf 2>/dev/null)"
run drop --redis "$U" --name stopme
check "drop the large filter" 0 "$rc"

# --- a filter another process is still creating: waited for as long as asked, then reported ---
rcli main hset halfmade format redbloom version 1 state creating partitions 1 > /dev/null
started=$(date +%s%N)
run exists --redis "$U" --name halfmade --wait-for-creator 300ms item
elapsed_ms=$((($(date +%s%N) - started) / 1000000))
check "half-made filter: exit status" 3 "$rc"
check_contains "half-made filter: says so" "is still being created" "$err"
check_contains "half-made filter: the wait it gave" "after waiting 300ms" "$err"
check_contains "half-made filter: how to wait longer" "--wait-for-creator waits longer" "$err"
check "half-made filter: waited about as long as asked" yes \
  "$( ((elapsed_ms >= 300 && elapsed_ms < 20000)) && echo yes || echo "no: ${elapsed_ms} ms")"
run exists --redis "$U" --name halfmade --wait-for-creator soon item
check "bad --wait-for-creator: exit status" 2 "$rc"
check_contains "bad --wait-for-creator: says which option" "--wait-for-creator: 'soon' is not a duration" "$err"
rcli main del halfmade > /dev/null

echo "$passes passed, $failures failed"
[[ $failures -eq 0 ]]
