// Filters in one Redis server: redbloom's paths against the usual hand-written filter, side by
// side.
//
// Cases, each run on a fresh filter over one connection, with the same n items
// "s3://bucket/dir/file<i>.pdf" (i < n), p and parameters (size_filter; classic and blocked):
//   a  hand-written  the usual hand-written filter, on hiredis: k `SETBIT key off 1` per item,
//                pipelined 1000 items per round trip; lookups by k GETBIT per item, likewise.
//                Same m, k and bit positions as redbloom's classic filter (so same bits).
//   b  per-item  Filter::add_many (BITFIELD test-and-set); contains_many with BulkMode::per_item
//                (BITFIELD_RO for classic, one GETRANGE of the item's block for blocked).
//   c  bulk      Filter::load_many of all n items in one call (the automatic cost model should
//                choose the BITOP OR delta); contains_many with the automatic mode (should choose
//                partition downloads).
//   d  dedup     Filter::add_many over a stream of n items holding n/2 distinct ones, each twice,
//                in random order (the filter is sized for n, like the others).
//   e  script    blocked only: the per-item test-and-set as one EVALSHA per unit of 1024 items
//                of a partition (pipelined like b), the script reading each item's 64-byte
//                block with GETRANGE and writing back the changed bytes with one SETRANGE, the
//                answers returned as one string; the alternative to b's BITFIELD on servers
//                without a Bloom engine. Lookups as b (GETRANGE per item).
// Each case measures, per phase (insert, lookup of the n present items, lookup of --absent
// absent items "s3://bucket/dir/file<i>.pdf", i >= n): wall time, items/s, and the server's
// CPU (used_cpu_user + used_cpu_sys from INFO cpu, read on a second connection before and after
// the phase) per item, and which commands the server ran (INFO commandstats deltas). Then the
// filter's MEMORY USAGE. Checks: no false negatives (and in the dedup stream, no repeat reported
// as new); the measured false-positive rate against the expected one; every filter of the same
// layout and items holds the same bits whatever path built it (digest of the bitmap).
//
// Every case runs --reps times, the cases of a repetition in a random order, so a slow spell
// of this shared machine spreads over all rows; the table shows medians (of each figure on its
// own) and the ratios against case a.
//
//   bench_redis [--uri=redis://127.0.0.1:6379] [--n=1e6] [--p=0.01] [--reps=3]
//               [--absent=1e5] [--only=SUBSTRING] [--shuffle-seed=N]
// Exits 1 if a check fails (a false negative, bitmaps that differ), 2 on bad arguments.
#include <hiredis/hiredis.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/layout.hpp"
#include "core/redis_format.hpp"
#include "redbloom/error.hpp"
#include "redbloom/filter.hpp"
#include "redbloom/hash.hpp"
#include "redbloom/params.hpp"
#include "redbloom/redis_endpoint.hpp"
#include "redis/redis_store.hpp"
#include "redis_bench_support.hpp"

namespace {

using redbloom::Filter;
using redbloom::FilterParams;
using redbloom::Layout;
using redbloom::RedisEndpoint;
using redbloom::RedisStore;
using redbloom_bench::Clock;
using redbloom_bench::fixed;
using redbloom_bench::Items;
using redbloom_bench::kSeedRoundItems;
using redbloom_bench::median_of;
using redbloom_bench::rate;
using redbloom_bench::RawConnection;
using redbloom_bench::Reply;
using redbloom_bench::Resp;

using redbloom_bench::join_commands;
using redbloom_bench::measure;
using redbloom_bench::Phase;

// ---------------------------------------------------------------------------------------------
// Case a: the hand-written method. A Bloom filter of the given m and k, one key per partition (one
// key for n = 1e6), with redbloom's classic bit positions; per item k SETBIT (or GETBIT),
// 1000 items per pipelined round trip, one round trip at a time.

class HandWrittenFilter {
 public:
  HandWrittenFilter(RawConnection& connection, const FilterParams& params, const std::string& name)
      : connection_(connection), params_(params) {
    for (std::uint64_t p = 0; p < params.partitions; ++p) {
      keys_.push_back(name + ":" + std::to_string(p));
    }
  }
  [[nodiscard]] const std::vector<std::string>& keys() const { return keys_; }

  // newly_added[i] = 1 iff some SETBIT of item i found a 0 (what hand-written filters return).
  void add(std::span<const std::string_view> items, std::span<std::uint8_t> newly_added) {
    round_trips(items, "SETBIT",
                [&](std::size_t i, bool all_ones) { newly_added[i] = all_ones ? 0 : 1; });
  }
  void contains(std::span<const std::string_view> items, std::span<std::uint8_t> present) {
    round_trips(items, "GETBIT",
                [&](std::size_t i, bool all_ones) { present[i] = all_ones ? 1 : 0; });
  }

 private:
  // answer(i, whether all k replies of item i were 1).
  template <class Answer>
  void round_trips(std::span<const std::string_view> items, std::string_view command,
                   Answer&& answer) {
    const bool set = command == "SETBIT";
    Resp resp;
    for (std::size_t first = 0; first < items.size(); first += kSeedRoundItems) {
      const std::size_t last = std::min(items.size(), first + kSeedRoundItems);
      resp.clear();
      for (std::size_t i = first; i < last; ++i) {
        redbloom_bench::push_seed_probes(resp, params_, keys_, items[i], set);
      }
      connection_.append(resp);
      for (std::size_t i = first; i < last; ++i) {
        bool all_ones = true;
        for (std::uint32_t j = 0; j < params_.hashes; ++j) {
          all_ones &= connection_.read(command)->integer == 1;
        }
        answer(i, all_ones);
      }
    }
  }

  RawConnection& connection_;
  FilterParams params_;
  std::vector<std::string> keys_;
};

// ---------------------------------------------------------------------------------------------
// Case e: the blocked layout's test-and-set as a script per unit. The client sends, per item,
// its block (u32) and its k offsets in the block (u16 each), big-endian, packed in one argument.

constexpr std::string_view kBlockScript = R"lua(
local key = KEYS[1]
local k = tonumber(ARGV[2])
local data = ARGV[3]
local have = redis.call('STRLEN', key)
if have ~= tonumber(ARGV[1]) then return redis.error_reply('REDBLOOM partition ' .. have) end
local band, bor, rshift = bit.band, bit.bor, bit.rshift
local byte, char, sub = string.byte, string.char, string.sub
local call = redis.call
local count = #data / (4 + 2 * k)
local out = {}
local pos = 1
for j = 1, count do
  local b1, b2, b3, b4 = byte(data, pos, pos + 3)
  local off = (((b1 * 256 + b2) * 256 + b3) * 256 + b4) * 64
  pos = pos + 4
  local block = call('GETRANGE', key, off, off + 63)
  local lo, hi = 65, 0
  for i = 1, k do
    local h, l = byte(data, pos, pos + 1)
    pos = pos + 2
    local at = h * 32 + rshift(l, 3) + 1
    local mask = rshift(128, band(l, 7))
    local v = byte(block, at)
    if band(v, mask) == 0 then
      block = sub(block, 1, at - 1) .. char(bor(v, mask)) .. sub(block, at + 1)
      if at < lo then lo = at end
      if at > hi then hi = at end
    end
  end
  if hi > 0 then
    call('SETRANGE', key, off + lo - 1, sub(block, lo, hi))
    out[j] = '\1'
  else
    out[j] = '\0'
  end
end
return table.concat(out)
)lua";

class BlockScriptFilter {
 public:
  BlockScriptFilter(RawConnection& connection, const FilterParams& params, const std::string& name)
      : connection_(connection), params_(params) {
    for (std::uint64_t p = 0; p < params.partitions; ++p) {
      keys_.push_back(redbloom::redis::partition_key(name, p, 0));
    }
    sealed_ = std::to_string(params.partition_bytes() + redbloom::redis::seal_bytes(2));
    hashes_ = std::to_string(params.hashes);
    const Reply loaded = connection_.run({"SCRIPT", "LOAD", kBlockScript});
    sha_.assign(loaded->str, loaded->len);
  }

  void add(std::span<const std::string_view> items, std::span<std::uint8_t> newly_added) {
    constexpr std::size_t kUnit = 1024;
    constexpr std::size_t kInFlight = 8;
    struct Unit {
      std::uint64_t partition;
      std::vector<std::uint32_t> order;
    };
    // Units of consecutive items of one partition, as the library groups its BITFIELDs.
    std::vector<std::vector<std::uint32_t>> open(params_.partitions);
    std::vector<Unit> units;
    hashes_of_.resize(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
      const redbloom::ItemHash h = hashes_of_[i] = redbloom::hash_item(items[i]);
      const std::uint64_t p = redbloom::layout::partition_of(h, params_.partitions);
      open[p].push_back(static_cast<std::uint32_t>(i));
      if (open[p].size() == kUnit) units.push_back({p, std::exchange(open[p], {})});
    }
    for (std::uint64_t p = 0; p < params_.partitions; ++p) {
      if (!open[p].empty()) units.push_back({p, std::move(open[p])});
    }
    std::string packed;
    Resp resp;
    for (std::size_t first = 0; first < units.size(); first += kInFlight) {
      const std::size_t last = std::min(units.size(), first + kInFlight);
      resp.clear();
      for (std::size_t u = first; u < last; ++u) {
        packed.clear();
        for (const std::uint32_t i : units[u].order) {
          const redbloom::ItemHash& h = hashes_of_[i];
          const std::uint64_t block = redbloom::layout::blocked_block_of(h, params_.partition_bits);
          for (int shift = 24; shift >= 0; shift -= 8) packed.push_back(char(block >> shift));
          redbloom::layout::blocked_probes_in_block(h, params_.hashes, [&](std::uint64_t bit) {
            packed.push_back(char(bit >> 8));
            packed.push_back(char(bit & 0xff));
          });
        }
        resp.begin(7);
        resp.arg(std::string_view{"EVALSHA"});
        resp.arg(sha_);
        resp.arg(std::string_view{"1"});
        resp.arg(keys_[units[u].partition]);
        resp.arg(sealed_);
        resp.arg(hashes_);
        resp.arg(packed);
      }
      connection_.append(resp);
      for (std::size_t u = first; u < last; ++u) {
        const Reply reply = connection_.read("EVALSHA");
        if (reply->type != REDIS_REPLY_STRING || reply->len != units[u].order.size()) {
          throw std::runtime_error("EVALSHA: not one answer per item");
        }
        for (std::size_t j = 0; j < reply->len; ++j) {
          newly_added[units[u].order[j]] = reply->str[j] != 0 ? 1 : 0;
        }
      }
    }
  }

 private:
  RawConnection& connection_;
  FilterParams params_;
  std::vector<std::string> keys_;
  std::string sealed_, hashes_, sha_;
  std::vector<redbloom::ItemHash> hashes_of_;
};

// ---------------------------------------------------------------------------------------------
// Cases and their results.

enum class Method { hand_written, per_item, bulk, dedup, script };

struct Case {
  char letter;
  Method method;
  Layout layout;
  [[nodiscard]] std::string name() const {
    static const char* const names[] = {"hand-written SETBIT/GETBIT", "redbloom per-item",
                                        "redbloom bulk", "redbloom dedup 50%",
                                        "script per unit (GETRANGE/SETRANGE)"};
    return std::string(1, letter) + " " + names[static_cast<int>(method)] + " " +
           std::string(redbloom::to_string(layout));
  }
};

struct Result {
  Phase insert;
  std::optional<Phase> present, absent;  // none for the dedup stream
  std::uint64_t memory_bytes = 0;        // MEMORY USAGE of the filter's keys
  std::uint64_t false_negatives = 0;     // dedup: repeats reported as new
  std::uint64_t false_positives = 0;     // dedup: first occurrences reported as seen
  std::uint64_t fp_trials = 0;
  redbloom::ItemHash digest{};  // of the bitmap
};

struct Workload {
  std::uint64_t n = 1'000'000;
  double p = 0.01;
  std::uint64_t absent = 100'000;
  std::unique_ptr<Items> present_items, absent_items, dedup_stream;
  std::vector<std::uint8_t> dedup_first;  // 1 at each item's first occurrence in the stream
};

const FilterParams& params_for(Layout layout, const FilterParams& classic,
                               const FilterParams& blocked) {
  return layout == Layout::classic ? classic : blocked;
}

Result run_hand_written(const RedisEndpoint& endpoint, RawConnection& stats,
                        const FilterParams& params, const Workload& w) {
  RawConnection connection(endpoint);
  HandWrittenFilter filter(connection, params, "bench:hand-written");
  for (const std::string& key : filter.keys()) stats.run({"UNLINK", key});
  Result r;
  std::vector<std::uint8_t> flags(std::max(w.n, w.absent));
  const auto present = w.present_items->views();
  const auto absent = w.absent_items->views();
  r.insert = measure(stats, w.n, [&] { filter.add(present, flags); });
  r.present = measure(stats, w.n, [&] { filter.contains(present, flags); });
  r.false_negatives = w.n - std::count(flags.begin(), flags.begin() + w.n, 1);
  r.absent = measure(stats, w.absent, [&] { filter.contains(absent, flags); });
  r.false_positives = std::count(flags.begin(), flags.begin() + w.absent, 1);
  r.fp_trials = w.absent;
  std::vector<std::string> bits;
  for (const std::string& key : filter.keys()) {
    r.memory_bytes += redbloom_bench::memory_usage(stats, key);
    bits.push_back(redbloom_bench::read_seed_partition(stats, key, params));
  }
  r.digest = redbloom_bench::digest_of(bits);
  for (const std::string& key : filter.keys()) stats.run({"UNLINK", key});
  return r;
}

Result run_redbloom(const RedisEndpoint& endpoint, RawConnection& stats, Method method,
                    const FilterParams& params, const Workload& w) {
  const std::string name = "bench:redbloom";
  auto owned = RedisStore::create(endpoint, name, params, /*overwrite=*/true);
  RedisStore& store = *owned;
  store.set_bulk_mode(method == Method::per_item || method == Method::script
                          ? RedisStore::BulkMode::per_item
                          : RedisStore::BulkMode::automatic);
  Filter filter(std::move(owned));
  Result r;
  std::vector<std::uint8_t> flags(std::max(w.n, w.absent));
  if (method == Method::dedup) {
    const auto stream = w.dedup_stream->views();
    r.insert = measure(stats, stream.size(), [&] { filter.add_many(stream, flags); });
    for (std::size_t i = 0; i < stream.size(); ++i) {
      if (w.dedup_first[i] != 0) {
        r.false_positives += flags[i] == 0 ? 1 : 0;
        ++r.fp_trials;
      } else {
        r.false_negatives += flags[i] != 0 ? 1 : 0;
      }
    }
  } else {
    const auto present = w.present_items->views();
    const auto absent = w.absent_items->views();
    if (method == Method::bulk) {
      r.insert = measure(stats, w.n, [&] { filter.load_many(present); });
    } else if (method == Method::script) {
      RawConnection connection(endpoint);
      BlockScriptFilter script(connection, params, name);
      r.insert = measure(stats, w.n, [&] { script.add(present, flags); });
    } else {
      r.insert = measure(stats, w.n, [&] { filter.add_many(present, flags); });
    }
    r.present = measure(stats, w.n, [&] { filter.contains_many(present, flags); });
    r.false_negatives = w.n - std::count(flags.begin(), flags.begin() + w.n, 1);
    r.absent = measure(stats, w.absent, [&] { filter.contains_many(absent, flags); });
    r.false_positives = std::count(flags.begin(), flags.begin() + w.absent, 1);
    r.fp_trials = w.absent;
  }
  r.memory_bytes = store.storage_bytes();
  r.digest = redbloom_bench::digest_of(redbloom_bench::read_partitions(store, params));
  RedisStore::drop(endpoint, name);
  return r;
}

// ---------------------------------------------------------------------------------------------
// Medians and the table.

// A figure with its ratio to case a's: "4.41M (26.4×)".
std::string with_ratio(const std::string& text, double value, double reference) {
  if (std::isnan(reference)) return text;  // case a not run (--only)
  const double ratio = value / reference;
  const int digits = ratio >= 10 ? 0 : ratio >= 0.1 ? 2 : 3;
  return text + " (" + fixed(ratio, digits) + "×)";
}

int usage(const char* message) {
  std::fprintf(stderr,
               "bench_redis: %s\nusage: bench_redis [--uri=redis://HOST:PORT] [--n=1e6] "
               "[--p=0.01] [--reps=3] [--absent=1e5] [--only=SUBSTRING] [--shuffle-seed=N]\n",
               message);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Workload w;
  redbloom_bench::Options options;  // --n and --p default to the workload's
  options.n = w.n;
  options.p = w.p;
  const auto absent = [&](const std::string& key, const std::string& value) {
    if (key != "--absent") return false;
    w.absent = static_cast<std::uint64_t>(redbloom_bench::parse_count(value));
    return true;
  };
  if (const auto stop = redbloom_bench::parse_options(argc, argv, options, absent, usage,
                                                      "Redis filter benchmark")) {
    return *stop;
  }
  w.n = options.n;
  w.p = options.p;
  if (w.n < 2 || options.reps < 1 || w.absent < 1)
    return usage("need --n >= 2, --reps >= 1, --absent >= 1");

  try {
    const RedisEndpoint endpoint = redbloom::redis_endpoint_or_default(options.uri);
    const FilterParams classic = redbloom::size_filter(double(w.n), w.p, Layout::classic);
    const FilterParams blocked = redbloom::size_filter(double(w.n), w.p, Layout::blocked);
    RawConnection stats(endpoint);

    std::vector<Case> cases = {
        {'a', Method::hand_written, Layout::classic}, {'b', Method::per_item, Layout::classic},
        {'b', Method::per_item, Layout::blocked},     {'c', Method::bulk, Layout::classic},
        {'c', Method::bulk, Layout::blocked},         {'d', Method::dedup, Layout::classic},
        {'d', Method::dedup, Layout::blocked},        {'e', Method::script, Layout::blocked},
    };
    std::erase_if(cases,
                  [&](const Case& c) { return c.name().find(options.only) == std::string::npos; });
    if (cases.empty()) return usage("--only matches no case");

    // Workload, built once, outside every timed region.
    w.present_items = std::make_unique<Items>(Items::range(0, w.n));
    w.absent_items = std::make_unique<Items>(Items::range(w.n, w.absent));
    {
      std::vector<std::uint64_t> ids;
      ids.reserve(w.n);
      for (std::uint64_t i = 0; i < w.n; ++i) ids.push_back(i / 2);  // n/2 ids, twice each
      std::mt19937_64 rng(options.shuffle_seed ^ 0xdedu);
      std::shuffle(ids.begin(), ids.end(), rng);
      std::vector<std::uint8_t> seen(w.n / 2 + 1);
      w.dedup_first.resize(ids.size());
      for (std::size_t i = 0; i < ids.size(); ++i) {
        w.dedup_first[i] = seen[ids[i]] == 0 ? 1 : 0;
        seen[ids[i]] = 1;
      }
      w.dedup_stream = std::make_unique<Items>(ids);
    }

    const std::string version = redbloom_bench::server_version(stats);
    std::printf("redis %s at %s, 1 connection per case (+1 reading INFO between phases)\n",
                version.c_str(), endpoint.describe().c_str());
    std::printf("client: %u hardware threads\n", std::thread::hardware_concurrency());
    std::printf(
        "n = %llu items \"s3://bucket/dir/file<i>.pdf\", p = %g, absent lookups = %llu, "
        "reps = %d (medians shown), case order shuffled per rep (seed %llu)\n",
        static_cast<unsigned long long>(w.n), w.p, static_cast<unsigned long long>(w.absent),
        options.reps, static_cast<unsigned long long>(options.shuffle_seed));
    std::printf("classic: %s\nblocked: %s\n\n", redbloom::describe(classic).c_str(),
                redbloom::describe(blocked).c_str());
    std::fflush(stdout);

    std::vector<std::vector<Result>> results(cases.size());
    redbloom_bench::run_shuffled(
        cases.size(), options.reps, options.shuffle_seed, [&](int rep, std::size_t c) {
          const Case& the_case = cases[c];
          const FilterParams& params = params_for(the_case.layout, classic, blocked);
          const Result r = the_case.method == Method::hand_written
                               ? run_hand_written(endpoint, stats, params, w)
                               : run_redbloom(endpoint, stats, the_case.method, params, w);
          std::fprintf(stderr, "rep %d/%d  %-36s insert %8s/s", rep + 1, options.reps,
                       the_case.name().c_str(), rate(r.insert.items_per_second()).c_str());
          if (r.present) {
            std::fprintf(stderr, "  present %8s/s  absent %8s/s",
                         rate(r.present->items_per_second()).c_str(),
                         rate(r.absent->items_per_second()).c_str());
          }
          std::fprintf(stderr, "\n");
          results[c].push_back(r);
        });

    // Checks.
    bool failed = false;
    std::vector<std::string> notes;
    std::map<std::pair<Layout, std::string>, redbloom::ItemHash> digests;  // (layout, items)
    for (std::size_t c = 0; c < cases.size(); ++c) {
      const Case& the_case = cases[c];
      for (const Result& r : results[c]) {
        if (r.false_negatives != 0) {
          failed = true;
          notes.push_back(
              "FAIL: " + the_case.name() + ": " + std::to_string(r.false_negatives) +
              (the_case.method == Method::dedup ? " repeats reported as new" : " false negatives"));
        }
        const auto key = std::make_pair(
            the_case.layout, std::string(the_case.method == Method::dedup ? "dedup" : "n items"));
        const auto [it, inserted] = digests.emplace(key, r.digest);
        if (!inserted && !(it->second == r.digest)) {
          failed = true;
          notes.push_back("FAIL: " + the_case.name() +
                          ": its bitmap differs from another case's with the same layout and "
                          "items");
        }
      }
    }

    // The table.
    const auto hand_at = std::find_if(
        cases.begin(), cases.end(), [](const Case& c) { return c.method == Method::hand_written; });
    const std::vector<Result>* hand =
        hand_at == cases.end() ? nullptr : &results[std::size_t(hand_at - cases.begin())];
    auto hand_median = [&](auto get) { return hand != nullptr ? median_of(*hand, get) : NAN; };
    const double hand_insert_rate =
        hand_median([](const Result& r) { return r.insert.items_per_second(); });
    const double seed_present_rate =
        hand_median([](const Result& r) { return r.present->items_per_second(); });
    const double seed_absent_rate =
        hand_median([](const Result& r) { return r.absent->items_per_second(); });
    const double seed_insert_cpu =
        hand_median([](const Result& r) { return r.insert.server_us(); });
    const double seed_present_cpu =
        hand_median([](const Result& r) { return r.present->server_us(); });
    const double seed_absent_cpu =
        hand_median([](const Result& r) { return r.absent->server_us(); });

    std::printf(
        "| case | k | insert items/s (× a) | present lookups/s (× a) | absent lookups/s (× a) | "
        "wall s insert / present / absent | server CPU µs/item insert (× a) | "
        "present (× a) | absent (× a) | MEMORY USAGE | bits/item | false neg. | FPR measured "
        "(expected) |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (std::size_t c = 0; c < cases.size(); ++c) {
      const Case& the_case = cases[c];
      const std::vector<Result>& runs = results[c];
      const FilterParams& params = params_for(the_case.layout, classic, blocked);
      const bool lookups = runs.front().present.has_value();
      const double insert_rate =
          median_of(runs, [](const Result& r) { return r.insert.items_per_second(); });
      const double insert_cpu =
          median_of(runs, [](const Result& r) { return r.insert.server_us(); });
      const double insert_s = median_of(runs, [](const Result& r) { return r.insert.seconds; });
      std::string present_cell = "—", absent_cell = "—", present_cpu_cell = "—",
                  absent_cpu_cell = "—", wall = fixed(insert_s, 3) + " / — / —";
      if (lookups) {
        const double pr =
            median_of(runs, [](const Result& r) { return r.present->items_per_second(); });
        const double ar =
            median_of(runs, [](const Result& r) { return r.absent->items_per_second(); });
        const double pc = median_of(runs, [](const Result& r) { return r.present->server_us(); });
        const double ac = median_of(runs, [](const Result& r) { return r.absent->server_us(); });
        present_cell = with_ratio(rate(pr), pr, seed_present_rate);
        absent_cell = with_ratio(rate(ar), ar, seed_absent_rate);
        present_cpu_cell = with_ratio(fixed(pc, 3), pc, seed_present_cpu);
        absent_cpu_cell = with_ratio(fixed(ac, 3), ac, seed_absent_cpu);
        wall = fixed(insert_s, 3) + " / " +
               fixed(median_of(runs, [](const Result& r) { return r.present->seconds; }), 3) +
               " / " + fixed(median_of(runs, [](const Result& r) { return r.absent->seconds; }), 3);
      }
      const double memory = median_of(runs, [](const Result& r) { return double(r.memory_bytes); });
      std::uint64_t false_negatives = 0, false_positives = 0, trials = 0;
      for (const Result& r : runs) {
        false_negatives += r.false_negatives;
        false_positives += r.false_positives;
        trials += r.fp_trials;
      }
      // A dedup stream's j-th distinct item meets a filter holding j - 1 items: its expected
      // rate is the mean of the rate over 0..n/2 items (midpoint rule).
      double expected = 0;
      if (the_case.method == Method::dedup) {
        constexpr int kSteps = 1000;
        for (int i = 0; i < kSteps; ++i) {
          expected +=
              redbloom::expected_false_positive_rate(params, (i + 0.5) / kSteps * double(w.n / 2)) /
              kSteps;
        }
      } else {
        expected = redbloom::expected_false_positive_rate(params, double(w.n));
      }
      const double measured = double(false_positives) / double(trials);
      std::printf(
          "| %s | %u | %s | %s | %s | %s | %s | %s | %s | %.0f (%s) | %.2f | %llu | %.4f%% "
          "(%.4f%%) |\n",
          the_case.name().c_str(), params.hashes,
          with_ratio(rate(insert_rate), insert_rate, hand_insert_rate).c_str(),
          present_cell.c_str(), absent_cell.c_str(), wall.c_str(),
          with_ratio(fixed(insert_cpu, 3), insert_cpu, seed_insert_cpu).c_str(),
          present_cpu_cell.c_str(), absent_cpu_cell.c_str(), memory,
          redbloom::format_bytes(memory).c_str(), 8 * memory / double(w.n),
          static_cast<unsigned long long>(false_negatives), 100 * measured, 100 * expected);
      // Binomial noise: flag a rate more than 4 standard deviations (and 10%) off.
      const double sigma = std::sqrt(expected * (1 - expected) / double(trials));
      if (std::abs(measured - expected) > std::max(4 * sigma, 0.1 * expected)) {
        notes.push_back("WARNING: " + the_case.name() + ": measured FPR " +
                        fixed(100 * measured, 3) + "% is off the expected " +
                        fixed(100 * expected, 3) + "% (" + std::to_string(trials) + " trials)");
      }
      // Did the paths run that the case is about?
      const Result& last = runs.back();
      const auto calls = [](const Phase& phase, const char* name) {
        const auto it = phase.commands.find(name);
        return it == phase.commands.end() ? std::uint64_t{0} : it->second;
      };
      if (the_case.method == Method::bulk) {
        if (calls(last.insert, "bitop") == 0 || calls(last.insert, "bitfield") != 0) {
          notes.push_back("WARNING: " + the_case.name() +
                          ": load_many did not take the BITOP OR path");
        }
        for (const Phase* phase : {&*last.present, &*last.absent}) {
          if (calls(*phase, "bitfield_ro") != 0 || calls(*phase, "getrange") * 100 > phase->items) {
            notes.push_back("WARNING: " + the_case.name() +
                            ": contains_many did not download partitions");
          }
        }
      }
    }

    std::printf(
        "\nRatios (× a) are this row's median over case a's: for items/s higher is better, for "
        "server CPU lower is better. Server CPU is used_cpu_user + used_cpu_sys of the whole "
        "redis-server process (INFO cpu) over the phase, per item. MEMORY USAGE is of the "
        "filter's keys (redbloom: partitions + metadata hash), bits/item = 8 × MEMORY USAGE / n. "
        "Dedup rows: the stream has n items, n/2 distinct; \"false neg.\" counts repeats "
        "reported as new, \"FPR\" distinct items reported as repeats (expected: the mean over "
        "the stream). false neg. and FPR add up all %d reps.\n",
        options.reps);
    std::printf("\nCommands the server ran in the last rep, per phase (INFO commandstats):\n");
    for (std::size_t c = 0; c < cases.size(); ++c) {
      const Result& last = results[c].back();
      std::printf("- %s: insert: %s", cases[c].name().c_str(),
                  join_commands(last.insert.commands).c_str());
      if (last.present) {
        std::printf("; present: %s; absent: %s", join_commands(last.present->commands).c_str(),
                    join_commands(last.absent->commands).c_str());
      }
      std::printf("\n");
    }
    std::printf(
        "\nChecks: every filter of one layout built from the n items holds the same bits "
        "(XXH3 of the bitmaps compared), whatever path built it; no false negatives.\n");
    for (const std::string& note : notes) std::printf("%s\n", note.c_str());
    if (!failed) std::printf("all checks passed\n");
    return failed ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_redis: %s\n", e.what());
    return 1;
  }
}
