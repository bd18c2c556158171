#!/usr/bin/python3
"""TDIGEST.ADD and TDIGEST.QUANTILE items/s of redbloom.so against RedisBloom, side by side.

    scripts/bench-tdigest.py --redisbloom PATH/redisbloom.so [--module PATH/redbloom.so]
        [--reps 5] [--requests 200000]

Starts one private redis-server (no persistence, a free loopback port) per module, then runs
redis-benchmark against them in turn, interleaved, --reps times: TDIGEST.ADD of 100 values per
command (16 commands in flight) on a digest of compression 100, then TDIGEST.QUANTILE of 5
quantiles on it. Prints the median items/s (values added, quantiles answered) per module and
their ratio. The module defaults to build-release/module/redbloom.so. Servers are killed by
pid on exit."""
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
                          "-c", "1", "--csv", *command], capture_output=True, text=True, check=True)
    rows = [l for l in out.stdout.splitlines() if l and not l.startswith('"test"')]
    return float(re.findall(r'"([0-9.]+)"', rows[-1])[0])


def main():
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    a.add_argument("--redisbloom", required=True)
    a.add_argument("--module", default="build-release/module/redbloom.so")
    a.add_argument("--reps", type=int, default=5)
    a.add_argument("--requests", type=int, default=200000)
    o = a.parse_args()
    rng = random.Random(1)
    values = ["%.6f" % rng.gauss(100, 15) for _ in range(100)]
    quantiles = ["0.01", "0.25", "0.5", "0.9", "0.999"]
    modules = {"redbloom.so": os.path.abspath(o.module), "RedisBloom": os.path.abspath(o.redisbloom)}
    servers = {}
    results = {(m, t): [] for m in modules for t in ("add", "quantile")}
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
                    subprocess.run(["redis-cli", "-p", str(port), "DEL", "t"], capture_output=True)
                    subprocess.run(["redis-cli", "-p", str(port), "TDIGEST.CREATE", "t", "COMPRESSION", "100"], capture_output=True)
                    results[(name, "add")].append(rps(port, o.requests, "TDIGEST.ADD", "t", *values) * len(values))
                    results[(name, "quantile")].append(rps(port, o.requests, "TDIGEST.QUANTILE", "t", *quantiles) * len(quantiles))
        finally:
            for p, _ in servers.values():
                p.kill(); p.wait()
    print("| command | redbloom.so items/s | RedisBloom items/s | ratio |")
    print("|---|---|---|---|")
    for test, label in (("add", "TDIGEST.ADD (100 values)"), ("quantile", "TDIGEST.QUANTILE (5 quantiles)")):
        ours = statistics.median(results[("redbloom.so", test)])
        theirs = statistics.median(results[("RedisBloom", test)])
        print("| %s | %s | %s | %.2f× |" % (label, "{:,.0f}".format(ours), "{:,.0f}".format(theirs), ours / theirs))


main()
