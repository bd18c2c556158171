// What bench_redis and bench_diff share: the workload's items, a plain hiredis connection (for
// the hand-written method and for reading the server), its SETBIT/GETBIT probes, bitmap
// digests, shuffled repetitions, medians and the table's number formats.
#pragma once

#include <hiredis/hiredis.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "redbloom/hash.hpp"
#include "redbloom/params.hpp"
#include "redbloom/redis_endpoint.hpp"
#include "redbloom/store.hpp"

namespace redbloom_bench {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start);

// The hand-written method pipelines this many items per round trip (a common batch default).
inline constexpr std::size_t kSeedRoundItems = 1000;

// ---------------------------------------------------------------------------------------------
// Items "s3://bucket/dir/file<id>.pdf": one buffer of text and views into it.

class Items {
 public:
  explicit Items(const std::vector<std::uint64_t>& ids);
  static Items range(std::uint64_t first, std::uint64_t count);
  [[nodiscard]] std::span<const std::string_view> views() const { return views_; }
  [[nodiscard]] std::size_t size() const { return views_.size(); }

 private:
  std::string text_;
  std::vector<std::string_view> views_;
};

// ---------------------------------------------------------------------------------------------
// A plain hiredis connection: the hand-written method's, and the one that reads the server.

struct ReplyDeleter {
  void operator()(redisReply* reply) const noexcept { freeReplyObject(reply); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

// RESP arrays of bulk strings, written straight into one buffer (a pipelining client sends a
// round in one write; formatting must not be what these benchmarks measure).
class Resp {
 public:
  void begin(std::size_t arguments) {
    put("*", 1);
    number(arguments);
  }
  void arg(std::string_view value) {
    put("$", 1);
    number(value.size());
    put(value.data(), value.size());
    put("\r\n", 2);
  }
  void arg(std::uint64_t value);
  [[nodiscard]] std::string_view text() const { return {text_.data(), text_.size()}; }
  [[nodiscard]] bool empty() const { return text_.empty(); }
  void clear() { text_.clear(); }

 private:
  void number(std::uint64_t value);
  // A vector, not std::string: GCC 12 at -O3 reports false -Wrestrict on std::string appends.
  void put(const char* data, std::size_t size) { text_.insert(text_.end(), data, data + size); }
  std::vector<char> text_;
};

class RawConnection {
 public:
  explicit RawConnection(const redbloom::RedisEndpoint& endpoint);
  ~RawConnection();
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  // One command; an error reply throws.
  Reply run(std::initializer_list<std::string_view> args);
  // Queues RESP text (sent with the first read).
  void append(const Resp& commands);
  Reply read(std::string_view operation);
  std::int64_t read_integer(std::string_view operation);

 private:
  [[noreturn]] void fail(std::string_view operation, const std::string& what) const;
  std::string where_;
  redisContext* context_ = nullptr;
};

// MEMORY USAGE key SAMPLES 0 (0 for a missing key).
std::uint64_t memory_usage(RawConnection& raw, const std::string& key);

// redis_version from INFO server ("?" if it has none).
std::string server_version(RawConnection& raw);

// ---------------------------------------------------------------------------------------------
// The hand-written filter: k `SETBIT key bit 1` (or `GETBIT key bit`) per item, one key per
// partition, at redbloom's classic bit positions (so the same bits as redbloom's classic filter).

// Appends the k probes of `item` to `resp`; `keys` holds one key per partition.
void push_seed_probes(Resp& resp, const redbloom::FilterParams& params,
                      const std::vector<std::string>& keys, std::string_view item, bool set);

// The bits of a hand-written filter's key, padded to the partition's length (a SETBIT key ends at
// its highest 1).
std::string read_seed_partition(RawConnection& raw, const std::string& key,
                                const redbloom::FilterParams& params);

// Every partition of a redbloom store, read whole.
std::vector<std::string> read_partitions(const redbloom::Store& store,
                                         const redbloom::FilterParams& params);

// XXH3-128 of the bitmap (the partitions in order).
redbloom::ItemHash digest_of(const std::vector<std::string>& partitions);

// ---------------------------------------------------------------------------------------------
// Repetitions, medians and the table.

// Runs run(rep, case) for every case `reps` times, the cases of each repetition in a random
// order (std::mt19937_64 seeded with `shuffle_seed`), so a slow spell of a shared machine
// spreads over all cases.
template <class Run>
void run_shuffled(std::size_t cases, int reps, std::uint64_t shuffle_seed, Run&& run) {
  std::vector<std::size_t> order(cases);
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::mt19937_64 rng(shuffle_seed);
  for (int rep = 0; rep < reps; ++rep) {
    std::shuffle(order.begin(), order.end(), rng);
    for (std::size_t c : order) run(rep, c);
  }
}

double median(std::vector<double> values);

template <class Result, class Get>
double median_of(const std::vector<Result>& runs, Get&& get) {
  std::vector<double> values;
  for (const Result& r : runs) values.push_back(double(get(r)));
  return median(values);
}

// "4.41M", "312k".
std::string rate(double per_second);
// printf "%.*f".
std::string fixed(double value, int digits);

// A count such as "2e6" or "1000": throws std::invalid_argument unless all of it is a number
// >= 0.
double parse_count(const std::string& text);

// The options both benchmarks take.
struct Options {
  std::string uri;                 // --uri
  std::uint64_t n = 0;             // --n (a count)
  double p = 0.01;                 // --p
  int reps = 3;                    // --reps (a count)
  std::string only;                // --only
  std::uint64_t shuffle_seed = 1;  // --shuffle-seed (a count)
};

// Reads argv's "--key=value" arguments into `options`; a key not among them goes to
// extra(key, value), which returns false for a key it does not know either (and may throw on a
// bad number). Returns the exit code when main should stop: 0 after usage(help) for --help or
// -h, usage's for an unknown argument or a bad number.
std::optional<int> parse_options(
    int argc, char** argv, Options& options,
    const std::function<bool(const std::string& key, const std::string& value)>& extra,
    int (*usage)(const char* message), const char* help);

// ---------------------------------------------------------------------------------------------
// One timed phase: wall time, the server's CPU (INFO cpu), this process's CPU (getrusage) and
// the commands the server ran (INFO commandstats), read before and after the work.

struct ServerCounters {
  double cpu_seconds = 0;                      // used_cpu_user + used_cpu_sys
  std::map<std::string, std::uint64_t> calls;  // per command, from INFO commandstats
};
ServerCounters read_counters(RawConnection& stats);
double client_cpu_seconds();

struct Phase {
  std::uint64_t items = 0;
  double seconds = 0;
  double server_cpu = 0;
  double client_cpu = 0;
  std::map<std::string, std::uint64_t> commands;  // calls during the phase (INFO excluded)

  [[nodiscard]] double items_per_second() const { return double(items) / seconds; }
  [[nodiscard]] double server_us() const { return 1e6 * server_cpu / double(items); }
  [[nodiscard]] double client_us() const { return 1e6 * client_cpu / double(items); }
};

// The phase's figures from the counters read around it.
Phase phase_between(const ServerCounters& before, const ServerCounters& after, double client_cpu,
                    double seconds, std::uint64_t items);

// "BITFIELD ×12, STRLEN ×24": the commands a phase ran, for the tables.
std::string join_commands(const std::map<std::string, std::uint64_t>& commands);

template <class Work>
Phase measure(RawConnection& stats, std::uint64_t items, Work&& work) {
  const ServerCounters before = read_counters(stats);
  const double client_before = client_cpu_seconds();
  const auto start = Clock::now();
  work();
  const double seconds = seconds_since(start);
  const double client_cpu = client_cpu_seconds() - client_before;
  return phase_between(before, read_counters(stats), client_cpu, seconds, items);
}

}  // namespace redbloom_bench
