#!/usr/bin/env bash
# What a newcomer meets on the command line: units and ranges are explicit, nothing is made by
# a command that fails before its first item, --force replaces only filters, messages name the
# user's path and lead to the fix, and the summary's rate is never a false "0 items/s".
# Usage: cli_usage_test.sh PATH/TO/redbloom
source "$(dirname "$0")/cli_common.sh"
seq 1 100 > items.txt
nothing_named() {  # nothing_named PREFIX: no file whose name starts with PREFIX
  [[ -z "$(ls -d "$1"* 2>/dev/null)" ]] && echo none || echo "$(ls -d "$1"*)"
}

# --- a duration needs its unit, a rate its period; --slices and --growth their range
run create -f w.rbf --window 3600 -n 1000
check "window without unit: usage error" 2 "$rc"
check_contains "window without unit: the forms" \
  "--window 3600 has no unit: give a number and a unit ms, s, m, h or d (e.g. 3600s, 3600m, 1h, 7d)" "$err"
run create -f w.rbf --window 10m --rate 12000
check "rate without period: usage error" 2 "$rc"
check_contains "rate without period: the forms" \
  "--rate 12000 has no period: give items per period: 12000/s, 12000/m, 12000/h or 12000/d" "$err"
run create -f w.rbf --window 10m --slices 0 -n 1000
check "--slices 0: usage error" 2 "$rc"
check_contains "--slices 0: the range" "--slices 0 is out of range: give 1 to 1024 slices per window (default 4)" "$err"
run create -f w.rbf --window 10m --slices 2000 -n 1000
check "--slices 2000: usage error" 2 "$rc"
run create -f w.rbf --growth 0 -n 1000
check "--growth 0: usage error" 2 "$rc"
check_contains "--growth 0: the range" "--growth 0 is out of range: give 2 to 1024" "$err"
check "none of them made a filter" none "$(nothing_named w.rbf)"
run create -f w2.rbf --window 10m --rate 200/s --slices 1 --json
check "explicit forms: accepted" 0 "$rc"
check_contains "explicit forms: 120000 items per window" "120000 items per window" "$out"
check_contains "explicit forms: one slice" "in 1 slices" "$out"

# --- a rate no filter builds as asked (the hash count is capped) is refused, or built on consent
run create -f tiny-p.rbf -n 1000 -p 1e-300
check "p 1e-300: usage error" 2 "$rc"
check_contains "p 1e-300: what would be built" \
  "-p 1e-300 cannot be built: a filter uses at most 64 hashes per item" "$err"
check_contains "p 1e-300: the rate it would have" "at a rate of 7.6e-88 at capacity, not 1e-300" "$err"
check_contains "p 1e-300: the consent" "add --force-rate to build this filter anyway" "$err"
check "p 1e-300: nothing made" none "$(nothing_named tiny-p.rbf)"
run create -f tiny-p.rbf -n 1000 -p 1e-300 --force-rate
check "p 1e-300 --force-rate: built" 0 "$rc"
check_contains "p 1e-300 --force-rate: says the rate built" "k=64" "$out"
run add -f tiny-p2.rbf -n 1000 -p 1e-300 items.txt
check "add with p 1e-300: refused too" 2 "$rc"
check "add with p 1e-300: nothing made" none "$(nothing_named tiny-p2.rbf)"
run create -f tiny-w.rbf --window 10m -n 1000 -p 1e-300
check "windowed p 1e-300: refused" 2 "$rc"
check_contains "windowed p 1e-300: says why" "-p 1e-300 cannot be built" "$err"
run create -f fine-p.rbf -n 1000 -p 1e-19
check "p 1e-19: built as asked" 0 "$rc"
run plan -n 1000 -p 1e-300
check "plan p 1e-300: shown" 0 "$rc"
check_contains "plan p 1e-300: not the target" "not the target    a filter uses at most 64 hashes, too few for 1e-300: it reaches 7.6e-88" "$out"

# --- one rule for the error rate, stated the same way by every command
for p in 0.9 1.5 0 -0.1; do
  run plan -n 1000 -p "$p"
  check "plan -p $p: usage error" 2 "$rc"
  check_contains "plan -p $p: the rule" "the error rate must be above 0 and at most 0.5 (0.01 is common)" "$err"
  run create -f r.rbf -n 1000 -p "$p"
  check_contains "create -p $p: the rule" "the error rate must be above 0 and at most 0.5 (0.01 is common)" "$err"
  run create -f r.rbf --growth 2 -n 1000 -p "$p"
  check_contains "create --growth -p $p: the rule" "the error rate must be above 0 and at most 0.5 (0.01 is common)" "$err"
done

# --- a command that fails before its first item creates nothing
run add -f new.rbf -n 5e6 typo.txt
check "missing input: usage error" 2 "$rc"
check_contains "missing input: named" "cannot open input typo.txt" "$err"
check "missing input: no filter made" none "$(nothing_named new.rbf)"
run add -f new.rbf -n 5e6 items.txt
check "the corrected command: accepted" 0 "$rc"
for command in dedup load; do
  run $command -f new-$command.rbf typo.txt
  check "$command with a missing input: no filter made" none "$(nothing_named new-$command.rbf)"
done
mkdir adir
run add -f new-dir.rbf adir
check "input is a directory: no filter made" none "$(nothing_named new-dir.rbf)"
run add -f new-win.rbf --window 10m --exact items.txt
check "--exact with --window: usage error" 2 "$rc"
check "--exact with --window: no filter made" none "$(nothing_named new-win.rbf)"
run create -f new-win.rbf --window 10m --exact
check "create --exact with --window: no filter made" none "$(nothing_named new-win.rbf)"

# --- paths: a directory, a missing directory; never an internal temporary name
run create -f adir
check "create on a directory: usage error" 2 "$rc"
check_contains "create on a directory: what to give" "adir is a directory: give the path of a filter file, e.g. adir/NAME.rbf" "$err"
run create -f adir --force
check "create --force on a directory: the same" "2:adir is a directory" "$rc:$(sed -n 's/^redbloom: \(adir is a directory\).*/\1/p' <<<"$err")"
run create -f nodir/x.rbf
check "missing directory: usage error" 2 "$rc"
check_contains "missing directory: named" "cannot create filter nodir/x.rbf: directory nodir does not exist (make it first: mkdir -p nodir)" "$err"
check "missing directory: no temporary name" no "$([[ "$err" == *.tmp.* ]] && echo yes || echo no)"
run add -f nodir/x.rbf items.txt
check_contains "add into a missing directory: named" "directory nodir does not exist" "$err"
run create -f nodir/x.rbf --window 10m -n 100
check_contains "windowed, missing directory: named" "directory nodir does not exist" "$err"

# --- --force replaces a filter, never another file
echo "precious notes" > notes.txt
run create -f notes.txt --force -n 1000
check "create --force on a text file: refused" 3 "$rc"
check_contains "create --force on a text file: why" "notes.txt is not a redbloom filter that --force could replace" "$err"
check "create --force on a text file: kept" "precious notes" "$(cat notes.txt)"
run create -f notes.txt --force --window 10m -n 1000
check "windowed create --force on a text file: refused" 3 "$rc"
check "windowed create --force on a text file: kept" "precious notes" "$(cat notes.txt)"
run create -f c.rbf -n 1000 -q
run create -f c.rbf -n 2000 --force -q
check "create --force on a filter: replaced" 0 "$rc"
run create -f c.rbf --window 10m -n 2000 --force -q
check "create --force of a window over a filter: replaced" 0 "$rc"

# --- a list of items given where a filter goes: make a filter of it first
printf 's3://b/1\ns3://b/2\n' > s3-listing
printf 's3://b/1\ns3://b/3\n' > references
run diff --known s3-listing --check references
check "diff --known a listing: refused" 3 "$rc"
check_contains "diff --known a listing: make a filter" \
  "s3-listing looks like a list of items: make a filter of it first (redbloom load -f s3-listing.rbf s3-listing, with --exact for diff --exact)" "$err"
run exists -f s3-listing references
check_contains "exists -f a listing: the same hint" "redbloom load -f s3-listing.rbf s3-listing" "$err"
head -c 64 /dev/urandom | tr -d '\n' > binary.bin
printf '\0' >> binary.bin
run exists -f binary.bin references
check "a binary non-filter: no listing hint" no "$([[ "$err" == *"list of items"* ]] && echo yes || echo no)"

# --- diff --exact without an exact set: how to get one
"$redbloom" load -q -f s3.rbf s3-listing
run diff --known s3.rbf --check references --exact
check "diff --exact, no exact set: usage error" 2 "$rc"
check_contains "diff --exact, no exact set: build a new filter" \
  "it already holds items the set would lack, so one cannot be added: build a new filter with its exact set from the same source (redbloom load --exact -f NEW.rbf SOURCE)" "$err"
# info points to the same fix, never to an add/load --exact that would be refused
run info -f s3.rbf
check_contains "info, no exact set, a filter holding items: a new filter" \
  "exact set         none (diff --exact needs one; it already holds items the set would lack, so one cannot be added: build a new filter with its exact set from the same source (redbloom load --exact -f NEW.rbf SOURCE))" "$out"
"$redbloom" create -q -f fresh.rbf -n 1000
run info -f fresh.rbf
check_contains "info, no exact set, an empty filter: load it with --exact" \
  "exact set         none (diff --exact needs one; it is empty: load its items with --exact (redbloom load --exact -f fresh.rbf SOURCE))" "$out"
run load --exact -q -f fresh.rbf s3-listing
check "info's advice for an empty filter works" 0 "$rc"
run add --exact -f s3.rbf s3-listing
check "add --exact on a filter that holds items: refused" 2 "$rc"
check_contains "add --exact on a filter that holds items: a new filter" \
  "load the same source with --exact into a new filter" "$err"
run load --exact -f NEW.rbf s3-listing
check "the advice works" 0 "$rc"
run diff --known NEW.rbf --check references --exact
check "diff --exact on the new filter" "s3://b/3" "$out"
"$redbloom" create -q -f empty.rbf -n 100
run diff --known empty.rbf --check references --exact
check_contains "diff --exact on an empty filter: load it with --exact" \
  "it is empty: load its items with --exact (redbloom load --exact -f empty.rbf SOURCE)" "$err"

# --- a bad TLS setting is a usage error that never prints the password
run exists --redis 'rediss://user:s3cret@127.0.0.1:1?tls_cert=/c.pem#urls' items.txt
check "rediss: usage error" 2 "$rc"
check_contains "rediss: what is wrong" "tls_cert and tls_key go together" "$err"
check "rediss: password never printed" no "$([[ "$err" == *s3cret* ]] && echo yes || echo no)"
run exists -f 'redis://127.0.0.1:1?tls_ca=/ca.pem#urls' items.txt
check_contains "a TLS setting on redis://" "'tls_ca' is a TLS setting: it needs rediss://" "$err"

# --- a redis location without a name says how to give one
run exists -f redis://127.0.0.1:1 items.txt
check "-f URI without #NAME: usage error" 2 "$rc"
check_contains "-f URI without #NAME: how" "names no filter: write its name after '#' (redis://127.0.0.1:1#NAME) or give --name NAME" "$err"
run exists --redis redis://127.0.0.1:1 items.txt
check_contains "--redis URI without #NAME: how" "--redis redis://127.0.0.1:1 names no filter" "$err"
run exists --redis 'redis://127.0.0.1:1#a' --name b items.txt
check_contains "two names: both shown" "two names for one filter: 'a' in --redis redis://127.0.0.1:1#a and 'b' in --name" "$err"

# --- a mistyped option gets a suggestion, as a mistyped command does
run create -f m.rbf --capacty 1000
check "mistyped option: usage error" 2 "$rc"
check_contains "mistyped option: did you mean" "unknown option '--capacty' (did you mean '--capacity'?)" "$err"
run dedup -f m.rbf --dup items.txt
check_contains "mistyped flag: did you mean" "unknown option '--dup' (did you mean '--dups'?)" "$err"
run add -f m.rbf --window=10m --slice 2 items.txt
check_contains "mistyped option after --opt=value" "unknown option '--slice' (did you mean '--slices'?)" "$err"
check "mistyped options: nothing made" none "$(nothing_named m.rbf)"

# --- no project-internal words in what plan shows
run plan --help
check "plan --help: no internal words" no "$(grep -qi seed <<<"$out" && echo yes || echo no)"
check_contains "plan --help: the jobs" "sizing tables for click-log and crawler dedup" "$out"
run plan --table
check "plan --table: no internal words" no "$(grep -qi seed <<<"$out" && echo yes || echo no)"

# --- a slow stream's rate is measured while items flow, or left out; never "0 items/s"
{ echo slow-1; sleep 3; } | "$redbloom" add -f slow.rbf 2>"$work/stderr"
err=$(cat "$work/stderr")
check_contains "one slow item: counted" "read 1, unique 1" "$err"
check "one slow item: no rate" no "$([[ "$err" == *items/s* ]] && echo yes || echo no)"
{ echo slow-2; sleep 1; echo slow-3; sleep 4; } | "$redbloom" add -f slow.rbf --flush-interval 0 2>"$work/stderr"
err=$(cat "$work/stderr")
check_contains "two slow items: counted" "read 2, unique 2" "$err"
check_contains "two slow items: a rate" "items/s" "$err"
check "two slow items: not 0 items/s" no "$([[ "$err" == *" 0 items/s"* ]] && echo yes || echo no)"
{ echo slow-4; sleep 3; } | "$redbloom" add -f slow.rbf --json 2>"$work/stderr"
check_contains "one slow item, JSON: the rate is null" '"items_per_second": null' "$(cat "$work/stderr")"

run dedup --from x --help
check_contains "the stream stage's help: the command users type" \
  "Usage: redbloom dedup --from redis-stream://HOST[:PORT]#STREAM [OPTIONS]" "$out"
check "the stream stage's help: no hidden name" "" "$(grep -F dedup-stream <<<"$out")"
run dedup --help
check_contains "help names the program, not its path" "Usage: redbloom dedup [OPTIONS]" "$out"

echo "cli_usage_test: $passes passed, $failures failed"
((failures == 0))
