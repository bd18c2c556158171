// The exact companion (exact_set.hpp) and KnownSet (known_set.hpp), on files, on a private
// redis-server (tests/redis_server.hpp) and on a private cluster (tests/redis_cluster.hpp),
// with slots migrating under a load: random known and checked sets give exactly the set
// difference in exact mode and never call a known item missing in Bloom-only mode; add counts,
// clear, catch-up between objects on one file, damaged and foreign companions, the false-match
// probability, and the ranges KnownSet::add accepts.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <latch>
#include <memory>
#include <optional>
#include <random>
#include <ranges>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/exact_fingerprint.hpp"
#include "core/sharding.hpp"
#include "error_of.hpp"
#include "redbloom/error.hpp"
#include "redbloom/exact_set.hpp"
#include "redbloom/filter.hpp"
#include "redbloom/known_set.hpp"
#include "redbloom/params.hpp"
#include "redis/redis_store.hpp"
#include "redis_cluster.hpp"
#include "redis_server.hpp"
#include "temp_dir.hpp"
#include "test_items.hpp"

namespace redbloom {
namespace {

// Starts `threads` threads at once, each running create(); one that gets FilterExists runs
// open() instead (a loser must find the winner's set complete). Returns how many creates
// succeeded; any other error fails the test, naming `round`.
template <class Create, class Open>
int race_creators(int threads, int round, Create&& create, Open&& open) {
  std::atomic<int> created{0};
  std::vector<std::string> errors(static_cast<std::size_t>(threads));
  std::latch start(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      start.arrive_and_wait();
      try {
        try {
          create();
          ++created;
        } catch (const FilterExists&) {
          open();
        }
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(t)] = e.what();
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  for (const std::string& error : errors) EXPECT_EQ(error, "") << "round " << round;
  return created.load();
}

using redbloom::testing::contains_text;
using redbloom::testing::error_of;
using redbloom::testing::make_items;
using redbloom::testing::TempDir;
using redbloom::testing::views_of;
using test::RedisCluster;
using test::RedisReply;
using test::RedisServer;
using Mode = KnownSet::Mode;

enum class Backend { file, redis, cluster };

std::string backend_name(const ::testing::TestParamInfo<Backend>& info) {
  switch (info.param) {
    case Backend::file:
      return "File";
    case Backend::redis:
      return "Redis";
    case Backend::cluster:
      return "Cluster";
  }
  return "?";
}

// The items that break line-based or C-string code, in every universe.
std::vector<std::string> edge_items() {
  using namespace std::string_literals;
  return {""s,
          "\0"s,
          "\n"s,
          "a\nb"s,
          "x\0y"s,
          "\0\0\n\r"s,
          "\xff\xfe"s,
          " "s,
          std::string(100, '\0'),
          std::string(40, 'q') + "\0tail"s};
}

// `count` distinct items: the edge items, then random ones (short and long, over bytes that
// include NUL, newline and high bytes), shuffled.
std::vector<std::string> make_universe(std::mt19937_64& random, std::size_t count) {
  static constexpr char kBytes[] = {'a', 'b', 'c', '/', '\0', '\n', '\r', '\xff', '\x80', ' '};
  std::set<std::string> seen;
  std::vector<std::string> universe;
  for (std::string& item : edge_items()) {
    if (seen.insert(item).second) universe.push_back(item);
  }
  for (std::size_t attempt = 0; universe.size() < count && attempt < 100 * count; ++attempt) {
    const std::size_t length = random() % 4 == 0 ? 16 + random() % 60 : 1 + random() % 12;
    std::string item;
    for (std::size_t i = 0; i < length; ++i) item += kBytes[random() % sizeof kBytes];
    if (seen.insert(item).second) universe.push_back(std::move(item));
  }
  EXPECT_EQ(universe.size(), count);
  std::shuffle(universe.begin(), universe.end(), random);
  return universe;
}

// `count` draws (with repeats) from universe[from, to).
std::vector<std::string> draw(std::mt19937_64& random, const std::vector<std::string>& universe,
                              std::size_t from, std::size_t to, std::size_t count) {
  std::vector<std::string> out;
  out.reserve(count);
  for (std::size_t i = 0; i < count; ++i) out.push_back(universe[from + random() % (to - from)]);
  return out;
}

// Splits `items` into batches of random sizes in [1, max_batch] and calls fn on each.
template <class Fn>
void in_random_batches(std::mt19937_64& random, const std::vector<std::string>& items,
                       std::size_t max_batch, Fn&& fn) {
  const auto views = views_of(items);
  for (std::size_t at = 0; at < views.size();) {
    const std::size_t n = std::min(views.size() - at, 1 + random() % max_batch);
    fn(std::span<const std::string_view>(views.data() + at, n));
    at += n;
  }
}

// One seed's known set A and checked set B: overlapping, with repeats inside and across the
// batches, and every edge item checked twice (known for even seeds, random for odd ones).
struct Scenario {
  std::vector<std::string> known;
  std::vector<std::string> checked;
  std::set<std::string> known_distinct;
  std::vector<std::string> expected_missing;  // B \ A in input order, repeats kept
};

Scenario make_scenario(std::uint64_t seed) {
  std::mt19937_64 random(seed);
  const auto universe = make_universe(random, 3000);
  Scenario s;
  s.known = draw(random, universe, 0, 2000, 2500);
  s.checked = draw(random, universe, 1000, 3000, 4000);
  for (const std::string& item : edge_items()) {
    if (seed % 2 == 0) s.known.push_back(item);
    s.checked.insert(s.checked.begin() + static_cast<std::ptrdiff_t>(random() % s.checked.size()),
                     item);
    s.checked.push_back(item);
  }
  s.known_distinct.insert(s.known.begin(), s.known.end());
  for (const std::string& item : s.checked) {
    if (!s.known_distinct.count(item)) s.expected_missing.push_back(item);
  }
  return s;
}

// The layout documented in exact_set.hpp, spelled out: a change must fail here.
std::string bucket_key(const std::string& name, std::uint64_t bucket) {
  return name + ":exact:{" + name + ":x" + std::to_string(bucket) + "}";
}

// The filter and companion of one test, on a file, on a private server or on a private
// 3-master cluster.
class ExactBackendTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::redis) server_.emplace();
    if (GetParam() == Backend::cluster) cluster_.emplace(3, 0);
  }

  [[nodiscard]] bool in_redis() const { return GetParam() != Backend::file; }
  [[nodiscard]] RedisEndpoint endpoint() const {
    return cluster_ ? cluster_->endpoint() : server_->endpoint();
  }
  [[nodiscard]] std::string path(const std::string& name) const { return dir_.file(name); }

  std::unique_ptr<ExactSet> create_exact(const std::string& name, std::uint64_t expected,
                                         bool overwrite = false) {
    return in_redis() ? create_redis_exact_set(endpoint(), name, expected, overwrite)
                      : create_file_exact_set(path(name), overwrite);
  }
  std::unique_ptr<ExactSet> open_exact(const std::string& name) {
    return in_redis() ? open_redis_exact_set(endpoint(), name) : open_file_exact_set(path(name));
  }
  bool exact_exists(const std::string& name) {
    return in_redis() ? redis_exact_set_exists(endpoint(), name)
                      : file_exact_set_exists(path(name));
  }
  KnownSet create_known(const std::string& name, const FilterParams& params, bool exact,
                        bool overwrite = false) {
    return in_redis() ? KnownSet::create_redis(endpoint(), name, params, exact, overwrite)
                      : KnownSet::create_file(path(name), params, exact, overwrite);
  }
  KnownSet open_known(const std::string& name, bool exact) {
    return in_redis() ? KnownSet::open_redis(endpoint(), name, exact)
                      : KnownSet::open_file(path(name), exact);
  }

  // Bytes in all `buckets` buckets of Redis exact set `name`, on whichever node holds each.
  long long bucket_bytes(const std::string& name, std::uint64_t buckets) {
    long long bytes = 0;
    for (std::uint64_t b = 0; b < buckets; ++b) {
      const std::string key = bucket_key(name, b);
      const RedisServer& node =
          cluster_ ? cluster_->node(cluster_->owner_of(sharding::cluster_slot(key))) : *server_;
      bytes += node.integer({"STRLEN", key});
    }
    return bytes;
  }

  TempDir dir_;
  std::optional<RedisServer> server_;
  std::optional<RedisCluster> cluster_;
};

constexpr std::uint64_t kSeeds[] = {1, 2, 3, 4};

// ---------------------------------------------------------------------------------------------
// Properties over random sets.

TEST_P(ExactBackendTest, CompanionHoldsExactlyTheAddedItems) {
  for (const std::uint64_t seed : kSeeds) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const Scenario s = make_scenario(seed);
    const std::string name = "c" + std::to_string(seed);
    // A small bucket count in Redis (expected 100): long buckets, many tags compared per query.
    const auto exact = create_exact(name, seed % 2 == 0 ? 100 : s.known_distinct.size());
    std::mt19937_64 random(seed * 7);
    std::size_t added = 0;
    in_random_batches(random, s.known, 300,
                      [&](std::span<const std::string_view> batch) { added += exact->add(batch); });
    EXPECT_EQ(added, s.known_distinct.size());
    EXPECT_EQ(exact->entries(), s.known_distinct.size());
    EXPECT_EQ(exact->add(views_of(s.known)), 0u) << "re-adding adds nothing";

    const auto checked = views_of(s.checked);
    std::vector<std::uint8_t> present(checked.size(), 7);
    exact->contains(checked, present);
    for (std::size_t i = 0; i < checked.size(); ++i) {
      ASSERT_EQ(present[i], s.known_distinct.count(s.checked[i]) ? 1 : 0)
          << "item " << i << " (" << ::testing::PrintToString(s.checked[i]) << ")";
    }
    // A reopened companion answers the same.
    exact->flush();
    const auto reopened = open_exact(name);
    EXPECT_EQ(reopened->entries(), s.known_distinct.size());
    std::vector<std::uint8_t> again(checked.size());
    reopened->contains(checked, again);
    EXPECT_EQ(again, present);
  }
}

TEST_P(ExactBackendTest, FindMissingIsExactlyTheSetDifference) {
  for (const std::uint64_t seed : kSeeds) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const Scenario s = make_scenario(seed);
    const std::string name = "k" + std::to_string(seed);
    // p = 0.2: the filter calls hundreds of the absent items present, so the companion decides.
    const FilterParams params = size_filter(static_cast<double>(s.known_distinct.size()), 0.2,
                                            seed % 2 == 0 ? Layout::classic : Layout::blocked);
    KnownSet known = create_known(name, params, /*exact=*/true);
    std::mt19937_64 random(seed * 13);
    in_random_batches(random, s.known, 400,
                      [&](std::span<const std::string_view> batch) { known.add_batch(batch); });

    const std::vector<std::string> exact = known.find_missing(s.checked, Mode::exact);
    ASSERT_EQ(exact, s.expected_missing);
    const KnownSet::Stats stats = known.stats();
    EXPECT_EQ(stats.checked, s.checked.size());
    EXPECT_EQ(stats.missing, s.expected_missing.size());
    EXPECT_GT(stats.false_positives, 0u) << "the filter is too good to exercise the companion";
    EXPECT_TRUE(stats.has_exact);
    EXPECT_EQ(stats.exact_entries, s.known_distinct.size());
    EXPECT_EQ(stats.added, s.known.size());

    // Bloom-only: exactly the items the filter does not hold; never a known one.
    const std::vector<std::string> bloom = known.find_missing(s.checked, Mode::bloom_only);
    std::vector<std::string> filter_absent;
    std::set<std::string> hidden;  // absent items the filter calls present
    for (const std::string& item : s.checked) {
      if (!known.filter().contains(item)) {
        filter_absent.push_back(item);
      } else if (!s.known_distinct.count(item)) {
        hidden.insert(item);
      }
    }
    ASSERT_EQ(bloom, filter_absent);
    for (const std::string& item : bloom) {
      ASSERT_EQ(s.known_distinct.count(item), 0u) << ::testing::PrintToString(item);
    }
    // Exact mode caught every one the Bloom-only answer hid, each time it was checked.
    EXPECT_EQ(stats.false_positives, exact.size() - bloom.size());
    EXPECT_EQ(stats.verified, s.checked.size() - bloom.size());
    // The share of distinct absent items hidden is the filter's rate at this fill.
    const std::set<std::string> absent(s.expected_missing.begin(), s.expected_missing.end());
    const double rate =
        expected_false_positive_rate(params, static_cast<double>(s.known_distinct.size()));
    const double hidden_share =
        static_cast<double>(hidden.size()) / static_cast<double>(absent.size());
    EXPECT_GT(absent.size(), 800u);
    EXPECT_NEAR(hidden_share, rate, 0.3 * rate + 0.01) << hidden.size() << " of " << absent.size();

    // The same answers batch by batch through missing_batch.
    std::vector<std::string> batched;
    in_random_batches(random, s.checked, 500, [&](std::span<const std::string_view> batch) {
      std::vector<std::uint8_t> missing(batch.size(), 7);
      const std::size_t count = known.missing_batch(batch, missing, Mode::exact);
      std::size_t flagged = 0;
      for (std::size_t i = 0; i < batch.size(); ++i) {
        ASSERT_LE(missing[i], 1);
        if (missing[i]) batched.emplace_back(batch[i]);
        flagged += missing[i];
      }
      EXPECT_EQ(count, flagged);
    });
    EXPECT_EQ(batched, s.expected_missing);

    // Reopened (another object, another process in real use): the same exact answer.
    known.flush();
    KnownSet reopened = open_known(name, /*exact=*/true);
    EXPECT_EQ(reopened.find_missing(s.checked, Mode::exact), s.expected_missing);
    EXPECT_EQ(reopened.find_missing(views_of(s.checked)), s.expected_missing)
        << "the default mode with a companion is exact";
    KnownSet bloom_only = open_known(name, /*exact=*/false);
    EXPECT_EQ(bloom_only.find_missing(views_of(s.checked)), bloom);
  }
}

// ---------------------------------------------------------------------------------------------
// ExactSet: counts, clear, reopening.

TEST_P(ExactBackendTest, AddCountsNewDistinctItems) {
  using namespace std::string_literals;
  const auto exact = create_exact("f", 1000);
  EXPECT_EQ(exact->entries(), 0u);
  EXPECT_EQ(exact->add(std::vector<std::string_view>{}), 0u);
  const std::vector<std::string> first = {"a", "b", "a", "", "\0"s, "", "a\nb"};
  EXPECT_EQ(exact->add(views_of(first)), 5u);
  EXPECT_EQ(exact->entries(), 5u);
  EXPECT_EQ(exact->add(views_of(first)), 0u);
  EXPECT_EQ(exact->add(views_of({"c", "a", "c", "d"})), 2u);
  EXPECT_EQ(exact->entries(), 7u);

  const std::vector<std::string> query = {"a", "\0"s, "zz", "", "a\n", "d", "\0\0"s};
  std::vector<std::uint8_t> present(query.size());
  exact->contains(views_of(query), present);
  EXPECT_EQ(present, (std::vector<std::uint8_t>{1, 1, 0, 1, 0, 1, 0}));
  std::vector<std::uint8_t> too_small(2);
  EXPECT_THROW(exact->contains(views_of(query), too_small), InvalidArgument);
  EXPECT_GT(exact->storage_bytes(), 0u);
  EXPECT_FALSE(exact->location().empty());

  exact->clear();
  EXPECT_EQ(exact->entries(), 0u);
  exact->contains(views_of(query), present);
  EXPECT_EQ(present, (std::vector<std::uint8_t>(query.size(), 0)));
  EXPECT_EQ(exact->add(views_of(first)), 5u) << "a cleared set takes the items again";
  EXPECT_EQ(exact->entries(), 5u);
  exact->flush();
  EXPECT_EQ(open_exact("f")->entries(), 5u);
}

// Four writers, each with its own object, add the same batches at the same time: each item is
// counted new by exactly one of them, and stored once (a lookup, then an append, let two
// writers both take an item for new and both store it).
TEST_P(ExactBackendTest, ConcurrentWritersCountEachItemOnce) {
  (void)create_exact("w", 20000);
  const auto items = make_items(20000, "w-");
  std::vector<std::unique_ptr<ExactSet>> writers;
  for (int t = 0; t < 4; ++t) writers.push_back(open_exact("w"));
  std::vector<std::size_t> added(writers.size());
  std::latch start(static_cast<std::ptrdiff_t>(writers.size()));
  std::vector<std::thread> threads;
  std::vector<std::string> errors(writers.size());
  for (std::size_t t = 0; t < writers.size(); ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      try {
        const auto views = views_of(items);
        for (std::size_t first = 0; first < views.size(); first += 500) {
          added[t] += writers[t]->add(std::span(views).subspan(first, 500));
        }
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const std::string& error : errors) EXPECT_EQ(error, "");
  EXPECT_EQ(added[0] + added[1] + added[2] + added[3], items.size())
      << added[0] << " + " << added[1] << " + " << added[2] << " + " << added[3];
  const auto reopened = open_exact("w");
  EXPECT_EQ(reopened->entries(), items.size());
  if (in_redis()) {
    // 20000 expected items: 2^9 buckets, each its seal and then its tags.
    EXPECT_EQ(bucket_bytes("w", 512), static_cast<long long>(512 + 6 * items.size()))
        << "each tag once";
  } else {
    EXPECT_EQ(reopened->storage_bytes(), 56u + 8u * items.size()) << "each fingerprint once";
  }
  std::vector<std::uint8_t> present(items.size());
  reopened->contains(views_of(items), present);
  EXPECT_EQ(std::count(present.begin(), present.end(), 1), 20000);
}

TEST_P(ExactBackendTest, CreateOpenAndExistence) {
  EXPECT_FALSE(exact_exists("f"));
  const std::string message = error_of([&] { (void)open_exact("f"); });
  EXPECT_THROW((void)open_exact("f"), NotFound);
  EXPECT_TRUE(contains_text(message, "has no exact set")) << message;
  EXPECT_TRUE(contains_text(message, "--exact")) << message;
  // The fix it points to works for a filter that holds items too: not add --exact (refused
  // then), but a new filter built with its exact set.
  EXPECT_TRUE(contains_text(message, "an empty filter gets one if you load its items with --exact"))
      << message;
  EXPECT_TRUE(contains_text(message,
                            "one that already holds items cannot take one: build a new filter "
                            "with its exact set from the same source (redbloom load --exact "))
      << message;

  auto exact = create_exact("f", 100);
  EXPECT_TRUE(exact_exists("f"));
  EXPECT_EQ(exact->add(views_of({"x", "y"})), 2u);
  EXPECT_THROW((void)create_exact("f", 100), FilterExists);
  EXPECT_EQ(open_exact("f")->entries(), 2u) << "a refused create changes nothing";
  const auto replaced = create_exact("f", 100, /*overwrite=*/true);
  EXPECT_EQ(replaced->entries(), 0u);
  EXPECT_EQ(open_exact("f")->entries(), 0u);
  std::vector<std::uint8_t> present(1);
  replaced->contains(views_of({"x"}), present);
  EXPECT_EQ(present[0], 0);

  if (in_redis()) {
    drop_redis_exact_set(endpoint(), "f");
    EXPECT_THROW(drop_redis_exact_set(endpoint(), "f"), NotFound);
  } else {
    remove_file_exact_set(path("f"));
    EXPECT_THROW(remove_file_exact_set(path("f")), NotFound);
  }
  EXPECT_FALSE(exact_exists("f"));
}

// ---------------------------------------------------------------------------------------------
// KnownSet: the ranges add() takes, progress, clear.

TEST_P(ExactBackendTest, KnownSetAddAcceptsAnyRangeOfStrings) {
  KnownSet known = create_known("r", size_filter(600000, 0.01, Layout::blocked), true);
  const std::vector<std::string> strings = {"s1", "s2", std::string(50, 's'), ""};
  known.add(strings);
  const std::vector<std::string_view> views = {"v1", "v2", "s1"};
  known.add(views);
  known.add(std::span<const std::string_view>(views));
  // Temporaries, short (inline) and long (heap) strings, more than one internal batch (at
  // most 2^19 items, whatever the batch size).
  constexpr int kMany = (1 << 19) + 1000;
  const auto temporaries = std::views::iota(0, kMany) | std::views::transform([](int i) {
                             return i % 2 == 0
                                        ? "t" + std::to_string(i)
                                        : "temporary-" + std::string(30, 'x') + std::to_string(i);
                           });
  std::vector<std::uint64_t> progress;
  known.add(temporaries, [&](std::uint64_t done) { progress.push_back(done); });
  ASSERT_GE(progress.size(), 2u) << "one call per batch";
  EXPECT_TRUE(std::is_sorted(progress.begin(), progress.end()));
  EXPECT_EQ(std::adjacent_find(progress.begin(), progress.end()), progress.end());
  EXPECT_EQ(progress.back(), static_cast<std::uint64_t>(kMany));
  // An input-only range whose iterator hands out a reference to its one cached value.
  std::istringstream words("w1 w2 w3 w1 w4");
  known.add(std::views::istream<std::string>(words));

  const std::vector<std::string> all_known = {
      "s1", "s2", std::string(50, 's'), "", "v1", "v2", "w1", "w2", "w3", "w4"};
  EXPECT_EQ(known.find_missing(all_known, Mode::exact), std::vector<std::string>{});
  EXPECT_EQ(known.find_missing(temporaries, Mode::exact), std::vector<std::string>{})
      << "every temporary was added as itself";
  EXPECT_EQ(known.find_missing(std::vector<std::string>{"s3", "w5", "t1", "t2"}, Mode::exact),
            (std::vector<std::string>{"s3", "w5", "t1"}));
  const KnownSet::Stats stats = known.stats();
  EXPECT_EQ(stats.added, strings.size() + 2 * views.size() + kMany + 5);
  EXPECT_EQ(stats.exact_entries, 10u + kMany);
  if (!in_redis()) {
    EXPECT_EQ(stats.exact_bytes, 56u + 8u * (10u + kMany));
  }
}

TEST_P(ExactBackendTest, KnownSetClearEmptiesTheFilterAndTheCompanion) {
  KnownSet known = create_known("c", size_filter(1000, 0.01, Layout::classic), true);
  const std::vector<std::string> items = {"a", "b", "c", ""};
  known.add(items);
  EXPECT_GT(known.filter().store().count_set_bits(), 0u);
  known.clear();
  EXPECT_EQ(known.filter().store().count_set_bits(), 0u);
  EXPECT_EQ(known.stats().exact_entries, 0u);
  EXPECT_EQ(known.find_missing(items, Mode::exact), items);
  EXPECT_EQ(known.find_missing(items, Mode::bloom_only), items);
  KnownSet reopened = open_known("c", true);
  EXPECT_EQ(reopened.stats().exact_entries, 0u);
  EXPECT_EQ(reopened.find_missing(items, Mode::exact), items);
  known.add(std::vector<std::string>{"b"});
  EXPECT_EQ(known.find_missing(items, Mode::exact), (std::vector<std::string>{"a", "c", ""}));
}

TEST_P(ExactBackendTest, KnownSetWithoutCompanion) {
  const FilterParams params = size_filter(1000, 0.01, Layout::classic);
  KnownSet known = create_known("b", params, /*exact=*/false);
  EXPECT_FALSE(known.has_exact());
  EXPECT_FALSE(exact_exists("b"));
  known.add(std::vector<std::string>{"a"});
  std::vector<std::uint8_t> missing(1);
  EXPECT_THROW(known.missing_batch(views_of({"a"}), missing, Mode::exact), InvalidArgument);
  EXPECT_EQ(known.find_missing(views_of({"a", "b"})), std::vector<std::string>{"b"});
  EXPECT_FALSE(known.stats().has_exact);
  EXPECT_THROW((void)open_known("b", /*exact=*/true), NotFound);
  EXPECT_NO_THROW((void)open_known("b", /*exact=*/false));
}

TEST_P(ExactBackendTest, KnownSetCreateReplacesOrRefusesACompanion) {
  const FilterParams params = size_filter(1000, 0.01, Layout::classic);
  {
    KnownSet known = create_known("k", params, true);
    known.add(std::vector<std::string>{"old"});
  }
  EXPECT_THROW((void)create_known("k", params, true), FilterExists);
  // Replaced: the old companion described the old items, so it goes too.
  {
    KnownSet known = create_known("k", params, /*exact=*/true, /*overwrite=*/true);
    EXPECT_EQ(known.stats().exact_entries, 0u);
  }
  {
    KnownSet known = create_known("k", params, true, true);
    known.add(std::vector<std::string>{"old"});
  }
  {
    KnownSet known = create_known("k", params, /*exact=*/false, /*overwrite=*/true);
    EXPECT_FALSE(exact_exists("k")) << "a replaced filter kept a stale companion";
  }
  // A companion left without its filter: create refuses it and leaves no half-made filter.
  if (in_redis()) {
    RedisStore::drop(endpoint(), "k");
    (void)create_redis_exact_set(endpoint(), "k", 100);
  } else {
    std::filesystem::remove(path("k"));
    (void)create_file_exact_set(path("k"));
  }
  EXPECT_THROW((void)create_known("k", params, true), FilterExists);
  EXPECT_THROW((void)open_known("k", false), NotFound) << "a refused create left a filter";
}

INSTANTIATE_TEST_SUITE_P(Backends, ExactBackendTest,
                         ::testing::Values(Backend::file, Backend::redis, Backend::cluster),
                         backend_name);

// ---------------------------------------------------------------------------------------------
// The file companion.

std::uint64_t size_of(const std::string& path) {
  return std::filesystem::file_size(path);
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

TEST(FileExactSet, FormatIsAHeaderThenEightBytesPerItem) {
  TempDir dir;
  const std::string filter = dir.file("f.rbf");
  const auto exact = create_file_exact_set(filter);
  EXPECT_EQ(size_of(filter + ".exact"), 56u);
  EXPECT_EQ(exact->add(views_of({"a", "b", "a"})), 2u);
  EXPECT_EQ(size_of(filter + ".exact"), 56u + 16u);
  EXPECT_EQ(exact->storage_bytes(), 72u);
  std::ifstream in(filter + ".exact", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(bytes.substr(0, 8), "RBEXACT1");
  EXPECT_EQ(bytes[8], 2) << "version 2";
  EXPECT_EQ(bytes[24], 2) << "two records committed";
  std::set<std::uint64_t> stored;
  for (std::size_t at = 56; at + 8 <= bytes.size(); at += 8) {
    std::uint64_t f = 0;
    for (int b = 7; b >= 0; --b) f = (f << 8) | static_cast<std::uint8_t>(bytes[at + b]);
    stored.insert(f);
  }
  EXPECT_EQ(stored, (std::set<std::uint64_t>{exact_fingerprint("a"), exact_fingerprint("b")}));
  EXPECT_NE(exact_fingerprint(""), exact_fingerprint(std::string(1, '\0')));
  EXPECT_NE(exact_fingerprint("a"), exact_fingerprint("a\n"));
}

TEST(FileExactSet, SeesWhatAnotherObjectAppendedBeforeAdding) {
  TempDir dir;
  const std::string filter = dir.file("f.rbf");
  const auto first = create_file_exact_set(filter);
  const auto second = open_file_exact_set(filter);
  EXPECT_EQ(first->add(views_of({"a", "b"})), 2u);
  // second opened before: it catches up under the lock, so a and b are not stored twice.
  EXPECT_EQ(second->add(views_of({"a", "b", "c"})), 1u);
  EXPECT_EQ(second->entries(), 3u);
  EXPECT_EQ(first->add(views_of({"c", "d"})), 1u);
  EXPECT_EQ(first->entries(), 4u);
  EXPECT_EQ(size_of(filter + ".exact"), 56u + 4u * 8u) << "an item was stored twice";
  EXPECT_EQ(open_file_exact_set(filter)->entries(), 4u);
  std::vector<std::uint8_t> present(4);
  second->add(views_of({"e"}));
  second->contains(views_of({"a", "b", "c", "d"}), present);
  EXPECT_EQ(present, (std::vector<std::uint8_t>{1, 1, 1, 1}));
}

// diff --exact opens the companion read-only: lookups work (and see later appends by a
// writer), writes fail with an error instead of changing anything.
TEST(FileExactSet, ReadOnlyOpenAnswersAndRefusesWrites) {
  TempDir dir;
  const std::string filter = dir.file("f.rbf");
  const auto writer = create_file_exact_set(filter);
  writer->add(views_of({"a", "b"}));
  const auto reader = open_file_exact_set(filter, /*writable=*/false);
  writer->add(views_of({"c"}));
  std::vector<std::uint8_t> present(4);
  reader->contains(views_of({"a", "b", "c", "z"}), present);
  EXPECT_EQ(present, (std::vector<std::uint8_t>{1, 1, 1, 0}));
  EXPECT_THROW(reader->add(views_of({"new"})), StorageError);
  EXPECT_EQ(size_of(filter + ".exact"), 56u + 3u * 8u);
}

TEST(FileExactSet, SeesAClearByAnotherObject) {
  TempDir dir;
  const std::string filter = dir.file("f.rbf");
  const auto first = create_file_exact_set(filter);
  const auto second = open_file_exact_set(filter);
  EXPECT_EQ(first->add(views_of({"a", "b", "c"})), 3u);
  EXPECT_EQ(second->add(views_of({"a"})), 0u);
  second->clear();
  // first's view (3 items, a longer file) is stale: its next add must start from the file.
  EXPECT_EQ(first->add(views_of({"a", "z"})), 2u);
  EXPECT_EQ(first->entries(), 2u);
  EXPECT_EQ(size_of(filter + ".exact"), 56u + 2u * 8u);
  std::vector<std::uint8_t> present(3);
  first->contains(views_of({"a", "b", "z"}), present);
  EXPECT_EQ(present, (std::vector<std::uint8_t>{1, 0, 1}));
  EXPECT_EQ(open_file_exact_set(filter)->entries(), 2u);
  // Cleared and grown past what first had read: first must not take the new records for
  // appends to the old ones.
  second->clear();
  EXPECT_EQ(second->add(views_of({"p", "q", "r", "s"})), 4u);
  first->contains(views_of({"a", "z", "p"}), present);
  EXPECT_EQ(present, (std::vector<std::uint8_t>{0, 0, 1}));
  EXPECT_EQ(first->entries(), 4u);
  EXPECT_EQ(first->add(views_of({"a", "s"})), 1u);
  EXPECT_EQ(second->entries(), 5u);
}

// Two writers creating the companion of one new filter (two `load --exact` at once): the loser
// of the create opens the winner's, which must never look half-written.
TEST(FileExactSet, RacingCreatorsNeverSeeAHalfWrittenFile) {
  TempDir dir;
  for (int round = 0; round < 200; ++round) {
    const std::string filter = dir.file(testing::numbered("f", round));
    EXPECT_EQ(race_creators(
                  4, round, [&] { (void)create_file_exact_set(filter); },
                  [&] { (void)open_file_exact_set(filter); }),
              1);
  }
}

// A set opened while another object appends sees whole records only, and a long-lived one
// sees the appends made after it was opened (an item in the filter is in the companion).
TEST(FileExactSet, ReadersSeeWholeRecordsAndLaterAppends) {
  TempDir dir;
  const std::string filter = dir.file("f.rbf");
  const auto reader = create_file_exact_set(filter);
  std::atomic<bool> done{false};
  std::string writer_error;
  std::thread writer([&] {
    try {
      const auto exact = open_file_exact_set(filter);
      for (int batch = 0; batch < 100; ++batch) {
        std::vector<std::string> items;
        for (int i = 0; i < 1001; ++i)
          items.push_back(std::to_string(batch) + "/" + std::to_string(i));
        exact->add(views_of(items));
      }
    } catch (const std::exception& e) {
      writer_error = e.what();
    }
    done = true;
  });
  int opened = 0;
  std::string reader_error;
  // Paced: back-to-back shared locks could keep the writer waiting (flock is not fair).
  for (int i = 0; i < 20000 && !done; ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    try {
      const auto exact = open_file_exact_set(filter);
      EXPECT_EQ(exact->entries() % 1001, 0u) << "a batch seen in part";
      ++opened;
    } catch (const std::exception& e) {
      reader_error = e.what();
      break;
    }
  }
  writer.join();
  EXPECT_EQ(writer_error, "");
  EXPECT_EQ(reader_error, "") << "after " << opened << " opens";
  std::vector<std::uint8_t> present(2);
  reader->contains(views_of({"0/0", "99/1000"}), present);
  EXPECT_EQ(present, (std::vector<std::uint8_t>{1, 1})) << "a long-lived set missed appends";
  EXPECT_EQ(reader->entries(), 100u * 1001u);
}

TEST(FileExactSet, DamagedAndForeignFilesAreFormatErrors) {
  TempDir dir;
  const std::string filter = dir.file("f.rbf");
  const std::string companion = filter + ".exact";
  {
    const auto exact = create_file_exact_set(filter);
    exact->add(views_of({"a", "b", "c"}));
  }
  // Records lost from the end (a truncated file).
  ASSERT_EQ(::truncate(companion.c_str(), 56 + 3 * 8 - 3), 0);
  std::string message = error_of([&] { (void)open_file_exact_set(filter); });
  EXPECT_THROW((void)open_file_exact_set(filter), FormatError);
  EXPECT_TRUE(contains_text(message, "fewer records than its header commits")) << message;
  EXPECT_TRUE(contains_text(message, companion)) << message;
  // Shorter than the header.
  ASSERT_EQ(::truncate(companion.c_str(), 10), 0);
  message = error_of([&] { (void)open_file_exact_set(filter); });
  EXPECT_THROW((void)open_file_exact_set(filter), FormatError);
  EXPECT_TRUE(contains_text(message, "too short")) << message;
  // Not one at all: text, a filter file, an unknown version, an older one.
  write_file(companion, "just some text that is long enough\n");
  message = error_of([&] { (void)open_file_exact_set(filter); });
  EXPECT_THROW((void)open_file_exact_set(filter), FormatError);
  EXPECT_TRUE(contains_text(message, "not a redbloom exact set")) << message;
  (void)Filter::create_file(dir.file("other.rbf"), size_filter(100, 0.01, Layout::classic));
  std::filesystem::copy_file(dir.file("other.rbf"), companion,
                             std::filesystem::copy_options::overwrite_existing);
  EXPECT_THROW((void)open_file_exact_set(filter), FormatError);
  write_file(companion, std::string("RBEXACT1\x04\0\0\0\0\0\0\0", 16));
  message = error_of([&] { (void)open_file_exact_set(filter); });
  EXPECT_TRUE(contains_text(message, "version 4 is unknown")) << message;
  write_file(companion, std::string("RBEXACT1\x01\0\0\0\0\0\0\0", 16) + std::string(24, 'x'));
  message = error_of([&] { (void)open_file_exact_set(filter); });
  EXPECT_TRUE(contains_text(message, "version 1 (from an older redbloom")) << message;
  EXPECT_TRUE(contains_text(message, "rebuild it")) << message;
  // Never deleted when it is not one; replaced only when asked.
  write_file(companion, "not mine\n");
  EXPECT_THROW(remove_file_exact_set(filter), FormatError);
  EXPECT_TRUE(std::filesystem::exists(companion));
  EXPECT_THROW((void)create_file_exact_set(filter), FilterExists);
  EXPECT_EQ(size_of(companion), 9u);
  EXPECT_EQ(create_file_exact_set(filter, /*overwrite=*/true)->entries(), 0u);
}

// Any 8 bytes overwritten, in a record or in the header, make the set an error that says it
// is damaged, for lookups and for info alike: never a known item answered "absent".
TEST(FileExactSet, OverwrittenBytesAreDamageNeverAbsence) {
  TempDir dir;
  const std::string filter = dir.file("f.rbf");
  const std::string companion = filter + ".exact";
  const auto items = make_items(1000, "i-");
  {
    const auto exact = create_file_exact_set(filter);
    exact->add(views_of(items));
  }
  const std::string pristine = [&] {
    std::ifstream in(companion, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }();
  for (const std::size_t at : {std::size_t{0} + 16, std::size_t{24}, std::size_t{56},
                               std::size_t{56 + 8 * 500}, pristine.size() - 8}) {
    SCOPED_TRACE(at);
    std::string bytes = pristine;
    for (std::size_t b = 0; b < 8; ++b) bytes[at + b] = static_cast<char>(~bytes[at + b]);
    write_file(companion, bytes);
    const std::string message = error_of([&] {
      const auto exact = open_file_exact_set(filter, /*writable=*/false);
      std::vector<std::uint8_t> present(items.size());
      exact->contains(views_of(items), present);
    });
    EXPECT_TRUE(contains_text(message, "damaged")) << message;
    EXPECT_THROW((void)summarize_file_exact_set(filter), FormatError);
  }
  write_file(companion, pristine);
  EXPECT_EQ(summarize_file_exact_set(filter).entries, 1000u);
}

// A companion belongs to the filter it was made for: one left by a filter that was replaced is
// refused, and removed as stale only while it is not the current filter's (so a racing creator
// never removes what another process just made for the new filter).
TEST(FileExactSet, ACompanionIsBoundToItsFilter) {
  TempDir dir;
  const std::string path = dir.file("f.rbf");
  const Location where = Location::file(path);
  const FilterParams params = size_filter(1000, 0.01, Layout::classic);
  {
    Filter old = Filter::create(where, params);
    (void)exact_set_for_writing(where, old, /*create=*/true)->add(views_of({"old"}));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(2));  // another creation time
  Filter replaced = Filter::create(where, params, /*overwrite=*/true);
  const std::string message = error_of([&] { (void)open_exact_set(where, replaced); });
  EXPECT_TRUE(contains_text(message, "belongs to another filter")) << message;
  // Stale: removed; then a writer makes the new filter's, and that one stays.
  EXPECT_TRUE(remove_stale_file_exact_set(path));
  const auto current = exact_set_for_writing(where, replaced, /*create=*/true);
  current->add(views_of({"new"}));
  EXPECT_FALSE(remove_stale_file_exact_set(path));
  drop_stale_exact_set(where, replaced);
  EXPECT_EQ(open_exact_set(where, replaced)->entries(), 1u);
  // A stale one met by a writer of an empty filter is replaced; with items, refused.
  {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    Filter third = Filter::create(where, params, /*overwrite=*/true);
    EXPECT_EQ(exact_set_for_writing(where, third, /*create=*/false), nullptr) << "stale one kept";
    Filter fourth = Filter::create(where, params, /*overwrite=*/true);
    (void)exact_set_for_writing(where, fourth, /*create=*/true)->add(views_of({"x"}));
    fourth.add("x");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    Filter fifth = Filter::create(where, params, /*overwrite=*/true);
    fifth.add("y");
    const std::string refused =
        error_of([&] { (void)exact_set_for_writing(where, fifth, /*create=*/true); });
    EXPECT_TRUE(contains_text(refused, "belongs to another filter")) << refused;
  }
}

TEST(FileExactSet, FalseMatchProbabilityIsEntriesOver2To64) {
  TempDir dir;
  const auto exact = create_file_exact_set(dir.file("f.rbf"));
  EXPECT_EQ(exact->false_match_probability(), 0.0);
  std::vector<std::string> items;
  for (int i = 0; i < 1000; ++i) items.push_back("item" + std::to_string(i));
  exact->add(views_of(items));
  EXPECT_DOUBLE_EQ(exact->false_match_probability(), 1000.0 / std::ldexp(1.0, 64));
  EXPECT_GT(exact->false_match_probability(), 1e-17);
  EXPECT_LT(exact->false_match_probability(), 1e-16);
}

// info's summary of a file companion, from its header and size, equals the open set's.
TEST(FileExactSet, SummaryWithoutOpeningEqualsTheOpenSets) {
  TempDir dir;
  const std::string filter = dir.file("f.rbf");
  EXPECT_THROW((void)summarize_file_exact_set(filter), NotFound);
  const auto exact = create_file_exact_set(filter);
  exact->add(views_of(make_items(1234, "s-")));
  const ExactSetSummary read = summarize_file_exact_set(filter);
  const ExactSetSummary opened = summarize(*open_file_exact_set(filter, false));
  EXPECT_EQ(read.entries, 1234u);
  EXPECT_EQ(read.entries, opened.entries);
  EXPECT_EQ(read.storage_bytes, opened.storage_bytes);
  EXPECT_EQ(read.false_match_probability, opened.false_match_probability);
  EXPECT_EQ(read.location, opened.location);
  write_file(filter + ".exact", "not an exact set at all");
  EXPECT_THROW((void)summarize_file_exact_set(filter), FormatError);
}

// ---------------------------------------------------------------------------------------------
// The Redis companion.

class RedisExactSetTest : public ::testing::Test {
 protected:
  [[nodiscard]] RedisEndpoint endpoint() const { return server_.endpoint(); }
  [[nodiscard]] std::vector<std::string> keys() const {
    std::vector<std::string> out;
    for (const RedisReply& key : server_.command({"KEYS", "*"}).elements) out.push_back(key.text);
    std::sort(out.begin(), out.end());
    return out;
  }
  RedisServer server_;
};

TEST_F(RedisExactSetTest, KeyLayoutAndBucketCount) {
  const auto exact = create_redis_exact_set(endpoint(), "f", 1000);
  EXPECT_EQ(server_.command({"TYPE", "f:exact"}).text, "hash");
  EXPECT_EQ(server_.command({"HGET", "f:exact", "format"}).text, "redbloom-exact");
  EXPECT_EQ(server_.command({"HGET", "f:exact", "version"}).text, "2");
  EXPECT_EQ(server_.command({"HGET", "f:exact", "state"}).text, "ready");
  EXPECT_EQ(server_.command({"HGET", "f:exact", "tag_bytes"}).text, "6");
  // About 64 tags per bucket at the expected size: 1000 items -> 16 buckets.
  EXPECT_EQ(server_.command({"HGET", "f:exact", "bucket_bits"}).text, "4");
  std::vector<std::string> items;
  for (int i = 0; i < 1000; ++i) items.push_back("item" + std::to_string(i));
  EXPECT_EQ(exact->add(views_of(items)), 1000u);
  EXPECT_EQ(server_.command({"HGET", "f:exact", "entries"}).text, "1000");
  // Every bucket: its seal (one zero byte), then 6-byte tags.
  long long bytes = 0;
  for (std::uint64_t b = 0; b < 16; ++b) {
    const long long length = server_.integer({"STRLEN", bucket_key("f", b)});
    EXPECT_EQ(length % 6, 1);
    EXPECT_GT(length, 1) << "bucket " << b << " empty at 1000 items";
    EXPECT_EQ(server_.command({"GETRANGE", bucket_key("f", b), "0", "0"}).text,
              std::string(1, '\0'));
    bytes += length;
  }
  EXPECT_EQ(bytes, 6 * 1000 + 16);
  EXPECT_EQ(keys().size(), 17u);
  EXPECT_GT(exact->storage_bytes(), 6000u);
  EXPECT_TRUE(contains_text(exact->location(), "f:exact")) << exact->location();

  // Small and empty expectations still work (one bucket).
  const auto tiny = create_redis_exact_set(endpoint(), "t", 0);
  EXPECT_EQ(server_.command({"HGET", "t:exact", "bucket_bits"}).text, "0");
  EXPECT_EQ(tiny->add(views_of(items)), 1000u);
  EXPECT_EQ(server_.integer({"STRLEN", bucket_key("t", 0)}), 6001);

  drop_redis_exact_set(endpoint(), "f");
  drop_redis_exact_set(endpoint(), "t");
  EXPECT_EQ(keys(), std::vector<std::string>{});
}

TEST_F(RedisExactSetTest, FalseMatchProbabilityIsPerBucketOver2To48) {
  const auto exact = create_redis_exact_set(endpoint(), "f", 10000);
  const int bits = std::stoi(server_.command({"HGET", "f:exact", "bucket_bits"}).text);
  EXPECT_EQ(bits, 8);  // 64 << 8 = 16384 >= 10000
  EXPECT_EQ(exact->false_match_probability(), 0.0);
  std::vector<std::string> items;
  for (int i = 0; i < 10000; ++i) items.push_back("item" + std::to_string(i));
  exact->add(views_of(items));
  const double expected = 10000.0 / std::ldexp(1.0, bits) / std::ldexp(1.0, 48);
  EXPECT_DOUBLE_EQ(exact->false_match_probability(), expected);
  EXPECT_GT(exact->false_match_probability(), 1e-13);
  EXPECT_LT(exact->false_match_probability(), 1e-12);
}

TEST_F(RedisExactSetTest, ForeignKeysAreClearErrorsAndNeverDeleted) {
  ASSERT_EQ(server_.command({"SET", "s:exact", "hello"}).text, "OK");
  ASSERT_EQ(server_.integer({"HSET", "h:exact", "owner", "someone else"}), 1);
  ASSERT_EQ(server_.integer({"RPUSH", "l:exact", "job"}), 1);
  for (const std::string name : {"s", "h", "l"}) {
    SCOPED_TRACE(name);
    const std::string message = error_of([&] { (void)open_redis_exact_set(endpoint(), name); });
    EXPECT_TRUE(contains_text(message, "'" + name + ":exact'")) << message;
    EXPECT_TRUE(contains_text(message, "not a redbloom exact set")) << message;
    EXPECT_THROW((void)open_redis_exact_set(endpoint(), name), FormatError);
    EXPECT_THROW(drop_redis_exact_set(endpoint(), name), FormatError);
    for (const bool overwrite : {false, true}) {
      const std::string created =
          error_of([&] { (void)create_redis_exact_set(endpoint(), name, 10, overwrite); });
      EXPECT_TRUE(contains_text(created, "not a redbloom exact set")) << created;
    }
  }
  EXPECT_EQ(server_.command({"GET", "s:exact"}).text, "hello");
  EXPECT_EQ(server_.command({"HGETALL", "h:exact"}).elements.size(), 2u);
  EXPECT_EQ(server_.integer({"LLEN", "l:exact"}), 1);
  EXPECT_EQ(keys(), (std::vector<std::string>{"h:exact", "l:exact", "s:exact"}));
}

TEST_F(RedisExactSetTest, AFilterNamedLikeACompanionIsNeitherTakenNorDeleted) {
  // A filter "a:exact" has its metadata where filter "a" keeps its companion's.
  const FilterParams params = size_filter(1000, 0.01, Layout::classic);
  Filter other = Filter::create_redis(endpoint(), "a:exact", params);
  other.add("kept");
  EXPECT_FALSE(redis_exact_set_exists(endpoint(), "a")) << "a filter is not a companion";
  EXPECT_THROW((void)KnownSet::create_redis(endpoint(), "a", params, /*exact=*/true), FormatError);
  EXPECT_THROW((void)KnownSet::create_redis(endpoint(), "a", params, true, /*overwrite=*/true),
               FormatError);
  KnownSet plain = KnownSet::create_redis(endpoint(), "a", params, /*exact=*/false);
  plain.add(std::vector<std::string>{"x"});
  EXPECT_THROW((void)KnownSet::open_redis(endpoint(), "a", /*exact=*/true), FormatError);
  RedisStore::drop(endpoint(), "a");
  EXPECT_TRUE(Filter::open_redis(endpoint(), "a:exact").contains("kept"));
}

// Two `load --exact` into one new filter: one creates the companion, the other opens it, and
// must never find its metadata half written.
TEST_F(RedisExactSetTest, RacingCreatorsNeverSeeHalfWrittenMetadata) {
  const RedisEndpoint e = endpoint();
  for (int round = 0; round < 100; ++round) {
    const std::string name = testing::numbered("r", round);
    EXPECT_EQ(race_creators(
                  4, round, [&] { (void)create_redis_exact_set(e, name, 1000); },
                  [&] { (void)open_redis_exact_set(e, name); }),
              1);
  }
}

// Adds send EVALSHA; a server that lost its script cache (SCRIPT FLUSH, a restart, a promoted
// replica) answers NOSCRIPT, and those buckets go again as EVAL.
TEST_F(RedisExactSetTest, AServerWithoutTheScriptGetsItAgain) {
  const auto exact = create_redis_exact_set(endpoint(), "f", 1000);
  const long long evals = server_.calls("eval");  // create's claim of the name is one
  EXPECT_EQ(exact->add(views_of({"a", "b", "c"})), 3u);
  EXPECT_EQ(server_.calls("eval"), evals);
  EXPECT_GT(server_.calls("evalsha"), 0);
  ASSERT_EQ(server_.command({"SCRIPT", "FLUSH"}).text, "OK");
  EXPECT_EQ(exact->add(views_of({"c", "d", "e"})), 2u);
  EXPECT_GT(server_.calls("eval"), evals) << "the NOSCRIPT buckets went again as EVAL";
  EXPECT_EQ(exact->add(views_of({"e", "f"})), 1u);
  EXPECT_EQ(exact->entries(), 6u);
}

TEST_F(RedisExactSetTest, DamagedBucketsAndMetadataAreErrors) {
  {
    const auto exact = create_redis_exact_set(endpoint(), "f", 0);
    exact->add(views_of({"a", "b"}));
  }
  ASSERT_EQ(server_.integer({"APPEND", bucket_key("f", 0), "xyz"}), 16);
  const auto exact = open_redis_exact_set(endpoint(), "f");
  std::vector<std::uint8_t> present(1);
  const std::string message = error_of([&] { exact->contains(views_of({"a"}), present); });
  EXPECT_TRUE(contains_text(message, "not a whole number of tags")) << message;
  EXPECT_THROW(exact->contains(views_of({"a"}), present), StorageError);
  const std::string add_message = error_of([&] { exact->add(views_of({"c"})); });
  EXPECT_TRUE(contains_text(add_message, "'" + bucket_key("f", 0) + "' is not a whole number"))
      << add_message;
  EXPECT_EQ(server_.integer({"STRLEN", bucket_key("f", 0)}), 16) << "nothing appended";

  ASSERT_EQ(server_.integer({"HSET", "f:exact", "bucket_bits", "99"}), 0);
  EXPECT_THROW((void)open_redis_exact_set(endpoint(), "f"), FormatError);
  ASSERT_EQ(server_.integer({"HSET", "f:exact", "bucket_bits", "0", "version", "3"}), 0);
  EXPECT_THROW((void)open_redis_exact_set(endpoint(), "f"), FormatError);
  EXPECT_THROW((void)open_redis_exact_set(endpoint(), "bad{name}"), InvalidArgument);
}

// A bucket that vanishes (evicted, deleted) loses the items in it: the set must say so rather
// than answer "absent", which in a diff would report live items as orphans. That holds after
// an APPEND recreated the bucket, too (it has no seal then), and after a reopen.
TEST_F(RedisExactSetTest, AVanishedBucketIsAnErrorNamingIt) {
  std::vector<std::string> items;
  for (int i = 0; i < 1000; ++i) items.push_back("item" + std::to_string(i));
  const auto exact = create_redis_exact_set(endpoint(), "f", 1000);
  exact->add(views_of(items));
  const std::string lost = bucket_key("f", 3);
  ASSERT_EQ(server_.integer({"DEL", lost}), 1);
  std::vector<std::uint8_t> present(items.size());
  const std::string missing = error_of([&] { exact->contains(views_of(items), present); });
  EXPECT_TRUE(contains_text(missing, "'" + lost + "' is missing")) << missing;
  EXPECT_THROW(exact->contains(views_of(items), present), StorageError);
  // An add checks every bucket of its script before it writes any: none grows.
  const auto total_bytes = [&] {
    long long bytes = 0;
    for (std::uint64_t b = 0; b < 16; ++b) bytes += server_.integer({"STRLEN", bucket_key("f", b)});
    return bytes;
  };
  const long long before = total_bytes();
  std::vector<std::string> fresh;
  for (int i = 0; i < 1000; ++i) fresh.push_back("fresh" + std::to_string(i));
  const std::string add_missing = error_of([&] { exact->add(views_of(fresh)); });
  EXPECT_TRUE(contains_text(add_missing, "'" + lost + "' is missing")) << add_missing;
  EXPECT_EQ(total_bytes(), before);
  // What a writer that raced the loss appends recreates the bucket without its seal.
  ASSERT_EQ(server_.integer({"APPEND", lost, "abcdef"}), 6);
  const auto reopened = open_redis_exact_set(endpoint(), "f");
  const std::string unsealed = error_of([&] { reopened->contains(views_of(items), present); });
  EXPECT_TRUE(contains_text(unsealed, "'" + lost + "' has no seal")) << unsealed;
  const std::string add_unsealed = error_of([&] { reopened->add(views_of(fresh)); });
  EXPECT_TRUE(contains_text(add_unsealed, "'" + lost + "' has no seal")) << add_unsealed;
  EXPECT_THROW(reopened->add(views_of(items)), StorageError);
  // Clearing makes it whole again, empty.
  reopened->clear();
  EXPECT_EQ(server_.integer({"STRLEN", lost}), 1);
  reopened->contains(views_of(items), present);
  EXPECT_EQ(std::count(present.begin(), present.end(), 1), 0);
}

// An add's scripts on one server each count what they store, so an add that fails part way
// (here: one unit's bucket is gone; the other units' scripts ran) raises `entries` by exactly
// the tags it stored. Counted once after all the scripts, the stored ones went uncounted, and
// adding them again never counted them either.
TEST_F(RedisExactSetTest, AnAddThatFailsPartWayCountsWhatItStored) {
  const auto exact = create_redis_exact_set(endpoint(), "f", 100000);
  ASSERT_EQ(server_.command({"HGET", "f:exact", "bucket_bits"}).text, "11");
  const std::uint64_t buckets = 2048;  // 32 script units of 64 buckets
  const auto tags_stored = [&] {
    long long tags = 0;
    for (std::uint64_t b = 0; b < buckets; ++b) {
      const long long bytes = server_.integer({"STRLEN", bucket_key("f", b)});
      if (bytes > 0) tags += (bytes - 1) / 6;
    }
    return tags;
  };
  std::vector<std::string> items;
  for (int i = 0; i < 20000; ++i) items.push_back("item" + std::to_string(i));
  ASSERT_EQ(exact->add(views_of(items)), 20000u);
  const std::string lost = bucket_key("f", 1500);
  ASSERT_EQ(server_.integer({"DEL", lost}), 1);
  const long long after_loss = tags_stored();
  std::vector<std::string> fresh;
  for (int i = 0; i < 20000; ++i) fresh.push_back("fresh" + std::to_string(i));
  const std::string message = error_of([&] { exact->add(views_of(fresh)); });
  EXPECT_TRUE(contains_text(message, "'" + lost + "' is missing")) << message;
  const long long stored = tags_stored();
  ASSERT_GT(stored, after_loss) << "the other units' scripts ran";
  // (The deleted bucket's tags are gone but still counted: compare what this add stored.)
  EXPECT_EQ(static_cast<long long>(exact->entries()) - 20000, stored - after_loss);
  EXPECT_EQ(exact->entries(), std::stoull(server_.command({"HGET", "f:exact", "entries"}).text));
}

// Version 1 sets have no seal: a missing bucket is an empty one, and they still work.
TEST_F(RedisExactSetTest, Version1SetsWithoutSealsStillWork) {
  std::vector<std::string> items;
  for (int i = 0; i < 1000; ++i) items.push_back("item" + std::to_string(i));
  const auto first = std::span<const std::string>(items).first(500);
  { create_redis_exact_set(endpoint(), "f", 1000)->add(views_of({first.begin(), first.end()})); }
  for (std::uint64_t b = 0; b < 16; ++b) {
    const std::string key = bucket_key("f", b);
    const std::string tags = server_.command({"GETRANGE", key, "1", "-1"}).text;
    if (tags.empty()) {
      ASSERT_EQ(server_.integer({"DEL", key}), 1);
    } else {
      ASSERT_EQ(server_.command({"SET", key, tags}).text, "OK");
    }
  }
  ASSERT_EQ(server_.integer({"HSET", "f:exact", "version", "1"}), 0);
  ASSERT_EQ(server_.integer({"HDEL", "f:exact", "state"}), 1);
  const auto exact = open_redis_exact_set(endpoint(), "f");
  std::vector<std::uint8_t> present(items.size());
  exact->contains(views_of(items), present);
  EXPECT_EQ(std::count(present.begin(), present.begin() + 500, 1), 500);
  EXPECT_EQ(std::count(present.begin() + 500, present.end(), 1), 0);
  EXPECT_EQ(exact->add(views_of(items)), 500u);
  exact->contains(views_of(items), present);
  EXPECT_EQ(std::count(present.begin(), present.end(), 1), 1000);
}

// A creation that died before its buckets were sealed is reported, not used.
TEST_F(RedisExactSetTest, AnUnfinishedCreationIsReported) {
  { (void)create_redis_exact_set(endpoint(), "f", 1000); }
  ASSERT_EQ(server_.integer({"HSET", "f:exact", "state", "creating"}), 0);
  const auto start = std::chrono::steady_clock::now();
  const std::string message = error_of(
      [&] { (void)open_redis_exact_set(endpoint(), "f", std::chrono::milliseconds(2000)); });
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2000));
  EXPECT_TRUE(contains_text(message, "is still being created")) << message;
  EXPECT_TRUE(contains_text(message, "after waiting 2s")) << message;
  // By default open waits longer than a creator that finishes a few seconds later.
  std::thread creator([&] {
    std::this_thread::sleep_for(std::chrono::seconds(3));
    (void)server_.integer({"HSET", "f:exact", "state", "ready"});
  });
  const auto waited_from = std::chrono::steady_clock::now();
  EXPECT_NO_THROW((void)open_redis_exact_set(endpoint(), "f"));
  EXPECT_GE(std::chrono::steady_clock::now() - waited_from, std::chrono::seconds(3));
  creator.join();
  drop_redis_exact_set(endpoint(), "f");
  EXPECT_EQ(keys(), std::vector<std::string>{});
}

// A filter opened with a short wait for its creator gives its exact set the same wait: a set
// whose creation never finishes is reported after that wait, not after the default 30 s.
TEST_F(RedisExactSetTest, TheFilterOpenedWithAShortWaitGivesItToItsExactSet) {
  const Location where = Location::redis({endpoint()}, "f");
  {
    const Filter made = Filter::create(where, size_filter(1000, 0.01, Layout::blocked));
    (void)create_exact_set(where, made);
  }
  ASSERT_EQ(server_.integer({"HSET", "f:exact", "state", "creating"}), 0);
  OpenOptions options;
  options.wait_for_creator = std::chrono::milliseconds(300);
  const Filter filter = Filter::open(where, options);
  EXPECT_EQ(filter.wait_for_creator(), std::chrono::milliseconds(300));
  for (const bool through_writing : {false, true}) {
    SCOPED_TRACE(through_writing);
    const auto start = std::chrono::steady_clock::now();
    EXPECT_THROW(
        {
          if (through_writing)
            (void)exact_set_for_writing(where, filter, /*create=*/false);
          else
            (void)open_exact_set(where, filter);
        },
        IncompleteFilter);
    // Well under the default wait even on a loaded machine.
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  }
}

// A key of another program at a bucket's name stops the creation, is left as it was, and
// nothing of the set stays behind (so no later drop can mistake that key for a bucket).
TEST_F(RedisExactSetTest, AForeignKeyAtABucketNameStopsCreateAndIsKept) {
  const std::string theirs = bucket_key("f", 5);  // 1000 items: 16 buckets
  ASSERT_EQ(server_.command({"SET", theirs, "their value"}).text, "OK");
  for (const bool overwrite : {false, true}) {
    SCOPED_TRACE(overwrite);
    const std::string message =
        error_of([&] { (void)create_redis_exact_set(endpoint(), "f", 1000, overwrite); });
    EXPECT_TRUE(contains_text(message, "'" + theirs + "' already exists")) << message;
    EXPECT_TRUE(contains_text(message, "nothing of the exact set was kept")) << message;
    EXPECT_THROW((void)create_redis_exact_set(endpoint(), "f", 1000, overwrite), FilterExists);
    EXPECT_EQ(keys(), std::vector<std::string>{theirs});
    EXPECT_FALSE(redis_exact_set_exists(endpoint(), "f"));
  }
  EXPECT_THROW(drop_redis_exact_set(endpoint(), "f"), NotFound);
  EXPECT_EQ(server_.command({"GET", theirs}).text, "their value");
}

// A creator that died part way never checked the buckets after that point: dropping its set
// removes the bare seals it wrote, not a key of another program at a later bucket's name.
TEST_F(RedisExactSetTest, DroppingAnUnfinishedCreationKeepsForeignKeys) {
  { (void)create_redis_exact_set(endpoint(), "f", 1000); }
  ASSERT_EQ(server_.integer({"HSET", "f:exact", "state", "creating"}), 0);
  const std::string theirs = bucket_key("f", 9);
  const std::string their_hash = bucket_key("f", 10);
  ASSERT_EQ(server_.command({"SET", theirs, "their value"}).text, "OK");
  ASSERT_EQ(server_.integer({"DEL", their_hash}), 1);
  ASSERT_EQ(server_.integer({"HSET", their_hash, "field", "value"}), 1);
  drop_redis_exact_set(endpoint(), "f");
  EXPECT_EQ(keys(), (std::vector<std::string>{their_hash, theirs}));  // sorted
  EXPECT_EQ(server_.command({"GET", theirs}).text, "their value");
}

TEST_F(RedisExactSetTest, DropRemovesEveryCompanionKeyAndNothingElse) {
  const FilterParams params = size_filter(5000, 0.01, Layout::classic);
  KnownSet known = KnownSet::create_redis(endpoint(), "u", params, /*exact=*/true);
  std::vector<std::string> items;
  for (int i = 0; i < 5000; ++i) items.push_back(testing::numbered("u", i));
  known.add(items);
  ASSERT_EQ(server_.command({"SET", "u:exactly-mine", "x"}).text, "OK");
  const auto before = keys();
  drop_redis_exact_set(endpoint(), "u");
  for (const std::string& key : keys()) {
    EXPECT_FALSE(key.starts_with("u:exact:") || key == "u:exact") << key;
  }
  EXPECT_EQ(keys(), (std::vector<std::string>{"u", "u:bits:{u:0}", "u:exactly-mine"}));
  EXPECT_GT(before.size(), 3u);
}

// ---------------------------------------------------------------------------------------------
// The Redis companion in a cluster.

// The add script is loaded on every master before the first add: none of its calls comes back
// NOSCRIPT to go again as EVAL (loaded on the metadata's master alone, the calls to the
// others in the first add all did).
TEST(ClusterExactSet, TheAddScriptIsLoadedOnEveryMaster) {
  RedisCluster cluster(3, 0);
  const auto exact = create_redis_exact_set(cluster.endpoint(), "sl", 20000);
  const auto total = [&](const std::string& command) {
    long long calls = 0;
    for (std::size_t m = 0; m < 3; ++m) calls += cluster.node(m).calls(command);
    return calls;
  };
  const long long evals = total("eval");  // create's claim of the name
  std::vector<std::string> items;
  for (int i = 0; i < 20000; ++i) items.push_back("sl" + std::to_string(i));
  EXPECT_EQ(exact->add(views_of(items)), 20000u);
  EXPECT_EQ(total("eval"), evals);
  for (std::size_t m = 0; m < 3; ++m) EXPECT_GT(cluster.node(m).calls("evalsha"), 0) << m;
}

// Bucket slots move to the next master one at a time while items are added and looked up.
// Each bucket command is its own unit, re-sent alone where its key went: no item is lost or
// counted twice, and no bucket gets a second copy (an APPEND run at a node its key had not
// reached yet would start one, and the bytes below would show it).
TEST(ClusterExactSet, SlotsMigratingUnderALoadLoseNothingAndCountExactly) {
  RedisCluster cluster(3, 0);
  constexpr std::uint64_t kBuckets = 512;  // 30000 expected items: 2^9 buckets
  const auto exact = create_redis_exact_set(cluster.endpoint(), "mx", 30000);
  const auto slot_of_bucket = [](std::uint64_t b) {
    return static_cast<unsigned>(sharding::cluster_slot(bucket_key("mx", b)));
  };
  std::atomic<bool> stop{false};
  std::atomic<bool> failed{false};
  std::atomic<int> moved{0};
  std::string error;
  std::thread resharder([&] {
    try {
      for (std::uint64_t b = 0; b < kBuckets && !stop; ++b) {
        const unsigned slot = slot_of_bucket(b);
        cluster.migrate_slot(slot, (cluster.owner_of(slot) + 1) % 3);
        ++moved;
      }
    } catch (const std::exception& e) {
      error = e.what();
      failed = true;
    }
  });
  // However the test ends (a failed assertion returns, an add may throw), the resharder is
  // stopped and joined: a joinable thread's destructor would abort the whole test program.
  struct JoinOnExit {
    std::atomic<bool>& stop;
    std::thread& thread;
    ~JoinOnExit() {
      stop = true;
      if (thread.joinable()) thread.join();
    }
  } join_on_exit{stop, resharder};
  const auto items = make_items(30000, "ex-");
  const auto views = views_of(items);
  std::size_t added = 0;
  std::vector<std::uint8_t> present;
  // Rounds over the same items (only the first adds any) until 40 slots moved under the load,
  // or the resharder failed (a slot it left half moved could stall the adds).
  for (int round = 0; round < 100 && (round == 0 || moved < 40) && !failed; ++round) {
    for (std::size_t first = 0; first < views.size(); first += 1000) {
      const auto batch = std::span(views).subspan(first, 1000);
      added += exact->add(batch);
      present.assign(batch.size(), 0);
      exact->contains(batch, present);
      ASSERT_EQ(std::count(present.begin(), present.end(), 1), 1000)
          << "round " << round << ", batch at " << first;
    }
  }
  stop = true;
  resharder.join();
  ASSERT_EQ(error, "") << "the resharder failed";
  EXPECT_GE(moved, 40);
  EXPECT_EQ(added, views.size());
  EXPECT_EQ(exact->entries(), views.size());
  cluster.wait_until_stable();
  long long asking = 0;
  for (std::size_t m = 0; m < 3; ++m) asking += cluster.node(m).calls("asking");
  std::printf("[ moves    ] %d bucket slots moved under the load; it met %lld ASK redirections\n",
              moved.load(), asking);
  EXPECT_GT(asking, 0) << "no command met a slot half moved";
  long long bytes = 0;
  for (std::uint64_t b = 0; b < kBuckets; ++b) {
    bytes +=
        cluster.node(cluster.owner_of(slot_of_bucket(b))).integer({"STRLEN", bucket_key("mx", b)});
  }
  EXPECT_EQ(bytes, static_cast<long long>(kBuckets + 6 * views.size()))
      << "every bucket once: its seal and one tag per item";

  const auto reopened = open_redis_exact_set(cluster.endpoint(), "mx");
  present.assign(views.size(), 0);
  reopened->contains(views, present);
  EXPECT_EQ(std::count(present.begin(), present.end(), 1), 30000);
  const auto absent = make_items(30000, "absent-");
  present.assign(absent.size(), 0);
  reopened->contains(views_of(absent), present);
  EXPECT_EQ(std::count(present.begin(), present.end(), 1), 0);
}

// A master of a 3 + 3 cluster is killed while items are added: the add in flight fails with an
// error naming it (whether its scripts there ran is unknown) or completes; every item of the
// adds that completed is then found through the promoted replica (each add waited for a
// replica to hold its writes), and the rest of the items go there.
TEST(ClusterExactSet, AKilledMasterFailsTheAddInFlightAndLosesNoCompletedOne) {
  RedisCluster cluster(3, 1);
  const auto exact = create_redis_exact_set(cluster.endpoint(), "fx", 100000);
  const auto items = make_items(100000, "fx-");
  const auto views = views_of(items);
  std::atomic<bool> killed{false};
  std::thread killer([&] {
    // Once the load is under way on master 0 (3000 scripts answered: ~7 adds), within 30 s.
    for (int i = 0; i < 6000 && cluster.node(0).calls("evalsha") < 3000; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    cluster.node(0).kill(SIGKILL);
    killed = true;
  });
  std::size_t completed = 0;
  std::string error;
  for (; completed < views.size(); completed += 2000) {
    try {
      (void)exact->add(std::span(views).subspan(completed, 2000));
    } catch (const StorageError& e) {
      error = e.what();
      break;
    }
  }
  killer.join();
  ASSERT_TRUE(killed);
  ASSERT_LT(completed, views.size()) << "the load ended before the kill";
  EXPECT_TRUE(contains_text(error, std::to_string(cluster.node(0).port()))) << error;
  std::printf("[ failover ] %zu of %zu items added before the kill\n", completed, views.size());

  const auto reopened = open_redis_exact_set(cluster.endpoint(), "fx");
  std::vector<std::uint8_t> present(completed);
  reopened->contains(std::span(views).first(completed), present);
  EXPECT_EQ(std::count(present.begin(), present.end(), 1), static_cast<long>(completed))
      << "an item of a completed add was lost";
  for (std::size_t first = completed; first < views.size(); first += 2000) {
    (void)reopened->add(std::span(views).subspan(first, 2000));
  }
  present.assign(views.size(), 0);
  reopened->contains(views, present);
  EXPECT_EQ(std::count(present.begin(), present.end(), 1), 100000);
}

}  // namespace
}  // namespace redbloom
