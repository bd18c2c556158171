#!/usr/bin/env bash
# The CLI over TLS (rediss://) against servers that take TLS only, with certificates the test
# makes with openssl: create, dedup, exists, info and drop on one server, with mutual TLS and
# over two sharded servers; SSL_CERT_FILE as the trust store; and each failure (unknown CA,
# name mismatch, a client certificate missing or refused, a plain client on a TLS port, a TLS
# client on a plain port) exits 3 with a message that says what failed, within a bound.
# Usage: cli_tls_test.sh PATH/TO/redbloom
source "$(dirname "$0")/cli_common.sh"
source "$tests_dir/redis_shell.sh"

start_redis_tls one tls
start_redis_tls mutual mutual
start_redis plain
U=$(redis_uri one)
M=$(redis_uri mutual)
P=${redis_port[one]}
seq 1 20000 | sed 's/^/url-/' > a.txt
seq 10001 30000 | sed 's/^/url-/' > b.txt

# --- every command over TLS ---
run create -f "$U#urls" -n 100000 -p 0.001
check "create" 0 "$rc"
check_contains "create says where" "created urls on redis 127.0.0.1:$P" "$out"
run dedup -f "$U#urls" a.txt
check "dedup a" "0:20000" "$rc:$(wc -l <<< "$out")"
run dedup -f "$U#urls" b.txt
check "dedup b: only the new half" "$(seq 20001 30000 | sed 's/^/url-/')" "$out"
run exists -f "$U#urls" -c a.txt
check "exists count" 20000 "$out"
run info -f "$U#urls" --json
check "info" 0 "$rc"
check_contains "info capacity" "\"capacity\": 100000" "$out"
check "the filter is in the server" 1 "$(rcli one exists urls)"
run drop -f "$U#urls"
check "drop" 0 "$rc"
check "dropped" 0 "$(rcli one exists urls)"
out=$(REDIS_URL="$U" "$redbloom" dedup --name env a.txt 2>/dev/null | wc -l)
check "REDIS_URL may be rediss://" 20000 "$out"

# --- mutual TLS, and sharded servers of both kinds ---
run dedup -f "$M#urls" a.txt
check "mutual TLS dedup" "0:20000" "$rc:$(wc -l <<< "$out")"
run dedup -f "$U,$M#sharded" b.txt
check "sharded over two TLS servers" "0:20000" "$rc:$(wc -l <<< "$out")"
run exists -f "$U,$M#sharded" -c a.txt
check "sharded exists" 10000 "$out"

# --- the system trust store: SSL_CERT_FILE stands for it ---
bare="rediss://127.0.0.1:$P"
out=$(SSL_CERT_FILE="$tls_certs/ca.crt" "$redbloom" dedup -f "$bare#store" a.txt | wc -l)
check "SSL_CERT_FILE is the trust store" 20000 "$out"

# --- failures: exit 3, what failed, and never a hang ---
fails_with() {  # fails_with NAME NEEDLE LOCATION
  local start=$SECONDS
  run exists -c -f "$3" a.txt
  check "$1: exit 3" 3 "$rc"
  check_contains "$1: message" "$2" "$err"
  check "$1: within a minute" yes "$([[ $((SECONDS - start)) -lt 60 ]] && echo yes || echo no)"
}
fails_with "no CA for the server" \
  "(its CA is not among the system's trusted ones: give the CA's certificate as tls_ca=PATH, or set SSL_CERT_FILE)" \
  "$bare#urls"
fails_with "unrelated CA" "its CA is not the one in tls_ca=$tls_certs/other-ca.crt" \
  "$bare?tls_ca=$tls_certs/other-ca.crt#urls"
fails_with "name mismatch" "hostname mismatch (it is not issued for redis.example.com" \
  "$U&tls_server_name=redis.example.com#urls"
fails_with "no client certificate" "the server wants a client certificate: give tls_cert= and tls_key=" \
  "rediss://127.0.0.1:${redis_port[mutual]}?tls_ca=$tls_certs/ca.crt#urls"
fails_with "client certificate of another CA" "the server refused the client certificate" \
  "rediss://127.0.0.1:${redis_port[mutual]}?tls_ca=$tls_certs/ca.crt&tls_cert=$tls_certs/other-client.crt&tls_key=$tls_certs/other-client.key#urls"
fails_with "expired client certificate" "the server refused the client certificate" \
  "rediss://127.0.0.1:${redis_port[mutual]}?tls_ca=$tls_certs/ca.crt&tls_cert=$tls_certs/expired-client.crt&tls_key=$tls_certs/expired-client.key#urls"
fails_with "plain client on a TLS port" "if the server takes TLS connections only, use rediss://" \
  "redis://127.0.0.1:$P#urls"
fails_with "TLS client on a plain port" "a plain Redis port takes redis://" \
  "rediss://127.0.0.1:${redis_port[plain]}?connect_timeout=2#urls"
run exists -c -f "redis://127.0.0.1:$P?tls_ca=$tls_certs/ca.crt#urls" a.txt
check "a TLS setting on redis://: usage error" 2 "$rc"
check_contains "a TLS setting on redis://: what to do" "'tls_ca' is a TLS setting: it needs rediss://" "$err"

# --- refusing to verify is explicit, and warned about ---
run dedup -f "$bare?tls_insecure_skip_verify=yes#insecure" a.txt
check "insecure: works" "0:20000" "$rc:$(wc -l <<< "$out")"
check_contains "insecure: warned" "WARNING: TLS certificate verification is OFF for 127.0.0.1:$P" "$err"
run dedup -f "$bare?tls_insecure_skip_verify=yes#insecure-json" --json -q a.txt
check "insecure, --json: works" 0 "$rc"
check_contains "insecure, --json: a JSON warning" \
  '{"type": "warning", "command": "dedup", "message": "TLS certificate verification is OFF for 127.0.0.1:' "$err"
check "insecure, --json: stderr holds only JSON objects" "" "$(grep -v '^{.*}$' <<<"$err")"

echo "cli_tls_test: $passes passed, $failures failed"
[[ $failures -eq 0 ]]
