// The Redis store against real redis-server processes (tests/redis_server.hpp): URI parsing,
// the key layout and its checks, bit-for-bit identity with the local store on every path
// (per-item and bulk), concurrent writers, and faults (a killed server, a stalled one, a
// restart, a wrong password).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <latch>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "background_add.hpp"
#include "core/layout.hpp"
#include "error_of.hpp"
#include "local/memory_store.hpp"
#include "redbloom/error.hpp"
#include "redbloom/exact_set.hpp"
#include "redbloom/filter.hpp"
#include "redbloom/hash.hpp"
#include "redbloom/redis_endpoint.hpp"
#include "redis/redis_store.hpp"
#include "redis_server.hpp"
#include "rounds_sent_ahead.hpp"
#include "test_items.hpp"

namespace redbloom {
namespace {

using redbloom::testing::contains_text;
using redbloom::testing::error_of;
using redbloom::testing::make_items;
using redbloom::testing::partition_key;
using redbloom::testing::views_of;

using namespace std::chrono_literals;
using test::RedisReply;
using test::RedisServer;

// Small partitions give several partition keys even for small filters, so every path that
// groups items by partition is exercised.
constexpr std::uint64_t kSmallPartition = 64 * 1024;

RedisStore& redis_store(Filter& filter) {
  return dynamic_cast<RedisStore&>(filter.store());
}

std::vector<std::uint8_t> partition_bytes(const Store& store, std::uint64_t partition) {
  std::vector<std::uint8_t> bytes(store.params().partition_bytes());
  store.read_bytes(partition, 0, bytes);
  return bytes;
}

// Every byte of every partition equal; on a mismatch, the first differing byte.
void expect_same_bytes(const Store& actual, const Store& expected, const std::string& what) {
  ASSERT_EQ(actual.params(), expected.params()) << what;
  for (std::uint64_t p = 0; p < expected.params().partitions; ++p) {
    const auto a = partition_bytes(actual, p);
    const auto e = partition_bytes(expected, p);
    const auto [ia, ie] = std::mismatch(a.begin(), a.end(), e.begin());
    EXPECT_TRUE(ia == a.end()) << what << ": partition " << p << " differs first at byte "
                               << (ia - a.begin()) << " (" << int(*ia) << " vs " << int(*ie) << ")";
  }
}

// GETBIT on the partition keys agrees with the local bitmap (Redis bit order: bit 0 is the
// most significant bit of byte 0) at random offsets and at set bits.
void expect_getbit_matches(const RedisServer& server, const std::string& name, const Store& local) {
  std::mt19937_64 random(42);
  const FilterParams& params = local.params();
  for (std::uint64_t p = 0; p < params.partitions; ++p) {
    const auto bytes = partition_bytes(local, p);
    auto bit = [&](std::uint64_t offset) { return (bytes[offset / 8] >> (7 - offset % 8)) & 1; };
    std::vector<std::uint64_t> offsets;
    for (int i = 0; i < 100; ++i) offsets.push_back(random() % params.partition_bits);
    for (std::uint64_t offset = random() % params.partition_bits, found = 0;
         found < 50 && offset < params.partition_bits; ++offset) {
      if (bit(offset)) {
        offsets.push_back(offset);
        ++found;
      }
    }
    std::vector<std::vector<std::string>> batch;
    for (std::uint64_t offset : offsets) {
      batch.push_back({"GETBIT", partition_key(name, p), std::to_string(offset)});
    }
    const std::vector<RedisReply> replies = server.commands(batch);
    int ones = 0;
    for (std::size_t i = 0; i < offsets.size(); ++i) {
      ASSERT_EQ(replies[i].kind, RedisReply::Kind::integer) << replies[i].text;
      EXPECT_EQ(replies[i].integer, bit(offsets[i])) << "partition " << p << " bit " << offsets[i];
      ones += static_cast<int>(replies[i].integer);
    }
    EXPECT_GT(ones, 0) << "no set bit was checked in partition " << p;
  }
}

std::vector<std::string> all_keys(const RedisServer& server) {
  std::vector<std::string> keys;
  for (const RedisReply& key : server.command({"KEYS", "*"}).elements) keys.push_back(key.text);
  std::sort(keys.begin(), keys.end());
  return keys;
}

// ---------------------------------------------------------------------------------------------
// One fresh server per test: tests count keys, so they must not share a keyspace.

class RedisStoreTest : public ::testing::Test {
 protected:
  [[nodiscard]] RedisEndpoint endpoint() const { return server_.endpoint(); }
  [[nodiscard]] long long dbsize() const { return server_.integer({"DBSIZE"}); }

  RedisServer server_;
};

TEST_F(RedisStoreTest, CreateThenOpenGivesTheSameFilter) {
  const FilterParams params = size_filter(10000, 0.01, Layout::blocked);
  const auto before = std::chrono::system_clock::now();
  {
    Filter created = Filter::create_redis(endpoint(), "urls", params);
    EXPECT_EQ(created.params(), params);
    EXPECT_TRUE(created.add("a"));
  }
  const auto after = std::chrono::system_clock::now();
  Filter opened = Filter::open_redis(endpoint(), "urls");
  EXPECT_EQ(opened.params(), params);
  EXPECT_TRUE(opened.contains("a"));
  EXPECT_FALSE(opened.add("a"));
  const auto ns = [](auto t) {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
  };
  EXPECT_GE(opened.store().created_unix_ns(), ns(before));
  EXPECT_LE(opened.store().created_unix_ns(), ns(after));

  EXPECT_EQ(server_.command({"TYPE", "urls"}).text, "hash");
  EXPECT_EQ(server_.command({"HGET", "urls", "format"}).text, "redbloom");
  EXPECT_EQ(server_.command({"HGET", "urls", "state"}).text, "ready");
  // The partition's bytes, then the seal (redis_keys.hpp).
  EXPECT_EQ(server_.integer({"STRLEN", partition_key("urls", 0)}),
            static_cast<long long>(params.partition_bytes() + 1));
  EXPECT_EQ(server_.command({"HGET", "urls", "version"}).text, "2");
  EXPECT_EQ(dbsize(), 2);
  EXPECT_TRUE(RedisStore::exists(endpoint(), "urls"));
  EXPECT_FALSE(RedisStore::exists(endpoint(), "nope"));
  EXPECT_EQ(opened.store().location(),
            "redis 127.0.0.1:" + std::to_string(server_.port()) + " filter urls");
}

TEST_F(RedisStoreTest, CreateRefusesAnExistingFilterUnlessOverwriting) {
  const FilterParams params = size_filter(1000, 0.01, Layout::classic);
  { Filter::create_redis(endpoint(), "f", params).add("x"); }
  EXPECT_THROW((void)Filter::create_redis(endpoint(), "f", params), FilterExists);
  EXPECT_TRUE(Filter::open_redis(endpoint(), "f").contains("x"));  // untouched by the refusal

  // Overwriting replaces it, with other parameters and another partition count.
  const FilterParams other = size_filter(200000, 0.01, Layout::blocked, kSmallPartition);
  ASSERT_GT(other.partitions, 1u);
  { (void)Filter::create_redis(endpoint(), "f", other, /*overwrite=*/true); }
  Filter replaced = Filter::open_redis(endpoint(), "f");
  EXPECT_EQ(replaced.params(), other);
  EXPECT_FALSE(replaced.contains("x"));
  EXPECT_EQ(dbsize(), static_cast<long long>(1 + other.partitions));

  // And back to fewer partitions: the extra partition keys of the old filter go too.
  { (void)Filter::create_redis(endpoint(), "f", params, /*overwrite=*/true); }
  EXPECT_EQ(dbsize(), static_cast<long long>(1 + params.partitions));
}

TEST_F(RedisStoreTest, MissingFiltersAreNotFound) {
  EXPECT_THROW((void)Filter::open_redis(endpoint(), "missing"), NotFound);
  EXPECT_THROW(RedisStore::drop(endpoint(), "missing"), NotFound);
  const std::string message = error_of([&] { (void)Filter::open_redis(endpoint(), "missing"); });
  EXPECT_TRUE(contains_text(message, "missing")) << message;
  EXPECT_TRUE(contains_text(message, "127.0.0.1:" + std::to_string(server_.port()))) << message;
  EXPECT_EQ(dbsize(), 0);
}

TEST_F(RedisStoreTest, ForeignKeysAreNeverTakenForFiltersNorDeleted) {
  const FilterParams params = size_filter(1000, 0.01, Layout::classic);
  ASSERT_EQ(server_.command({"SET", "plain", "hello"}).text, "OK");
  ASSERT_EQ(server_.integer({"HSET", "foreign", "owner", "someone else"}), 1);
  ASSERT_EQ(server_.integer({"RPUSH", "queue", "job"}), 1);

  std::string message = error_of([&] { (void)Filter::open_redis(endpoint(), "plain"); });
  EXPECT_TRUE(contains_text(message, "string")) << message;
  EXPECT_THROW((void)Filter::open_redis(endpoint(), "plain"), FormatError);
  message = error_of([&] { (void)Filter::open_redis(endpoint(), "queue"); });
  EXPECT_TRUE(contains_text(message, "list")) << message;
  message = error_of([&] { (void)Filter::open_redis(endpoint(), "foreign"); });
  EXPECT_TRUE(contains_text(message, "not a redbloom filter")) << message;
  EXPECT_THROW((void)Filter::open_redis(endpoint(), "foreign"), FormatError);

  for (const char* name : {"plain", "foreign", "queue"}) {
    EXPECT_THROW(RedisStore::drop(endpoint(), name), FormatError) << name;
    EXPECT_THROW((void)Filter::create_redis(endpoint(), name, params), FormatError) << name;
    EXPECT_THROW((void)Filter::create_redis(endpoint(), name, params, /*overwrite=*/true),
                 FormatError)
        << name;
  }
  EXPECT_EQ(server_.command({"GET", "plain"}).text, "hello");
  EXPECT_EQ(server_.command({"HGETALL", "foreign"}).elements.size(), 2u);
  EXPECT_EQ(server_.integer({"LLEN", "queue"}), 1);
  EXPECT_EQ(all_keys(server_), (std::vector<std::string>{"foreign", "plain", "queue"}));
}

TEST_F(RedisStoreTest, DamagedPartitionsAreReportedByKey) {
  const FilterParams params = size_filter(100000, 0.01, Layout::classic, kSmallPartition);
  ASSERT_GE(params.partitions, 2u);
  const std::string key = partition_key("f", 1);
  const std::string sealed = std::to_string(params.partition_bytes() + 1);
  struct Damage {
    const char* what;
    std::vector<std::vector<std::string>> commands;
    std::string expected;  // in the message, besides the key
  };
  const std::vector<Damage> damages = {
      {"deleted", {{"DEL", key}}, "missing"},
      {"truncated", {{"SET", key, "short"}}, "holds 5 bytes"},
      {"grown", {{"SETRANGE", key, sealed, "x"}}, "expected " + sealed},
      // Recreated by writes of the filter's own: the bits are all there, the seal is not.
      {"unsealed",
       {{"DEL", key}, {"SETRANGE", key, std::to_string(params.partition_bytes() - 1), "x"}},
       "expected " + sealed},
      {"a list", {{"DEL", key}, {"RPUSH", key, "x"}}, "not a string"},
  };
  for (const Damage& damage : damages) {
    SCOPED_TRACE(damage.what);
    { (void)Filter::create_redis(endpoint(), "f", params, /*overwrite=*/true); }
    for (const RedisReply& reply : server_.commands(damage.commands)) {
      ASSERT_NE(reply.kind, RedisReply::Kind::error) << reply.text;
    }
    const std::string message = error_of([&] { (void)Filter::open_redis(endpoint(), "f"); });
    EXPECT_TRUE(contains_text(message, key)) << message;
    EXPECT_TRUE(contains_text(message, damage.expected)) << message;
    EXPECT_THROW((void)Filter::open_redis(endpoint(), "f"), FormatError);
    // A damaged filter can still be dropped, whatever its partition keys became.
    RedisStore::drop(endpoint(), "f");
    EXPECT_EQ(dbsize(), 0);
  }
}

// A partition that vanishes while a filter is open (eviction, FLUSHALL, DEL) must not be read
// as zeros or silently recreated: every path checks it first and fails, naming the key. The
// writes pipelined behind a failed check still run and recreate the key (a bulk load's BITOP OR
// at the partition's full length), so the check must keep failing after them: the seal
// (redis_keys.hpp). Unsealed, a reopened filter passed every check here and answered "absent"
// for items added before the loss.
TEST_F(RedisStoreTest, APartitionThatVanishesWhileOpenStaysAnErrorOnEveryPath) {
  for (const Layout layout : {Layout::classic, Layout::blocked}) {
    SCOPED_TRACE(std::string(to_string(layout)));
    const FilterParams params = size_filter(100000, 0.01, layout, kSmallPartition);
    ASSERT_GE(params.partitions, 2u);
    // A name per layout: commands the failed batches left in flight on their connection may
    // still run after the first filter is dropped, re-creating one of its keys.
    const std::string name = "f-" + std::string(to_string(layout));
    Filter filter = Filter::create_redis(endpoint(), name, params);
    auto& store = dynamic_cast<RedisStore&>(filter.store());
    std::vector<std::string> owned;
    for (int i = 0; i < 20000; ++i) owned.push_back("item-" + std::to_string(i));
    const std::vector<std::string_view> items(owned.begin(), owned.end());
    filter.load_many(items);
    std::vector<std::uint8_t> flags(items.size());
    const std::string key = partition_key(name, 1);
    (void)server_.command({"DEL", key});  // once: nothing below may make it whole again
    for (const auto mode : {RedisStore::BulkMode::bulk, RedisStore::BulkMode::per_item}) {
      store.set_bulk_mode(mode);
      const std::string load = error_of([&] { filter.load_many(items); });
      EXPECT_TRUE(contains_text(load, key)) << load;
      const std::string lookup = error_of([&] { filter.contains_many(items, flags); });
      EXPECT_TRUE(contains_text(lookup, key)) << lookup;
    }
    EXPECT_THROW(filter.add_many(items, flags), IncompleteWrite);
    const std::string add = error_of([&] { filter.add_many(items, flags); });
    EXPECT_TRUE(contains_text(add, "vanished")) << add;
    const std::string reopen = error_of([&] { (void)Filter::open_redis(endpoint(), name); });
    EXPECT_TRUE(contains_text(reopen, key)) << reopen;
  }
}

// A batch's rounds are sent ahead of the replies of the earlier ones (rounds_sent_ahead.hpp).
TEST_F(RedisStoreTest, ARoundSentAheadThatFailsLeavesTheRoundsBeforeItCommitted) {
  testing::expect_rounds_before_a_failed_one_committed(server_, Layout::classic);
}

// Filters of Redis format version 1 have no seal after their bits: they still open, answer
// and take adds as they are.
TEST_F(RedisStoreTest, FormatVersion1FiltersWithoutTheSealStillWork) {
  const FilterParams params = size_filter(100000, 0.01, Layout::classic, kSmallPartition);
  ASSERT_GE(params.partitions, 2u);
  std::vector<std::string> owned;
  for (int i = 0; i < 20000; ++i) owned.push_back("item-" + std::to_string(i));
  const std::vector<std::string_view> items(owned.begin(), owned.end());
  const auto first = std::span(items).first(10000);
  const auto second = std::span(items).subspan(10000);
  { Filter::create_redis(endpoint(), "old", params).load_many(first); }
  const std::string bytes = std::to_string(params.partition_bytes());
  for (std::uint64_t p = 0; p < params.partitions; ++p) {
    const std::string key = partition_key("old", p);
    const std::string bits =
        server_.command({"GETRANGE", key, "0", std::to_string(params.partition_bytes() - 1)}).text;
    ASSERT_EQ(bits.size(), params.partition_bytes());
    ASSERT_EQ(server_.command({"SET", key, bits}).text, "OK");
  }
  ASSERT_EQ(server_.integer({"HSET", "old", "version", "1"}), 0);

  Filter filter = Filter::open_redis(endpoint(), "old");
  EXPECT_EQ(filter.contains_many(first), first.size());
  filter.add_many(second);
  EXPECT_EQ(filter.contains_many(items), items.size());
  EXPECT_EQ(server_.integer({"STRLEN", partition_key("old", 0)}), params.partition_bytes());
  // Its keys are checked against the unsealed length.
  ASSERT_EQ(server_.integer({"SETRANGE", partition_key("old", 1), bytes, std::string(1, '\0')}),
            static_cast<long long>(params.partition_bytes() + 1));
  const std::string message = error_of([&] { (void)Filter::open_redis(endpoint(), "old"); });
  EXPECT_TRUE(contains_text(message, "expected " + bytes)) << message;
}

TEST_F(RedisStoreTest, DamagedMetadataIsAFormatErrorNamingTheKey) {
  const FilterParams params = size_filter(100000, 0.01, Layout::blocked, kSmallPartition);
  ASSERT_EQ(params.partitions, 2u);
  struct Damage {
    std::vector<std::string> command;
    std::string expected;
  };
  const std::vector<Damage> damages = {
      {{"HSET", "f", "version", "3"}, "format version 3"},
      {{"HSET", "f", "version", "0"}, "format version 0"},
      {{"HSET", "f", "layout", "9"}, "unknown layout id 9"},
      {{"HSET", "f", "hashes", "seven"}, "'hashes' is not a number"},
      {{"HSET", "f", "hashes", "0"}, "hash count 0"},
      {{"HSET", "f", "partition_bits", "1000"}, "partition size 1000"},
      {{"HSET", "f", "hash_scheme", "9"}, "hash scheme 9 is unknown"},
      {{"HSET", "f", "error_rate", "1%"}, "'error_rate' is not a number"},
      {{"HDEL", "f", "capacity"}, "'capacity' is missing"},
      {{"HDEL", "f", "format"}, "not a redbloom filter"},
      {{"HSET", "f", "tag_salts", "1,x"}, "'tag_salts' is not a list of numbers"},
      {{"HSET", "f", "tag_salts", "1,2,3"}, "'tag_salts' has 3 entries for 2 partitions"},
      // More partitions than there are keys: the first missing one is named.
      {{"HSET", "f", "partitions", "3"}, partition_key("f", 2) + "' is missing"},
  };
  for (const Damage& damage : damages) {
    SCOPED_TRACE(damage.expected);
    ASSERT_EQ(server_.command({"FLUSHALL"}).text, "OK");
    { (void)Filter::create_redis(endpoint(), "f", params); }
    ASSERT_NE(server_.command(damage.command).kind, RedisReply::Kind::error);
    const std::string message = error_of([&] { (void)Filter::open_redis(endpoint(), "f"); });
    EXPECT_TRUE(contains_text(message, "'f'")) << message;
    EXPECT_TRUE(contains_text(message, damage.expected)) << message;
    EXPECT_THROW((void)Filter::open_redis(endpoint(), "f"), FormatError);
  }
}

TEST_F(RedisStoreTest, NamesThatWouldChangeTheHashTagAreRejected) {
  const FilterParams params = size_filter(1000, 0.01, Layout::classic);
  for (const char* name : {"a{b", "a}b", "{x}", ""}) {
    EXPECT_THROW((void)Filter::create_redis(endpoint(), name, params), InvalidArgument) << name;
    EXPECT_THROW((void)Filter::open_redis(endpoint(), name), InvalidArgument) << name;
    EXPECT_THROW(RedisStore::drop(endpoint(), name), InvalidArgument) << name;
  }
  EXPECT_EQ(dbsize(), 0);
  // Other punctuation is fine.
  { (void)Filter::create_redis(endpoint(), "team:urls/2024 v1", params); }
  EXPECT_EQ(server_.command({"TYPE", "team:urls/2024 v1"}).text, "hash");
}

TEST_F(RedisStoreTest, DropRemovesEveryKeyOfTheFilterAndNothingElse) {
  ASSERT_EQ(server_.command({"SET", "other", "1"}).text, "OK");
  const FilterParams params = size_filter(200000, 0.01, Layout::blocked, kSmallPartition);
  ASSERT_GE(params.partitions, 3u);
  {
    Filter filter = Filter::create_redis(endpoint(), "f", params);
    const auto items = make_items(20000, "d-");
    redis_store(filter).set_bulk_mode(RedisStore::BulkMode::bulk);
    filter.load_many(views_of(items));  // through temp keys, which must not linger
    filter.add_many(views_of(items));
  }
  EXPECT_EQ(dbsize(), static_cast<long long>(2 + params.partitions));
  RedisStore::drop(endpoint(), "f");
  EXPECT_EQ(all_keys(server_), std::vector<std::string>{"other"});
  EXPECT_THROW(RedisStore::drop(endpoint(), "f"), NotFound);
  EXPECT_FALSE(RedisStore::exists(endpoint(), "f"));
}

TEST_F(RedisStoreTest, CreateNeverOverwritesAStrayPartitionKey) {
  const FilterParams params = size_filter(200000, 0.01, Layout::classic, kSmallPartition);
  ASSERT_GE(params.partitions, 2u);
  const std::string stray = partition_key("f", 1);
  ASSERT_EQ(server_.command({"SET", stray, "mine"}).text, "OK");
  const std::string message =
      error_of([&] { (void)Filter::create_redis(endpoint(), "f", params); });
  EXPECT_TRUE(contains_text(message, stray)) << message;
  // An error of the storage (the CLI exits 3), never "exists, use it": this creation held the
  // name, so no other creator made the key.
  EXPECT_THROW((void)Filter::create_redis(endpoint(), "f", params), FormatError);
  EXPECT_EQ(server_.command({"GET", stray}).text, "mine");
  // The refused creation took back its claim on the name and allocated nothing.
  EXPECT_EQ(all_keys(server_), std::vector<std::string>{stray});
}

// A filter whose metadata key was evicted while its partitions remain: opening it for writing
// with create-if-missing (what `add` and `dedup` do) is an error, never an empty filter made
// over its partitions.
TEST_F(RedisStoreTest, AFilterWhoseMetadataWasEvictedIsNotCreatedAgain) {
  const FilterParams params = size_filter(1000, 0.01, Layout::classic);
  { Filter::create_redis(endpoint(), "f", params).add("x"); }
  ASSERT_EQ(server_.integer({"DEL", "f"}), 1);
  const auto before = all_keys(server_);
  OpenOptions options = OpenOptions::create_missing(params, true);
  const std::string message =
      error_of([&] { (void)Filter::open(Location::redis({endpoint()}, "f"), options); });
  EXPECT_TRUE(contains_text(message, "evicted")) << message;
  EXPECT_THROW((void)Filter::open(Location::redis({endpoint()}, "f"), options), FormatError);
  EXPECT_EQ(all_keys(server_), before);
}

// Creators racing for one name: exactly one gets it, the others are told it exists.
TEST_F(RedisStoreTest, ConcurrentCreatorsOneWins) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 20;
  const FilterParams params = size_filter(100000, 0.01, Layout::classic, kSmallPartition);
  for (int round = 0; round < kRounds; ++round) {
    std::atomic<int> created{0};
    std::atomic<int> refused{0};
    std::vector<std::string> other_errors(kThreads);
    std::latch start(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        start.arrive_and_wait();
        try {
          (void)Filter::create_redis(endpoint(), "raced", params);
          ++created;
        } catch (const FilterExists&) {
          ++refused;
        } catch (const std::exception& e) {
          other_errors[t] = e.what();
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    for (const std::string& error : other_errors) EXPECT_EQ(error, "");
    ASSERT_EQ(created, 1) << "round " << round;
    ASSERT_EQ(refused, kThreads - 1) << "round " << round;
    EXPECT_EQ(Filter::open_redis(endpoint(), "raced").params(), params);
    EXPECT_EQ(dbsize(), static_cast<long long>(1 + params.partitions));
    RedisStore::drop(endpoint(), "raced");
  }
}

TEST_F(RedisStoreTest, AnUnfinishedCreationIsReportedAndCanBeDropped) {
  // What a creator that died half-way leaves: the claim, and some of the partitions.
  ASSERT_EQ(server_.integer({"HSET", "f", "format", "redbloom", "version", "1", "state", "creating",
                             "partitions", "3"}),
            4);
  ASSERT_EQ(server_.integer({"SETRANGE", partition_key("f", 0), "99", std::string(1, '\0')}), 100);
  // It died before it checked partition 2's name, where another program keeps a key.
  ASSERT_EQ(server_.command({"SET", partition_key("f", 2), "their value"}).text, "OK");
  // Opening waits for a creator (briefly here), then says the creation has not finished.
  std::string message = error_of([&] { (void)RedisStore::open(endpoint(), "f", {}, 200ms); });
  EXPECT_TRUE(contains_text(message, "is still being created")) << message;
  EXPECT_TRUE(contains_text(message, "if no process is creating it any more")) << message;
  EXPECT_THROW((void)RedisStore::open(endpoint(), "f", {}, 200ms), IncompleteFilter);
  const FilterParams params = size_filter(1000, 0.01, Layout::classic);
  message = error_of([&] { (void)Filter::create_redis(endpoint(), "f", params); });
  EXPECT_TRUE(contains_text(message, "is being created by another process")) << message;
  RedisStore::drop(endpoint(), "f");
  EXPECT_EQ(dbsize(), 1);
  EXPECT_EQ(server_.command({"GET", partition_key("f", 2)}).text, "their value");
}

// ---------------------------------------------------------------------------------------------
// Bits and answers: identical to the local store on every path.

class RedisLayoutTest : public RedisStoreTest, public ::testing::WithParamInterface<Layout> {};

INSTANTIATE_TEST_SUITE_P(Layouts, RedisLayoutTest,
                         ::testing::Values(Layout::classic, Layout::blocked),
                         [](const auto& info) { return std::string(to_string(info.param)); });

TEST_P(RedisLayoutTest, BitsAreIdenticalToTheLocalStore) {
  const FilterParams params = size_filter(100000, 0.01, GetParam(), kSmallPartition);
  ASSERT_GE(params.partitions, 2u);
  const auto items = make_items(100000, "https://example.com/page/");
  Filter local = Filter::in_memory(params);
  Filter remote = Filter::create_redis(endpoint(), "pages", params);
  std::vector<std::uint8_t> local_new(items.size());
  std::vector<std::uint8_t> remote_new(items.size());
  local.add_many(views_of(items), local_new);
  remote.add_many(views_of(items), remote_new);
  EXPECT_EQ(remote_new, local_new);
  expect_same_bytes(remote.store(), local.store(), "add_many");
  expect_getbit_matches(server_, "pages", local.store());
  EXPECT_EQ(remote.contains_many(views_of(items)), items.size());
}

TEST_P(RedisLayoutTest, AddManyReportsNewItemsLikeTheLocalStore) {
  // A low rate, so a false positive among the few hand-picked items below is out of question.
  const FilterParams params = size_filter(100000, 1e-6, GetParam(), kSmallPartition);
  Filter local = Filter::in_memory(params);
  Filter remote = Filter::create_redis(endpoint(), "f", params);

  const std::vector<std::string_view> small = {"x", "y", "x", "", "y", "", "z"};
  std::vector<std::uint8_t> flags(small.size());
  EXPECT_EQ(remote.add_many(small, flags), 4u);
  EXPECT_EQ(flags, (std::vector<std::uint8_t>{1, 1, 0, 1, 0, 0, 1}));
  EXPECT_EQ(remote.add_many(small, flags), 0u);  // re-added: nothing is new
  EXPECT_EQ(flags, std::vector<std::uint8_t>(small.size(), 0));
  local.add_many(small);
  EXPECT_TRUE(remote.add("solo"));
  EXPECT_FALSE(remote.add("solo"));
  EXPECT_TRUE(remote.contains("solo"));
  EXPECT_FALSE(remote.contains("never added"));
  local.add("solo");

  // One call far larger than a pipeline round (2048 items) and a BITFIELD (1024), with
  // duplicates next to each other, across those boundaries, and of items added by earlier
  // calls.
  auto items = make_items(30000, "i-");
  for (std::size_t i = 0; i < 10000; ++i) items.push_back("i-" + std::to_string(i * 3));
  for (std::size_t i = 0; i < 2000; ++i)
    items.insert(items.begin() + 5 * i, "adj-" + std::to_string(i % 700));
  items.push_back("x");
  std::vector<std::uint8_t> remote_new(items.size());
  std::vector<std::uint8_t> local_new(items.size());
  const std::size_t remote_count = remote.add_many(views_of(items), remote_new);
  const std::size_t local_count = local.add_many(views_of(items), local_new);
  EXPECT_EQ(remote_count, local_count);
  EXPECT_EQ(remote_count,
            static_cast<std::size_t>(std::count(remote_new.begin(), remote_new.end(), 1)));
  // Same bits, so the same answers, false positives included.
  EXPECT_TRUE(remote_new == local_new);
  // Every second occurrence of an item is "not new".
  std::unordered_set<std::string> earlier;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (!earlier.insert(items[i]).second) {
      EXPECT_EQ(remote_new[i], 0) << "item " << i << " " << items[i];
    }
  }
  expect_same_bytes(remote.store(), local.store(), "add_many with duplicates");
}

TEST_P(RedisLayoutTest, PerItemAndBulkPathsGiveIdenticalResults) {
  using Mode = RedisStore::BulkMode;
  const FilterParams params = size_filter(200000, 0.01, GetParam(), kSmallPartition);
  ASSERT_GE(params.partitions, 3u);
  const auto items = make_items(60000, "obj-");
  // Small batches first: in automatic mode they take the per-item path, the large one the
  // bulk path (the partitions are 64 KiB; 10 items cost ~3 KB of BITFIELD arguments).
  const std::vector<std::size_t> batches = {1, 10, 300, 59689};
  const auto views = views_of(items);
  Filter local = Filter::in_memory(params);
  local.load_many(views);

  const std::vector<std::pair<Mode, const char*>> modes = {
      {Mode::per_item, "per_item"}, {Mode::bulk, "bulk"}, {Mode::automatic, "automatic"}};
  for (const auto& [mode, name] : modes) {
    SCOPED_TRACE(name);
    Filter remote = Filter::create_redis(endpoint(), name, params);
    redis_store(remote).set_bulk_mode(mode);
    ASSERT_EQ(server_.command({"CONFIG", "RESETSTAT"}).text, "OK");
    std::size_t offset = 0;
    for (std::size_t n : batches) {
      remote.load_many(std::span(views).subspan(offset, n));
      offset += n;
    }
    ASSERT_EQ(offset, items.size());
    // The mode decides which commands ran.
    const long long bitfields = server_.calls("bitfield");
    const long long bitops = server_.calls("bitop");
    EXPECT_EQ(bitfields > 0, mode != Mode::bulk) << bitfields;
    EXPECT_EQ(bitops > 0, mode != Mode::per_item) << bitops;
    expect_same_bytes(remote.store(), local.store(), std::string("load_many ") + name);
    EXPECT_TRUE(server_.command({"KEYS", "*:tmp:*"}).elements.empty());
  }

  // Queries: present and absent items mixed, in batches of several sizes, through each mode
  // on one filter.
  std::vector<std::string> queries = make_items(20000, "obj-");
  for (auto& absent : make_items(20000, "absent-")) queries.push_back(std::move(absent));
  std::shuffle(queries.begin(), queries.end(), std::mt19937(7));
  const auto query_views = views_of(queries);
  std::vector<std::uint8_t> expected(queries.size());
  local.contains_many(query_views, expected);
  Filter remote = Filter::open_redis(endpoint(), "automatic");
  for (const auto& [mode, name] : modes) {
    SCOPED_TRACE(name);
    redis_store(remote).set_bulk_mode(mode);
    ASSERT_EQ(server_.command({"CONFIG", "RESETSTAT"}).text, "OK");
    std::vector<std::uint8_t> answers(queries.size());
    std::size_t offset = 0;
    for (std::size_t n : {std::size_t{1}, std::size_t{10}, std::size_t{200}, std::size_t{39789}}) {
      remote.contains_many(std::span(query_views).subspan(offset, n),
                           std::span(answers).subspan(offset, n));
      offset += n;
    }
    ASSERT_EQ(offset, queries.size());
    EXPECT_TRUE(answers == expected);
    // Per-item lookups are BITFIELD_RO (classic) or one GETRANGE per item (blocked); bulk ones
    // a few GETRANGEs per partition.
    const long long reads = server_.calls("bitfield_ro");
    const long long ranges = server_.calls("getrange");
    if (GetParam() == Layout::classic) {
      EXPECT_EQ(reads > 0, mode != Mode::bulk) << reads;
      EXPECT_EQ(ranges > 0, mode != Mode::per_item) << ranges;
    } else {
      // Automatic: per item for the 211 items of the small batches, then a download of each
      // partition per Filter chunk of the large one (a few at most).
      const long long small = 1 + 10 + 200;
      const auto bulk_most = static_cast<long long>(4 * params.partitions);
      switch (mode) {
        case Mode::per_item:
          EXPECT_EQ(ranges, static_cast<long long>(queries.size()));
          break;
        case Mode::bulk:
          EXPECT_LE(ranges, 2 * bulk_most);
          break;
        case Mode::automatic:
          EXPECT_GE(ranges, small);
          EXPECT_LE(ranges, small + bulk_most);
          break;
      }
      EXPECT_EQ(reads, 0);
    }
  }
  // The single-item paths agree too.
  for (std::size_t i = 0; i < 200; ++i) EXPECT_EQ(remote.contains(queries[i]), expected[i] != 0);
}

TEST_P(RedisLayoutTest, NoFalseNegativesAndTheFalsePositiveRateOfTheory) {
  constexpr std::size_t n = 200000;
  constexpr std::size_t queries = 200000;
  const FilterParams params = size_filter(n, 0.01, GetParam(), kSmallPartition);
  Filter filter = Filter::create_redis(endpoint(), "rate", params);
  const auto items = make_items(n, "member-");
  const std::size_t fresh = filter.add_many(views_of(items));
  EXPECT_EQ(filter.contains_many(views_of(items)), n) << "false negatives";
  const auto absent = make_items(queries, "absent-");
  const std::size_t false_positives = filter.contains_many(views_of(absent));
  const double theory = expected_false_positive_rate(params, n);
  const double expected = theory * queries;
  const double sigma = std::sqrt(expected * (1 - theory));
  std::printf("[ rate     ] %s: measured %.5f (%zu of %zu), theory %.5f\n",
              std::string(to_string(GetParam())).c_str(),
              static_cast<double>(false_positives) / queries, false_positives, queries, theory);
  // 5 standard deviations, plus 3% for the formula's own approximations.
  EXPECT_NEAR(static_cast<double>(false_positives), expected, 5 * sigma + 0.03 * expected);
  // Items reported "not new" while inserting are false positives of the growing filter.
  EXPECT_LE(n - fresh, static_cast<std::size_t>(expected) + 100);
}

TEST_P(RedisLayoutTest, InfoMatchesTheLocalStore) {
  const FilterParams params = size_filter(100000, 0.01, GetParam(), kSmallPartition);
  Filter local = Filter::in_memory(params);
  Filter remote = Filter::create_redis(endpoint(), "f", params);
  const auto items = make_items(50000, "info-");
  local.add_many(views_of(items));
  remote.add_many(views_of(items));
  const FilterInfo expected = local.info();
  const FilterInfo info = remote.info();
  EXPECT_GT(info.set_bits, 0u);
  EXPECT_EQ(info.set_bits, expected.set_bits);
  EXPECT_EQ(info.params, params);
  EXPECT_DOUBLE_EQ(info.estimated_items, expected.estimated_items);
  EXPECT_NEAR(info.estimated_items, 50000, 2500);
  EXPECT_GT(info.storage_bytes, params.total_bytes());
  EXPECT_GT(info.created_unix_ns, 0u);
  EXPECT_EQ(info.location, "redis 127.0.0.1:" + std::to_string(server_.port()) + " filter f");
}

TEST_P(RedisLayoutTest, RawBytesCopyFiltersBetweenStores) {
  const FilterParams params = size_filter(100000, 0.01, GetParam(), kSmallPartition);
  ASSERT_GE(params.partitions, 2u);
  Filter local = Filter::in_memory(params);
  const auto items = make_items(50000, "copy-");
  local.add_many(views_of(items));
  Filter remote = Filter::create_redis(endpoint(), "copy", params);
  for (std::uint64_t p = 0; p < params.partitions; ++p) {
    remote.store().write_bytes(p, 0, partition_bytes(local.store(), p));
  }
  expect_same_bytes(remote.store(), local.store(), "write_bytes");
  EXPECT_EQ(remote.contains_many(views_of(items)), items.size());
  // Reads inside a partition, at an unaligned offset.
  std::vector<std::uint8_t> middle(1000);
  remote.store().read_bytes(1, 777, middle);
  const auto whole = partition_bytes(local.store(), 1);
  EXPECT_TRUE(std::equal(middle.begin(), middle.end(), whole.begin() + 777));
  // Out of range.
  std::vector<std::uint8_t> one(1);
  EXPECT_THROW(remote.store().read_bytes(params.partitions, 0, one), InvalidArgument);
  EXPECT_THROW(remote.store().read_bytes(0, params.partition_bytes(), one), InvalidArgument);
  EXPECT_THROW(remote.store().write_bytes(0, params.partition_bytes(), one), InvalidArgument);
  // The partition keys kept their length, seal included.
  for (std::uint64_t p = 0; p < params.partitions; ++p) {
    EXPECT_EQ(server_.integer({"STRLEN", partition_key("copy", p)}),
              static_cast<long long>(params.partition_bytes() + 1));
  }
}

// Writers in separate threads, each with its own connection, adding overlapping items: each
// item's test-and-set is one atomic BITFIELD, so no item is new to two of them.
TEST_P(RedisLayoutTest, ConcurrentWritersNeverBothSeeAnItemAsNew) {
  constexpr int kThreads = 4;
  constexpr std::size_t kItems = 50000;
  constexpr std::size_t kBatch = 500;  // small batches interleave the writers' commands
  const FilterParams params = size_filter(kItems, 0.01, GetParam(), kSmallPartition);
  { (void)Filter::create_redis(endpoint(), "shared", params); }
  const auto items = make_items(kItems, "c-");
  std::vector<std::vector<std::uint8_t>> fresh(kThreads, std::vector<std::uint8_t>(kItems));
  std::vector<std::exception_ptr> errors(kThreads);
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      bool arrived = false;
      try {
        Filter filter = Filter::open_redis(endpoint(), "shared");
        std::vector<std::size_t> order(kItems);
        for (std::size_t i = 0; i < kItems; ++i) order[i] = i;
        std::shuffle(order.begin(), order.end(), std::mt19937(100 + t));
        std::vector<std::string_view> batch;
        std::vector<std::uint8_t> flags(kBatch);
        arrived = true;
        start.arrive_and_wait();
        for (std::size_t first = 0; first < kItems; first += kBatch) {
          batch.clear();
          for (std::size_t i = first; i < first + kBatch; ++i) batch.push_back(items[order[i]]);
          filter.add_many(batch, flags);
          for (std::size_t i = 0; i < kBatch; ++i) fresh[t][order[first + i]] = flags[i];
        }
      } catch (...) {
        errors[t] = std::current_exception();
        if (!arrived) start.count_down();  // never leave the others waiting
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const std::exception_ptr& error : errors) {
    if (error) std::rethrow_exception(error);
  }
  std::size_t nobody = 0;
  for (std::size_t i = 0; i < kItems; ++i) {
    int seen_new = 0;
    for (int t = 0; t < kThreads; ++t) seen_new += fresh[t][i];
    ASSERT_LE(seen_new, 1) << "item " << items[i] << " was new to " << seen_new << " writers";
    if (seen_new == 0) ++nobody;
  }
  // An item new to nobody was a false positive when first added; as many as a single writer
  // meets, give or take the order (the bound is loose: a broken atomicity gives thousands).
  Filter local = Filter::in_memory(params);
  const std::size_t local_false_positives = kItems - local.add_many(views_of(items));
  std::printf("[ writers  ] items new to nobody: %zu; single writer: %zu\n", nobody,
              local_false_positives);
  EXPECT_LE(nobody, 5 * local_false_positives + 20);
  // The union of everyone's bits is the single writer's, whatever the interleaving.
  Filter remote = Filter::open_redis(endpoint(), "shared");
  expect_same_bytes(remote.store(), local.store(), "after concurrent writers");
}

TEST_F(RedisStoreTest, UnixSocketAndDatabaseSelection) {
  const FilterParams params = size_filter(1000, 0.01, Layout::blocked);
  const RedisEndpoint over_unix = parse_redis_uri("unix://" + server_.unix_socket_path() + "?db=2");
  { Filter::create_redis(over_unix, "f", params).add("over the socket"); }
  RedisEndpoint tcp_db2 = endpoint();
  tcp_db2.db = 2;
  EXPECT_TRUE(Filter::open_redis(tcp_db2, "f").contains("over the socket"));
  EXPECT_EQ(dbsize(), 0);  // nothing in db 0
  EXPECT_THROW((void)Filter::open_redis(endpoint(), "f"), NotFound);
  std::string message = error_of([&] { (void)Filter::open_redis(tcp_db2, "g"); });
  EXPECT_TRUE(contains_text(message, "/2")) << message;  // the db is part of the server's name
  // A database the server does not have (16 by default): refused by SELECT, and no socket
  // is left open by the failed connection.
  RedisEndpoint no_such_db = endpoint();
  no_such_db.db = 99;
  message = error_of([&] { (void)Filter::open_redis(no_such_db, "f"); });
  EXPECT_TRUE(contains_text(message, "SELECT")) << message;
  EXPECT_THROW((void)Filter::open_redis(no_such_db, "f"), StorageError);
}

// ---------------------------------------------------------------------------------------------
// Faults.

// Counts this process's open file descriptors (leaks of sockets show up here).
std::size_t open_fds() {
  std::size_t count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    ++count;
  }
  return count;
}

TEST(RedisFaults, WrongPasswordIsAStorageErrorNamingTheServer) {
  RedisServer server({"--requirepass", "secret"});
  const FilterParams params = size_filter(1000, 0.01, Layout::classic);
  { Filter::create_redis(server.endpoint(), "f", params).add("x"); }
  const std::string where = "127.0.0.1:" + std::to_string(server.port());

  RedisEndpoint none = server.endpoint();
  none.password.clear();
  std::string message = error_of([&] { (void)Filter::open_redis(none, "f"); });
  EXPECT_TRUE(contains_text(message, where)) << message;
  EXPECT_TRUE(contains_text(message, "NOAUTH")) << message;
  EXPECT_THROW((void)Filter::open_redis(none, "f"), StorageError);
  EXPECT_THROW((void)Filter::create_redis(none, "g", params), StorageError);

  RedisEndpoint wrong = server.endpoint();
  wrong.password = "not-the-secret-42";
  message = error_of([&] { (void)Filter::open_redis(wrong, "f"); });
  EXPECT_TRUE(contains_text(message, where)) << message;
  EXPECT_FALSE(contains_text(message, wrong.password)) << message;
  EXPECT_THROW((void)Filter::open_redis(wrong, "f"), StorageError);
  EXPECT_THROW((void)RedisStore::exists(wrong, "f"), StorageError);
  // Failed logins leave no socket behind.
  const std::size_t fds = open_fds();
  for (int i = 0; i < 20; ++i) EXPECT_THROW((void)Filter::open_redis(wrong, "f"), StorageError);
  EXPECT_EQ(open_fds(), fds);

  const std::string port = std::to_string(server.port());
  EXPECT_TRUE(
      Filter::open_redis(parse_redis_uri("redis://:secret@127.0.0.1:" + port), "f").contains("x"));
  EXPECT_TRUE(Filter::open_redis(parse_redis_uri("redis://default:secret@127.0.0.1:" + port), "f")
                  .contains("x"));
}

TEST(RedisFaults, UnreachableServerIsAStorageErrorNamingIt) {
  RedisServer server;
  const RedisEndpoint endpoint = server.endpoint();
  server.stop();
  const std::string message = error_of([&] { (void)Filter::open_redis(endpoint, "f"); });
  EXPECT_TRUE(contains_text(message, "127.0.0.1:" + std::to_string(server.port()))) << message;
  EXPECT_TRUE(contains_text(message, "connect")) << message;
  EXPECT_THROW((void)Filter::open_redis(endpoint, "f"), StorageError);
}

// A server out of memory while the partitions are allocated: create fails naming the server and
// takes back everything it made.
TEST(RedisFaults, CreateOnAFullServerLeavesNothingBehind) {
  RedisServer server({"--maxmemory", "4mb", "--maxmemory-policy", "noeviction"});
  ASSERT_EQ(server.command({"SET", "other", "1"}).text, "OK");
  const FilterParams params = size_filter(1e7, 0.01, Layout::classic, kSmallPartition);
  ASSERT_GT(params.total_bytes(), 8u << 20);
  // Refused before anything is written, with the sizes that do not fit.
  const std::string message =
      error_of([&] { (void)Filter::create_redis(server.endpoint(), "huge", params); });
  EXPECT_TRUE(contains_text(message, "127.0.0.1:" + std::to_string(server.port()))) << message;
  EXPECT_TRUE(contains_text(message, "would need 11.43 MiB")) << message;
  EXPECT_TRUE(contains_text(message, "maxmemory 4.00 MiB")) << message;
  EXPECT_TRUE(contains_text(message, "nothing was created")) << message;
  EXPECT_THROW((void)Filter::create_redis(server.endpoint(), "huge", params), InvalidArgument);
  EXPECT_EQ(all_keys(server), std::vector<std::string>{"other"});

  // A filter that fits is still created.
  (void)Filter::create_redis(server.endpoint(), "small", size_filter(1000, 0.01, Layout::classic));
}

// A server that may evict a filter's keys when full is named; one that cannot is not.
TEST(RedisFaults, EvictingServersAreNamed) {
  RedisServer server({"--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru"});
  const auto risks = RedisStore::eviction_risks(server.endpoint());
  ASSERT_EQ(risks.size(), 1u);
  EXPECT_TRUE(contains_text(risks[0], "127.0.0.1:" + std::to_string(server.port()))) << risks[0];
  EXPECT_TRUE(contains_text(risks[0], "maxmemory-policy allkeys-lru")) << risks[0];
  EXPECT_TRUE(contains_text(risks[0], "maxmemory 67108864 bytes")) << risks[0];
  // volatile-*: the partitions (no TTL) are safe; a bulk load's delta (with a TTL) is not.
  for (const char* policy : {"volatile-lru", "volatile-ttl"}) {
    ASSERT_EQ(server.command({"CONFIG", "SET", "maxmemory-policy", policy}).text, "OK");
    const auto volatile_risks = RedisStore::eviction_risks(server.endpoint());
    ASSERT_EQ(volatile_risks.size(), 1u) << policy;
    EXPECT_TRUE(contains_text(volatile_risks[0], "a bulk load's temporary delta")) << policy;
    EXPECT_TRUE(contains_text(volatile_risks[0], "the filter's own keys are safe")) << policy;
  }
  ASSERT_EQ(server.command({"CONFIG", "SET", "maxmemory-policy", "noeviction"}).text, "OK");
  EXPECT_EQ(RedisStore::eviction_risks(server.endpoint()), std::vector<std::string>{});
  ASSERT_EQ(server.command({"CONFIG", "SET", "maxmemory-policy", "allkeys-random"}).text, "OK");
  EXPECT_EQ(RedisStore::eviction_risks(server.endpoint()).size(), 1u);
  ASSERT_EQ(server.command({"CONFIG", "SET", "maxmemory", "0"}).text, "OK");  // no limit
  EXPECT_EQ(RedisStore::eviction_risks(server.endpoint()), std::vector<std::string>{});
}

// An exact set that does not fit takes back the buckets it made and its metadata.
TEST(RedisFaults, AnExactSetOnAFullServerLeavesNothingBehind) {
  RedisServer server({"--maxmemory", "4mb", "--maxmemory-policy", "noeviction"});
  ASSERT_EQ(server.command({"SET", "other", "1"}).text, "OK");
  // 2^17 buckets of ~60 bytes each: more than 4 MB.
  const std::string message = error_of(
      [&] { (void)create_redis_exact_set(server.endpoint(), "e", std::uint64_t{64} << 17); });
  EXPECT_TRUE(contains_text(message, "OOM")) << message;
  EXPECT_TRUE(contains_text(message, "nothing of the exact set was kept")) << message;
  EXPECT_EQ(all_keys(server), std::vector<std::string>{"other"});
}

// Sends SIGCONT when the test leaves its scope, however it leaves: a server left stopped would
// stall the fixture's teardown checks.
class ResumeOnExit {
 public:
  explicit ResumeOnExit(const RedisServer& server) : pid_(server.pid()) {}
  ~ResumeOnExit() { ::kill(pid_, SIGCONT); }

 private:
  pid_t pid_;
};

TEST(RedisFaults, StalledServerTimesOut) {
  RedisServer server;
  RedisEndpoint endpoint = server.endpoint();
  endpoint.command_timeout = 300ms;
  const FilterParams params = size_filter(10000, 0.01, Layout::classic);
  { Filter::create_redis(endpoint, "f", params).add("before"); }
  Filter filter = Filter::open_redis(endpoint, "f");
  const std::string where = "127.0.0.1:" + std::to_string(server.port());
  {
    server.kill(SIGSTOP);
    ResumeOnExit resume(server);
    const auto started = std::chrono::steady_clock::now();
    std::string message = error_of([&] { (void)filter.contains("x"); });
    const auto elapsed = std::chrono::steady_clock::now() - started;
    EXPECT_TRUE(contains_text(message, "timed out")) << message;
    EXPECT_TRUE(contains_text(message, where)) << message;
    EXPECT_GE(elapsed, 250ms);
    EXPECT_LT(elapsed, 5s);

    const auto items = make_items(5000, "stalled-");
    try {
      filter.add_many(views_of(items));
      ADD_FAILURE() << "add_many succeeded on a stopped server";
    } catch (const IncompleteWrite& e) {
      EXPECT_EQ(e.committed(), 0u);
      EXPECT_TRUE(contains_text(e.what(), "timed out")) << e.what();
    }
    // Opening needs the server too: the TCP handshake succeeds (the kernel answers it), the
    // first command times out.
    message = error_of([&] { (void)Filter::open_redis(endpoint, "f"); });
    EXPECT_TRUE(contains_text(message, "timed out")) << message;
  }
  // Once the server runs again, the same filter reconnects.
  EXPECT_TRUE(filter.contains("before"));
  EXPECT_TRUE(filter.add("after"));
}

TEST(RedisFaults, FilterSurvivesARestartWithAppendOnlyFile) {
  RedisServer server({"--appendonly", "yes"});
  const FilterParams params = size_filter(100000, 0.01, Layout::blocked, kSmallPartition);
  const auto items = make_items(50000, "persist-");
  std::vector<std::string> queries = make_items(25000, "persist-");
  for (auto& absent : make_items(25000, "gone-")) queries.push_back(std::move(absent));
  const auto views = views_of(items);
  std::vector<std::uint8_t> before(queries.size());
  Filter filter = Filter::create_redis(server.endpoint(), "kept", params);
  filter.add_many(std::span(views).first(20000));
  redis_store(filter).set_bulk_mode(RedisStore::BulkMode::bulk);
  filter.load_many(std::span(views).subspan(20000));  // BITOP is persisted too
  filter.contains_many(views_of(queries), before);
  const std::uint64_t created = filter.store().created_unix_ns();

  server.restart();
  Filter reopened = Filter::open_redis(server.endpoint(), "kept");
  EXPECT_EQ(reopened.params(), params);
  EXPECT_EQ(reopened.store().created_unix_ns(), created);
  std::vector<std::uint8_t> after(queries.size());
  reopened.contains_many(views_of(queries), after);
  EXPECT_TRUE(after == before);
  EXPECT_EQ(reopened.contains_many(views), items.size());
  // The filter opened before the restart still holds the old socket. Its next command may fail
  // (today it does: the store does not retry, since it cannot know whether a write ran), and
  // then names the server; the one after that reconnects and sees the same filter.
  std::vector<std::uint8_t> again(queries.size());
  try {
    filter.contains_many(views_of(queries), again);
  } catch (const StorageError& e) {
    EXPECT_TRUE(contains_text(e.what(), "127.0.0.1:" + std::to_string(server.port()))) << e.what();
    filter.contains_many(views_of(queries), again);
  }
  EXPECT_TRUE(again == before);
}

// A server that went away while the connection sat idle: the next call's large write meets a
// closed socket. That must be an exception naming the server, never a SIGPIPE that kills the
// process; the call after a restart reconnects.
TEST(RedisFaults, ServerGoneBetweenCallsIsAnErrorNotASignal) {
  RedisServer server({"--appendonly", "yes"});
  const FilterParams params = size_filter(100000, 0.01, Layout::classic);
  Filter filter = Filter::create_redis(server.endpoint(), "f", params);
  const auto items = make_items(100000, "gone-");
  const auto views = views_of(items);
  EXPECT_EQ(filter.contains_many(views), filter.contains_many(views));  // connected, idle
  server.kill(SIGKILL);
  for (int attempt = 0; attempt < 3; ++attempt) {
    try {
      filter.add_many(views);
      ADD_FAILURE() << "add_many succeeded with the server gone";
    } catch (const IncompleteWrite& e) {
      EXPECT_EQ(e.committed(), 0u);
      EXPECT_TRUE(contains_text(e.what(), "127.0.0.1:" + std::to_string(server.port())))
          << e.what();
    }
  }
  // The bulk paths write large uploads (a partition delta) and the lookups many commands.
  redis_store(filter).set_bulk_mode(RedisStore::BulkMode::bulk);
  EXPECT_THROW(filter.load_many(views), StorageError);
  redis_store(filter).set_bulk_mode(RedisStore::BulkMode::per_item);
  EXPECT_THROW(filter.load_many(views), StorageError);
  EXPECT_THROW((void)filter.contains_many(views), StorageError);
  redis_store(filter).set_bulk_mode(RedisStore::BulkMode::automatic);
  // Nothing was written while the server was down; the same filter object reconnects.
  server.restart();
  EXPECT_GT(filter.add_many(views), items.size() * 99 / 100);
  EXPECT_EQ(filter.contains_many(views), items.size());
}

TEST(RedisFaults, KilledServerMidLoadReportsACommittedPrefixThatSurvives) {
  // Every write is in the AOF before its reply is sent, so what a client saw committed
  // survives the kill.
  RedisServer server({"--appendonly", "yes", "--appendfsync", "always"});
  constexpr std::size_t kItems = 2'000'000;
  const FilterParams params = size_filter(kItems, 0.01, Layout::classic);
  ASSERT_EQ(params.partitions, 1u);
  Filter filter = Filter::create_redis(server.endpoint(), "big", params);
  const auto items = make_items(kItems, "load-");
  const auto views = views_of(items);

  testing::BackgroundAdd loader(filter, views);
  // Kill once the load is well under way: 200,000 bits take at least 28,000 items (k = 7), and
  // with at most 8 rounds of 2,048 items in flight, the client has then read the replies of
  // the first 11,600 or more: the committed prefix cannot be empty.
  constexpr long long kKillAfterBits = 200000;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  long long bits = 0;
  try {
    while (!loader.finished() && std::chrono::steady_clock::now() < deadline) {
      bits = server.integer({"BITCOUNT", partition_key("big", 0)});
      if (bits > kKillAfterBits) break;
      std::this_thread::sleep_for(1ms);
    }
  } catch (...) {
    server.kill(SIGKILL);  // so that the loader ends
    throw;
  }
  const bool killed_mid_load = !loader.finished() && bits > kKillAfterBits;
  server.kill(SIGKILL);
  loader.join();
  const auto& committed = loader.committed();
  const std::string& message = loader.message();
  ASSERT_TRUE(killed_mid_load) << "the load " << (loader.finished() ? "ended" : "did not start")
                               << " before the kill (bits: " << bits << ")";
  ASSERT_TRUE(committed.has_value()) << "expected IncompleteWrite, got: " << message;
  EXPECT_TRUE(contains_text(message, "127.0.0.1:" + std::to_string(server.port()))) << message;
  EXPECT_GT(*committed, 0u) << message;
  EXPECT_LT(*committed, kItems) << message;
  std::printf("[ killed   ] after %zu committed items: %s\n", *committed, message.c_str());

  server.restart();
  Filter reopened = Filter::open_redis(server.endpoint(), "big");
  const auto prefix = std::span(views).first(*committed);
  std::vector<std::uint8_t> present(prefix.size());
  EXPECT_EQ(reopened.contains_many(prefix, present), prefix.size());
  const auto missing = std::find(present.begin(), present.end(), 0);
  EXPECT_TRUE(missing == present.end())
      << "committed item " << (missing - present.begin()) << " was lost";
  // The interrupted filter object reconnects, and adding the rest again is safe.
  filter.add_many(views.size() > *committed + 100000 ? std::span(views).subspan(*committed, 100000)
                                                     : std::span(views).subspan(*committed));
  EXPECT_TRUE(filter.contains(views[*committed]));
}

}  // namespace
}  // namespace redbloom
