// Local filter speed: insert, positive and negative lookup in ns per item, bits per item and
// the measured false-positive rate, for both layouts: one item per call, batched, and batched
// on two threads; for scale, a textbook filter and the floor for one-item calls (OneProbeFloor,
// inline, and CalledOneProbeFloor, the same through a function pointer as a library call); and
// what a user would write instead of a filter, a std::unordered_set of the keys, with its
// memory counted by its allocator (up to 2e7 keys: a set of 1e8 would take about 5 GB).
//
// Each repetition builds a fresh filter of n items (keys: 8-byte strings splitmix64(i); with
// --keys=url S3 URLs "s3://bucket/dir/file<i>.pdf"; with --keys=long-url document URLs of
// 152 bytes (absent ones 153); with --keys=name cache keys "user:<i in hex>", 9 to 16 bytes but for
// the first 4096; made 4096 at a time outside the timed region), then looks up min(n, 1e7) inserted
// keys and 1e7 absent ones. Only the filter calls are timed (one clock pair per 4096 keys). Google
// Benchmark repeats each case and reports medians; at the end a markdown table of the medians is
// printed.
//
//   bench_local [--n=1e6,1e8] [--p=0.01] [--store=memory|file] [--keys=u64|url|long-url|name]
//   [benchmark flags, e.g. --benchmark_repetitions=5 --benchmark_out=FILE.json]
#include <benchmark/benchmark.h>
#include <sys/mman.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <new>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "redbloom/filter.hpp"
#include "redbloom/params.hpp"

namespace {

using redbloom::Filter;
using redbloom::FilterParams;
using redbloom::Layout;

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

constexpr std::uint64_t kAbsentBase = std::uint64_t{1} << 40;
constexpr std::uint64_t kMaxQueries = 10'000'000;
constexpr std::size_t kBatch = 4096;

enum class KeyKind { u64, url, long_url, name };
KeyKind g_keys = KeyKind::u64;  // --keys=
double g_error_rate = 0.01;     // --p=

// One batch of keys, written by the calling thread (as an application's would be) into one
// buffer: 8-byte keys, or URLs or names of up to kUrlBytes (long URLs: kLongUrlBytes).
struct Keys {
  // A key's room: long URLs get their own, so that the others' batch stays as compact as it was.
  static constexpr std::size_t kUrlBytes = 48;
  static constexpr std::size_t kLongUrlBytes = 192;
  std::vector<std::uint64_t> raw = std::vector<std::uint64_t>(kBatch);
  std::vector<char> urls = std::vector<char>(kBatch * kLongUrlBytes);
  std::vector<std::string_view> views = std::vector<std::string_view>(kBatch);
  std::span<const std::string_view> fill(std::uint64_t first, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) {
      if (g_keys != KeyKind::u64) {
        const std::size_t room = g_keys == KeyKind::long_url ? kLongUrlBytes : kUrlBytes;
        char* url = urls.data() + i * room;
        const auto key = static_cast<unsigned long long>(first + i);
        const int length =
            g_keys == KeyKind::long_url
                ? std::snprintf(url, room,
                                "https://files.example.com/archive/2026/reports/department-%03llu/"
                                "attachments/scan-%012llu-page-0001-of-0042-final-reviewed-and-"
                                "signed-by-the-board.pdf",
                                key % 1000, key)
                : std::snprintf(
                      url, room,
                      g_keys == KeyKind::url ? "s3://bucket/dir/file%llu.pdf" : "user:%llx", key);
        views[i] = {url, static_cast<std::size_t>(length)};
      } else {
        raw[i] = splitmix64(first + i);
        views[i] = {reinterpret_cast<const char*>(&raw[i]), sizeof(std::uint64_t)};
      }
    }
    return {views.data(), count};
  }
};

// Runs `op(batch)` over keys [first, first + count) and returns ns per key, timing only `op`.
template <class Op>
double ns_per_key(std::uint64_t first, std::uint64_t count, Op&& op) {
  Keys keys;
  std::chrono::duration<double, std::nano> elapsed{0};
  for (std::uint64_t done = 0; done < count; done += kBatch) {
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(kBatch, count - done));
    const auto batch = keys.fill(first + done, n);
    const auto start = std::chrono::steady_clock::now();
    op(batch);
    elapsed += std::chrono::steady_clock::now() - start;
  }
  return elapsed.count() / static_cast<double>(count);
}

// --store=file: a file filter opened as the sole writer (no per-call lock; see file_store.hpp);
// --store=shared-file: opened as a shared writer, each call taking the writers' lock.
enum class StoreKind { memory, file, shared_file };
StoreKind g_store = StoreKind::memory;

Filter make_filter(const FilterParams& params) {
  if (g_store == StoreKind::memory) return Filter::in_memory(params);
  const auto path = (std::filesystem::temp_directory_path() / "redbloom-bench.rbf").string();
  { (void)Filter::create_file(path, params, /*overwrite=*/true); }
  return Filter::open_file(path, g_store == StoreKind::file ? redbloom::FileAccess::exclusive_write
                                                            : redbloom::FileAccess::read_write);
}

struct Measured {
  double insert_ns = 0;
  double hit_ns = 0;
  double miss_ns = 0;
  std::uint64_t found = 0;
  std::uint64_t false_positives = 0;
  std::uint64_t sink = 0;
};

// Inserts keys [0, n) one call per key, looks up min(n, 1e7) of them and 1e7 absent keys.
template <class Bloom>
Measured measure_single(Bloom& filter, std::uint64_t n) {
  Measured m;
  m.insert_ns = ns_per_key(0, n, [&](auto keys) {
    for (auto key : keys) m.sink += filter.add(key);
  });
  m.hit_ns = ns_per_key(0, std::min(n, kMaxQueries), [&](auto keys) {
    for (auto key : keys) m.found += filter.contains(key);
  });
  m.miss_ns = ns_per_key(kAbsentBase, kMaxQueries, [&](auto keys) {
    for (auto key : keys) m.false_positives += filter.contains(key);
  });
  return m;
}

// The same through add_many / contains_many, 4096 keys a call (on the threads the filter was
// given: Filter::use_threads).
Measured measure_batched(Filter& filter, std::uint64_t n) {
  Measured m;
  m.insert_ns = ns_per_key(0, n, [&](auto keys) { m.sink += filter.add_many(keys); });
  m.hit_ns = ns_per_key(0, std::min(n, kMaxQueries),
                        [&](auto keys) { m.found += filter.contains_many(keys); });
  m.miss_ns = ns_per_key(kAbsentBase, kMaxQueries,
                         [&](auto keys) { m.false_positives += filter.contains_many(keys); });
  return m;
}

void record(benchmark::State& state, const FilterParams& params, std::uint64_t n,
            const Measured& m) {
  if (m.found != std::min(n, kMaxQueries)) {
    state.SkipWithError("false negatives: the filter is broken");
  }
  benchmark::DoNotOptimize(m.sink);
  state.counters["insert_ns"] = m.insert_ns;
  state.counters["hit_ns"] = m.hit_ns;
  state.counters["miss_ns"] = m.miss_ns;
  state.counters["bits_per_item"] = double(params.total_bits()) / double(n);
  state.counters["fpr"] = double(m.false_positives) / double(kMaxQueries);
  state.counters["absent_probes"] = double(kMaxQueries);
  state.counters["expected_fpr"] = redbloom::expected_false_positive_rate(params, double(n));
  state.counters["target_p"] = g_error_rate;
  state.counters["k"] = params.hashes;
}

// threads = 0: one call per item; otherwise batched calls on that many threads.
void BM_Filter(benchmark::State& state, Layout layout, unsigned threads) {
  const auto n = static_cast<std::uint64_t>(state.range(0));
  const FilterParams params = redbloom::size_filter(double(n), g_error_rate, layout);
  for (auto _ : state) {
    Filter filter = make_filter(params);
    if (threads > 1) filter.use_threads(threads);
    record(state, params, n, threads > 0 ? measure_batched(filter, n) : measure_single(filter, n));
  }
}

// For scale, measured in the same run: the filter most hand-rolled code is (locally, too), k
// positions (h1 + i*h2) mod m with `%`, one item at a time, no prefetch, with the same XXH3-128
// item hash, m and k as redbloom's classic layout.
class TextbookBloom {
 public:
  explicit TextbookBloom(const FilterParams& params)
      : words_(params.total_bits() / 64), bits_(params.total_bits()), k_(params.hashes) {}
  bool add(std::string_view item) {
    const redbloom::ItemHash h = redbloom::hash_item(item);
    bool fresh = false;
    for (std::uint32_t i = 0; i < k_; ++i) {
      const std::uint64_t bit = (h.lo + i * h.hi) % bits_;
      const std::uint64_t mask = std::uint64_t{1} << (bit % 64);
      fresh |= (words_[bit / 64] & mask) == 0;
      words_[bit / 64] |= mask;
    }
    return fresh;
  }
  bool contains(std::string_view item) const {
    const redbloom::ItemHash h = redbloom::hash_item(item);
    for (std::uint32_t i = 0; i < k_; ++i) {
      const std::uint64_t bit = (h.lo + i * h.hi) % bits_;
      if ((words_[bit / 64] & (std::uint64_t{1} << (bit % 64))) == 0) return false;
    }
    return true;
  }

 private:
  std::vector<std::uint64_t> words_;
  std::uint64_t bits_;
  std::uint32_t k_;
};

void BM_Textbook(benchmark::State& state) {
  const auto n = static_cast<std::uint64_t>(state.range(0));
  const FilterParams params = redbloom::size_filter(double(n), g_error_rate, Layout::classic);
  for (auto _ : state) {
    TextbookBloom filter(params);
    record(state, params, n, measure_single(filter, n));
  }
}

// The floor for one-item calls, measured in the same run: the least a filter with one cache
// line per item can do per call, i.e. the same XXH3-128 item hash, inlined into the caller's
// loop, and one probe (k = 1) in a line of a bitmap as large as the blocked filter's, on
// 2 MiB pages like MemoryStore. Its FPR is not 1% and is not the point; its times are.
// kEightByteFirst: hash 8-byte items with the length a constant, as redbloom's one-item kernels
// do (XXH3's dispatch by length then folds away).
template <bool kEightByteFirst>
class OneProbeFloorOf {
 public:
  explicit OneProbeFloorOf(const FilterParams& params)
      : bytes_(params.total_bits() / 8), lines_(bytes_ / 64) {
    void* mapping =
        mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapping == MAP_FAILED) throw std::bad_alloc();
    madvise(mapping, bytes_, MADV_HUGEPAGE);
    words_ = static_cast<std::uint64_t*>(mapping);
  }
  ~OneProbeFloorOf() { munmap(words_, bytes_); }
  OneProbeFloorOf(const OneProbeFloorOf&) = delete;
  OneProbeFloorOf& operator=(const OneProbeFloorOf&) = delete;

  bool add(std::string_view item) {
    const auto [word, mask] = probe(item);
    const bool fresh = (*word & mask) == 0;
    *word |= mask;
    return fresh;
  }
  bool contains(std::string_view item) const {
    const auto [word, mask] = probe(item);
    return (*word & mask) != 0;
  }

 private:
  std::pair<std::uint64_t*, std::uint64_t> probe(std::string_view item) const {
    const XXH128_hash_t h = kEightByteFirst && item.size() == 8
                                ? XXH3_128bits(item.data(), 8)
                                : XXH3_128bits(item.data(), item.size());
    const auto line =
        static_cast<std::uint64_t>((static_cast<unsigned __int128>(h.low64) * lines_) >> 64);
    return {words_ + line * 8 + (h.high64 & 7), std::uint64_t{1} << (h.high64 >> 58)};
  }
  std::uint64_t bytes_;
  std::uint64_t lines_;
  std::uint64_t* words_ = nullptr;
};

using OneProbeFloor = OneProbeFloorOf<false>;

// The floor again, as a library's one-item call: out of line, through a function pointer (as
// Filter::add and Filter::contains reach their kernel), with 8-byte items hashed as the kernels
// hash them. The least a one-item call into a library can cost; redbloom's one-item paths are
// such calls, with k probes in the line instead of one.
class CalledOneProbeFloor {
 public:
  explicit CalledOneProbeFloor(const FilterParams& params) : floor_(params) {
    // From here on the compiler cannot know the pointers, so it calls through them.
    benchmark::DoNotOptimize(add_);
    benchmark::DoNotOptimize(contains_);
  }
  bool add(std::string_view item) { return add_(&floor_, item); }
  bool contains(std::string_view item) const { return contains_(&floor_, item); }

 private:
  using Floor = OneProbeFloorOf<true>;
  [[gnu::noinline]] static bool add_one(Floor* floor, std::string_view item) {
    return floor->add(item);
  }
  [[gnu::noinline]] static bool contains_one(const Floor* floor, std::string_view item) {
    return floor->contains(item);
  }
  Floor floor_;
  bool (*add_)(Floor*, std::string_view) = add_one;
  bool (*contains_)(const Floor*, std::string_view) = contains_one;
};

template <class Floor>
void BM_Floor(benchmark::State& state) {
  const auto n = static_cast<std::uint64_t>(state.range(0));
  FilterParams params = redbloom::size_filter(double(n), g_error_rate, Layout::blocked);
  params.hashes = 1;
  for (auto _ : state) {
    Floor filter(params);
    record(state, params, n, measure_single(filter, n));
  }
}

// What a user would pick instead of a filter: an exact set of the keys (no false positives).
// Its allocator counts the bytes it holds, so its bits per item are measured, not estimated.
std::uint64_t g_set_bytes = 0;
constexpr std::int64_t kMaxSetItems = 20'000'000;

template <class T>
struct CountingAllocator {
  using value_type = T;
  CountingAllocator() = default;
  template <class U>
  explicit CountingAllocator(const CountingAllocator<U>&) noexcept {}
  T* allocate(std::size_t count) {
    g_set_bytes += count * sizeof(T);
    return std::allocator<T>{}.allocate(count);
  }
  void deallocate(T* pointer, std::size_t count) noexcept {
    g_set_bytes -= count * sizeof(T);
    std::allocator<T>{}.deallocate(pointer, count);
  }
  friend bool operator==(const CountingAllocator&, const CountingAllocator&) = default;
};

class HashSet {
 public:
  explicit HashSet(std::uint64_t n) { set_.reserve(n); }
  bool add(std::string_view item) { return set_.emplace(item).second; }
  bool contains(std::string_view item) const { return set_.contains(item); }

 private:
  using Key = std::basic_string<char, std::char_traits<char>, CountingAllocator<char>>;
  // Transparent, so that a lookup hashes the caller's bytes without making a Key.
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view item) const noexcept {
      return std::hash<std::string_view>{}(item);
    }
  };
  std::unordered_set<Key, Hash, std::equal_to<>, CountingAllocator<Key>> set_;
};

void BM_HashSet(benchmark::State& state) {
  const auto n = static_cast<std::uint64_t>(state.range(0));
  for (auto _ : state) {
    const std::uint64_t before = g_set_bytes;
    HashSet set(n);
    const Measured m = measure_single(set, n);
    // The filter it stands in for: the blocked layout at the same rate (k and FPR: the set's).
    FilterParams params = redbloom::size_filter(double(n), g_error_rate, Layout::blocked);
    record(state, params, n, m);
    state.counters["bits_per_item"] = double(g_set_bytes - before) * 8 / double(n);
    state.counters["expected_fpr"] = 0;
    state.counters["k"] = 0;
  }
}

// Collects the median rows and prints them as one markdown table after the run.
class TableReporter : public benchmark::ConsoleReporter {
 public:
  // "memory/blocked/batched/100000000/iterations:1" -> "memory/blocked/batched n=1e8".
  static std::string short_name(const std::string& run_name) {
    const std::string name = run_name.substr(0, run_name.find("/iterations"));
    const std::size_t slash = name.rfind('/');
    const double n = std::stod(name.substr(slash + 1));
    const int exponent = static_cast<int>(std::lround(std::log10(n)));
    char buf[48];
    if (std::pow(10.0, exponent) == n) {
      std::snprintf(buf, sizeof buf, " n=1e%d", exponent);
    } else {
      std::snprintf(buf, sizeof buf, " n=%.0f", n);
    }
    return name.substr(0, slash) + buf;
  }

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.run_type == Run::RT_Aggregate && run.aggregate_name != "median") continue;
      if (run.error_occurred) continue;
      // Without repetitions there is no median row: keep the single run.
      rows_[run.run_name.str()] = run.counters;
    }
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf("\n| case | k | insert ns | hit ns | miss ns | bits/item | measured FPR |\n");
    std::printf("|---|---|---|---|---|---|---|\n");
    for (const auto& [name, c] : rows_) {
      std::printf("| %s | %.0f | %.1f | %.1f | %.1f | %.2f | %.4f%% |\n", short_name(name).c_str(),
                  c.at("k").value, c.at("insert_ns").value, c.at("hit_ns").value,
                  c.at("miss_ns").value, c.at("bits_per_item").value, 100 * c.at("fpr").value);
    }
  }

 private:
  std::map<std::string, benchmark::UserCounters> rows_;
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::int64_t> sizes = {1'000'000, 100'000'000};
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--n=", 0) == 0) {
      sizes.clear();
      std::string list = arg.substr(4);
      for (std::size_t pos = 0; pos <= list.size();) {
        const std::size_t comma = std::min(list.find(',', pos), list.size());
        sizes.push_back(static_cast<std::int64_t>(std::stod(list.substr(pos, comma - pos))));
        pos = comma + 1;
      }
    } else if (arg.rfind("--p=", 0) == 0) {
      g_error_rate = std::stod(arg.substr(4));
    } else if (arg == "--store=file") {
      g_store = StoreKind::file;
    } else if (arg == "--store=shared-file") {
      g_store = StoreKind::shared_file;
    } else if (arg == "--keys=url") {
      g_keys = KeyKind::url;
    } else if (arg == "--keys=long-url") {
      g_keys = KeyKind::long_url;
    } else if (arg == "--keys=name") {
      g_keys = KeyKind::name;
    } else if (arg != "--store=memory" && arg != "--keys=u64") {
      rest.push_back(argv[i]);
    }
  }
  int rest_argc = static_cast<int>(rest.size());
  const std::string keys = g_keys == KeyKind::url        ? "-url"
                           : g_keys == KeyKind::long_url ? "-long-url"
                           : g_keys == KeyKind::name     ? "-name"
                                                         : "";
  const std::string store = std::string(g_store == StoreKind::memory ? "memory"
                                        : g_store == StoreKind::file ? "file"
                                                                     : "shared-file") +
                            keys;
  // One run per repetition: each builds a filter of n items.
  const auto add_case = [&](const std::string& name, auto&& function, auto... args) {
    for (std::int64_t n : sizes) {
      // A set of 1e8 keys would take about 5 GB; the set case stops at kMaxSetItems.
      if (name.rfind("hashset", 0) == 0 && n > kMaxSetItems) continue;
      benchmark::RegisterBenchmark(name.c_str(), function, args...)
          ->Arg(n)
          ->Iterations(1)
          ->Unit(benchmark::kMillisecond);
    }
  };
  for (Layout layout : {Layout::blocked, Layout::classic}) {
    for (unsigned threads : {1u, 2u, 0u}) {
      add_case(store + "/" + std::string(redbloom::to_string(layout)) +
                   (threads == 0   ? "/single"
                    : threads == 1 ? "/batched"
                                   : "/batched-" + std::to_string(threads) + "threads"),
               BM_Filter, layout, threads);
    }
  }
  add_case("textbook" + keys + "/classic/single", BM_Textbook);
  add_case("floor" + keys + "/one-probe/single", BM_Floor<OneProbeFloor>);
  add_case("floor" + keys + "/one-probe-called/single", BM_Floor<CalledOneProbeFloor>);
  add_case("hashset" + keys + "/unordered_set/single", BM_HashSet);
  benchmark::Initialize(&rest_argc, rest.data());
  TableReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
