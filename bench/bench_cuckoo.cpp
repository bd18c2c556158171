// The library's cuckoo table against its Bloom filters, at the same error rate: bits per item
// (against the bound log2(1/ε) no filter can beat, and the blocked and classic Bloom layouts'
// sizes) and batched lookups of absent items (hash included) in memory, in cache (1e5 items)
// and out of it (2e7 items). Medians of --reps runs; prints a Markdown table.
//   build/bench/bench_cuckoo [--reps=R] [--big=N]   (5 repetitions, N = 2e7 by default)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/cuckoo_table.hpp"
#include "redbloom/filter.hpp"
#include "redbloom/location.hpp"
#include "redbloom/params.hpp"

namespace {

using namespace redbloom;
using Clock = std::chrono::steady_clock;

std::vector<std::string> items(std::uint64_t from, std::uint64_t count) {
  std::vector<std::string> out;
  out.reserve(count);
  for (std::uint64_t i = from; i < from + count; ++i)
    out.push_back("https://example.com/p/" + std::to_string(i));
  return out;
}

std::vector<std::string_view> views(const std::vector<std::string>& strings) {
  return {strings.begin(), strings.end()};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Row {
  double bits_per_item;
  double lookups_per_second;
};

Row cuckoo(std::uint64_t n, double p, const std::vector<std::string_view>& absent, int reps) {
  const auto shape = cuckoo_table::shape_for(n, p);
  std::vector<std::uint8_t> bytes(shape.bytes());
  cuckoo_table::Table table(shape, bytes);
  for (const auto& item : items(0, n)) table.insert(hash_item(item));
  std::vector<ItemHash> hashes(absent.size());
  std::vector<std::uint8_t> present(absent.size());
  std::vector<double> rates;
  for (int r = 0; r < reps; ++r) {
    const auto start = Clock::now();
    for (std::size_t i = 0; i < absent.size(); ++i) hashes[i] = hash_item(absent[i]);
    table.contains_many(hashes, present.data());
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    rates.push_back(static_cast<double>(absent.size()) / seconds);
  }
  return {8.0 * static_cast<double>(shape.bytes() - cuckoo_table::kTailBytes) / n, median(rates)};
}

Row bloom(std::uint64_t n, double p, Layout layout, const std::vector<std::string_view>& absent,
          int reps) {
  const FilterParams params = size_filter(static_cast<double>(n), p, layout);
  Filter filter = Filter::create(Location::memory(), params);
  const auto added = items(0, n);
  filter.load_many(views(added));
  std::vector<std::uint8_t> present(absent.size());
  std::vector<double> rates;
  for (int r = 0; r < reps; ++r) {
    const auto start = Clock::now();
    filter.contains_many(absent, present);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    rates.push_back(static_cast<double>(absent.size()) / seconds);
  }
  return {static_cast<double>(params.total_bits()) / n, median(rates)};
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 5;
  std::uint64_t big = 20000000;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--reps=", 7) == 0)
      reps = std::atoi(argv[i] + 7);
    else if (std::strncmp(argv[i], "--big=", 6) == 0)
      big = std::strtoull(argv[i] + 6, nullptr, 10);
    else {
      std::fprintf(stderr, "usage: bench_cuckoo [--reps=R] [--big=N]\n");
      return 2;
    }
  }
  const auto absent_strings = items(1ULL << 40, 2000000);
  const auto absent = views(absent_strings);
  std::printf(
      "| items | p | bound log2(1/p) | cuckoo f | cuckoo bits/item | blocked bits/item | "
      "classic bits/item | cuckoo lookups/s | blocked lookups/s | cuckoo / blocked |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  for (const std::uint64_t n : {std::uint64_t{100000}, big}) {
    for (const double p : {0.01, 0.001, 0.0001}) {
      const Row c = cuckoo(n, p, absent, reps);
      const Row b = bloom(n, p, Layout::blocked, absent, reps);
      const FilterParams classic = size_filter(static_cast<double>(n), p, Layout::classic);
      std::printf("| %llu | %g | %.2f | %u | %.2f | %.2f | %.2f | %.1fM | %.1fM | %.2f× |\n",
                  static_cast<unsigned long long>(n), p, std::log2(1 / p),
                  cuckoo_table::shape_for(n, p).fingerprint_bits, c.bits_per_item, b.bits_per_item,
                  static_cast<double>(classic.total_bits()) / n, c.lookups_per_second / 1e6,
                  b.lookups_per_second / 1e6, c.lookups_per_second / b.lookups_per_second);
      std::fflush(stdout);
    }
  }
  return 0;
}
