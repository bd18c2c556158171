#!/usr/bin/env bash
# dedup --from redis-stream://: entries per second of the exactly-once stage from one Redis
# stream to another, on one private server (no persistence) without and with redbloom's module.
# N entries (default 1,000,000), 30% repeats, are put in the input stream first; the time is
# from the stage's start to the moment the group has every entry read and none pending. The
# stage runs on a plain filter and on a windowed one, each run R times (--runs, default 1)
# alternately; the figures are the medians. The windowed filter is a stream's steady state in
# small: a 4 s window in 4 slices (of 1 s), each sized for all N entries so that none grows
# (-n 4N a window). Before the stage starts, N/4 other keys a second go in for 4 s, so that as
# in a stream that has run for a window the older slices hold keys and every new entry is
# tested against them. A run slower than the window forgets its first keys: its output then
# counts more than the distinct keys, and says so. The
# same keys as lines through `redbloom dedup --redis` into a plain filter of the same size on
# the same server are the baseline: what the stream work (read, acknowledge, copy) costs on top.
# --kinds picks the stage's filters (default plain,windowed; growing: a filter without a window
# whose first link holds N/8 entries, so that it grows during the run).
# --layout picks the filters' layout (classic, the default, or blocked). --before names another
# redbloom binary (a build from before a change): its stage runs are interleaved with the
# others, for a before/after ratio measured side by side. --stats prints, for the last run of
# each case, the server's time per entry in each command (INFO commandstats; the batch
# scripts' time includes the commands they call) and its CPU per entry.
#   scripts/bench-stream-dedup.sh [--entries N] [--batch B] [--runs R] [--layout L]
#                                 [--kinds K[,K...]] [--before BINARY] [--stats]
# Uses build-release/redbloom and build-release/module/redbloom.so (scripts/demo.sh builds
# them), or $REDBLOOM_BIN and $REDBLOOM_MODULE; Debian's python3-redis drives the streams.
set -euo pipefail
cd "$(dirname "$0")/.."
entries=1000000
batch=1000
runs=1
layout=classic
before=""
stats=no
kinds=plain,windowed
while [[ $# -gt 0 ]]; do
  case $1 in
    --entries) entries=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --layout) layout=$2; shift 2 ;;
    --before) before=$(realpath "$2"); shift 2 ;;
    --stats) stats=yes; shift ;;
    --kinds) kinds=$2; shift 2 ;;
    *) echo "usage: $0 [--entries N] [--batch B] [--runs R] [--layout L] [--kinds K[,K...]] [--before BINARY] [--stats]" >&2
       exit 2 ;;
  esac
done
redbloom=$(realpath "${REDBLOOM_BIN:-build-release/redbloom}")
module=$(realpath "${REDBLOOM_MODULE:-build-release/module/redbloom.so}")
[[ -x "$redbloom" ]] || { echo "bench-stream-dedup: no $redbloom (run scripts/demo.sh)" >&2; exit 2; }
[[ -f "$module" ]] || { echo "bench-stream-dedup: no $module (run scripts/demo.sh)" >&2; exit 2; }
source scripts/lib/private-redis.sh
server_bin=${REDBLOOM_REDIS_SERVER:-$(command -v redis-server || true)}
[[ -x "$server_bin" ]] || { echo "bench-stream-dedup: redis-server not found" >&2; exit 1; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/redbloom-bench-stream-dedup.XXXXXX")
trap private_redis_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

private_redis_start_server bench-stream-dedup no
private_redis_server_args=(--loadmodule "$module")
private_redis_start_server bench-stream-dedup no
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "server: $("$server_bin" --version | head -n1), no persistence"
echo "stage dedup --from, $entries entries (30% repeats), --batch $batch, --layout $layout, medians of $runs runs:"
for i in 0 1; do
  engine=$([[ $i == 0 ]] && echo "stock Redis" || echo "with redbloom.so")
  /usr/bin/python3 - "$redbloom" "${ports[$i]}" "$entries" "$batch" "$engine" "$dir" "$runs" \
      "$layout" "$before" "$stats" "$kinds" <<'PY'
import random, signal, statistics, subprocess, sys, time
import redis
cli, port, entries, batch, engine, work, runs = sys.argv[1], int(sys.argv[2]), \
    int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6], int(sys.argv[7])
layout, before, stats = sys.argv[8], sys.argv[9], sys.argv[10] == "yes"
kinds = sys.argv[11].split(",")
profile = {}  # case: (server CPU µs/entry, {command: µs/entry}), of its last run
r = redis.Redis(port=port)
rng = random.Random(1)
keys, lines = [], []
for n in range(entries):
    if keys and rng.random() < 0.3:
        key = rng.choice(keys)
    else:
        key = "evt-%d" % len(keys)
        keys.append(key)
    lines.append(key)
url = "redis-stream://127.0.0.1:%d" % port
filter_url = "redis://127.0.0.1:%d#f" % port
shapes = {"plain": ["-n", str(entries), "--layout", layout],
          "windowed": ["--window", "4s", "-n", str(4 * entries), "--layout", layout],
          "growing": ["--growth", "2", "-n", str(max(1, entries // 8)), "--layout", layout]}
if not kinds or any(k not in shapes for k in kinds) or "plain" not in kinds:
    sys.exit("--kinds: some of plain, windowed, growing, plain among them")


def server_cpu():
    """The server's CPU seconds so far (INFO cpu)."""
    cpu = r.info("cpu")
    return cpu["used_cpu_user"] + cpu["used_cpu_sys"]


def fill_older_slices():
    """N/4 keys not in the stream added a second for the window's 4 s, one slice's each."""
    for second in range(4):
        due = time.monotonic() + 1.0
        older = "".join("older-%d-%d\n" % (second, n) for n in range(entries // 4))
        subprocess.run([cli, "add", "--redis", filter_url, "-q", "-"], input=older.encode(),
                       check=True)
        time.sleep(max(0.0, due - time.monotonic()))


def stage_rate(kind, program, case):
    """The stage's entries/s on a fresh filter of `kind`, and the number copied."""
    r.flushall()
    pipe = r.pipeline(transaction=False)
    for n, key in enumerate(lines):
        pipe.xadd("in", {"id": key, "n": n})
        if n % 1000 == 999:
            pipe.execute()
    pipe.execute()
    subprocess.run([cli, "create", "--redis", filter_url, "-p", "1e-6", "-q", *shapes[kind]],
                   check=True)
    if kind == "windowed":
        fill_older_slices()
    r.config_resetstat()
    cpu = server_cpu()
    start = time.monotonic()
    stage = subprocess.Popen([program, "dedup", "--from", url + "#in", "--to", url + "#out",
                              "--group", "g", "--create-group", "--key-field", "id", "--redis",
                              filter_url, "--batch", batch, "-q"])
    while True:
        g = r.xinfo_groups("in")
        if g and g[0]["entries-read"] == entries and g[0]["pending"] == 0:
            break
        if stage.poll() is not None:
            sys.exit("the stage stopped early")
        time.sleep(0.01)
    seconds = time.monotonic() - start
    cpu = server_cpu() - cpu
    commands = {name[len("cmdstat_"):] if name.startswith("cmdstat_") else name:
                v["usec"] / entries for name, v in r.info("commandstats").items()}
    profile[case] = (cpu * 1e6 / entries, commands)
    stage.send_signal(signal.SIGTERM)
    stage.wait()
    return entries / seconds, r.xlen("out")


def lines_rate():
    path = "%s/keys-%d.txt" % (work, port)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    r.flushall()
    subprocess.run([cli, "create", "--redis", "redis://127.0.0.1:%d#lines" % port, "-n",
                    str(entries), "-p", "1e-6", "--layout", layout, "-q"], check=True)
    start = time.monotonic()
    subprocess.run([cli, "dedup", "--redis", "redis://127.0.0.1:%d#lines" % port, "-q", path],
                   check=True, stdout=subprocess.DEVNULL)
    return entries / (time.monotonic() - start)


rates = {k: [] for k in kinds + [k + " before" for k in kinds] + ["lines"]}
copied = {}
for run in range(runs):
    for kind in kinds:
        rate, copied[kind] = stage_rate(kind, cli, kind)
        rates[kind].append(rate)
        if before:
            rate, copied_before = stage_rate(kind, before, kind + " before")
            rates[kind + " before"].append(rate)
            # A windowed run slower than the window copies more: only the plain ones must agree.
            if copied_before != copied[kind] and kind == "plain":
                sys.exit("the binary before copied %d entries, the one after %d"
                         % (copied_before, copied[kind]))
    rates["lines"].append(lines_rate())
m = {k: statistics.median(v) for k, v in rates.items() if v}
for kind in kinds:
    print("  %-16s %-8s stage %8.0f entries/s (runs %s); dedup of the keys as lines %8.0f "
          "items/s; stage / lines %.2fx; against the plain stage %.2fx (output %d, distinct "
          "keys %d)"
          % (engine, kind, m[kind], " ".join("%.0f" % x for x in rates[kind]), m["lines"],
             m[kind] / m["lines"], m[kind] / m["plain"], copied[kind], len(keys)))
    if before:
        print("  %-16s %-8s before: stage %8.0f entries/s (runs %s); after / before %.2fx"
              % (engine, kind, m[kind + " before"],
                 " ".join("%.0f" % x for x in rates[kind + " before"]),
                 m[kind] / m[kind + " before"]))
if stats:
    for case, (cpu, commands) in profile.items():
        shown = sorted(((v, k) for k, v in commands.items() if v >= 0.01), reverse=True)
        print("  %-16s %-15s server CPU %.2f us/entry; commands, us/entry: %s"
              % (engine, case, cpu, ", ".join("%s %.2f" % (k, v) for v, k in shown)))
PY
done
