#!/usr/bin/env bash
# End-to-end checks of the redbloom CLI on a Redis Cluster of 3 masters that this script starts
# (redis-server --cluster-enabled, put together with CLUSTER ADDSLOTSRANGE / MEET): every
# command with --redis redis+cluster://..., partitions spread over the masters, export equal to
# a local filter's bytes, the exact set and diff --exact, drop everywhere, and clear errors for
# what a cluster cannot do.
# Usage: cli_cluster_test.sh PATH/TO/redbloom
source "$(dirname "$0")/cli_common.sh"
source "$tests_dir/redis_shell.sh"

# Bus ports below the 20000-60000 range start_redis picks client ports from.
for m in 0 1 2; do
  start_redis "n$m" --cluster-enabled yes --cluster-config-file nodes.conf \
    --cluster-node-timeout 1000 --cluster-port $((10000 + RANDOM % 10000))
done
for m in 0 1 2; do
  first=$((16384 * m / 3))
  last=$((16384 * (m + 1) / 3 - 1))
  redis-cli -p "${redis_port[n$m]}" cluster addslotsrange "$first" "$last" >/dev/null
  redis-cli -p "${redis_port[n$m]}" cluster set-config-epoch $((m + 1)) >/dev/null
done
for m in 1 2; do
  bus=$(redis-cli -p "${redis_port[n$m]}" config get cluster-port | tail -n 1)
  redis-cli -p "${redis_port[n0]}" cluster meet 127.0.0.1 "${redis_port[n$m]}" "$bus" >/dev/null
done
for _ in $(seq 1 200); do
  ok=0
  for m in 0 1 2; do
    redis-cli -p "${redis_port[n$m]}" cluster info | grep -q "cluster_state:ok" && ok=$((ok + 1))
  done
  [[ $ok -eq 3 ]] && break
  sleep 0.05
done
check "cluster is up" 3 "$ok"
C="redis+cluster://127.0.0.1:${redis_port[n0]},127.0.0.1:${redis_port[n1]},127.0.0.1:${redis_port[n2]}"
dbsizes() {
  local total=0 m
  for m in 0 1 2; do total=$((total + $(redis-cli -p "${redis_port[n$m]}" dbsize))); done
  echo "$total"
}
seq 1 20000 | sed 's/^/url-/' > a.txt
seq 10001 30000 | sed 's/^/url-/' > b.txt

# --- create, dedup, exists, info ---
run create --redis "$C" --name urls -n 300000 -p 0.001 --partition-size 64KiB
check "create" 0 "$rc"
check_contains "create says where" "on redis cluster 127.0.0.1:${redis_port[n0]}" "$out"
partitions=$(( $(dbsizes) - 1 ))
for m in 0 1 2; do
  keys=$(redis-cli -p "${redis_port[n$m]}" dbsize)
  [[ $keys -ge $((partitions / 3)) ]] && spread=ok || spread="master $m holds $keys keys of $partitions"
  check "partitions spread over master $m" ok "$spread"
done
check "a filter of many partitions on a cluster: no warning of idle masters" "no" \
  "$(grep -q 'so only' <<< "$err" && echo yes || echo no)"
run create --redis "$C" --name small --window 10m -n 1000
check "a windowed filter of one partition on a cluster is made" 0 "$rc"
check_contains "and the warning says one master does its work, and how to spread it" \
  "has 1 partition, so only 1 of its 3 masters holds it" "$err"
check_contains "and that a stage on a cluster needs one partition" "keep one partition there" "$err"
"$redbloom" drop --redis "$C" --name small >/dev/null
run dedup --redis "$C" --name urls a.txt
check "dedup a" 0 "$rc"
check "dedup a lines" 20000 "$(wc -l <<< "$out")"
run dedup --redis "$C" --name urls b.txt
check "dedup b: only the new half" "$(seq 20001 30000 | sed 's/^/url-/')" "$out"
run exists --redis "$C" --name urls -c a.txt
check "exists: every added item" 20000 "$out"
# The location strings of Location::parse: -f and --redis take the cluster URI with #NAME.
run exists -f "$C#urls" -c a.txt
check "exists -f redis+cluster://...#NAME" 20000 "$out"
run exists --redis "$C#urls" -c a.txt
check "exists --redis redis+cluster://...#NAME, no --name" 20000 "$out"
# Any single node finds the rest of the cluster.
run exists --redis "redis+cluster://127.0.0.1:${redis_port[n2]}" --name urls -c b.txt
check "exists through one seed" 20000 "$out"
run info --redis "$C" --name urls --json
check "info" 0 "$rc"
check_contains "info location" "cluster 127.0.0.1" "$out"

# --- load (bulk) and export: the same bytes as a local filter ---
seq 1 200000 | sed 's/^/ev-/' > events.txt
run create -f local.rbf -n 300000 -p 0.001 --partition-size 64KiB -q
run load -f local.rbf events.txt
run create --redis "$C" --name events -n 300000 -p 0.001 --partition-size 64KiB -q
run load --redis "$C" --name events events.txt
check "load" 0 "$rc"
run export --redis "$C" --name events --to exported.rbf
check "export" 0 "$rc"
check "export equals the local filter's bits" "$(
  "$redbloom" info -f local.rbf --json | grep -o '"set_bits": *[0-9]*')" "$(
  "$redbloom" info -f exported.rbf --json | grep -o '"set_bits": *[0-9]*')"
run diff --redis "$C" --name events --check events.txt
check "diff: no item missing" 1 "$rc"

# --- the exact set: buckets on every master, and diff --exact misses no orphan ---
# At p = 1% a Bloom-only diff would lose about 100 of the 10000 orphans of b.
run create --redis "$C" --name known -n 20000 -p 0.01 --exact -q
check "create --exact" 0 "$rc"
run add --redis "$C" --name known --exact a.txt
check "add --exact" 0 "$rc"
check_contains "add --exact counts the exact set" "20000" "$err"
run info --redis "$C" --name known
check_contains "info shows the exact set" "exact entries     20000" "$out"
for m in 0 1 2; do
  buckets=$(redis-cli -p "${redis_port[n$m]}" --scan --pattern 'known:exact:*' | wc -l)
  [[ $buckets -ge 100 ]] && spread=ok || spread="master $m holds $buckets of 512 buckets"
  check "exact-set buckets on master $m" ok "$spread"
done
run diff --redis "$C" --name known --check b.txt --exact
check "diff --exact: exactly b's items not in a" "$(seq 20001 30000 | sed 's/^/url-/')" "$out"
# The exact set travels with the filter: cluster -> file -> cluster.
run export --redis "$C" --name known --to known.rbf
check "export with the exact set" 0 "$rc"
run diff --known known.rbf --check b.txt --exact
check "exported: diff --exact" "$(seq 20001 30000 | sed 's/^/url-/')" "$out"
run import --from known.rbf --redis "$C" --name back
check "import with the exact set" 0 "$rc"
run diff --redis "$C" --name back --check b.txt --exact
check "imported back: diff --exact" "$(seq 20001 30000 | sed 's/^/url-/')" "$out"
run drop --redis "$C" --name back
check "drop the imported copy" 0 "$rc"
run drop --redis "$C" --name known
check "drop known and its exact set" 0 "$rc"
check "nothing of known left" 0 "$(for m in 0 1 2; do
  redis-cli -p "${redis_port[n$m]}" --scan --pattern 'known*'; done | wc -l)"

# --- what a cluster refuses, clearly ---
run create --redis "redis+cluster://127.0.0.1:${redis_port[n0]}/3" --name x -n 1000
check "db in a cluster URI" 2 "$rc"
check_contains "db message" "only database 0" "$err"
start_redis plain
run create --redis "redis+cluster://127.0.0.1:${redis_port[plain]}" --name x -n 1000
check "a plain server as a cluster" 3 "$rc"
check_contains "not a cluster message" "is it a Redis Cluster?" "$err"

# A cluster node given as one server: the redirect is explained, not printed raw.
run create --redis "redis://127.0.0.1:${redis_port[n0]}" --name single -n 1e6 --partition-size 64KiB
check "a cluster node as one server" 3 "$rc"
check_contains "a cluster node as one server: why" "this server is a Redis Cluster node" "$err"
check_contains "a cluster node as one server: what to do" \
  "redis+cluster://127.0.0.1:${redis_port[n0]}" "$err"
for m in 0 1 2; do
  redis-cli -p "${redis_port[n$m]}" --scan --pattern 'single*' | while read -r key; do
    redis-cli -c -p "${redis_port[n$m]}" unlink "$key" >/dev/null
  done
done

# --- drop removes every key from every master ---
run drop --redis "$C" --name urls
check "drop urls" 0 "$rc"
run drop --redis "$C" --name events
check "drop events" 0 "$rc"
check "nothing left" 0 "$(dbsizes)"

# --- a windowed filter on the cluster: dedup within the window, forgotten after it (its
# expiry by Redis itself is tested in test_redis_stream.cpp)
before=$(dbsizes)
run create --redis "$C" --name clicks --window 4s --slices 2 -n 20000 -p 1e-7 --partition-size 4KiB
check "window: create" 0 "$rc"
check_contains "window: what" "windowed 4s in 2 slices of 2s" "$out"
run dedup --redis "$C" --name clicks a.txt
check "window: dedup a" 20000 "$(wc -l <<< "$out")"
run dedup --redis "$C" --name clicks b.txt
check "window: dedup b, only the new half" "$(seq 20001 30000 | sed 's/^/url-/')" "$out"
run info --redis "$C" --name clicks --json
check_contains "window: info lists links" '"links": [{"slice": ' "$out"
sleep 6.2  # window + one slice
run dedup --redis "$C" --name clicks -q a.txt
check "window: a forgotten after window + slice" 20000 "$(wc -l <<< "$out")"
run drop --redis "$C" --name clicks
check "window: drop" 0 "$rc"
check "window: nothing left" "$before" "$(dbsizes)"

echo "$passes passed, $failures failed"
[[ $failures -eq 0 ]]
