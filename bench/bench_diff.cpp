// Orphan detection, end to end: build a set of known S3 URLs, then find the orphans among the
// URLs a vector DB references (the checked URLs the known set does not hold). redbloom's
// KnownSet against the usual hand-written method, side by side, at that job's scale by default:
//
//   known   = "s3://bucket/dir/file<i>.pdf", i in [0, n)            (n = 2M)
//   checked = "s3://bucket/dir/file<i>.pdf", i in [n/2, n/2 + n)     (half present, half orphans)
//
// Cases (one Bloom filter sized by size_filter(n, p, classic) in all of them, p = 1%):
//   1  file bloom-only   KnownSet::create_file(exact=false) + add; check Mode::bloom_only
//   2  file exact        KnownSet::create_file(exact=true)  + add; check Mode::exact
//   3  redis bloom-only  KnownSet::create_redis(exact=false) ...
//   4  redis exact       KnownSet::create_redis(exact=true) ...
//   5  hand-written      the usual hand-written method on the same redis-server, on hiredis:
//                        per item k `SETBIT bloom off 1` and `SADD urls <url>`, pipelined 1000
//                        items per round trip; check: k GETBIT per item (pipelined, 1000 items
//                        per round trip), then SISMEMBER (pipelined) for the items the Bloom
//                        filter calls present. Same m and k as redbloom, and redbloom's classic
//                        bit positions (so the same bits).
//
// Phases: "build" is create + add + flush (fsync for the files); "check" opens the known set
// again (as `redbloom diff [--exact]` does: for the file exact set that reads and sorts every
// fingerprint) and runs missing_batch in the CLI's batch size (cli/stream.hpp). The
// hand-written method needs no open. Memory: file sizes; for Redis, MEMORY USAGE ... SAMPLES 0 of
// every key of the case (found with SCAN), split into the Bloom filter's keys and the exact
// companion's (cross-checked against KnownSet::stats()). Counts against the truth: orphans found,
// orphans missed, known items wrongly reported as orphans.
//
// Every case runs --reps times, the cases of one repetition in a random order; the table shows
// medians (each figure on its own; counts: the worst repetition).
//
// With a redis+cluster:// URI that lists every master, cases 3 and 4 run on the cluster (keys
// found and measured on each master) and the hand-written one-server method is left out.
//
//   bench_diff [--uri=redis://127.0.0.1:6379] [--dir=$TMPDIR] [--n=2e6] [--p=0.01] [--reps=3]
//              [--only=SUBSTRING] [--shuffle-seed=N]
// Exits 1 if a check fails (an exact case missed an orphan, a known item reported as orphan,
// filters whose bits differ), 2 on bad arguments.
#include <hiredis/hiredis.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/layout.hpp"
#include "redbloom/error.hpp"
#include "redbloom/exact_set.hpp"
#include "redbloom/filter.hpp"
#include "redbloom/hash.hpp"
#include "redbloom/known_set.hpp"
#include "redbloom/params.hpp"
#include "redbloom/redis_endpoint.hpp"
#include "redbloom/sizing.hpp"
#include "redis/redis_store.hpp"
#include "redis_bench_support.hpp"

namespace {

using redbloom::FilterParams;
using redbloom::KnownSet;
using redbloom::Layout;
using redbloom::RedisEndpoint;
using redbloom_bench::Clock;
using redbloom_bench::fixed;
using redbloom_bench::Items;
using redbloom_bench::kSeedRoundItems;
using redbloom_bench::median_of;
using redbloom_bench::memory_usage;
using redbloom_bench::rate;
using redbloom_bench::RawConnection;
using redbloom_bench::Reply;
using redbloom_bench::Resp;
using redbloom_bench::seconds_since;

// `redbloom diff`'s batch (cli/stream.hpp: max(kStreamBatch, store batch_items())).
constexpr std::size_t kCliStreamBatch = 4096;

const std::string kRedisName = "bench:diff:rb";
const std::string kHandWrittenPrefix = "bench:diff:hand-written";

// Every key matching `pattern` on one server (SCAN; it holds only this benchmark's keys).
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

// The servers that hold the benchmark's keys: the one server, or every node of a cluster
// URI's node list (scripts/bench-diff.sh --cluster lists every master).
struct Servers {
  std::vector<std::unique_ptr<RawConnection>> nodes;

  explicit Servers(const RedisEndpoint& endpoint) {
    if (!endpoint.is_cluster()) {
      nodes.push_back(std::make_unique<RawConnection>(endpoint));
      return;
    }
    for (const auto& [host, port] : endpoint.cluster_seeds) {
      RedisEndpoint node = endpoint;
      node.cluster_seeds.clear();
      node.host = host;
      node.port = port;
      nodes.push_back(std::make_unique<RawConnection>(node));
    }
  }
  [[nodiscard]] RawConnection& first() { return *nodes.front(); }
  [[nodiscard]] std::uint64_t dbsize() {
    std::uint64_t keys = 0;
    for (auto& node : nodes) keys += static_cast<std::uint64_t>(node->run({"DBSIZE"})->integer);
    return keys;
  }
  // fn(node, key) for every key matching `pattern`, on the node that holds it.
  template <class Fn>
  void for_each_key(const std::string& pattern, Fn&& fn) {
    for (auto& node : nodes) {
      for (const std::string& key : scan_keys(*node, pattern)) fn(*node, key);
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Cases and results.

enum class Case { file_bloom, file_exact, redis_bloom, redis_exact, hand_written };

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
    case Case::hand_written:
      return "5 hand-written: SETBIT+SADD / GETBIT+SISMEMBER";
  }
  return "?";
}

bool is_exact(Case c) {
  return c == Case::file_exact || c == Case::redis_exact || c == Case::hand_written;
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

// ---------------------------------------------------------------------------------------------
// Cases 1-4: redbloom's KnownSet.

// `servers` is null when no case needs Redis.
Result run_redbloom(Case c, const Workload& w, const FilterParams& params,
                    const RedisEndpoint& endpoint, Servers* servers, const std::string& dir) {
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
  const std::size_t batch = std::max(kCliStreamBatch, known.filter().backend().batch_items());
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
    servers->for_each_key(kRedisName + "*", [&](RawConnection& node, const std::string& key) {
      const std::uint64_t bytes = memory_usage(node, key);
      const bool companion = key.starts_with(kRedisName + ":exact");
      (companion ? r.exact_bytes : r.bloom_bytes) += bytes;
      if (key.starts_with(kRedisName + ":tmp:")) {
        r.notes.push_back("temp key " + key + " left behind after the build");
      }
    });
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
  r.digest =
      redbloom_bench::digest_of(redbloom_bench::read_partitions(known.filter().store(), params));

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
// Case 5: the usual hand-written method (a SETBIT filter beside a Redis SET), pipelined.

Result run_hand_written(const Workload& w, const FilterParams& params,
                        const RedisEndpoint& endpoint, RawConnection& raw) {
  std::vector<std::string> bloom_keys;
  for (std::uint64_t p = 0; p < params.partitions; ++p) {
    // The method has one key; a filter too large for one Redis string (> 2^32 bits) gets one per
    // partition, as redbloom splits it.
    bloom_keys.push_back(kHandWrittenPrefix + ":bloom" +
                         (params.partitions > 1 ? ":" + std::to_string(p) : std::string()));
  }
  const std::string set_key = kHandWrittenPrefix + ":urls";
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
    redbloom_bench::push_seed_probes(resp, params, bloom_keys, item, set);
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
    bits.push_back(redbloom_bench::read_seed_partition(raw, key, params));
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
  r.digest = redbloom_bench::digest_of(bits);
  delete_keys();
  return r;
}

// ---------------------------------------------------------------------------------------------
// Medians and the table.

template <class Get>
std::uint64_t worst_of(const std::vector<Result>& runs, Get&& get) {
  std::uint64_t worst = 0;
  for (const Result& r : runs) worst = std::max<std::uint64_t>(worst, get(r));
  return worst;
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

int usage(const char* message) {
  std::fprintf(stderr,
               "bench_diff: %s\nusage: bench_diff [--uri=redis://HOST:PORT] [--dir=DIR] "
               "[--n=2e6] [--p=0.01] [--reps=3] [--only=SUBSTRING] [--shuffle-seed=N]\n",
               message);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  Workload w;
  redbloom_bench::Options options;  // --n and --p default to the workload's
  options.n = w.n;
  options.p = w.p;
  const auto dir_option = [&](const std::string& key, const std::string& value) {
    if (key != "--dir") return false;
    dir = value;
    return true;
  };
  if (const auto stop = redbloom_bench::parse_options(
          argc, argv, options, dir_option, usage,
          "diff benchmark (orphan detection: orphans among checked URLs)")) {
    return *stop;
  }
  w.n = options.n;
  w.p = options.p;
  if (w.n < 2 || options.reps < 1 || !(w.p > 0 && w.p < 1)) {
    return usage("need --n >= 2, --reps >= 1, 0 < --p < 1");
  }
  if (dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    dir = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  }

  try {
    const RedisEndpoint endpoint = redbloom::redis_endpoint_or_default(options.uri);
    const FilterParams params = redbloom::size_filter(double(w.n), w.p, Layout::classic);
    std::vector<Case> cases = {Case::file_bloom, Case::file_exact, Case::redis_bloom,
                               Case::redis_exact, Case::hand_written};
    // The hand-written method keeps its filter in one key and its set in another: one server.
    if (endpoint.is_cluster()) std::erase(cases, Case::hand_written);
    std::erase_if(cases,
                  [&](Case c) { return case_name(c).find(options.only) == std::string::npos; });
    if (cases.empty()) return usage("--only matches no case (on a cluster: no hand-written case)");
    const bool uses_redis = std::any_of(cases.begin(), cases.end(), [](Case c) {
      return c == Case::redis_bloom || c == Case::redis_exact || c == Case::hand_written;
    });
    // Only the Redis cases need a server.
    std::unique_ptr<Servers> servers;
    if (uses_redis) servers = std::make_unique<Servers>(endpoint);
    if (uses_redis && servers->dbsize() != 0) {
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
    if (servers) {
      version = redbloom_bench::server_version(servers->first());
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
    std::printf("reps = %d (medians shown), case order shuffled per rep (seed %llu)\n\n",
                options.reps, static_cast<unsigned long long>(options.shuffle_seed));
    std::fflush(stdout);

    std::vector<std::vector<Result>> results(cases.size());
    redbloom_bench::run_shuffled(
        cases.size(), options.reps, options.shuffle_seed, [&](int rep, std::size_t c) {
          const Result r = cases[c] == Case::hand_written
                               ? run_hand_written(w, params, endpoint, servers->first())
                               : run_redbloom(cases[c], w, params, endpoint, servers.get(), dir);
          std::fprintf(stderr,
                       "rep %d/%d  %-40s build %7.2f s  check %7.2f s  found %llu  missed %llu  "
                       "wrong %llu\n",
                       rep + 1, options.reps, case_name(cases[c]).c_str(), r.build_seconds,
                       r.check_seconds, static_cast<unsigned long long>(r.found),
                       static_cast<unsigned long long>(r.missed),
                       static_cast<unsigned long long>(r.wrong));
          results[c].push_back(r);
        });

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
      if (the_case == Case::hand_written) {
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
        "hand-written method's rounds of GETBIT then SISMEMBER (items per batch/round: %s). "
        "items/s: known "
        "URLs per build second, checked URLs per check second. Memory: file sizes; Redis: "
        "MEMORY USAGE <key> SAMPLES 0 summed over the case's keys (Bloom: partitions + metadata "
        "hash; companion: buckets + metadata hash; hand-written: its SETBIT string and its SET), "
        "per "
        "known URL. missed orphans: of the %llu true orphans, those not reported (%% of them); "
        "counts are the worst rep. filter rate, est.: stats().filter.estimated_error_rate "
        "(hand-written: the same formula on BITCOUNT of its key). false-match prob.: "
        "stats().false_match_probability, the chance that the exact check passes an orphan.\n",
        static_cast<unsigned long long>(w.n), static_cast<unsigned long long>(w.checked->size()),
        batches.c_str(), static_cast<unsigned long long>(w.orphans));
    std::printf(
        "Checks: exact cases miss no orphan; no case reports a known URL as an orphan; every "
        "case's Bloom filter holds the same bits (XXH3 of the bitmaps).\n");
    if (uses_redis && servers->dbsize() != 0) {
      notes.push_back("WARNING: " + std::to_string(servers->dbsize()) +
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
