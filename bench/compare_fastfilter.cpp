// redbloom's cuckoo table against fastfilter_cpp's CuckooFilter at the same fingerprint bits:
// lookups of absent 64-bit keys, in cache and out of it. Not built by CMake: fastfilter_cpp is
// not a Debian package. With a checkout of it at FF, from the top of this repository:
//   g++ -std=c++20 -O3 -DNDEBUG -I FF/src -I src -I include -o compare_fastfilter
//       bench/compare_fastfilter.cpp src/core/cuckoo_table.cpp src/core/error.cpp
// (one command). Prints a Markdown table: medians of 5 runs per row.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "core/cuckoo_table.hpp"
#include "cuckoo/cuckoofilter.h"

using Clock = std::chrono::steady_clock;

static redbloom::ItemHash key_hash(uint64_t key) {
  uint64_t a = key * 0x9E3779B97F4A7C15ULL;
  a ^= a >> 32;
  uint64_t b = (key ^ 0xD6E8FEB86659FD93ULL) * 0xC2B2AE3D27D4EB4FULL;
  b ^= b >> 29;
  return {a, b};
}

template <size_t Bits>
void run(size_t log2_buckets, int reps) {
  const size_t buckets = size_t{1} << log2_buckets;
  const size_t n = static_cast<size_t>(0.9 * 4 * buckets);
  std::mt19937_64 rng(1);
  std::vector<uint64_t> keys(n), absent(4000000);
  for (auto& k : keys) k = rng();
  for (auto& k : absent) k = rng();
  cuckoofilter::CuckooFilter<uint64_t, Bits> theirs(n);
  for (auto k : keys) theirs.Add(k);
  redbloom::cuckoo_table::Shape shape;
  shape.buckets = (n + 3) / 4 * 100 / 95;
  shape.fingerprint_bits = Bits;
  std::vector<uint8_t> bytes(shape.bytes());
  redbloom::cuckoo_table::Table ours(shape, bytes);
  for (auto k : keys) ours.insert(key_hash(k));
  std::vector<double> t_ours, t_theirs;
  std::vector<redbloom::ItemHash> hashes(1024);
  std::vector<uint8_t> present(absent.size());
  size_t found_ours = 0, found_theirs = 0;
  for (int r = 0; r < reps; ++r) {
    auto s = Clock::now();
    // In batches of 1024, as the library's callers batch: the hashes stay in cache.
    for (size_t b = 0; b < absent.size(); b += 1024) {
      const size_t e = std::min(absent.size(), b + 1024);
      for (size_t i = b; i < e; ++i) hashes[i - b] = key_hash(absent[i]);
      ours.contains_many(std::span(hashes.data(), e - b), present.data() + b);
    }
    t_ours.push_back(std::chrono::duration<double>(Clock::now() - s).count());
    found_ours = std::count(present.begin(), present.end(), 1);
    s = Clock::now();
    size_t f = 0;
    for (auto k : absent) f += theirs.Contain(k) == cuckoofilter::Ok;
    t_theirs.push_back(std::chrono::duration<double>(Clock::now() - s).count());
    found_theirs = f;
  }
  std::sort(t_ours.begin(), t_ours.end());
  std::sort(t_theirs.begin(), t_theirs.end());
  const double ours_ns = t_ours[reps / 2] / absent.size() * 1e9;
  const double theirs_ns = t_theirs[reps / 2] / absent.size() * 1e9;
  std::printf("| %zu | %zu | %.2f | %.2f | %.1f | %.1f | %.2f× | %.4f%% | %.4f%% |\n", n, Bits,
              8.0 * (shape.bytes() - redbloom::cuckoo_table::kTailBytes) / n,
              8.0 * theirs.SizeInBytes() / n, ours_ns, theirs_ns, ours_ns / theirs_ns,
              100.0 * found_ours / absent.size(), 100.0 * found_theirs / absent.size());
  std::fflush(stdout);
}

int main() {
  std::printf(
      "| items | f | redbloom bits/item | fastfilter bits/item | redbloom ns/lookup | fastfilter "
      "ns/lookup | time ratio | redbloom FPR | fastfilter FPR "
      "|\n|---|---|---|---|---|---|---|---|---|\n");
  for (size_t lb : {15, 23}) {
    run<8>(lb, 5);
    run<12>(lb, 5);
    run<16>(lb, 5);
  }
}
