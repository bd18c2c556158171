#!/usr/bin/env python3
"""Kafka stage benchmark: `redbloom dedup --from kafka://... --to kafka://...` against plain
`redbloom dedup` of the same values through the same kind of filter (a new one each run), with
the filter in a file and in Redis with redbloom's module. The topics live in librdkafka's mock
cluster (the tests' helper), in another process on this machine, so the stage's rate includes
the mock broker's work on the same cores.

Prints, per case, the median over --reps runs of records/s: the stage's from its --progress
lines (records read between the first line that counts any and the line where every partition
is caught up, over the time between them), plain dedup's from its --json summary. And the CPU
time per record, which does not depend on how fast the broker answers: the stage process's
(user + system, its whole run), the Redis server's while it ran (the module's work), and the
mock broker's while the stage ran; plain dedup's own and its Redis server's.
  scripts/bench-kafka.py --build=DIR [--n=500000] [--reps=3] [--partitions=3] [--batch=10000]
                        [--stage-arg=ARG ...]
--stage-arg passes ARG to the stage, e.g. --stage-arg=-X --stage-arg=queued.min.messages=100000.
DIR holds redbloom, tests/kafka_mock_cluster and module/redbloom.so (a configured build)."""

import argparse
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))
sys.path.insert(0, str(ROOT / "tests" / "kafka"))


def values(n, start=1):
    rng = random.Random(start)
    keys, out = [], []
    for _ in range(n):
        if keys and rng.random() < 0.3:
            out.append(rng.choice(keys))
        else:
            keys.append("evt-%d-%08x" % (len(keys), rng.getrandbits(32)))
            out.append(keys[-1])
    return out


def start_redis(directory, module):
    port_socket = __import__("socket").socket()
    port_socket.bind(("127.0.0.1", 0))
    port = port_socket.getsockname()[1]
    port_socket.close()
    server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                               "--save", "", "--appendonly", "no", "--dir", str(directory),
                               "--loadmodule", str(module)], stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True,
                         text=True).stdout.strip() != "PONG":
        if time.monotonic() > deadline:
            sys.exit("redis-server did not start")
        time.sleep(0.05)
    return server, "redis://127.0.0.1:%d" % port


def cpu_seconds(pid):
    """User + system CPU time of a running process so far (/proc/PID/stat)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def finish(process):
    """Waits for `process`; its CPU seconds (user + system)."""
    _, _, usage = os.wait4(process.pid, 0)
    process.returncode = 0
    return usage.ru_utime + usage.ru_stime


def stage_rate(build, items, filter_args, partitions, batch, tmp, server):
    """(records/s, stage CPU s, server CPU s, broker CPU s) of one stage run."""
    mock = subprocess.Popen([str(build / "tests" / "kafka_mock_cluster"), "1",
                             "in:%d" % partitions, "out:%d" % partitions],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        bootstrap = mock.stdout.readline().strip()
        produced = subprocess.run(["kcat", "-P", "-b", bootstrap, "-t", "in", "-z", "none"],
                                  input="\n".join(items) + "\n", text=True, capture_output=True)
        if produced.returncode != 0:
            sys.exit(produced.stderr)
        broker_cpu = cpu_seconds(mock.pid)
        server_cpu = cpu_seconds(server.pid) if server else 0.0
        stage = subprocess.Popen(
            [str(build / "redbloom"), "dedup", "--from", "kafka://%s/in" % bootstrap, "--to",
             "kafka://%s/out" % bootstrap, "--group", "bench", "--batch", str(batch),
             "--progress", "100ms", *filter_args], stderr=subprocess.PIPE, text=True)
        first = None
        while True:
            line = stage.stderr.readline()
            if not line:
                sys.exit("the stage ended early")
            m = re.search(r"dedup: ([0-9.]+) s, read (\d+).* lag(.*)", line)
            if not m:
                continue
            seconds, read = float(m.group(1)), int(m.group(2))
            if first is None and read > 0:
                first = (seconds, read)
            lags = re.findall(r"p\d+=(\d+|\?)", m.group(3))
            if read >= len(items) and len(lags) == partitions and set(lags) == {"0"}:
                break
        broker_cpu = cpu_seconds(mock.pid) - broker_cpu
        server_cpu = (cpu_seconds(server.pid) - server_cpu) if server else 0.0
        stage.send_signal(signal.SIGTERM)
        stage.stderr.read()
        return (read - first[1]) / (seconds - first[0]), finish(stage), server_cpu, broker_cpu
    finally:
        mock.kill()
        mock.wait()


def plain_rate(build, items, filter_args, server, tmp):
    """(items/s, dedup CPU s, server CPU s) of one plain dedup run."""
    lines = tmp / "items.txt"
    lines.write_text("\n".join(items) + "\n")
    server_cpu = cpu_seconds(server.pid) if server else 0.0
    with open(lines) as source:
        run = subprocess.Popen([str(build / "redbloom"), "dedup", "--json", *filter_args],
                               stdin=source, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
        err = run.stderr.read()
        cpu = finish(run)
    server_cpu = (cpu_seconds(server.pid) - server_cpu) if server else 0.0
    summary = json.loads(err.strip().splitlines()[-1])
    if "read" not in summary:
        sys.exit(err)
    return summary["read"] / summary["seconds"], cpu, server_cpu


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True)
    parser.add_argument("--n", type=int, default=500000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--batch", type=int, default=10000)
    parser.add_argument("--stage-arg", action="append", default=[])
    args = parser.parse_args()
    build = Path(args.build).resolve()
    if shutil.which("kcat") is None or shutil.which("redis-server") is None:
        sys.exit("bench-kafka needs kcat and redis-server (scripts/install-deps.sh --test)")
    items = values(args.n)
    sizing = ["-n", str(args.n), "-p", "1e-6"]
    results = {}
    for rep in range(args.reps):
        for case in ("file", "redis module"):
            with tempfile.TemporaryDirectory() as tmp:
                tmp = Path(tmp)
                server = None
                try:
                    if case == "file":
                        stage_filter = ["-f", str(tmp / "stage.rbf"), *sizing]
                        plain_filter = ["-f", str(tmp / "plain.rbf"), *sizing]
                    else:
                        server, url = start_redis(tmp, build / "module" / "redbloom.so")
                        stage_filter = ["--redis", url + "#stage", *sizing]
                        plain_filter = ["--redis", url + "#plain", *sizing]
                    s = stage_rate(build, items, [*stage_filter, *args.stage_arg],
                                   args.partitions, args.batch, tmp, server)
                    p = plain_rate(build, items, plain_filter, server, tmp)
                finally:
                    if server is not None:
                        server.kill()
                        server.wait()
            n = len(items)
            row = (s[0], p[0], s[1] / n * 1e6, s[2] / n * 1e6, s[3] / n * 1e6, p[1] / n * 1e6,
                   p[2] / n * 1e6)
            results.setdefault(case, []).append(row)
            print("rep %d %s: stage %.0f records/s, plain dedup %.0f items/s; CPU µs per record: "
                  "stage %.2f + server %.2f (broker %.2f), plain %.2f + server %.2f" % (
                      rep, case, *row), file=sys.stderr)
    print("| filter | stage records/s | plain dedup items/s | stage / plain | stage CPU µs/record "
          "(its Redis server's) | mock broker CPU µs/record | plain dedup CPU µs/item (its Redis "
          "server's) | CPU per record, stage / plain |")
    print("|---|---|---|---|---|---|---|---|")
    for case, runs in results.items():
        m = [statistics.median(r[i] for r in runs) for i in range(7)]
        print("| %s | %.0f | %.0f | %.2f× | %.2f (%.2f) | %.2f | %.2f (%.2f) | %.1f× |" % (
            case, m[0], m[1], m[0] / m[1], m[2], m[3], m[4], m[5], m[6],
            (m[2] + m[3]) / (m[5] + m[6])))


if __name__ == "__main__":
    main()
