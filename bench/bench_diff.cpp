// Seed 000's job, end to end: build a set of known S3 URLs, then find the orphans among the
// URLs a vector DB references (the checked URLs the known set does not hold). redbloom's
// KnownSet against the seed's own algorithm, side by side, at the seed's scale by default:
//
//   known   = "s3://bucket/dir/file<i>.pdf", i in [0, n)            (n = 2M)
//   checked = "s3://bucket/dir/file<i>.pdf", i in [n/2, n/2 + n)     (half present, half orphans)
//
// Cases (one Bloom filter sized by size_filter(n, p, classic) in all of them, p = 1%):
//   1  file bloom-only   KnownSet::create_file(exact=false) + add; check Mode::bloom_only
//   2  file exact        KnownSet::create_file(exact=true)  + add; check Mode::exact
//   3  redis bloom-only  KnownSet::create_redis(exact=false) ...
//   4  redis exact       KnownSet::create_redis(exact=true) ...
//   5  seed              the seed's algorithm on the same redis-server, written here on hiredis:
//                        per item k `SETBIT bloom off 1` and `SADD urls <url>`, pipelined 1000
//                        items per round trip; check: k GETBIT per item (pipelined, 1000 items
//                        per round trip), then SISMEMBER (pipelined) for the items the Bloom
//                        filter calls present. Same m and k as redbloom, and redbloom's classic
//                        bit positions (so the same bits).
//
// Phases: "build" is create + add + flush (fsync for the files); "check" opens the known set
// again (as `redbloom diff [--exact]` does: for the file exact set that reads and sorts every
// fingerprint) and runs missing_batch in the CLI's batch size (cli/stream.hpp). The seed needs
// no open. Memory: file sizes; for Redis, MEMORY USAGE ... SAMPLES 0 of every key of the case
// (found with SCAN), split into the Bloom filter's keys and the exact companion's (cross-checked
// against KnownSet::stats()). Counts against the truth: orphans found, orphans missed, known
// items wrongly reported as orphans.
//
// Every case runs --reps times, the cases of one repetition in a random order; the table shows
// medians (each figure on its own; counts: the worst repetition).
//
//   bench_diff [--uri=redis://127.0.0.1:6379] [--dir=$TMPDIR] [--n=2e6] [--p=0.01] [--reps=3]
//              [--only=SUBSTRING] [--shuffle-seed=N]
// Exits 1 if a check fails (an exact case missed an orphan, a known item reported as orphan,
// filters whose bits differ), 2 on bad arguments.
#include <hiredis/hiredis.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "redbloom/error.hpp"
#include "redbloom/exact_set.hpp"
#include "redbloom/filter.hpp"
#include "redbloom/hash.hpp"
#include "redbloom/known_set.hpp"
#include "redbloom/layout.hpp"
#include "redbloom/params.hpp"
#include "redbloom/redis_endpoint.hpp"
#include "redbloom/redis_store.hpp"
#include "redbloom/sizing.hpp"

namespace {

using redbloom::FilterParams;
using redbloom::KnownSet;
using redbloom::Layout;
using redbloom::RedisEndpoint;
using Clock = std::chrono::steady_clock;

// The seed pipelines this many items per round trip (its add_urls_batch default).
constexpr std::size_t kSeedRoundItems = 1000;
// `redbloom diff`'s batch (cli/stream.hpp: max(kStreamBatch, store batch_items())).
constexpr std::size_t kCliStreamBatch = 4096;

const std::string kRedisName = "bench:diff:rb";
const std::string kSeedPrefix = "bench:diff:seed";

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// ---------------------------------------------------------------------------------------------
// Items: one buffer of text and views into it.

class Items {
 public:
  static Items range(std::uint64_t first, std::uint64_t count) {
    Items items;
    std::vector<std::size_t> ends;
    ends.reserve(count);
    items.text_.reserve(count * 32);
    for (std::uint64_t id = first; id < first + count; ++id) {
      items.text_ += "s3://bucket/dir/file";
      items.text_ += std::to_string(id);
      items.text_ += ".pdf";
      ends.push_back(items.text_.size());
    }
    items.views_.reserve(count);
    std::size_t begin = 0;
    for (std::size_t end : ends) {
      items.views_.emplace_back(items.text_.data() + begin, end - begin);
      begin = end;
    }
    return items;
  }
  [[nodiscard]] std::span<const std::string_view> views() const { return views_; }
  [[nodiscard]] std::size_t size() const { return views_.size(); }

 private:
  std::string text_;
  std::vector<std::string_view> views_;
};

// ---------------------------------------------------------------------------------------------
// A plain hiredis connection: the seed's, and the one that reads memory and cleans up.

struct ReplyDeleter {
  void operator()(redisReply* reply) const noexcept { freeReplyObject(reply); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

timeval to_timeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<decltype(tv.tv_sec)>(ms.count() / 1000);
  tv.tv_usec = static_cast<decltype(tv.tv_usec)>((ms.count() % 1000) * 1000);
  return tv;
}

// RESP arrays of bulk strings, written straight into one buffer (a pipelining client sends a
// round in one write; formatting must not be what this benchmark measures).
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
  void arg(std::uint64_t value) {
    char digits[24];
    const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
    arg(std::string_view(digits, static_cast<std::size_t>(end - digits)));
  }
  [[nodiscard]] std::string_view text() const { return {text_.data(), text_.size()}; }
  [[nodiscard]] bool empty() const { return text_.empty(); }
  void clear() { text_.clear(); }

 private:
  void number(std::uint64_t value) {
    char digits[24];
    const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
    put(digits, static_cast<std::size_t>(end - digits));
    put("\r\n", 2);
  }
  void put(const char* data, std::size_t size) { text_.insert(text_.end(), data, data + size); }
  std::vector<char> text_;
};

class RawConnection {
 public:
  explicit RawConnection(const RedisEndpoint& endpoint) : where_(endpoint.describe()) {
    const timeval connect = to_timeval(endpoint.connect_timeout);
    context_ = endpoint.unix_path.empty()
                   ? redisConnectWithTimeout(endpoint.host.c_str(), endpoint.port, connect)
                   : redisConnectUnixWithTimeout(endpoint.unix_path.c_str(), connect);
    if (context_ == nullptr || context_->err != 0) {
      const std::string what = context_ != nullptr ? context_->errstr : "out of memory";
      if (context_ != nullptr) redisFree(context_);
      throw std::runtime_error("cannot connect to redis " + where_ + ": " + what);
    }
    redisSetTimeout(context_, to_timeval(endpoint.command_timeout));
    if (!endpoint.password.empty()) {
      if (endpoint.user.empty()) {
        run({"AUTH", endpoint.password});
      } else {
        run({"AUTH", endpoint.user, endpoint.password});
      }
    }
    if (endpoint.db != 0) run({"SELECT", std::to_string(endpoint.db)});
  }
  ~RawConnection() { redisFree(context_); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  // One command; an error reply throws.
  Reply run(std::initializer_list<std::string_view> args) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lengths;
    for (std::string_view a : args) {
      argv.push_back(a.data());
      lengths.push_back(a.size());
    }
    Reply reply(static_cast<redisReply*>(
        redisCommandArgv(context_, static_cast<int>(argv.size()), argv.data(), lengths.data())));
    if (!reply) fail(*args.begin(), context_->errstr);
    if (reply->type == REDIS_REPLY_ERROR) fail(*args.begin(), std::string(reply->str, reply->len));
    return reply;
  }
  // Queues RESP text (sent with the first read).
  void append(const Resp& commands) {
    if (redisAppendFormattedCommand(context_, commands.text().data(), commands.text().size()) !=
        REDIS_OK) {
      fail("append", context_->errstr);
    }
  }
  Reply read(std::string_view operation) {
    void* raw = nullptr;
    if (redisGetReply(context_, &raw) != REDIS_OK) fail(operation, context_->errstr);
    Reply reply(static_cast<redisReply*>(raw));
    if (reply->type == REDIS_REPLY_ERROR) fail(operation, std::string(reply->str, reply->len));
    return reply;
  }
  std::int64_t read_integer(std::string_view operation) {
    Reply reply = read(operation);
    if (reply->type != REDIS_REPLY_INTEGER) fail(operation, "not an integer reply");
    return reply->integer;
  }

 private:
  [[noreturn]] void fail(std::string_view operation, const std::string& what) const {
    throw std::runtime_error("redis " + where_ + ": " + std::string(operation) + ": " + what);
  }
  std::string where_;
  redisContext* context_ = nullptr;
};

std::uint64_t memory_usage(RawConnection& raw, const std::string& key) {
  Reply reply = raw.run({"MEMORY", "USAGE", key, "SAMPLES", "0"});
  return reply->type == REDIS_REPLY_INTEGER ? static_cast<std::uint64_t>(reply->integer) : 0;
}

// Every key matching `pattern` (SCAN; the server holds only this benchmark's keys).
std::vector<std::string> scan_keys(RawConnection& raw, const std::string& pattern) {
  std::vector<std::string> keys;
  std::string cursor = "0";
  do {
    Reply reply = raw.run({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"});
    cursor.assign(reply->element[0]->str, reply->element[0]->len);
    const redisReply* batch = reply->element[1];
    for (std::size_t i = 0; i < batch->elements; ++i) {
      keys.emplace_back(batch->element[i]->str, batch->element[i]->len);
    }
  } while (cursor != "0");
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

std::uint64_t dbsize(RawConnection& raw) {
  return static_cast<std::uint64_t>(raw.run({"DBSIZE"})->integer);
}

// ---------------------------------------------------------------------------------------------
// Cases and results.

enum class Case { file_bloom, file_exact, redis_bloom, redis_exact, seed };

std::string case_name(Case c) {
  switch (c) {
    case Case::file_bloom:
      return "1 redbloom file, Bloom-only";
    case Case::file_exact:
      return "2 redbloom file, exact";
    case Case::redis_bloom:
      return "3 redbloom redis, Bloom-only";
    case Case::redis_exact:
      return "4 redbloom redis, exact";
    case Case::seed:
      return "5 seed: SETBIT+SADD / GETBIT+SISMEMBER";
  }
  return "?";
}

bool is_exact(Case c) {
  return c == Case::file_exact || c == Case::redis_exact || c == Case::seed;
}

struct Result {
  double build_seconds = 0;
  double check_seconds = 0;
  std::uint64_t bloom_bytes = 0;
  std::uint64_t exact_bytes = 0;
  std::uint64_t found = 0;     // reported orphans that are orphans
  std::uint64_t missed = 0;    // orphans not reported
  std::uint64_t wrong = 0;     // known items reported as orphans
  std::uint64_t verified = 0;  // checked against the exact companion
  std::uint64_t false_positives_caught = 0;
  double estimated_rate = 0;           // the filter's rate, estimated from its fill
  double false_match_probability = 0;  // per exact query (0 for the exact SET)
  std::uint64_t batch = 0;             // check batch
  redbloom::ItemHash digest{};         // of the Bloom filter's bits
  std::vector<std::string> notes;      // warnings
};

struct Workload {
  std::uint64_t n = 2'000'000;
  double p = 0.01;
  std::uint64_t first_checked = 0;  // n / 2
  std::uint64_t orphans = 0;        // checked ids >= n
  std::unique_ptr<Items> known, checked;
};

// Compares the flags with the truth: checked item j is id first_checked + j, an orphan iff
// id >= n.
void count_answers(const Workload& w, std::span<const std::uint8_t> missing, Result& r) {
  for (std::size_t j = 0; j < missing.size(); ++j) {
    const bool orphan = w.first_checked + j >= w.n;
    if (orphan) {
      (missing[j] ? r.found : r.missed) += 1;
    } else if (missing[j]) {
      ++r.wrong;
    }
  }
}

redbloom::ItemHash digest_of(const std::vector<std::string>& partitions) {
  std::string all;
  for (const std::string& bits : partitions) all += bits;
  return redbloom::hash_item(all);
}

// ---------------------------------------------------------------------------------------------
// Cases 1-4: redbloom's KnownSet.

// `raw` is null when no case needs Redis.
Result run_redbloom(Case c, const Workload& w, const FilterParams& params,
                    const RedisEndpoint& endpoint, RawConnection* raw, const std::string& dir) {
  const bool redis = c == Case::redis_bloom || c == Case::redis_exact;
  const bool exact = c == Case::file_exact || c == Case::redis_exact;
  const auto mode = exact ? KnownSet::Mode::exact : KnownSet::Mode::bloom_only;
  const std::string path = dir + "/bench-diff.rbf";
  const std::string exact_path = path + ".exact";
  Result r;

  // Build: create, add every known item, flush (fsync for the files).
  auto start = Clock::now();
  {
    KnownSet known = redis ? KnownSet::create_redis(endpoint, kRedisName, params, exact,
                                                    /*overwrite=*/true)
                           : KnownSet::create_file(path, params, exact, /*overwrite=*/true);
    known.add(w.known->views());
    known.flush();
  }
  r.build_seconds = seconds_since(start);

  // Check: open as `redbloom diff` does, missing_batch in its batch size.
  std::vector<std::uint8_t> missing(w.checked->size());
  start = Clock::now();
  KnownSet known =
      redis ? KnownSet::open_redis(endpoint, kRedisName, exact) : KnownSet::open_file(path, exact);
  const std::size_t batch = std::max(kCliStreamBatch, known.filter().store().batch_items());
  const auto checked = w.checked->views();
  for (std::size_t first = 0; first < checked.size(); first += batch) {
    const std::size_t count = std::min(batch, checked.size() - first);
    known.missing_batch(checked.subspan(first, count), std::span(missing).subspan(first, count),
                        mode);
  }
  r.check_seconds = seconds_since(start);
  r.batch = batch;
  count_answers(w, missing, r);

  const KnownSet::Stats stats = known.stats();
  r.verified = stats.verified;
  r.false_positives_caught = stats.false_positives;
  r.estimated_rate = stats.filter.estimated_error_rate;
  r.false_match_probability = stats.false_match_probability;
  if (stats.missing != r.found + r.wrong) {
    r.notes.push_back("stats().missing = " + std::to_string(stats.missing) + " but " +
                      std::to_string(r.found + r.wrong) + " items were reported missing");
  }

  // Memory, measured here and compared with what the library reports.
  if (redis) {
    for (const std::string& key : scan_keys(*raw, kRedisName + "*")) {
      const std::uint64_t bytes = memory_usage(*raw, key);
      const bool companion = key.starts_with(kRedisName + ":exact");
      (companion ? r.exact_bytes : r.bloom_bytes) += bytes;
      if (key.starts_with(kRedisName + ":tmp:")) {
        r.notes.push_back("temp key " + key + " left behind after the build");
      }
    }
  } else {
    r.bloom_bytes = std::filesystem::file_size(path);
    if (exact) r.exact_bytes = std::filesystem::file_size(exact_path);
  }
  if (stats.filter.storage_bytes != r.bloom_bytes) {
    r.notes.push_back(
        "stats().filter.storage_bytes = " + std::to_string(stats.filter.storage_bytes) +
        ", measured " + std::to_string(r.bloom_bytes));
  }
  if (stats.exact_bytes != r.exact_bytes) {
    r.notes.push_back("stats().exact_bytes = " + std::to_string(stats.exact_bytes) + ", measured " +
                      std::to_string(r.exact_bytes));
  }
  if (exact && stats.exact_entries != w.n) {
    r.notes.push_back("exact set holds " + std::to_string(stats.exact_entries) + " entries, not " +
                      std::to_string(w.n));
  }

  // The bits, for the cross-case check.
  std::vector<std::string> bits;
  for (std::uint64_t p = 0; p < params.partitions; ++p) {
    std::string partition(params.partition_bytes(), '\0');
    known.filter().store().read_bytes(
        p, 0, {reinterpret_cast<std::uint8_t*>(partition.data()), partition.size()});
    bits.push_back(std::move(partition));
  }
  r.digest = digest_of(bits);

  // Clean up.
  { KnownSet closing = std::move(known); }
  if (redis) {
    redbloom::RedisStore::drop(endpoint, kRedisName);
    if (exact) redbloom::drop_redis_exact_set(endpoint, kRedisName);
  } else {
    std::filesystem::remove(path);
    std::filesystem::remove(exact_path);
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// Case 5: the seed's algorithm (redis_bloom_filter.py, RedisBloomFilter), pipelined.

Result run_seed(const Workload& w, const FilterParams& params, const RedisEndpoint& endpoint,
                RawConnection& raw) {
  std::vector<std::string> bloom_keys;
  for (std::uint64_t p = 0; p < params.partitions; ++p) {
    // The seed has one key; a filter too large for one Redis string (> 2^32 bits) gets one per
    // partition, as redbloom splits it.
    bloom_keys.push_back(kSeedPrefix + ":bloom" +
                         (params.partitions > 1 ? ":" + std::to_string(p) : std::string()));
  }
  const std::string set_key = kSeedPrefix + ":urls";
  auto delete_keys = [&] {
    // DEL, not UNLINK: the 2M-member set is freed now, not by a background thread while the
    // next case runs.
    for (const std::string& key : bloom_keys) raw.run({"DEL", key});
    raw.run({"DEL", set_key});
  };
  delete_keys();

  RawConnection connection(endpoint);
  const std::uint32_t k = params.hashes;
  auto push_probes = [&](Resp& resp, std::string_view item, bool set) {
    const redbloom::ItemHash h = redbloom::hash_item(item);
    const std::string& key = bloom_keys[redbloom::layout::partition_of(h, params.partitions)];
    redbloom::layout::classic_probes(h, params.partition_bits, k, [&](std::uint64_t bit) {
      resp.begin(set ? 4 : 3);
      resp.arg(set ? std::string_view{"SETBIT"} : std::string_view{"GETBIT"});
      resp.arg(key);
      resp.arg(bit);
      if (set) resp.arg(std::string_view{"1"});
    });
  };
  Result r;
  Resp resp;

  // Build: per item k SETBIT and one SADD, 1000 items per round trip.
  const auto known = w.known->views();
  auto start = Clock::now();
  for (std::size_t first = 0; first < known.size(); first += kSeedRoundItems) {
    const std::size_t last = std::min(known.size(), first + kSeedRoundItems);
    resp.clear();
    for (std::size_t i = first; i < last; ++i) {
      push_probes(resp, known[i], /*set=*/true);
      resp.begin(3);
      resp.arg(std::string_view{"SADD"});
      resp.arg(set_key);
      resp.arg(known[i]);
    }
    connection.append(resp);
    for (std::size_t i = first; i < last; ++i) {
      for (std::uint32_t j = 0; j < k; ++j) connection.read_integer("SETBIT");
      connection.read_integer("SADD");
    }
  }
  r.build_seconds = seconds_since(start);

  // Check: k GETBIT per item, then SISMEMBER for the items the filter calls present; 1000 items
  // per round trip.
  const auto checked = w.checked->views();
  std::vector<std::uint8_t> missing(checked.size());
  std::vector<std::size_t> candidates;
  candidates.reserve(kSeedRoundItems);
  start = Clock::now();
  for (std::size_t first = 0; first < checked.size(); first += kSeedRoundItems) {
    const std::size_t last = std::min(checked.size(), first + kSeedRoundItems);
    resp.clear();
    for (std::size_t i = first; i < last; ++i) push_probes(resp, checked[i], /*set=*/false);
    connection.append(resp);
    candidates.clear();
    for (std::size_t i = first; i < last; ++i) {
      bool all_ones = true;
      for (std::uint32_t j = 0; j < k; ++j) all_ones &= connection.read_integer("GETBIT") == 1;
      missing[i] = all_ones ? 0 : 1;
      if (all_ones) candidates.push_back(i);
    }
    if (candidates.empty()) continue;
    resp.clear();
    for (std::size_t i : candidates) {
      resp.begin(3);
      resp.arg(std::string_view{"SISMEMBER"});
      resp.arg(set_key);
      resp.arg(checked[i]);
    }
    connection.append(resp);
    for (std::size_t i : candidates) {
      if (connection.read_integer("SISMEMBER") == 0) {
        missing[i] = 1;
        ++r.false_positives_caught;
      }
    }
    r.verified += candidates.size();
  }
  r.check_seconds = seconds_since(start);
  r.batch = kSeedRoundItems;
  count_answers(w, missing, r);

  // Memory, the Bloom filter's fill and bits.
  std::uint64_t ones = 0;
  std::vector<std::string> bits;
  for (const std::string& key : bloom_keys) {
    r.bloom_bytes += memory_usage(raw, key);
    ones += static_cast<std::uint64_t>(raw.run({"BITCOUNT", key})->integer);
    Reply value = raw.run({"GET", key});
    std::string partition =
        value->type == REDIS_REPLY_STRING ? std::string(value->str, value->len) : std::string();
    partition.resize(params.partition_bytes(), '\0');  // a SETBIT key ends at its highest 1
    bits.push_back(std::move(partition));
  }
  r.exact_bytes = memory_usage(raw, set_key);
  const std::uint64_t members = static_cast<std::uint64_t>(raw.run({"SCARD", set_key})->integer);
  if (members != w.n) {
    r.notes.push_back("the SET holds " + std::to_string(members) + " members, not " +
                      std::to_string(w.n));
  }
  const double estimated = redbloom::classic_estimated_items(double(params.total_bits()),
                                                             double(params.hashes), double(ones));
  r.estimated_rate = redbloom::expected_false_positive_rate(params, estimated);
  r.false_match_probability = 0;  // SISMEMBER compares whole URLs
  r.digest = digest_of(bits);
  delete_keys();
  return r;
}

// ---------------------------------------------------------------------------------------------
// Medians and the table.

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

template <class Get>
double median_of(const std::vector<Result>& runs, Get&& get) {
  std::vector<double> values;
  for (const Result& r : runs) values.push_back(double(get(r)));
  return median(values);
}

template <class Get>
std::uint64_t worst_of(const std::vector<Result>& runs, Get&& get) {
  std::uint64_t worst = 0;
  for (const Result& r : runs) worst = std::max<std::uint64_t>(worst, get(r));
  return worst;
}

std::string rate(double per_second) {
  char buf[32];
  if (per_second >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.2fM", per_second / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.0fk", per_second / 1e3);
  }
  return buf;
}

std::string fixed(double value, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, value);
  return buf;
}

std::string general(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2g", value);
  return buf;
}

// "18.3 MiB (9.59 B/item)".
std::string bytes_cell(double bytes, std::uint64_t items) {
  if (bytes == 0) return "—";
  return redbloom::format_bytes(bytes) + " (" + fixed(bytes / double(items), 2) + " B/item)";
}

double parse_count(const std::string& text) {
  std::size_t used = 0;
  const double value = std::stod(text, &used);
  if (used != text.size() || !(value >= 0)) throw std::invalid_argument(text);
  return value;
}

int usage(const char* message) {
  std::fprintf(stderr,
               "bench_diff: %s\nusage: bench_diff [--uri=redis://HOST:PORT] [--dir=DIR] "
               "[--n=2e6] [--p=0.01] [--reps=3] [--only=SUBSTRING] [--shuffle-seed=N]\n",
               message);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string uri;
  std::string dir;
  Workload w;
  int reps = 3;
  std::string only;
  std::uint64_t shuffle_seed = 1;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      const std::size_t eq = arg.find('=');
      const std::string key = arg.substr(0, eq);
      const std::string value = eq == std::string::npos ? "" : arg.substr(eq + 1);
      if (key == "--uri") {
        uri = value;
      } else if (key == "--dir") {
        dir = value;
      } else if (key == "--n") {
        w.n = static_cast<std::uint64_t>(parse_count(value));
      } else if (key == "--p") {
        w.p = std::stod(value);
      } else if (key == "--reps") {
        reps = static_cast<int>(parse_count(value));
      } else if (key == "--only") {
        only = value;
      } else if (key == "--shuffle-seed") {
        shuffle_seed = static_cast<std::uint64_t>(parse_count(value));
      } else if (key == "--help" || key == "-h") {
        usage("diff benchmark (seed 000: orphans among checked URLs)");
        return 0;
      } else {
        return usage(("unknown argument " + arg).c_str());
      }
    }
  } catch (const std::exception&) {
    return usage("bad number in the arguments");
  }
  if (w.n < 2 || reps < 1 || !(w.p > 0 && w.p < 1)) {
    return usage("need --n >= 2, --reps >= 1, 0 < --p < 1");
  }
  if (dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    dir = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  }

  try {
    const RedisEndpoint endpoint = redbloom::redis_endpoint_or_default(uri);
    const FilterParams params = redbloom::size_filter(double(w.n), w.p, Layout::classic);
    std::vector<Case> cases = {Case::file_bloom, Case::file_exact, Case::redis_bloom,
                               Case::redis_exact, Case::seed};
    std::erase_if(cases, [&](Case c) { return case_name(c).find(only) == std::string::npos; });
    if (cases.empty()) return usage("--only matches no case");
    const bool uses_redis = std::any_of(cases.begin(), cases.end(), [](Case c) {
      return c == Case::redis_bloom || c == Case::redis_exact || c == Case::seed;
    });
    // Only the Redis cases need a server.
    std::unique_ptr<RawConnection> raw;
    if (uses_redis) raw = std::make_unique<RawConnection>(endpoint);
    if (uses_redis && dbsize(*raw) != 0) {
      std::fprintf(stderr,
                   "bench_diff: the server at %s holds keys already: give the benchmark an "
                   "empty db (scripts/bench-diff.sh starts its own server)\n",
                   endpoint.describe().c_str());
      return 1;
    }

    // Workload, built once, outside every timed region.
    w.first_checked = w.n / 2;
    w.orphans = w.first_checked;  // ids in [n, n/2 + n)
    w.known = std::make_unique<Items>(Items::range(0, w.n));
    w.checked = std::make_unique<Items>(Items::range(w.first_checked, w.n));

    std::string version = "(not used)";
    if (raw) {
      const Reply server = raw->run({"INFO", "server"});
      const std::string server_info(server->str, server->len);
      const auto version_at = server_info.find("redis_version:");
      version = version_at == std::string::npos
                    ? "?"
                    : server_info.substr(version_at + 14,
                                         server_info.find("\r\n", version_at) - version_at - 14);
    }
    std::string command;
    for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
    std::printf("command: %s\n", command.c_str());
    std::printf("redis %s at %s; files in %s; client: %u hardware threads\n", version.c_str(),
                endpoint.describe().c_str(), dir.c_str(), std::thread::hardware_concurrency());
    std::printf(
        "known = %llu URLs \"s3://bucket/dir/file<i>.pdf\" (i < %llu), checked = %llu URLs "
        "(i in [%llu, %llu)): %llu present, %llu orphans\n",
        static_cast<unsigned long long>(w.n), static_cast<unsigned long long>(w.n),
        static_cast<unsigned long long>(w.checked->size()),
        static_cast<unsigned long long>(w.first_checked),
        static_cast<unsigned long long>(w.first_checked + w.n),
        static_cast<unsigned long long>(w.n - w.orphans),
        static_cast<unsigned long long>(w.orphans));
    std::printf("filter (all cases): %s\n", redbloom::describe(params).c_str());
    std::printf("reps = %d (medians shown), case order shuffled per rep (seed %llu)\n\n", reps,
                static_cast<unsigned long long>(shuffle_seed));
    std::fflush(stdout);

    std::vector<std::vector<Result>> results(cases.size());
    std::vector<std::size_t> order(cases.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::mt19937_64 rng(shuffle_seed);
    for (int rep = 0; rep < reps; ++rep) {
      std::shuffle(order.begin(), order.end(), rng);
      for (std::size_t c : order) {
        const Result r = cases[c] == Case::seed
                             ? run_seed(w, params, endpoint, *raw)
                             : run_redbloom(cases[c], w, params, endpoint, raw.get(), dir);
        std::fprintf(stderr,
                     "rep %d/%d  %-40s build %7.2f s  check %7.2f s  found %llu  missed %llu  "
                     "wrong %llu\n",
                     rep + 1, reps, case_name(cases[c]).c_str(), r.build_seconds, r.check_seconds,
                     static_cast<unsigned long long>(r.found),
                     static_cast<unsigned long long>(r.missed),
                     static_cast<unsigned long long>(r.wrong));
        results[c].push_back(r);
      }
    }

    // Checks.
    bool failed = false;
    std::vector<std::string> notes;
    std::optional<redbloom::ItemHash> digest;
    for (std::size_t c = 0; c < cases.size(); ++c) {
      const std::string name = case_name(cases[c]);
      for (const Result& r : results[c]) {
        if (r.wrong != 0) {
          failed = true;
          notes.push_back("FAIL: " + name + ": " + std::to_string(r.wrong) +
                          " known items reported as orphans");
        }
        if (is_exact(cases[c]) && r.missed != 0) {
          failed = true;
          notes.push_back("FAIL: " + name + ": missed " + std::to_string(r.missed) + " orphans");
        }
        if (!digest) digest = r.digest;
        if (!(*digest == r.digest)) {
          failed = true;
          notes.push_back("FAIL: " + name + ": its Bloom filter's bits differ from another case's");
        }
        for (const std::string& note : r.notes) {
          const std::string line = "WARNING: " + name + ": " + note;
          if (std::find(notes.begin(), notes.end(), line) == notes.end()) notes.push_back(line);
        }
      }
    }

    // The table.
    std::printf(
        "| case | build s | build items/s | check s | check items/s | Bloom filter (per known "
        "item) | exact companion (per known item) | orphans found | missed orphans | known "
        "reported as orphans | verified (false pos. caught) | filter rate, est. | false-match "
        "prob./query |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (std::size_t c = 0; c < cases.size(); ++c) {
      const Case the_case = cases[c];
      const std::vector<Result>& runs = results[c];
      const double build_s = median_of(runs, [](const Result& r) { return r.build_seconds; });
      const double check_s = median_of(runs, [](const Result& r) { return r.check_seconds; });
      const double build_rate =
          median_of(runs, [&](const Result& r) { return double(w.n) / r.build_seconds; });
      const double check_rate = median_of(
          runs, [&](const Result& r) { return double(w.checked->size()) / r.check_seconds; });
      const double bloom = median_of(runs, [](const Result& r) { return r.bloom_bytes; });
      const double exact = median_of(runs, [](const Result& r) { return r.exact_bytes; });
      const std::uint64_t found = worst_of(runs, [](const Result& r) { return r.found; });
      const std::uint64_t missed = worst_of(runs, [](const Result& r) { return r.missed; });
      const std::uint64_t wrong = worst_of(runs, [](const Result& r) { return r.wrong; });
      const std::uint64_t verified = worst_of(runs, [](const Result& r) { return r.verified; });
      const std::uint64_t caught =
          worst_of(runs, [](const Result& r) { return r.false_positives_caught; });
      const double est = median_of(runs, [](const Result& r) { return r.estimated_rate; });
      const double fmp = median_of(runs, [](const Result& r) { return r.false_match_probability; });
      std::string fmp_cell = "— (Bloom-only)";
      if (the_case == Case::seed) {
        fmp_cell = "0 (whole URLs)";
      } else if (is_exact(the_case)) {
        fmp_cell = general(fmp);
      }
      const std::string verified_cell =
          is_exact(the_case) ? std::to_string(verified) + " (" + std::to_string(caught) + ")"
                             : std::string("—");
      std::printf(
          "| %s | %s | %s | %s | %s | %s | %s | %llu | %llu (%s%%) | %llu | %s | %s%% | %s |\n",
          case_name(the_case).c_str(), fixed(build_s, 2).c_str(), rate(build_rate).c_str(),
          fixed(check_s, 2).c_str(), rate(check_rate).c_str(), bytes_cell(bloom, w.n).c_str(),
          bytes_cell(exact, w.n).c_str(), static_cast<unsigned long long>(found),
          static_cast<unsigned long long>(missed),
          fixed(100.0 * double(missed) / double(w.orphans), 3).c_str(),
          static_cast<unsigned long long>(wrong), verified_cell.c_str(),
          fixed(100 * est, 3).c_str(), fmp_cell.c_str());
    }
    std::string batches;
    for (std::size_t c = 0; c < cases.size(); ++c) {
      batches += (c ? ", " : "") + case_name(cases[c]).substr(0, 1) + ": " +
                 std::to_string(results[c].front().batch);
    }
    std::printf(
        "\nbuild = create + add of the %llu known URLs + flush (fsync for files); check = open "
        "(as `redbloom diff` does; the file exact set reads and sorts its fingerprints) + "
        "missing_batch over the %llu checked URLs in `redbloom diff`'s batch size, or the "
        "seed's rounds of GETBIT then SISMEMBER (items per batch/round: %s). items/s: known "
        "URLs per build second, checked URLs per check second. Memory: file sizes; Redis: "
        "MEMORY USAGE <key> SAMPLES 0 summed over the case's keys (Bloom: partitions + metadata "
        "hash; companion: buckets + metadata hash; seed: its SETBIT string and its SET), per "
        "known URL. missed orphans: of the %llu true orphans, those not reported (%% of them); "
        "counts are the worst rep. filter rate, est.: stats().filter.estimated_error_rate "
        "(seed: the same formula on BITCOUNT of its key). false-match prob.: "
        "stats().false_match_probability, the chance that the exact check passes an orphan.\n",
        static_cast<unsigned long long>(w.n), static_cast<unsigned long long>(w.checked->size()),
        batches.c_str(), static_cast<unsigned long long>(w.orphans));
    std::printf(
        "Checks: exact cases miss no orphan; no case reports a known URL as an orphan; every "
        "case's Bloom filter holds the same bits (XXH3 of the bitmaps).\n");
    if (uses_redis && dbsize(*raw) != 0) {
      notes.push_back("WARNING: " + std::to_string(dbsize(*raw)) +
                      " keys left on the server after every case cleaned up");
    }
    for (const std::string& note : notes) std::printf("%s\n", note.c_str());
    if (!failed) std::printf("all checks passed\n");
    return failed ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_diff: %s\n", e.what());
    return 1;
  }
}
