#!/usr/bin/python3
"""CMS.INCRBY and CMS.QUERY items/s of redbloom.so against RedisBloom, side by side.

    scripts/bench-cms.py --redisbloom PATH/redisbloom.so [--module PATH/redbloom.so]
        [--reps 5] [--requests 100000] [--items 50]

Starts one private redis-server (no persistence, a free loopback port) per module, then runs
redis-benchmark against them: each command on both servers back to back in a random order,
--reps times, on new sketches each repetition, of two shapes: CMS.INITBYPROB 0.001 0.01 (2000 x 7 counters, 56 KB, in cache) and
CMS.INITBYPROB 0.00001 0.001 (200000 x 10, 8 MB, past the cache). Each command carries --items
random items of a million (redis-benchmark's __rand_int__), 16 commands in flight: CMS.INCRBY
with an increment of 1 to 9 for each, then CMS.QUERY of as many. Prints the median items/s
(items counted, items answered) per module and the median of the pairs' ratios. The module defaults to
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


def rps(port, requests, *command):
    out = subprocess.run(["redis-benchmark", "-p", str(port), "-n", str(requests), "-P", "16",
                          "-c", "1", "-r", "1000000", "--csv", *command], capture_output=True,
                         text=True, check=True)
    rows = [l for l in out.stdout.splitlines() if l and not l.startswith('"test"')]
    return float(re.findall(r'"([0-9.]+)"', rows[-1])[0])


SHAPES = (("0.001", "0.01"), ("0.00001", "0.001"))


def main():
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    a.add_argument("--redisbloom", required=True)
    a.add_argument("--module", default="build-release/module/redbloom.so")
    a.add_argument("--reps", type=int, default=5)
    a.add_argument("--requests", type=int, default=100000)
    a.add_argument("--items", type=int, default=50)
    o = a.parse_args()
    rng = random.Random(1)
    pairs = [x for i in range(o.items) for x in ("item:__rand_int__", str(1 + i % 9))]
    items = ["item:__rand_int__"] * o.items
    modules = {"redbloom.so": os.path.abspath(o.module), "RedisBloom": os.path.abspath(o.redisbloom)}
    servers = {}
    tests = [(shape, t) for shape in SHAPES for t in ("incrby", "query")]
    results = {(m, t): [] for m in modules for t in tests}
    ratios = {t: [] for t in tests}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            for name, path in modules.items():
                d = os.path.join(tmp, name); os.makedirs(d)
                servers[name] = start(path, d)
            for rep in range(o.reps):
                for shape in SHAPES:
                    for name in modules:
                        port = servers[name][1]
                        subprocess.run(["redis-cli", "-p", str(port), "DEL", "s"], capture_output=True)
                        subprocess.run(["redis-cli", "-p", str(port), "CMS.INITBYPROB", "s", *shape],
                                       capture_output=True, check=True)
                    for test, command in (("incrby", ["CMS.INCRBY", "s", *pairs]),
                                          ("query", ["CMS.QUERY", "s", *items])):
                        order = list(modules)
                        rng.shuffle(order)
                        pair = {}
                        for name in order:
                            pair[name] = rps(servers[name][1], o.requests, *command) * o.items
                            results[(name, (shape, test))].append(pair[name])
                        ratios[(shape, test)].append(pair["redbloom.so"] / pair["RedisBloom"])
        finally:
            for p, _ in servers.values():
                p.kill(); p.wait()
    print("| command | sketch | redbloom.so items/s | RedisBloom items/s | ratio |")
    print("|---|---|---|---|---|")
    for shape, test in tests:
        ours = statistics.median(results[("redbloom.so", (shape, test))])
        theirs = statistics.median(results[("RedisBloom", (shape, test))])
        print("| CMS.%s (%d items) | INITBYPROB %s %s | %s | %s | %.2f× |" % (
            test.upper(), o.items, shape[0], shape[1], "{:,.0f}".format(ours),
            "{:,.0f}".format(theirs), statistics.median(ratios[(shape, test)])))


main()
