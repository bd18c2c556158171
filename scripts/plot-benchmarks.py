#!/usr/bin/python3
"""Draws the plots of docs/benchmarks.md from the benchmark outputs kept in docs/img/data.

Needs Debian's python3-matplotlib (apt-get install python3-matplotlib); nothing the tests run
uses it. Every point comes from a file written by a benchmark run:

  local-sizes.json   bench_local --n=1e4,...,1e8 --benchmark_out=... (Google Benchmark JSON):
                     items/s against the filter's size            -> throughput-vs-size.png
  fpr-*.json         bench_local --p=P --benchmark_out=... at several P: the measured
                     false-positive rate against the layout's formula -> fpr-vs-theory.png
  window-memory.csv  bench_window --part=stream --series=...: a windowed filter's bytes after
                     every batch, through a burst                  -> window-memory.png
  dedup-tools.json   scripts/bench-dedup-tools.sh --json ...: redbloom dedup, awk, sort -u
                                                                   -> dedup-tools.png

  scripts/plot-benchmarks.py [--data docs/img/data] [--out docs/img] [--summary]

--summary also prints the ratios these files give, as markdown rows for the summary table.
"""

import argparse
import csv
import glob
import json
import math
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

# Series drawn from bench_local: the benchmark name's prefix, and the label a reader knows.
LOCAL_CASES = [
    ("memory/blocked/batched", "redbloom blocked, batched (add_many / contains_many)"),
    ("memory/blocked/single", "redbloom blocked, one item a call"),
    ("memory/classic/single", "redbloom classic, one item a call"),
    ("textbook/classic/single", "textbook Bloom filter, one item a call"),
    ("hashset/unordered_set/single", "std::unordered_set of the keys"),
]


def load_benchmark_json(path):
    """Rows of a Google Benchmark JSON file: the median aggregate of each case when there are
    repetitions, else the median of its runs; each row also gets "runs", the repetitions' own
    rows when the file has them. Returns (context, {(case, n): counters})."""
    with open(path) as f:
        data = json.load(f)
    medians = {}
    singles = {}
    for row in data["benchmarks"]:
        if row.get("error_occurred"):
            continue
        name = row.get("run_name", row["name"]).split("/iterations")[0]
        case, n = name.rsplit("/", 1)
        key = (case, int(n))
        if row.get("run_type") == "aggregate":
            if row.get("aggregate_name") == "median":
                medians[key] = dict(row)
        else:
            singles.setdefault(key, []).append(row)
    rows = medians
    for key, runs in singles.items():
        if key not in rows:
            rows[key] = {
                k: statistics.median(r[k] for r in runs)
                for k in runs[0]
                if isinstance(runs[0][k], (int, float))
            }
        rows[key]["runs"] = runs
    return data["context"], rows


def machine_text(context):
    cpu = context.get("cpu_name") or ""
    date = context.get("date", "")[:16].replace("T", " ")
    cores = context.get("num_cpus", "?")
    mhz = context.get("mhz_per_cpu")
    where = f"{cores} cores" + (f" at {mhz / 1000:.1f} GHz" if mhz else "")
    load = context.get("load_avg")
    busy = f", load average {load[0]:.1f} at the start" if load else ""
    return f"{date} UTC, {where}{', ' + cpu if cpu else ''}{busy}"


def plot_sizes(path, out):
    context, rows = load_benchmark_json(path)
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2), sharey=True)
    for ax, counter, title in zip(
        axes,
        ("insert_ns", "hit_ns", "miss_ns"),
        ("insert", "lookup, present", "lookup, absent"),
    ):
        for case, label in LOCAL_CASES:
            points = sorted((n, r[counter]) for (c, n), r in rows.items() if c == case)
            if not points:
                continue
            # x: the bytes the structure holds (the filter's bits, the set's counted bytes).
            xs = [n * rows[(case, n)]["bits_per_item"] / 8 for n, _ in points]
            ys = [1e3 / ns for _, ns in points]  # million items per second
            # Bars: the fastest and slowest repetition, where the file has them.
            low = [y - 1e3 / max(r[counter] for r in rows[(case, n)].get("runs", [{counter: ns}]))
                   for (n, ns), y in zip(points, ys)]
            high = [1e3 / min(r[counter] for r in rows[(case, n)].get("runs", [{counter: ns}])) - y
                    for (n, ns), y in zip(points, ys)]
            ax.errorbar(xs, ys, yerr=[low, high], marker="o", capsize=2, label=label)
            for (n, _), x, y in zip(points, xs, ys):
                if case == LOCAL_CASES[0][0]:
                    ax.annotate(f"n={n:.0e}".replace("e+0", "e"), (x, y), fontsize=7,
                                textcoords="offset points", xytext=(0, 5), ha="center")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("memory of the structure (bytes)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("million items per second\n(median; bars: fastest and slowest run)")
    axes[0].legend(fontsize=7, loc="lower left")
    repetitions = max(len(r.get("runs", [])) for r in rows.values())
    fig.suptitle("Local filters, 8-byte keys, p = 1%: throughput against size, "
                 f"{repetitions} interleaved repetitions ({machine_text(context)})", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=80)
    plt.close(fig)


def plot_fpr(paths, out):
    points = {}  # layout -> [(target p, expected, measured, n, absent probes)]
    context = None
    for path in paths:
        context, rows = load_benchmark_json(path)
        for (case, n), r in rows.items():
            if not case.startswith("memory/") or "expected_fpr" not in r:
                continue
            layout = case.split("/")[1]
            points.setdefault(layout, []).append(
                (r["target_p"], r["expected_fpr"], r["fpr"], n, r["absent_probes"]))
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.3))
    everything = []
    for (layout, pts), marker in zip(sorted(points.items()), ("o", "s", "^")):
        pts.sort()
        expected = [e for _, e, _, _, _ in pts]
        measured = [m for _, _, m, _, _ in pts]
        left.plot(expected, measured, marker=marker, linestyle="none", label=layout)
        everything += expected + measured
        # Two standard deviations of a rate counted over that many absent keys.
        bars = [2 * math.sqrt(e * (1 - e) / probes) / e for _, e, _, _, probes in pts]
        right.errorbar([p for p, *_ in pts], [m / e for m, e in zip(measured, expected)],
                       yerr=bars, marker=marker, linestyle="none", capsize=3,
                       label=f"{layout} (bars: ±2σ of the count)")
    low, high = min(everything) / 1.5, max(everything) * 1.5
    left.plot([low, high], [low, high], color="gray", linestyle="--", label="measured = formula")
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlabel("rate the layout's formula expects at n items")
    left.set_ylabel("measured false-positive rate")
    right.axhline(1, color="gray", linestyle="--")
    right.set_xscale("log")
    right.set_xlabel("target rate p the filter was sized for")
    right.set_ylabel("measured / formula")
    for ax in (left, right):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    n_values = sorted({n for pts in points.values() for _, _, _, n, _ in pts})
    probes = sorted({int(q) for pts in points.values() for *_, q in pts})
    fig.suptitle(f"False positives: n = {', '.join(f'{n:.0e}' for n in n_values)} items, "
                 f"{', '.join(f'{q:.0e}' for q in probes)} absent keys per point "
                 f"({machine_text(context)})", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=80)
    plt.close(fig)


def plot_window(path, out):
    rows = []
    with open(path) as f:
        for r in csv.DictReader(f):
            rows.append(r)
    fig, ax = plt.subplots(figsize=(9, 4))
    groups = {}
    for r in rows:
        groups.setdefault((r["p"], r["layout"]), []).append(r)
    for (p, layout), rs in groups.items():
        xs = [float(r["windows"]) for r in rs]
        ax.plot(xs, [int(r["bytes"]) / 1024 for r in rs],
                label=f"windowed filter, p = {p}, {layout}")
        ax.plot(xs, [int(r["plain_bytes"]) / 1024 for r in rs], linestyle=":",
                label=f"plain filter for one window's items, p = {p}, {layout}")
    ax.set_xlabel("time (windows) on the driven clock; the burst is the last slices' jump")
    ax.set_ylabel("KiB held (live links)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title("Windowed filter memory over time: a steady stream, then one slice at "
                 "a higher rate", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=80)
    plt.close(fig)


def dedup_medians(path):
    """Per tool: median wall seconds, CPU seconds (user + system) and max RSS in KiB."""
    with open(path) as f:
        data = json.load(f)
    medians = {
        tool: (statistics.median(r["seconds"] for r in runs),
               statistics.median(r["cpu_seconds"] for r in runs),
               statistics.median(r["max_rss_kib"] for r in runs))
        for tool, runs in data["tools"].items()
    }
    return data, medians


def plot_dedup(path, out):
    data, medians = dedup_medians(path)
    tools = list(medians)
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.2))
    rows = range(len(tools))
    left.barh([i - 0.2 for i in rows], [data["lines"] / medians[t][0] / 1e6 for t in tools],
              height=0.4, label="per wall second")
    left.barh([i + 0.2 for i in rows], [data["lines"] / medians[t][1] / 1e6 for t in tools],
              height=0.4, label="per CPU second")
    left.set_yticks(list(rows), tools)
    left.set_xlabel("million lines per second (median)")
    left.legend(fontsize=8)
    right.barh(tools, [medians[t][2] / 1024 for t in tools])
    right.set_xlabel("peak memory, MiB (max RSS, median)")
    for ax in (left, right):
        ax.invert_yaxis()
        ax.grid(True, axis="x", alpha=0.3)
    load = data.get("load_average", [])
    fig.suptitle(f"Dedup of {data['lines']:,} lines (a third repeats), {data['runs']} runs each "
                 f"({data['date']}, {data['cores']} cores"
                 + (f", load average {load[0]}–{load[-1]}" if load else "") + ")", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=80)
    plt.close(fig)


def summary(data_dir):
    """Markdown rows of the ratios the measured files give (the figures of the summary table)."""
    path = os.path.join(data_dir, "local-sizes.json")
    if os.path.exists(path):
        context, rows = load_benchmark_json(path)
        print(f"local ({machine_text(context)}):")
        for n in sorted({n for _, n in rows}):
            base = rows.get(("hashset/unordered_set/single", n))
            book = rows.get(("textbook/classic/single", n))
            for case, label in LOCAL_CASES[:3]:
                r = rows.get((case, n))
                if r is None:
                    continue
                cells = []
                for other, name in ((base, "unordered_set"), (book, "textbook")):
                    if other is None:
                        continue
                    ratio = "/".join(f"{other[c] / r[c]:.1f}" for c in
                                     ("insert_ns", "hit_ns", "miss_ns"))
                    cells.append(f"{ratio}x {name}'s speed")
                if base is not None:
                    cells.append(f"{base['bits_per_item'] / r['bits_per_item']:.1f}x less memory "
                                 f"than unordered_set ({base['bits_per_item']:.0f} vs "
                                 f"{r['bits_per_item']:.2f} bits/item)")
                if cells:
                    print(f"| {label} n={n:.0e} | " + " | ".join(cells) + " |")
    path = os.path.join(data_dir, "dedup-tools.json")
    if os.path.exists(path):
        data, medians = dedup_medians(path)
        rb_time, rb_cpu, rb_rss = medians["redbloom"]
        print(f"dedup ({data['date']}, {data['lines']} lines, {data['runs']} runs):")
        for tool, (t, cpu, rss) in medians.items():
            print(f"| {tool} | {t:.3f} s | {t / rb_time:.2f}x redbloom's time | {cpu:.2f} CPU s | "
                  f"{cpu / rb_cpu:.2f}x redbloom's CPU | {rss / 1024:.1f} MiB "
                  f"({rss / rb_rss:.2f}x) |")
    path = os.path.join(data_dir, "window-memory.csv")
    if os.path.exists(path):
        with open(path) as f:
            rows = list(csv.DictReader(f))
        steady = [int(r["bytes"]) for r in rows if float(r["windows"]) >= 2]
        print(f"window memory: min {min(steady)} max {max(steady)} bytes, plain "
              f"{rows[0]['plain_bytes']}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default="docs/img/data")
    parser.add_argument("--out", default="docs/img")
    parser.add_argument("--summary", action="store_true")
    args = parser.parse_args()
    drawn = []
    jobs = [
        (["local-sizes.json"], plot_sizes, "throughput-vs-size.png"),
        (sorted(glob.glob(os.path.join(args.data, "fpr-*.json"))), plot_fpr, "fpr-vs-theory.png"),
        (["window-memory.csv"], plot_window, "window-memory.png"),
        (["dedup-tools.json"], plot_dedup, "dedup-tools.png"),
    ]
    for inputs, plot, name in jobs:
        paths = [p if os.path.isabs(p) or os.path.dirname(p) else os.path.join(args.data, p)
                 for p in inputs]
        if not paths or not all(os.path.exists(p) for p in paths):
            print(f"plot-benchmarks: no data for {name} in {args.data}", file=sys.stderr)
            continue
        out = os.path.join(args.out, name)
        plot(paths[0] if len(paths) == 1 and plot is not plot_fpr else paths, out)
        drawn.append(out)
    for out in drawn:
        print(f"{out}: {os.path.getsize(out)} bytes")
    if args.summary:
        summary(args.data)
    return 0 if drawn else 1


if __name__ == "__main__":
    sys.exit(main())
