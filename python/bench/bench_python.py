"""redbloom from Python, measured beside what Python users have: a Redis Bloom filter written
in Python (redis-py, md5/sha1 double hashing, one SETBIT/GETBIT per bit, pipelined 1000 URLs a
round trip) and a Python set. Prints a markdown table of medians of --runs runs.

    bench_python.py --redis redis://127.0.0.1:PORT [--redis-module redis://…] [--items 1000000]
                    [--redis-py-items 100000] [--runs 5] [--cxx-bench path/to/bench_local]
"""

import argparse
import hashlib
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import redis

import redbloom


def urls(count, offset=0):
    return ["s3://bucket/dir/file%d.pdf" % i for i in range(offset, offset + count)]


class RedisPyBloom:
    """The usual hand-written Redis Bloom filter in Python, its batch form."""

    def __init__(self, client, key, capacity, error_rate):
        self.client, self.key = client, key
        self.bits = int(-capacity * math.log(error_rate) / (math.log(2) ** 2))
        self.k = max(1, int(self.bits / capacity * math.log(2)))

    def positions(self, item):
        h1 = int(hashlib.md5(item.encode()).hexdigest(), 16)
        h2 = int(hashlib.sha1(item.encode()).hexdigest(), 16)
        return [(h1 + i * h2) % self.bits for i in range(self.k)]

    def add_batch(self, items, batch=1000):
        for start in range(0, len(items), batch):
            pipe = self.client.pipeline(transaction=False)
            for item in items[start:start + batch]:
                for pos in self.positions(item):
                    pipe.setbit(self.key, pos, 1)
            pipe.execute()

    def contains_batch(self, items, batch=1000):
        out = []
        for start in range(0, len(items), batch):
            chunk = items[start:start + batch]
            pipe = self.client.pipeline(transaction=False)
            for item in chunk:
                for pos in self.positions(item):
                    pipe.getbit(self.key, pos)
            bits = pipe.execute()
            out += [all(bits[i * self.k:(i + 1) * self.k]) for i in range(len(chunk))]
        return out


def cxx_batch_ns(bench_local):
    """The C++ batch path on a file filter of 1M URL keys, blocked: (insert ns, hit ns)."""
    out = subprocess.run([bench_local, "--store=file", "--keys=url", "--n=1e6",
                          "--benchmark_filter=^file-url/blocked/batched/"],
                         capture_output=True, text=True, check=True).stdout
    row = next(line for line in out.splitlines() if line.startswith("| file-url/blocked/batched "))
    cells = [c.strip() for c in row.split("|")]
    return float(cells[3]), float(cells[4])


def timed(function):
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--redis", required=True)
    parser.add_argument("--redis-module", help="a server with redbloom.so loaded")
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--redis-py-items", "--seed-items", dest="redis_py_items", type=int,
                        default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cxx-bench", help="bench_local, run once per run for the C++ batch path")
    args = parser.parse_args()
    n, p = args.items, 0.01
    as_list = urls(n)
    as_array = np.array([u.encode() for u in as_list])
    probes = urls(n, offset=n)  # half absent, half present below
    probes = as_list[: n // 2] + probes[: n - n // 2]
    client = redis.Redis.from_url(args.redis)
    tmp = tempfile.mkdtemp()
    rows = {}

    def record(name, count, seconds):
        rows.setdefault(name, []).append(count / seconds)

    for run in range(args.runs):
        # redbloom, file and Redis, list of str and numpy array.
        places = {"file": os.path.join(tmp, "b.rbf"), "redis": args.redis + "#bench-python"}
        if args.redis_module:
            places["redis+module"] = args.redis_module + "#bench-python"
        for where, location in places.items():
            for form, items in (("list[str]", as_list), ("numpy S", as_array)):
                f = redbloom.Filter.create(location, capacity=n, error_rate=p, layout="blocked",
                                           overwrite=True)
                record("%s add_many, %s" % (where, form), n, timed(lambda: f.add_many(items)))
                record("%s contains_many, %s" % (where, form), n,
                       timed(lambda: f.contains_many(items)))
                f.close()
            f = redbloom.Filter.create(location, capacity=n, error_rate=p, layout="blocked",
                                       overwrite=True)
            record("%s update (bulk), list[str]" % where, n, timed(lambda: f.update(as_list)))
            f.close()
        # The filter written in Python, on the same Redis.
        client.delete("bench-redis-py")
        baseline = RedisPyBloom(client, "bench-redis-py", n, p)
        few = as_list[: args.redis_py_items]
        record("redis redis-py filter add (Python, SETBIT pipelined)", len(few),
               timed(lambda: baseline.add_batch(few)))
        record("redis redis-py filter contains (Python, GETBIT pipelined)", len(few),
               timed(lambda: baseline.contains_batch(few)))
        client.delete("bench-redis-py")
        # A Python set.
        s = set()
        record("memory Python set add", n, timed(lambda: [s.add(u) for u in as_list]))
        record("memory Python set contains", n, timed(lambda: [u in s for u in probes]))
        set_bytes = sys.getsizeof(s) + sum(sys.getsizeof(u) for u in as_list)
        if args.cxx_bench:
            insert_ns, hit_ns = cxx_batch_ns(args.cxx_bench)
            rows.setdefault("C++ batch add ns", []).append(insert_ns)
            rows.setdefault("C++ batch contains ns", []).append(hit_ns)
        print("run %d of %d done" % (run + 1, args.runs), file=sys.stderr)

    median = {name: statistics.median(values) for name, values in rows.items()}
    print("| case | items/s (median of %d) |" % args.runs)
    print("|---|---|")
    for name, rate in median.items():
        if not name.startswith("C++"):
            print("| %s | %s |" % (name, "{:,.0f}".format(rate)))
    baseline_add = median["redis redis-py filter add (Python, SETBIT pipelined)"]
    baseline_has = median["redis redis-py filter contains (Python, GETBIT pipelined)"]
    print()
    print("| ratio | value |")
    print("|---|---|")
    for where in [w for w in ("redis", "redis+module") if "%s update (bulk), list[str]" % w in median]:
        for form in ("list[str]", "numpy S"):
            print("| %s add_many, %s / redis-py filter add | %.1fx |" %
                  (where, form, median["%s add_many, %s" % (where, form)] / baseline_add))
            print("| %s contains_many, %s / redis-py filter contains | %.1fx |" %
                  (where, form, median["%s contains_many, %s" % (where, form)] / baseline_has))
    filter_bytes = redbloom.Filter.create("memory:", capacity=n, error_rate=p,
                                          layout="blocked").info()["bytes"]
    print("| memory: Python set of the URLs / blocked filter (p=1%%) | %.0fx (%.1f MB / %.2f MB) |"
          % (set_bytes / filter_bytes, set_bytes / 1e6, filter_bytes / 1e6))
    if args.cxx_bench:
        for op in ("add", "contains"):
            cxx = median["C++ batch %s ns" % op]
            py_ns = 1e9 / median["file %s_many, numpy S" % op]
            print("| file %s_many, numpy S: ns/item from Python / C++ batch | %.2f (%.1f / %.1f ns) |"
                  % (op, py_ns / cxx, py_ns, cxx))


if __name__ == "__main__":
    main()
