#!/usr/bin/env python3
"""Bits per item a windowed filter's slice needs for its share of the error rate, with the
slice's bits of an item in a block of B bits: B = 512 (a 64-byte line a slice, as now) against
B = 512 / L (one 64-byte line shared by the L live slices, so that an add reads one line).

The block model is the textbook one (Putze, Sanders, Singler: k bits drawn at random in the
block; the number of items in a block is Poisson): fpr = sum_i P(i) (1 - (1 - 1/B)^(k i))^k,
minimised over k. Run: scripts/window-line-budget.py [--slices 4] [--rates 0.01,0.001,1e-6]
"""
import argparse
import math


def block_fpr(block_bits, bits_per_item, k):
    mean = block_bits / bits_per_item  # items in a block, on average
    total, p_i, i = 0.0, math.exp(-mean), 0
    while i < mean * 8 + 80:
        if i > 0:
            p_i *= mean / i
        total += p_i * (1.0 - (1.0 - 1.0 / block_bits) ** (k * i)) ** k
        i += 1
    return total


def bits_needed(block_bits, rate, limit=200.0):
    """Least bits per item (to 0.01) at which some k reaches `rate`; None past `limit`."""
    def best(bits):
        return min(block_fpr(block_bits, bits, k) for k in range(1, 40))
    if best(limit) > rate:
        return None
    low, high = 1.0, limit
    while high - low > 0.005:
        mid = (low + high) / 2
        if best(mid) > rate:
            low = mid
        else:
            high = mid
    return high


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slices", type=int, default=4)
    parser.add_argument("--rates", default="0.01,0.001,1e-6")
    args = parser.parse_args()
    live = args.slices + 1
    shared = 512 // live
    print(f"window in {args.slices} slices: {live} live slices, a shared line gives each "
          f"{shared} bits")
    print("| filter's rate | a slice's rate | bits/item, 512-bit block | "
          f"bits/item, {shared}-bit block | memory × |")
    print("|---|---|---:|---:|---:|")
    for text in args.rates.split(","):
        rate = float(text)
        slice_rate = 1.0 - (1.0 - rate) ** (1.0 / live)
        own = bits_needed(512, slice_rate)
        one = bits_needed(shared, slice_rate)
        fmt = lambda b: "over 200" if b is None else f"{b:.2f}"
        ratio = "—" if own is None or one is None else f"{one / own:.2f}×"
        print(f"| {rate:g} | {slice_rate:.3g} | {fmt(own)} | {fmt(one)} | {ratio} |")


if __name__ == "__main__":
    main()
