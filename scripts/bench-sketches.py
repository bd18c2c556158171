#!/usr/bin/python3
"""The main commands of RedisBloom's sketches, items/s of redbloom.so against RedisBloom, side by
side.

    scripts/bench-sketches.py --redisbloom PATH/redisbloom.so [--module PATH/redbloom.so]
        [--types tdigest,topk,cms,cms-large] [--reps 5] [--requests 200000]

Starts one private redis-server (no persistence, a free loopback port) per module, then runs
redis-benchmark against them in turn, interleaved, --reps times, 16 commands in flight:
- tdigest: TDIGEST.ADD of 100 values per command on a digest of compression 100, then
  TDIGEST.QUANTILE of 5 quantiles on it;
- topk: TOPK.ADD of 100 items per command (drawn at random from 100,000 by redis-benchmark's
  -r) on a Top-K of k 50, width 2000, depth 7, decay 0.9, then TOPK.QUERY of 100 such items;
- cms, cms-large: CMS.INCRBY of 50 items (of a million) with increments 1 to 9, then
  CMS.QUERY of 50, on CMS.INITBYPROB 0.001 0.01 (2000 x 7 counters, in cache) and
  CMS.INITBYPROB 0.00001 0.001 (200000 x 10, 8 MB, past the cache).
Prints the median items/s per module and command and their ratio. The module defaults to
build-release/module/redbloom.so. Servers are killed by pid on exit."""
import argparse, os, random, re, socket, statistics, subprocess, sys, tempfile, time


def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


def start(module, directory):
    port = free_port()
    p = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                          "--appendonly", "no", "--dir", directory, "--loadmodule", module],
                         stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    for _ in range(100):
        if subprocess.run(["redis-cli", "-p", str(port), "PING"], capture_output=True).stdout.strip() == b"PONG":
            return p, port
        time.sleep(0.1)
    p.kill()
    sys.exit("redis-server with %s did not start" % module)


def rps(port, requests, keyspace, *command):
    out = subprocess.run(["redis-benchmark", "-p", str(port), "-n", str(requests), "-P", "16",
                          "-c", "1", "-r", str(keyspace), "--csv", *command],
                         capture_output=True, text=True, check=True)
    rows = [l for l in out.stdout.splitlines() if l and not l.startswith('"test"')]
    return float(re.findall(r'"([0-9.]+)"', rows[-1])[0])


def cases(rng):
    """Per type: the command that makes the key, (label, command, items per command) of each
    command measured, and the number of distinct items redis-benchmark draws from."""
    values = ["%.6f" % rng.gauss(100, 15) for _ in range(100)]
    quantiles = ["0.01", "0.25", "0.5", "0.9", "0.999"]
    items = ["item:__rand_int__"] * 100
    pairs = [x for i in range(50) for x in ("item:__rand_int__", str(1 + i % 9))]

    def cms(error, probability, label):
        return (["CMS.INITBYPROB", "t", error, probability],
                [("CMS.INCRBY (50 items, %s)" % label, ["CMS.INCRBY", "t"] + pairs, 50),
                 ("CMS.QUERY (50 items, %s)" % label, ["CMS.QUERY", "t"] + items[:50], 50)],
                1000000)

    return {
        "tdigest": (["TDIGEST.CREATE", "t", "COMPRESSION", "100"],
                    [("TDIGEST.ADD (100 values)", ["TDIGEST.ADD", "t"] + values, 100),
                     ("TDIGEST.QUANTILE (5 quantiles)", ["TDIGEST.QUANTILE", "t"] + quantiles, 5)],
                    100000),
        "topk": (["TOPK.RESERVE", "t", "50", "2000", "7", "0.9"],
                 [("TOPK.ADD (100 items)", ["TOPK.ADD", "t"] + items, 100),
                  ("TOPK.QUERY (100 items)", ["TOPK.QUERY", "t"] + items, 100)], 100000),
        "cms": cms("0.001", "0.01", "2000 x 7"),
        "cms-large": cms("0.00001", "0.001", "200000 x 10"),
    }


def main():
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    a.add_argument("--redisbloom", required=True)
    a.add_argument("--module", default="build-release/module/redbloom.so")
    a.add_argument("--types", default="tdigest,topk,cms,cms-large")
    a.add_argument("--reps", type=int, default=5)
    a.add_argument("--requests", type=int, default=200000)
    o = a.parse_args()
    rng = random.Random(1)
    chosen = {t: c for t, c in cases(rng).items() if t in o.types.split(",")}
    modules = {"redbloom.so": os.path.abspath(o.module), "RedisBloom": os.path.abspath(o.redisbloom)}
    servers = {}
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            for name, path in modules.items():
                d = os.path.join(tmp, name); os.makedirs(d)
                servers[name] = start(path, d)
            for rep in range(o.reps):
                order = list(modules)
                rng.shuffle(order)
                for name in order:
                    port = servers[name][1]
                    for make, commands, keyspace in chosen.values():
                        subprocess.run(["redis-cli", "-p", str(port), "DEL", "t"], capture_output=True)
                        subprocess.run(["redis-cli", "-p", str(port), *make], capture_output=True,
                                       check=True)
                        for label, command, per in commands:
                            results.setdefault((name, label), []).append(
                                rps(port, o.requests, keyspace, *command) * per)
        finally:
            for p, _ in servers.values():
                p.kill(); p.wait()
    # Each repetition measures both modules back to back: its ratio is less exposed to the
    # machine's load changing than the ratio of the two medians.
    print("| command | redbloom.so items/s | RedisBloom items/s | ratio of medians | "
          "per-repetition ratios: median (range) |")
    print("|---|---|---|---|---|")
    for _, commands, _ in chosen.values():
        for label, _, _ in commands:
            ours, theirs = results[("redbloom.so", label)], results[("RedisBloom", label)]
            ratios = [a / b for a, b in zip(ours, theirs)]
            print("| %s | %s | %s | %.2f× | %.2f× (%.2f–%.2f) |" % (
                label, "{:,.0f}".format(statistics.median(ours)),
                "{:,.0f}".format(statistics.median(theirs)),
                statistics.median(ours) / statistics.median(theirs), statistics.median(ratios),
                min(ratios), max(ratios)))


main()
