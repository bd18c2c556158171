// A cuckoo filter in Redis against the blocked Bloom filter in Redis, at the same error rate, as
// Filter::create makes them on the server of --redis (stock Redis: the cuckoo filter's Lua
// script, the Bloom filter's BITFIELD or GETRANGE units): batched adds with their answers of
// --items fresh items into an empty filter, lookups of those (present) and of as many never
// added (absent), and the cuckoo filter's removes of all of them; then the false positives
// among the absent and the bytes each filter takes. Medians of --reps runs (a new filter each
// run); prints a Markdown table, then which commands ran the cuckoo filter's work (the Lua
// script, or RB.CUCKOO where the server loads redbloom's module).
//   build/bench/bench_cuckoo_redis --redis=redis://127.0.0.1:6379 [--items=N] [--reps=R]
//                                  [--error-rate=P] [--batch=B]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "redbloom/filter.hpp"
#include "redbloom/location.hpp"
#include "redbloom/params.hpp"
#include "redbloom/redis_endpoint.hpp"

namespace {

using namespace redbloom;
using Clock = std::chrono::steady_clock;

std::vector<std::string> items(std::uint64_t from, std::uint64_t count) {
  std::vector<std::string> out;
  out.reserve(count);
  for (std::uint64_t i = from; i < from + count; ++i) {
    out.push_back("https://example.com/p/" + std::to_string(i));
  }
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Row {
  double adds = 0, present = 0, absent = 0, removes = 0;  // items/s
  double false_positive_rate = 0;
  std::uint64_t bytes = 0;
  std::uint64_t new_answers = 0, present_answers = 0, removed = 0;
};

// `work` over the items in batches of `batch`, timed: items per second.
double timed(const std::vector<std::string>& all, std::size_t batch,
             const std::function<void(std::span<const std::string_view>)>& work) {
  const std::vector<std::string_view> views(all.begin(), all.end());
  const auto start = Clock::now();
  for (std::size_t at = 0; at < views.size(); at += batch) {
    work(std::span(views).subspan(at, std::min(batch, views.size() - at)));
  }
  return static_cast<double>(all.size()) /
         std::chrono::duration<double>(Clock::now() - start).count();
}

Row measure(const std::function<Filter()>& make, bool cuckoo, const std::vector<std::string>& in,
            const std::vector<std::string>& out, std::size_t batch, int reps) {
  std::vector<double> adds, present, absent, removes;
  Row row;
  std::vector<std::uint8_t> flags(batch);
  for (int r = 0; r < reps; ++r) {
    Filter filter = make();
    row.new_answers = row.present_answers = row.removed = 0;
    std::uint64_t hits = 0;
    adds.push_back(timed(in, batch, [&](std::span<const std::string_view> b) {
      row.new_answers += filter.add_many(b, flags);
    }));
    present.push_back(timed(in, batch, [&](std::span<const std::string_view> b) {
      row.present_answers += filter.contains_many(b, flags);
    }));
    absent.push_back(timed(out, batch, [&](std::span<const std::string_view> b) {
      hits += filter.contains_many(b, flags);
    }));
    row.false_positive_rate = static_cast<double>(hits) / static_cast<double>(out.size());
    row.bytes = filter.info().storage_bytes;
    if (cuckoo) {
      removes.push_back(timed(in, batch, [&](std::span<const std::string_view> b) {
        row.removed += filter.remove_many(b, flags);
      }));
    }
  }
  row.adds = median(adds);
  row.present = median(present);
  row.absent = median(absent);
  row.removes = cuckoo ? median(removes) : 0;
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  std::string uri;
  std::uint64_t n = 200000;
  int reps = 3;
  double p = 0.01;
  std::size_t batch = 10000;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--redis=", 8) == 0) {
      uri = argv[i] + 8;
    } else if (std::strncmp(argv[i], "--items=", 8) == 0) {
      n = static_cast<std::uint64_t>(std::strtod(argv[i] + 8, nullptr));
    } else if (std::strncmp(argv[i], "--reps=", 7) == 0) {
      reps = std::atoi(argv[i] + 7);
    } else if (std::strncmp(argv[i], "--error-rate=", 13) == 0) {
      p = std::strtod(argv[i] + 13, nullptr);
    } else if (std::strncmp(argv[i], "--batch=", 8) == 0) {
      batch = static_cast<std::size_t>(std::strtoull(argv[i] + 8, nullptr, 10));
    } else {
      uri.clear();
      break;
    }
  }
  if (uri.empty() || n == 0 || reps < 1 || batch == 0) {
    std::fprintf(stderr,
                 "usage: bench_cuckoo_redis --redis=URI [--items=N] [--reps=R] "
                 "[--error-rate=P] [--batch=B]\n");
    return 2;
  }
  try {
    const Location where = Location::redis({parse_redis_uri(uri)}, "bench-cuckoo-redis");
    const auto in = items(0, n);
    const auto out = items(1ULL << 40, n);
    CuckooOptions options;
    options.capacity = n;
    options.error_rate = p;
    const Row c =
        measure([&] { return Filter::create(where, options, true); }, true, in, out, batch, reps);
    const FilterParams blocked = size_filter(static_cast<double>(n), p, Layout::blocked);
    const Row b =
        measure([&] { return Filter::create(where, blocked, true); }, false, in, out, batch, reps);
    Filter::drop(where);
    std::printf(
        "| filter | adds/s | present lookups/s | absent lookups/s | removes/s | FPR | bytes | "
        "bits/item | answers: new, present, removed |\n|---|---|---|---|---|---|---|---|---|\n");
    const auto line = [&](const char* name, const Row& r) {
      std::printf("| %s | %.0fk | %.0fk | %.0fk | %s | %.4f%% | %llu | %.2f | %llu, %llu, %llu |\n",
                  name, r.adds / 1e3, r.present / 1e3, r.absent / 1e3,
                  r.removes > 0
                      ? (std::to_string(static_cast<long long>(r.removes / 1e3)) + "k").c_str()
                      : "—",
                  100 * r.false_positive_rate, static_cast<unsigned long long>(r.bytes),
                  8.0 * static_cast<double>(r.bytes) / static_cast<double>(n),
                  static_cast<unsigned long long>(r.new_answers),
                  static_cast<unsigned long long>(r.present_answers),
                  static_cast<unsigned long long>(r.removed));
    };
    line("cuckoo", c);
    line("blocked Bloom", b);
    // Which commands did the work: the script, or the module's where the server has it.
    std::printf("\n");
    for (const std::string& engine : Filter::create(where, options, true).info().engines) {
      std::printf("cuckoo engine: %s\n", engine.c_str());
    }
    Filter::drop(where);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_cuckoo_redis: %s\n", e.what());
    return 3;
  }
  return 0;
}
