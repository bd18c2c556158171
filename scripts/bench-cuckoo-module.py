#!/usr/bin/python3
"""CF.ADD / CF.ADDNX / CF.EXISTS / CF.MEXISTS / CF.DEL items per second: redbloom.so against
RedisBloom, side by side, on private redis-servers (no persistence) on free loopback ports.

    scripts/bench-cuckoo-module.py MODULE.so --redisbloom=REDISBLOOM.so [--reps=5]
        [--n=400000] [--capacity=4000000] [--pipeline=32] [--clients=4] [--maxmemory=BYTES]

Per run and per server: FLUSHALL, CF.RESERVE of `capacity` (no growth), then redis-benchmark
(Debian's redis-tools) sends each command with random items (`i:__rand_int__` over 2·n
values, so about half the lookups and deletes find their item) `n` times, `pipeline` in flight
on each of `clients` connections (n / items-per-command for the commands of 10 and 100
items). Each command runs on
both servers back to back, in a random order. --maxmemory gives both servers that limit
(noeviction; the default 0 sets none). Prints a markdown table: the median items/s of
`reps` runs per command and server, and the median of the runs' ratios.
"""

import argparse
import os
import random
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

COMMANDS = [  # shown as, command, arguments after the key, items per command
    ("CF.ADD", "CF.ADD", ["i:__rand_int__"], 1),
    ("CF.ADDNX", "CF.ADDNX", ["i:__rand_int__"], 1),
    ("CF.EXISTS", "CF.EXISTS", ["i:__rand_int__"], 1),
    ("CF.MEXISTS (10 items)", "CF.MEXISTS", ["i:__rand_int__"] * 10, 10),
    ("CF.MEXISTS (100 items)", "CF.MEXISTS", ["i:__rand_int__"] * 100, 100),
    ("CF.INSERT (100 items)", "CF.INSERT", ["ITEMS"] + ["i:__rand_int__"] * 100, 100),
    ("CF.DEL", "CF.DEL", ["i:__rand_int__"], 1),
]


class Server:
    def __init__(self, name, module, directory, maxmemory):
        self.name = name
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        os.makedirs(directory)
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--maxmemory", str(maxmemory), "--dir", directory, "--logfile",
             os.path.join(directory, "redis.log"), "--loadmodule", os.path.abspath(module)])
        for _ in range(100):
            if self.cli("PING") == "PONG":
                return
            time.sleep(0.05)
        raise RuntimeError("%s did not start" % name)

    def cli(self, *args):
        done = subprocess.run(["redis-cli", "-p", str(self.port), *map(str, args)],
                              capture_output=True, text=True)
        return done.stdout.strip()

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def measure(server, command, args, items, options):
    out = subprocess.run(
        ["redis-benchmark", "-p", str(server.port), "-q", "-n", str(options.n // items), "-P",
         str(options.pipeline), "-c", str(options.clients), "-r", str(2 * options.n),
         command, "k", *args], capture_output=True, text=True, check=True).stdout
    rates = re.findall(r"([0-9.]+) requests per second", out.replace("\r", "\n"))
    if not rates:
        raise RuntimeError("no rate in redis-benchmark's output: %r" % out[-300:])
    return float(rates[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("module")
    parser.add_argument("--redisbloom", required=True)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--n", type=int, default=400000)
    parser.add_argument("--capacity", type=int, default=4000000)
    parser.add_argument("--pipeline", type=int, default=32)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--maxmemory", type=int, default=0)
    options = parser.parse_args()
    for tool in ("redis-server", "redis-benchmark", "redis-cli"):
        if shutil.which(tool) is None:
            sys.exit("bench-cuckoo-module: %s not found (apt-get install redis-server)" % tool)
    top = tempfile.mkdtemp(prefix="bench-cuckoo-")
    servers = []
    try:
        servers = [Server("redbloom.so", options.module, os.path.join(top, "redbloom"),
                          options.maxmemory),
                   Server("RedisBloom", options.redisbloom, os.path.join(top, "redisbloom"),
                          options.maxmemory)]
        rates = {(s.name, c[0]): [] for s in servers for c in COMMANDS}
        ratios = {c[0]: [] for c in COMMANDS}
        order = random.Random(1)
        for _ in range(options.reps):
            for server in servers:
                server.cli("FLUSHALL")
                server.cli("CF.RESERVE", "k", options.capacity)
            # Each command on both servers back to back, in a random order: a pair of
            # measurements sees the same load from the machine's other work.
            for shown, command, args, items in COMMANDS:
                turn = servers[:]
                order.shuffle(turn)
                pair = {}
                for server in turn:
                    pair[server.name] = measure(server, command, args, items, options) * items
                    rates[(server.name, shown)].append(pair[server.name])
                ratios[shown].append(pair["redbloom.so"] / pair["RedisBloom"])
        print("machine: %d cores, load average %s; n=%d, pipeline %d, %d clients, %d runs, "
              "maxmemory %d" % (os.cpu_count(), " ".join("%.2f" % x for x in os.getloadavg()),
                                options.n, options.pipeline, options.clients, options.reps,
                                options.maxmemory))
        print()
        print("| command | redbloom.so items/s | RedisBloom items/s | ratio (median of the runs' ratios) |")
        print("|---|---|---|---|")
        for shown, _, _, _ in COMMANDS:
            ours = statistics.median(rates[("redbloom.so", shown)])
            theirs = statistics.median(rates[("RedisBloom", shown)])
            print("| %s | %s | %s | %.2f× |" % (shown, format(round(ours), ","),
                                               format(round(theirs), ","),
                                               statistics.median(ratios[shown])))
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    main()
