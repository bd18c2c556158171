// The library's cuckoo filter against its blocked Bloom filter, at the same error rate, both in
// memory as Filter::create makes them: bits per item (against the bound log2(1/ε) no filter can
// beat, and the classic layout's size), batched adds with their answers and batched lookups of
// absent items (hash included), in cache (1e5 items) and out of it (2e7 items). Medians of
// --reps runs; prints a Markdown table.
//   build/bench/bench_cuckoo [--reps=R] [--big=N]   (5 repetitions, N = 2e7 by default)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
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
  double adds_per_second;  // add_many with per-item answers (test-and-set), into an empty filter
  double lookups_per_second;
};

// A filter in memory, as a user makes it: the adds of `n` items with their answers, then
// lookups of the absent ones, each timed `reps` times (the adds into a new filter each time).
Row measure(const std::function<Filter()>& make, std::uint64_t n,
            const std::vector<std::string_view>& absent, int reps) {
  const auto added_strings = items(0, n);
  const auto added = views(added_strings);
  std::vector<std::uint8_t> flags(std::max<std::size_t>(added.size(), absent.size()));
  std::vector<double> add_rates, lookup_rates;
  double bits = 0;
  for (int r = 0; r < reps; ++r) {
    Filter filter = make();
    auto start = Clock::now();
    filter.add_many(added, flags);
    add_rates.push_back(static_cast<double>(n) /
                        std::chrono::duration<double>(Clock::now() - start).count());
    start = Clock::now();
    filter.contains_many(absent, flags);
    lookup_rates.push_back(static_cast<double>(absent.size()) /
                           std::chrono::duration<double>(Clock::now() - start).count());
    bits = 8.0 * static_cast<double>(filter.info().storage_bytes) / static_cast<double>(n);
  }
  return {bits, median(add_rates), median(lookup_rates)};
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
      "classic bits/item | cuckoo adds/s | blocked adds/s | cuckoo / blocked | "
      "cuckoo lookups/s | blocked lookups/s | cuckoo / blocked |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const std::uint64_t n : {std::uint64_t{100000}, big}) {
    for (const double p : {0.01, 0.001, 0.0001}) {
      CuckooOptions options;
      options.capacity = n;
      options.error_rate = p;
      const Row c =
          measure([&] { return Filter::create(Location::memory(), options); }, n, absent, reps);
      const FilterParams blocked = size_filter(static_cast<double>(n), p, Layout::blocked);
      const Row b =
          measure([&] { return Filter::create(Location::memory(), blocked); }, n, absent, reps);
      const FilterParams classic = size_filter(static_cast<double>(n), p, Layout::classic);
      std::printf(
          "| %llu | %g | %.2f | %u | %.2f | %.2f | %.2f | %.1fM | %.1fM | %.2f× | %.1fM | %.1fM | "
          "%.2f× |\n",
          static_cast<unsigned long long>(n), p, std::log2(1 / p),
          cuckoo_table::shape_for(n, p).fingerprint_bits, c.bits_per_item, b.bits_per_item,
          static_cast<double>(classic.total_bits()) / n, c.adds_per_second / 1e6,
          b.adds_per_second / 1e6, c.adds_per_second / b.adds_per_second,
          c.lookups_per_second / 1e6, b.lookups_per_second / 1e6,
          c.lookups_per_second / b.lookups_per_second);
      std::fflush(stdout);
    }
  }
  return 0;
}
