// Windowed and growing filters (stream.hpp): what a window keeps, forgets and costs.
//
// Part "stream", on a driven clock (a hundred windows take seconds), in --store (memory, file
// in --dir, or redis with --redis): a steady stream of --items-per-window fresh items per
// --window, in --slices, added in batches (--steps-per-slice per slice), for every
// --error-rate and --layout; with --again=F, a share F of each batch adds again items first
// added between 1.5 and 0.5 windows before (the rest fresh). After --warmup windows, one nanosecond
// before each window boundary (the oldest slice is still live and the current one full: the filter
// at its fullest):
//   false negatives  items added within the last window reported absent (must be 0);
//   stale present    items last added between window + slice and 2 windows + slice ago that
//                    are reported present (they must be forgotten: expect the FPR);
//   FPR              --probes items never added reported present;
//   bytes            info().stream->bytes, and the live links.
// Then the bits per item of the window against one plain filter sized for a window's items at
// the same rate and against the Age-Partitioned Bloom Filter (apbf_for below). Then
// a burst: one slice at --burst times the rate, then the steady stream until that slice has
// retired; measured at the end of each slice. With --series=FILE, a CSV line per batch (the
// stream's time, the live links and bytes, and a plain filter's bytes for a window's items), for
// plots of memory over time.
//
// Part "throughput", on the real clock: dedup-style add_many (--batch items a call, the
// per-item answers asked) of --items fresh items (--redis-items on Redis) into
//   plain         a plain filter sized for them (size_filter);
//   plain-window  a plain filter sized for the items of a window's live slices, holding those
//                 of the older slices first: the windowed filter's memory without its slices;
//   windowed      a window of --tp-window whose current slice is sized for them and whose
//                 older slices hold as many items each (added untimed first, at earlier
//                 times): every add tests the older slices, as in a stream that has run for a
//                 window;
//   growing       no window, a first link of items / --growing-start, growth 2.
// With --again=F, a share F of each timed call's items (after the first call) are items of the
// call before, as a queue's redeliveries are: the filters then find them in their current slice.
// Memory and file stores (--dir), and one Redis server with --redis (--tp-stores); --tp-kinds
// runs some of the cases only. The cases
// of a repetition run in a random order, --reps repetitions; the table shows medians, and the
// ratio to plain is the median of each repetition's ratio.
//
// Part "layout" (not in "all"): the memory side of a windowed add, as a model, not a filter.
// Each of --items items tests seven bits of one word of its line in each older slice (half
// full) and test-and-sets them in the current slice, the lines prefetched 16 items ahead as the
// library's kernels do, with an item's lines (a) apart, in a bitmap a slice as the library
// keeps them, and (b) side by side in one bitmap; (c) one line of a plain filter's bytes for
// scale. Probes are worked out before the clock starts, so only the memory is timed. Bytes as
// in the throughput part. --reps repetitions in a random order; medians, and (b) / (a) as the
// median of each repetition's ratio.
//
//   bench_window [--part=stream|throughput|layout|all] [--store=memory|file|redis] [--redis=URI]
//                [--dir=/tmp] [--items-per-window=1e5] [--windows=100] [--warmup=2]
//                [--slices=4] [--window=10s] [--steps-per-slice=25] [--error-rate=0.01,0.001]
//                [--layout=blocked,classic] [--probes=1e5] [--again=0] [--burst=10]
//                [--clock-lead=1d] [--items=1e6] [--redis-items=5e4] [--batch=1024]
//                [--reps=5] [--growing-start=8] [--tp-window=1h]
//                [--tp-stores=memory,file,redis] [--tp-kinds=plain,plain-window,windowed,growing]
//                [--shuffle-seed=1] [--series=FILE]
// Options take "--key=value" or "--key value". Throughput uses the first error rate and
// layout. Exits 1 if a check fails (a false negative, a mean FPR over its target), 3 if a
// Redis part could not run (its reason printed), 2 on bad arguments.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "redbloom/error.hpp"
#include "redbloom/filter.hpp"
#include "redbloom/location.hpp"
#include "redbloom/params.hpp"
#include "redbloom/stream.hpp"
#include "redis_bench_support.hpp"

namespace {

using redbloom::Filter;
using redbloom::FilterParams;
using redbloom::Layout;
using redbloom::Location;
using redbloom::StreamOptions;
using redbloom_bench::fixed;
using redbloom_bench::Items;
using redbloom_bench::median;
using redbloom_bench::rate;

// The targets: a windowed or growing filter's adds, as a share of a plain filter's.
constexpr double kLocalRateTarget = 0.5;
constexpr double kRedisRateTarget = 0.5;
constexpr double kModuleRateTarget = 0.8;  // Redis with redbloom's module

// Item ids of the parts never meet: stream items count up from 0, probes and prefills start
// far above anything a run adds.
constexpr std::uint64_t kProbeIds = std::uint64_t{1} << 50;
constexpr std::uint64_t kPrefillIds = std::uint64_t{1} << 51;

constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
constexpr int kExitRedisSkipped = 3;

struct Args {
  std::string part = "all";
  std::string store = "memory";
  std::string redis;
  std::string dir = "/tmp";
  std::uint64_t items_per_window = 100'000;
  std::uint64_t windows = 100;
  std::uint64_t warmup = 2;
  std::uint32_t slices = 4;
  std::uint64_t window_ns = 10'000'000'000;
  std::uint64_t steps_per_slice = 25;
  std::vector<double> error_rates{0.01, 0.001};
  std::vector<Layout> layouts{Layout::blocked, Layout::classic};
  std::uint64_t probes = 100'000;
  double again = 0;
  std::uint64_t burst = 10;
  std::uint64_t clock_lead_ns = 86'400'000'000'000;
  std::uint64_t items = 1'000'000;
  std::uint64_t redis_items = 50'000;
  std::uint64_t batch = 1024;
  int reps = 5;
  std::uint64_t growing_start = 8;
  std::uint64_t tp_window_ns = 3'600'000'000'000;
  std::vector<std::string> tp_stores{"memory", "file", "redis"};
  std::vector<std::string> tp_kinds{"plain", "plain-window", "windowed", "growing"};
  std::uint64_t shuffle_seed = 1;
  std::string series;  // CSV of the stream's memory after every batch
};

int usage(const char* message) {
  std::fprintf(
      stderr,
      "bench_window: %s\nusage: bench_window [--part=stream|throughput|layout|all] "
      "[--store=memory|file|redis] [--redis=URI] [--dir=/tmp] [--items-per-window=N] "
      "[--windows=N] [--warmup=N] [--slices=N] [--window=DURATION] "
      "[--steps-per-slice=N] [--error-rate=P[,P...]] [--layout=L[,L...]] "
      "[--probes=N] [--again=F] [--burst=X] [--clock-lead=DURATION] [--items=N] [--redis-items=N] "
      "[--batch=N] [--reps=N] "
      "[--growing-start=D] [--tp-window=DURATION] [--tp-stores=S[,S...]] [--tp-kinds=K[,K...]] "
      "[--shuffle-seed=N] "
      "[--series=FILE]\n",
      message);
  return kExitUsage;
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t comma = std::min(text.find(',', begin), text.size());
    parts.push_back(text.substr(begin, comma - begin));
    begin = comma + 1;
  }
  return parts;
}

std::uint64_t count(const std::string& value) {
  return static_cast<std::uint64_t>(redbloom_bench::parse_count(value));
}

// Applies one option; false for a key it does not know. Bad values throw.
bool apply(Args& args, const std::string& key, const std::string& value) {
  if (key == "--part") {
    if (value != "stream" && value != "throughput" && value != "layout" && value != "all") {
      return false;
    }
    args.part = value;
  } else if (key == "--store") {
    if (value != "memory" && value != "file" && value != "redis") return false;
    args.store = value;
  } else if (key == "--redis") {
    args.redis = value;
  } else if (key == "--dir") {
    args.dir = value;
  } else if (key == "--items-per-window") {
    args.items_per_window = count(value);
  } else if (key == "--windows") {
    args.windows = count(value);
  } else if (key == "--warmup") {
    args.warmup = count(value);
  } else if (key == "--slices") {
    args.slices = static_cast<std::uint32_t>(count(value));
  } else if (key == "--window") {
    args.window_ns = redbloom::parse_duration_ns(value);
  } else if (key == "--steps-per-slice") {
    args.steps_per_slice = count(value);
  } else if (key == "--error-rate") {
    args.error_rates.clear();
    for (const std::string& p : split(value)) args.error_rates.push_back(std::stod(p));
  } else if (key == "--layout") {
    args.layouts.clear();
    for (const std::string& name : split(value)) {
      const std::optional<Layout> layout = redbloom::parse_layout(name);
      if (!layout) return false;
      args.layouts.push_back(*layout);
    }
  } else if (key == "--probes") {
    args.probes = count(value);
  } else if (key == "--again") {
    args.again = std::stod(value);
    if (!(args.again >= 0 && args.again < 1)) return false;
  } else if (key == "--clock-lead") {
    args.clock_lead_ns = value == "0" ? 0 : redbloom::parse_duration_ns(value);
  } else if (key == "--burst") {
    args.burst = count(value);
  } else if (key == "--items") {
    args.items = count(value);
  } else if (key == "--redis-items") {
    args.redis_items = count(value);
  } else if (key == "--batch") {
    args.batch = count(value);
  } else if (key == "--reps") {
    args.reps = static_cast<int>(count(value));
  } else if (key == "--growing-start") {
    args.growing_start = count(value);
  } else if (key == "--tp-window") {
    args.tp_window_ns = redbloom::parse_duration_ns(value);
  } else if (key == "--tp-stores") {
    args.tp_stores = split(value);
    for (const std::string& store : args.tp_stores) {
      if (store != "memory" && store != "file" && store != "redis") return false;
    }
  } else if (key == "--tp-kinds") {
    args.tp_kinds = split(value);
    for (const std::string& kind : args.tp_kinds) {
      if (kind != "plain" && kind != "plain-window" && kind != "windowed" && kind != "growing") {
        return false;
      }
    }
  } else if (key == "--shuffle-seed") {
    args.shuffle_seed = count(value);
  } else if (key == "--series") {
    args.series = value;
  } else {
    return false;
  }
  return true;
}

std::optional<int> parse_args(int argc, char** argv, Args& args) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      usage("windowed and growing filters: memory, error rates, throughput");
      return 0;
    }
    std::string key = arg;
    std::string value;
    if (const std::size_t eq = arg.find('='); eq != std::string::npos) {
      key = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return usage(("no value for " + arg).c_str());
    }
    try {
      if (!apply(args, key, value)) return usage(("bad argument " + arg).c_str());
    } catch (const std::exception& e) {
      return usage(("bad value in " + arg + ": " + e.what()).c_str());
    }
  }
  if (args.error_rates.empty() || args.layouts.empty() || args.slices == 0 ||
      args.steps_per_slice == 0 || args.items_per_window == 0 || args.batch == 0 || args.reps < 1 ||
      args.growing_start == 0 || args.windows <= args.warmup + 1) {
    return usage("counts must be positive, and --windows above --warmup + 1");
  }
  if (args.warmup < 2) {
    // The stale items of a window are those of two windows and a slice before it.
    return usage("--warmup must be at least 2");
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// The Age-Partitioned Bloom Filter (Shtul, Baquero, Almeida 2020, arXiv 2001.03147), as a
// figure to compare with: k + l slices of m_s bits and one hash function each; an add sets its
// bit in the k newest slices; after every g adds the oldest slice is cleared and becomes the
// newest. A lookup is positive when k consecutive slices hold its bits. A slice receives k
// generations of g items before it is cleared, so it is sized for k g items at fill 1/2:
// m_s = k g / ln 2. An item keeps all its k bits for l generations after its own, so a sliding
// window of N items takes g = N / l, and the filter k + l slices of m_s bits:
//   bits per window item = (k + l) ceil(k ceil(N / l) / ln 2) / N  ~  (k + l) k / (l ln 2).
// The paper's false-positive estimate, with the newest generation full: slice i (0 = newest)
// is filled to r_i = (i + 1) / (2k) for i < k and 1/2 beyond; the rate is the chance that a
// run of k consecutive slices answers yes, by the recurrence over (run length a, slice i):
//   P(k, i) = 1;  P(a, i) = 0 if i > l + a;  P(a, i) = r_i P(a+1, i+1) + (1 - r_i) P(0, i+1);
//   rate = P(0, 0).
// For a target p, the (k, l) of fewest bits with rate <= p.

double apbf_rate(std::uint32_t k, std::uint32_t l) {
  // next[a] is P(a, i + 1) while row i is computed; past the last slice only a full run counts.
  std::vector<double> next(k + 1, 0.0);
  std::vector<double> row(k + 1, 0.0);
  next[k] = 1;
  for (std::uint32_t i = k + l; i-- > 0;) {
    const double fill = i < k ? double(i + 1) / (2.0 * k) : 0.5;
    for (std::uint32_t a = 0; a < k; ++a) {
      row[a] = i > l + a ? 0.0 : fill * next[a + 1] + (1 - fill) * next[0];
    }
    row[k] = 1;
    std::swap(row, next);
  }
  return next[0];
}

struct Apbf {
  std::uint32_t k = 0;
  std::uint32_t l = 0;
  double rate = 0;
  double bits_per_item = std::numeric_limits<double>::infinity();
};

Apbf apbf_for(double window_items, double p) {
  constexpr std::uint32_t kMaxK = 40;
  constexpr std::uint32_t kMaxL = 4096;
  Apbf best;
  for (std::uint32_t k = 1; k <= kMaxK; ++k) {
    if (apbf_rate(k, 1) > p) continue;
    // More slices only add chances of a run of k: the rate grows with l, the bits shrink.
    std::uint32_t ok = 1;
    std::uint32_t bad = kMaxL + 1;
    while (bad - ok > 1) {
      const std::uint32_t mid = ok + (bad - ok) / 2;
      (apbf_rate(k, mid) <= p ? ok : bad) = mid;
    }
    const double g = std::ceil(window_items / ok);
    const double slice_bits = std::ceil(k * g / std::log(2.0));
    const double bits = (k + ok) * slice_bits / window_items;
    if (bits < best.bits_per_item) best = Apbf{k, ok, apbf_rate(k, ok), bits};
  }
  return best;
}

// ---------------------------------------------------------------------------------------------
// Shared pieces.

std::string layout_name(Layout layout) {
  return std::string(redbloom::to_string(layout));
}

std::string mib(double bytes) {
  return fixed(bytes / (1024.0 * 1024.0), 2);
}

std::string rate_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

// Where a part's filter named `name` lives in `store`.
Location location_of(const Args& args, const std::string& store, const std::string& name) {
  if (store == "memory") return Location::memory();
  if (store == "file") return Location::file(args.dir + "/bench_window_" + name + ".rbf");
  return Location::parse(args.redis + "#bench:window:" + name);
}

void drop_quietly(const Location& location) {
  if (location.kind == Location::Kind::memory) return;
  try {
    Filter::drop(location);
  } catch (const std::exception&) {
    // Nothing there (a create that failed): nothing to remove.
  }
}

// ---------------------------------------------------------------------------------------------
// Part "stream".

// One batch of the stream, added at `time`: fresh ids first .. first + count - 1, and earlier
// items added again.
struct Step {
  std::uint64_t time = 0;
  std::uint64_t first = 0;
  std::uint64_t count = 0;
  std::vector<std::uint64_t> again;
};

struct StreamResult {
  double p = 0;
  Layout layout = Layout::blocked;
  std::uint64_t recent_checked = 0;
  std::uint64_t false_negatives = 0;
  std::uint64_t stale_checked = 0;
  std::uint64_t stale_present = 0;
  std::vector<double> fpr;
  std::uint64_t bytes_min = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t bytes_max = 0;
  std::size_t links_min = std::numeric_limits<std::size_t>::max();
  std::size_t links_max = 0;
  double info_rate_max = 0;
};

struct BurstRow {
  std::int64_t slice = 0;  // slices after the burst's own (0)
  std::uint64_t items = 0;
  std::size_t links = 0;
  std::uint64_t bytes = 0;
  double info_rate = 0;
  double fpr = 0;
  std::uint64_t false_negatives = 0;
};

class StreamRun {
 public:
  StreamRun(const Args& args, double p, Layout layout)
      : args_(args), now_(std::make_shared<std::uint64_t>(0)), rng_(args.shuffle_seed) {
    options_.capacity = args.items_per_window;
    options_.error_rate = p;
    options_.layout = layout;
    options_.window_ns = args.window_ns;
    options_.slices = args.slices;
    slice_ns_ = args.window_ns / args.slices;
    step_ns_ = slice_ns_ / args.steps_per_slice;
    // The driven clock starts at a window boundary --clock-lead ahead of the real time: Redis
    // expires slice keys by its own clock, so the stream's time must stay ahead of it however
    // slowly the stream runs (a slice's key then outlives its slice; dropping the filter
    // removes it).
    const std::uint64_t real = redbloom::system_now_ns() + args.clock_lead_ns;
    *now_ = (real / args.window_ns + 1) * args.window_ns;
    start_ns_ = *now_;
    result_.p = p;
    result_.layout = layout;
  }

  // Creates the filter; false with `reason` when the store cannot hold a windowed filter.
  bool create(std::string& reason) {
    location_ = location_of(args_, args_.store, "stream");
    const std::shared_ptr<std::uint64_t> now = now_;
    try {
      filter_.emplace(Filter::create(location_, options_, true, nullptr, [now] { return *now; }));
    } catch (const redbloom::Error& e) {
      reason = e.what();
      return false;
    }
    return true;
  }
  ~StreamRun() {
    filter_.reset();
    drop_quietly(location_);
  }
  StreamRun(const StreamRun&) = delete;
  StreamRun& operator=(const StreamRun&) = delete;

  void run_steady() {
    const std::uint64_t per_window = args_.slices * args_.steps_per_slice;
    for (std::uint64_t w = 0; w < args_.windows; ++w) {
      for (std::uint64_t s = 0; s < per_window; ++s) {
        // Spread the window's items evenly: step s ends at item N (s + 1) / steps.
        const std::uint64_t n = args_.items_per_window;
        add_step((n * (s + 1)) / per_window - (n * s) / per_window);
      }
      if (w < args_.warmup) continue;
      measure_at_boundary();
    }
  }

  // One slice at `burst` times the steady rate, then the steady rate until the burst's slice
  // has left the window; a row at the end of each slice.
  void run_burst() {
    const std::uint64_t per_window = args_.slices * args_.steps_per_slice;
    const std::uint64_t n = args_.items_per_window;
    for (std::uint32_t slice = 0; slice <= args_.slices + 1; ++slice) {
      const std::uint64_t scale = slice == 0 ? args_.burst : 1;
      std::uint64_t added = 0;
      for (std::uint64_t s = 0; s < args_.steps_per_slice; ++s) {
        const std::uint64_t items = scale * ((n * (s + 1)) / per_window - (n * s) / per_window);
        add_step(items);
        added += items;
      }
      BurstRow row;
      row.slice = slice;
      row.items = added;
      const Measure m = measure(*now_ - 1);
      row.links = m.links;
      row.bytes = m.bytes;
      row.info_rate = m.info_rate;
      row.fpr = m.fpr;
      row.false_negatives = m.false_negatives;
      burst_.push_back(row);
    }
  }

  [[nodiscard]] const StreamResult& result() const { return result_; }
  [[nodiscard]] const std::vector<BurstRow>& burst() const { return burst_; }
  void write_series_to(std::FILE* series) { series_ = series; }

 private:
  struct Measure {
    std::uint64_t recent_checked = 0;
    std::uint64_t false_negatives = 0;
    double fpr = 0;
    std::size_t links = 0;
    std::uint64_t bytes = 0;
    double info_rate = 0;
  };

  void add_step(std::uint64_t items) {
    Step step;
    step.time = *now_;
    step.first = next_id_;
    step.again = pick_again(items);
    step.count = items - step.again.size();
    std::vector<std::uint64_t> ids = step.again;
    for (std::uint64_t i = 0; i < step.count; ++i) ids.push_back(next_id_ + i);
    const Items batch(ids);
    flags_.resize(ids.size());
    filter_->add_many(batch.views(), flags_);
    next_id_ += step.count;
    last_step_.resize(next_id_);
    for (const std::uint64_t id : ids) last_step_[id] = steps_.size();
    steps_.push_back(std::move(step));
    *now_ += step_ns_;
    if (series_ != nullptr) write_series_line();
  }

  void write_series_line() {
    const redbloom::FilterInfo info = filter_->info();
    const std::uint64_t plain =
        redbloom::size_filter(double(args_.items_per_window), options_.error_rate, options_.layout)
            .total_bytes();
    std::fprintf(
        series_, "%g,%s,%.4f,%llu,%zu,%llu,%llu\n", options_.error_rate,
        layout_name(options_.layout).c_str(), double(*now_ - start_ns_) / double(args_.window_ns),
        static_cast<unsigned long long>(next_id_), info.stream ? info.stream->segments.size() : 0,
        static_cast<unsigned long long>(info.stream ? info.stream->bytes : 0),
        static_cast<unsigned long long>(plain));
  }

  // --again of a batch: items first added between one and a half windows and half a window
  // ago, some already forgotten, some that this add keeps from being forgotten.
  std::vector<std::uint64_t> pick_again(std::uint64_t items) {
    std::vector<std::uint64_t> ids;
    const auto wanted = static_cast<std::uint64_t>(std::llround(args_.again * double(items)));
    const std::uint64_t from = first_id_at(*now_ - args_.window_ns - args_.window_ns / 2);
    const std::uint64_t to = first_id_at(*now_ - args_.window_ns / 2);
    if (wanted == 0 || to <= from) return ids;
    std::uniform_int_distribution<std::uint64_t> pick(from, to - 1);
    for (std::uint64_t i = 0; i < wanted; ++i) ids.push_back(pick(rng_));
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    return ids;
  }

  // The first fresh id added at `time` or later.
  [[nodiscard]] std::uint64_t first_id_at(std::uint64_t time) const {
    const auto step = std::lower_bound(steps_.begin(), steps_.end(), time,
                                       [](const Step& s, std::uint64_t t) { return s.time < t; });
    return step == steps_.end() ? next_id_ : step->first;
  }

  // The ids added at times in [from, to].
  [[nodiscard]] std::vector<std::uint64_t> ids_between(std::uint64_t from, std::uint64_t to) const {
    // Last added: an item added again counts from its latest add only.
    std::vector<std::uint64_t> ids;
    for (std::size_t s = 0; s < steps_.size(); ++s) {
      const Step& step = steps_[s];
      if (step.time < from || step.time > to) continue;
      for (std::uint64_t i = 0; i < step.count; ++i) {
        if (last_step_[step.first + i] == s) ids.push_back(step.first + i);
      }
      for (const std::uint64_t id : step.again) {
        if (last_step_[id] == s) ids.push_back(id);
      }
    }
    return ids;
  }

  std::uint64_t present(const std::vector<std::uint64_t>& ids) {
    if (ids.empty()) return 0;
    const Items items(ids);
    flags_.resize(ids.size());
    return filter_->contains_many(items.views(), flags_);
  }

  // The checks at `at` (the clock is set there for them).
  Measure measure(std::uint64_t at) {
    const std::uint64_t saved = *now_;
    *now_ = at;
    Measure m;
    const std::vector<std::uint64_t> recent = ids_between(at - args_.window_ns, at);
    m.false_negatives = recent.size() - present(recent);
    m.recent_checked = recent.size();

    std::vector<std::uint64_t> probes(args_.probes);
    for (std::uint64_t i = 0; i < args_.probes; ++i) probes[i] = kProbeIds + next_probe_ + i;
    next_probe_ += args_.probes;
    m.fpr = double(present(probes)) / double(args_.probes);

    const redbloom::FilterInfo info = filter_->info();
    m.links = info.stream ? info.stream->segments.size() : 0;
    m.bytes = info.stream ? info.stream->bytes : 0;
    m.info_rate = info.stream ? info.stream->error_rate_now : 0;
    *now_ = saved;
    return m;
  }

  void measure_at_boundary() {
    const std::uint64_t at = *now_ - 1;
    const Measure m = measure(at);
    // Forgotten by now: last added more than a window and a slice ago (one window's worth).
    const std::uint64_t forgotten = at - args_.window_ns - slice_ns_;
    const std::vector<std::uint64_t> stale =
        ids_between(forgotten - args_.window_ns + 1, forgotten);
    const std::uint64_t saved = *now_;
    *now_ = at;
    result_.stale_present += present(stale);
    *now_ = saved;
    result_.stale_checked += stale.size();
    result_.recent_checked += m.recent_checked;
    result_.false_negatives += m.false_negatives;
    result_.fpr.push_back(m.fpr);
    result_.bytes_min = std::min(result_.bytes_min, m.bytes);
    result_.bytes_max = std::max(result_.bytes_max, m.bytes);
    result_.links_min = std::min(result_.links_min, m.links);
    result_.links_max = std::max(result_.links_max, m.links);
    result_.info_rate_max = std::max(result_.info_rate_max, m.info_rate);
  }

  const Args& args_;
  StreamOptions options_;
  std::uint64_t slice_ns_ = 0;
  std::uint64_t step_ns_ = 0;
  std::uint64_t start_ns_ = 0;
  std::FILE* series_ = nullptr;
  std::shared_ptr<std::uint64_t> now_;
  Location location_;
  std::optional<Filter> filter_;
  std::vector<Step> steps_;
  std::vector<std::size_t> last_step_;  // per fresh id, the step that added it last
  std::mt19937_64 rng_;
  std::vector<std::uint8_t> flags_;
  std::uint64_t next_id_ = 0;
  std::uint64_t next_probe_ = 0;
  StreamResult result_;
  std::vector<BurstRow> burst_;
};

int stream_part(const Args& args) {
  std::printf("## Simulated stream (driven clock), store %s\n\n", args.store.c_str());
  std::printf(
      "%llu items per window of %s in %u slices, added in %llu batches per slice; %llu windows "
      "(checks after the first %llu, 1 ns before each window boundary); %llu never-added "
      "probes per check; %g of each batch added again (items first added 1.5 to 0.5 windows "
      "before)\n\n",
      static_cast<unsigned long long>(args.items_per_window),
      redbloom::format_duration(args.window_ns).c_str(), args.slices,
      static_cast<unsigned long long>(args.steps_per_slice),
      static_cast<unsigned long long>(args.windows), static_cast<unsigned long long>(args.warmup),
      static_cast<unsigned long long>(args.probes), args.again);

  std::unique_ptr<std::FILE, int (*)(std::FILE*)> series(nullptr, std::fclose);
  if (!args.series.empty()) {
    series.reset(std::fopen(args.series.c_str(), "w"));
    if (!series) {
      std::fprintf(stderr, "bench_window: cannot write %s\n", args.series.c_str());
      return kExitUsage;
    }
    std::fprintf(series.get(), "p,layout,windows,items_added,links,bytes,plain_bytes\n");
  }
  std::vector<StreamResult> results;
  std::vector<std::vector<BurstRow>> bursts;
  for (const double p : args.error_rates) {
    for (const Layout layout : args.layouts) {
      StreamRun run(args, p, layout);
      run.write_series_to(series.get());
      std::string reason;
      if (!run.create(reason)) {
        std::printf("skipped: a windowed filter in %s could not be created: %s\n\n",
                    args.store.c_str(), reason.c_str());
        return kExitRedisSkipped;
      }
      const auto start = redbloom_bench::Clock::now();
      run.run_steady();
      run.run_burst();
      std::fprintf(stderr, "stream p=%g %s: %.1f s\n", p, layout_name(layout).c_str(),
                   redbloom_bench::seconds_since(start));
      results.push_back(run.result());
      bursts.push_back(run.burst());
    }
  }

  bool failed = false;
  const double n = double(args.items_per_window);
  std::printf(
      "| p | layout | false negatives (of checked) | stale present | FPR mean | FPR max | "
      "info rate max | links | bytes min–max | bits/item | plain bits/item | × plain | "
      "APBF (k, l) bits/item | × APBF |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const StreamResult& r : results) {
    double fpr_sum = 0;
    double fpr_max = 0;
    for (const double f : r.fpr) {
      fpr_sum += f;
      fpr_max = std::max(fpr_max, f);
    }
    const double fpr_mean = fpr_sum / double(r.fpr.size());
    const double bits = double(r.bytes_max) * 8 / n;
    const double plain = double(redbloom::size_filter(n, r.p, r.layout).total_bits()) / n;
    const Apbf apbf = apbf_for(n, r.p);
    const bool over = fpr_mean > r.p;
    failed = failed || r.false_negatives != 0 || over;
    std::printf(
        "| %g | %s | %llu (of %llu) | %s | %s%s | %s | %s | %zu–%zu | %llu–%llu | %s | %s | %s | "
        "(%u, %u) %s | %s |\n",
        r.p, layout_name(r.layout).c_str(), static_cast<unsigned long long>(r.false_negatives),
        static_cast<unsigned long long>(r.recent_checked),
        rate_text(double(r.stale_present) / double(r.stale_checked)).c_str(),
        rate_text(fpr_mean).c_str(), over ? " (over target)" : "", rate_text(fpr_max).c_str(),
        rate_text(r.info_rate_max).c_str(), r.links_min, r.links_max,
        static_cast<unsigned long long>(r.bytes_min), static_cast<unsigned long long>(r.bytes_max),
        fixed(bits, 2).c_str(), fixed(plain, 2).c_str(), fixed(bits / plain, 2).c_str(), apbf.k,
        apbf.l, fixed(apbf.bits_per_item, 2).c_str(), fixed(bits / apbf.bits_per_item, 2).c_str());
  }
  std::printf(
      "\nAPBF: the (k, l) of fewest bits whose estimated rate (the paper's recurrence, newest "
      "generation full) is at most p, with generations of N / l items so that the last N items "
      "are always present.\n");

  std::printf(
      "\nBurst: one slice at %llu× the rate, then the steady rate until that slice has "
      "retired (a row at the end of each slice; slice 0 is the burst's).\n\n",
      static_cast<unsigned long long>(args.burst));
  std::printf(
      "| p | layout | slice | items added | links | bytes | info rate | FPR | "
      "false negatives |\n|---|---|---|---|---|---|---|---|---|\n");
  for (std::size_t i = 0; i < results.size(); ++i) {
    for (const BurstRow& row : bursts[i]) {
      const bool over = row.fpr > results[i].p;
      failed = failed || row.false_negatives != 0;
      std::printf("| %g | %s | %lld | %llu | %zu | %llu | %s | %s%s | %llu |\n", results[i].p,
                  layout_name(results[i].layout).c_str(), static_cast<long long>(row.slice),
                  static_cast<unsigned long long>(row.items), row.links,
                  static_cast<unsigned long long>(row.bytes), rate_text(row.info_rate).c_str(),
                  rate_text(row.fpr).c_str(), over ? " (over p)" : "",
                  static_cast<unsigned long long>(row.false_negatives));
    }
  }
  std::printf("\n");
  if (failed) std::printf("FAILED: a false negative, or a mean FPR over its target (above)\n\n");
  return failed ? kExitFailed : 0;
}

// ---------------------------------------------------------------------------------------------
// Part "throughput".

// plain_window: a plain filter sized for all the items a window's live slices hold, as full
// as the windowed filter's older slices: what the windowed filter's size alone costs.
enum class Kind { plain, plain_window, windowed, growing };
constexpr std::size_t kKinds = 4;
constexpr const char* kKindNames[kKinds] = {"plain", "plain-window", "windowed", "growing"};

struct Timed {
  double items_per_second = 0;
  double lookups_per_second = 0;  // of as many items the filter never held, after the adds
  std::size_t links = 0;
  std::uint64_t bytes = 0;
  double reported_new = 0;  // share of the run's (fresh) items add_many called new
  bool module = false;      // redbloom's module did the work on the server
};

class ThroughputStore {
 public:
  ThroughputStore(const Args& args, std::string store, std::uint64_t items)
      : args_(args),
        store_(std::move(store)),
        items_(Items::range(0, items)),
        count_(items),
        lag_(std::make_shared<std::uint64_t>(0)) {
    const std::span<const std::string_view> fresh = items_.views();
    timed_.assign(fresh.begin(), fresh.end());
    // Every item whose draw falls under --again repeats the item a call earlier.
    std::mt19937_64 draw(args.shuffle_seed);
    std::uniform_real_distribution<double> share(0.0, 1.0);
    for (std::size_t i = args.batch; i < timed_.size(); ++i) {
      if (share(draw) < args.again) timed_[i] = timed_[i - args.batch];
    }
  }

  // One timed run of `kind` on a fresh filter; throws what the store throws.
  Timed run(Kind kind) {
    const Location location = location_of(args_, store_, kKindNames[std::size_t(kind)]);
    const double p = args_.error_rates.front();
    const Layout layout = args_.layouts.front();
    std::optional<Filter> filter;
    if (kind == Kind::plain || kind == Kind::plain_window) {
      const double capacity =
          double(count_) * (kind == Kind::plain ? 1.0 : double(args_.slices + 1));
      filter.emplace(Filter::create(location, redbloom::size_filter(capacity, p, layout), true));
      if (kind == Kind::plain_window) prefill(*filter);
    } else {
      StreamOptions options;
      options.error_rate = p;
      options.layout = layout;
      if (kind == Kind::windowed) {
        options.capacity = count_ * args_.slices;
        options.window_ns = args_.tp_window_ns;
        options.slices = args_.slices;
      } else {
        options.capacity = std::max<std::uint64_t>(1, count_ / args_.growing_start);
        options.growth = 2;
      }
      // The real clock, put back by `lag` while the older slices are filled.
      const std::shared_ptr<std::uint64_t> lag = lag_;
      filter.emplace(Filter::create(location, options, true, nullptr,
                                    [lag] { return redbloom::system_now_ns() - *lag; }));
      if (kind == Kind::windowed) prefill(*filter);
    }

    std::vector<std::uint8_t> flags(args_.batch);
    // Seconds to pass `items` to call(items, flags) in calls of --batch; `total` sums what
    // the calls return.
    const auto in_calls = [&](std::span<const std::string_view> items, auto call,
                              std::uint64_t& total) {
      const auto start = redbloom_bench::Clock::now();
      for (std::size_t at = 0; at < items.size(); at += args_.batch) {
        const std::size_t size = std::min<std::size_t>(args_.batch, items.size() - at);
        total += call(items.subspan(at, size), std::span(flags).first(size));
      }
      return redbloom_bench::seconds_since(start);
    };
    std::uint64_t added = 0;
    const double seconds = in_calls(
        timed_, [&](auto items, auto out) { return filter->add_many(items, out); }, added);
    // Lookups of absent items (a cache in front of a database asks mostly for those): each
    // live link is consulted for them.
    const Items absent = Items::range(kProbeIds, count_);
    std::uint64_t found = 0;  // false positives
    const double lookup_seconds = in_calls(
        absent.views(), [&](auto items, auto out) { return filter->contains_many(items, out); },
        found);
    Timed timed;
    timed.items_per_second = double(count_) / seconds;
    timed.lookups_per_second = double(count_) / lookup_seconds;
    timed.reported_new = double(added) / double(count_);
    const redbloom::FilterInfo info = filter->info();
    timed.links = info.stream ? info.stream->segments.size() : 1;
    timed.module = std::any_of(info.engines.begin(), info.engines.end(), [](const std::string& e) {
      return e.find("module redbloom") != std::string::npos;
    });
    timed.bytes = info.stream ? info.stream->bytes : filter->params().total_bytes();
    filter.reset();
    drop_quietly(location);
    return timed;
  }

  [[nodiscard]] const std::string& store() const { return store_; }
  [[nodiscard]] std::uint64_t count() const { return count_; }

 private:
  // As many items as the timed run adds, per older slice of the window (oldest first, at its
  // time), untimed.
  void prefill(Filter& filter) {
    const std::uint64_t slice_ns = args_.tp_window_ns / args_.slices;
    for (std::uint32_t back = args_.slices; back >= 1; --back) {
      *lag_ = back * slice_ns;
      for (std::uint64_t at = 0; at < count_; at += args_.batch) {
        const Items batch =
            Items::range(kPrefillIds + next_prefill_, std::min(args_.batch, count_ - at));
        next_prefill_ += batch.size();
        filter.load_many(batch.views());
      }
    }
    *lag_ = 0;
  }

  const Args& args_;
  std::string store_;
  Items items_;
  std::vector<std::string_view> timed_;  // items_, some of them repeated (--again)
  std::uint64_t count_ = 0;
  std::shared_ptr<std::uint64_t> lag_;
  std::uint64_t next_prefill_ = 0;
};

// The median over repetitions of run[i] / base[i].
double median_ratio(const std::vector<Timed>& run, const std::vector<Timed>& base) {
  std::vector<double> ratios;
  for (std::size_t i = 0; i < run.size() && i < base.size(); ++i) {
    ratios.push_back(run[i].items_per_second / base[i].items_per_second);
  }
  return ratios.empty() ? 0.0 : median(ratios);
}

// Runs the cases on one store and prints its rows; false (reason printed) when a case could
// not run there.
// store_target: the target without the module (which has its own).
bool throughput_store(const Args& args, ThroughputStore& store, double store_target,
                      bool& missed_target) {
  std::vector<std::vector<Timed>> runs(kKinds);
  std::string skipped;
  std::vector<bool> available(kKinds, false);
  for (std::size_t c = 0; c < kKinds; ++c) {
    available[c] =
        std::find(args.tp_kinds.begin(), args.tp_kinds.end(), kKindNames[c]) != args.tp_kinds.end();
  }
  redbloom_bench::run_shuffled(kKinds, args.reps, args.shuffle_seed, [&](int, std::size_t c) {
    if (!available[c]) return;
    try {
      runs[c].push_back(store.run(Kind(c)));
    } catch (const redbloom::Error& e) {
      available[c] = false;
      skipped += (skipped.empty() ? "" : "; ") + std::string(kKindNames[c]) + ": " + e.what();
    }
  });
  const auto plain = std::size_t(Kind::plain);
  const auto plain_window = std::size_t(Kind::plain_window);
  for (std::size_t c = 0; c < kKinds; ++c) {
    if (!available[c]) continue;
    const std::vector<Timed>& r = runs[c];
    const bool targeted = c == std::size_t(Kind::windowed) || c == std::size_t(Kind::growing);
    std::string ratio = "—";
    std::string versus_window = "—";
    std::string verdict = "—";
    if (c != plain && available[plain]) {
      const double mid = median_ratio(r, runs[plain]);
      const double target = std::any_of(r.begin(), r.end(), [](const Timed& t) { return t.module; })
                                ? kModuleRateTarget
                                : store_target;
      ratio = fixed(mid, 2) + "×";
      if (targeted) {
        verdict = (mid >= target ? "met (≥ " : "**missed** (≥ ") + fixed(target, 2) + "×)";
        missed_target = missed_target || mid < target;
      }
    }
    if (c == std::size_t(Kind::windowed) && available[plain_window]) {
      versus_window = fixed(median_ratio(r, runs[plain_window]), 2) + "×";
    }
    std::printf(
        "| %s | %s | %llu | %s | %s | %s | %s | %s | %s | %zu | %s |\n", store.store().c_str(),
        kKindNames[c], static_cast<unsigned long long>(store.count()),
        rate(redbloom_bench::median_of(r, [](const Timed& t) { return t.items_per_second; }))
            .c_str(),
        ratio.c_str(), verdict.c_str(), versus_window.c_str(),
        rate(redbloom_bench::median_of(r, [](const Timed& t) { return t.lookups_per_second; }))
            .c_str(),
        fixed(redbloom_bench::median_of(r, [](const Timed& t) { return t.reported_new; }), 4)
            .c_str(),
        r.back().links, mib(double(r.back().bytes)).c_str());
  }
  if (!skipped.empty()) {
    std::printf("| %s | skipped | | | | | | | | | %s |\n", store.store().c_str(), skipped.c_str());
    return false;
  }
  return true;
}

int throughput_part(const Args& args) {
  std::printf("## Throughput (real clock)\n\n");
  std::printf(
      "dedup-style add_many, %llu items a call with per-item answers, %s, p = %g, %s; "
      "windowed: %s in %u slices, the current slice sized for the run's items and the %u older "
      "ones holding as many; plain-window: a plain filter sized for the %u slices' items, "
      "holding the older ones' first; growing: first link items / %llu, growth 2; %d "
      "repetitions, cases in random order; medians (× plain: median of each repetition's "
      "ratio); then contains_many of as many items never added, in calls of as many\n\n",
      static_cast<unsigned long long>(args.batch),
      args.again > 0 ? (fixed(100 * args.again, 0) + "% of them items of the call before").c_str()
                     : "fresh items",
      args.error_rates.front(), layout_name(args.layouts.front()).c_str(),
      redbloom::format_duration(args.tp_window_ns).c_str(), args.slices, args.slices,
      args.slices + 1, static_cast<unsigned long long>(args.growing_start), args.reps);
  std::printf(
      "| store | filter | items | items/s | × plain | target | × plain-window | absent "
      "lookups/s | reported new | links | MiB |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  bool missed = false;
  int status = 0;
  const auto wanted = [&](const char* store) {
    return std::find(args.tp_stores.begin(), args.tp_stores.end(), store) != args.tp_stores.end();
  };
  if (wanted("memory")) {
    ThroughputStore memory(args, "memory", args.items);
    throughput_store(args, memory, kLocalRateTarget, missed);
  }
  if (wanted("file")) {
    ThroughputStore file(args, "file", args.items);
    throughput_store(args, file, kLocalRateTarget, missed);
  }
  if (!wanted("redis")) {
    // Not asked for: nothing to report.
  } else if (args.redis.empty()) {
    std::printf("| redis | skipped | | | | | | | | no --redis given |\n");
    status = kExitRedisSkipped;
  } else {
    ThroughputStore redis(args, "redis", args.redis_items);
    if (!throughput_store(args, redis, kRedisRateTarget, missed)) status = kExitRedisSkipped;
  }
  std::printf("\n");
  if (missed) std::printf("Targets missed where marked (measured, not a failure of a check).\n\n");
  return status;
}

// Part "layout".

// 64-byte-aligned zeroed words, as a MemoryStore maps them.
struct Lines {
  explicit Lines(std::uint64_t lines)
      : count(lines),
        words(static_cast<std::uint64_t*>(std::aligned_alloc(64, lines * 64)), &std::free) {
    if (!words) throw std::bad_alloc();
    std::fill_n(words.get(), lines * 8, std::uint64_t{0});
  }
  std::uint64_t count;
  std::unique_ptr<std::uint64_t, decltype(&std::free)> words;
};

std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}

// One item's word in a line and its mask of seven bits (as k = 7 probes): in a half-full line
// a fresh item is found with a chance of 2^-7, so it is looked up in every older slice.
struct Probe {
  std::uint64_t line;
  unsigned word;
  std::uint64_t mask;
};
Probe probe_of(std::uint64_t hash, std::uint64_t lines) {
  const std::uint64_t bits = mix64(hash);
  std::uint64_t mask = 0;
  for (unsigned b = 0; b < 7; ++b) mask |= std::uint64_t{1} << ((bits >> (3 + 6 * b)) & 63);
  return Probe{static_cast<std::uint64_t>((static_cast<unsigned __int128>(hash) * lines) >> 64),
               static_cast<unsigned>(bits & 7), mask};
}

constexpr std::size_t kLayoutAhead = 16;

// (c): the plain filter's one line. Returns how many items were new.
std::uint64_t layout_plain(Lines& bits, const std::vector<Probe>& probes) {
  std::uint64_t fresh = 0;
  for (std::size_t i = 0; i < probes.size(); ++i) {
    if (i + kLayoutAhead < probes.size()) {
      __builtin_prefetch(bits.words.get() + probes[i + kLayoutAhead].line * 8, 1, 3);
    }
    const Probe& p = probes[i];
    std::uint64_t& word = bits.words.get()[p.line * 8 + p.word];
    fresh += (word & p.mask) != p.mask;
    word |= p.mask;
  }
  return fresh;
}

// (a) and (b): `at(slice, line)` is the first word of a slice's line; the last slice is the
// current one.
template <class At>
std::uint64_t layout_window(std::uint32_t slices, const std::vector<Probe>& probes, At&& at) {
  std::uint64_t fresh = 0;
  for (std::size_t i = 0; i < probes.size(); ++i) {
    if (i + kLayoutAhead < probes.size()) {
      const std::uint64_t ahead = probes[i + kLayoutAhead].line;
      for (std::uint32_t s = 0; s < slices; ++s) __builtin_prefetch(at(s, ahead), 1, 3);
    }
    const Probe& p = probes[i];
    bool found = false;
    for (std::uint32_t s = 0; s + 1 < slices && !found; ++s) {
      found = (at(s, p.line)[p.word] & p.mask) == p.mask;
    }
    std::uint64_t& word = at(slices - 1, p.line)[p.word];
    fresh += !found && (word & p.mask) != p.mask;
    word |= p.mask;
  }
  return fresh;
}

// A row of the layout table; `apart` given: the median of each repetition's ratio to it.
void print_layout_row(const char* name, std::uint64_t lines, const std::vector<double>& rates,
                      const std::vector<double>* apart) {
  std::vector<double> ratios;
  for (std::size_t r = 0; apart != nullptr && r < rates.size(); ++r) {
    ratios.push_back(rates[r] / (*apart)[r]);
  }
  std::printf("| %s | %s | %s | %s |\n", name, mib(double(lines * 64)).c_str(),
              rate(median(rates)).c_str(),
              apart == nullptr ? "—" : (fixed(median(ratios), 2) + "×").c_str());
}

int layout_part(const Args& args) {
  const double p = args.error_rates.front();
  const Layout layout = args.layouts.front();
  const std::uint32_t live = args.slices + 1;
  const std::uint64_t plain_lines =
      redbloom::size_filter(double(args.items), p, layout).total_bytes() / 64;
  // The throughput part's windowed filter: its current slice sized for the run's items.
  StreamOptions options;
  options.capacity = args.items * args.slices;
  options.error_rate = p;
  options.layout = layout;
  options.window_ns = args.tp_window_ns;
  options.slices = args.slices;
  // A slice's first link, as the filter sizes it.
  Filter sized = Filter::create(Location::memory(), options, true);
  const std::string_view one = "sizing";
  sized.add(one);
  const std::uint64_t slice_lines = sized.info().stream->segments.front().bytes / 64;
  std::printf("## Layout model\n\n");
  std::printf(
      "%llu items, each testing seven bits of one word of its line in %u older slices (half "
      "full) and test-and-setting them in the current slice (lines prefetched %zu items ahead; "
      "only the memory timed); plain: one test-and-set in a plain filter's bytes (p = %g, %s); "
      "%d repetitions, medians\n\n",
      static_cast<unsigned long long>(args.items), args.slices, kLayoutAhead, p,
      layout_name(layout).c_str(), args.reps);
  std::printf("| lines of one item | MiB | items/s | × apart |\n|---|---|---|---|\n");
  // Worked out before the clock starts: what is timed is the memory.
  std::vector<Probe> plain_probes(args.items);
  std::vector<Probe> slice_probes(args.items);
  for (std::size_t i = 0; i < args.items; ++i) {
    plain_probes[i] = probe_of(mix64(i + 0x5eed), plain_lines);
    slice_probes[i] = probe_of(mix64(i + 0x5eed), slice_lines);
  }
  constexpr std::size_t kCases = 3;
  constexpr const char* kNames[kCases] = {"plain (one line)", "apart (a bitmap a slice)",
                                          "side by side (one bitmap)"};
  std::vector<std::vector<double>> rates(kCases);
  std::uint64_t sink = 0;
  redbloom_bench::run_shuffled(kCases, args.reps, args.shuffle_seed, [&](int, std::size_t c) {
    // Older slices half full (every other bit), as in a window that has run for a while.
    constexpr std::uint64_t kHalf = 0x5555555555555555ULL;
    std::vector<Lines> apart;
    std::optional<Lines> one;
    if (c == 0) {
      one.emplace(plain_lines);
    } else if (c == 1) {
      for (std::uint32_t s = 0; s < live; ++s) apart.emplace_back(slice_lines);
      for (std::uint32_t s = 0; s + 1 < live; ++s) {
        std::fill_n(apart[s].words.get(), slice_lines * 8, kHalf);
      }
    } else {
      one.emplace(slice_lines * live);
      for (std::uint64_t l = 0; l < slice_lines * live; ++l) {
        if (l % live + 1 != live) std::fill_n(one->words.get() + l * 8, 8, kHalf);
      }
    }
    const auto start = redbloom_bench::Clock::now();
    if (c == 0) {
      sink += layout_plain(*one, plain_probes);
    } else if (c == 1) {
      sink += layout_window(live, slice_probes, [&](std::uint32_t s, std::uint64_t line) {
        return apart[s].words.get() + line * 8;
      });
    } else {
      std::uint64_t* base = one->words.get();
      sink += layout_window(live, slice_probes, [&](std::uint32_t s, std::uint64_t line) {
        return base + (line * live + s) * 8;
      });
    }
    rates[c].push_back(double(args.items) / redbloom_bench::seconds_since(start));
  });
  for (std::size_t c = 0; c < kCases; ++c) {
    const std::uint64_t lines = c == 0 ? plain_lines : slice_lines * live;
    print_layout_row(kNames[c], lines, rates[c], c == 2 ? &rates[1] : nullptr);
  }
  std::printf("\n(items new to the current slice, over all runs: %llu)\n\n",
              static_cast<unsigned long long>(sink));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (const std::optional<int> stop = parse_args(argc, argv, args)) return *stop;
  try {
    if (args.store == "redis" && args.redis.empty()) return usage("--store=redis needs --redis");
    int status = 0;
    if (args.part == "stream" || args.part == "all") status = stream_part(args);
    if (args.part == "throughput" || args.part == "all") {
      const int throughput = throughput_part(args);
      if (status == 0) status = throughput;
    }
    if (args.part == "layout") status = layout_part(args);
    return status;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_window: %s\n", e.what());
    return kExitFailed;
  }
}
