// The library on servers with redbloom's module: it finds the module (RB.VERSION) on one
// server, on sharded servers and on every master of a cluster, and then tests-and-sets and
// looks up through RB.PARTADD / RB.PARTEXISTS: the same answers and the same bits, byte for
// byte, as the stock BITFIELD path on servers without it; and a lost partition is still an
// error, never an answer.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/layout.hpp"
#include "error_of.hpp"
#include "redbloom/engine_filter.hpp"
#include "redbloom/error.hpp"
#include "redbloom/filter.hpp"
#include "redbloom/hash.hpp"
#include "redbloom/transfer.hpp"
#include "redis/redis_store.hpp"
#include "redis_cluster.hpp"
#include "redis_server.hpp"
#include "rounds_sent_ahead.hpp"
#include "test_items.hpp"

namespace redbloom {
namespace {

using test::RedisServer;
using testing::contains_text;
using testing::error_of;
using testing::partition_key;

const std::vector<std::string> kWithModule = {"--loadmodule", REDBLOOM_MODULE_PATH};
constexpr std::uint64_t kSmallPartition = 64 * 1024;

std::vector<std::string> numbered(const char* prefix, int first, int count) {
  std::vector<std::string> out;
  for (int i = first; i < first + count; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

struct Answers {
  std::vector<std::uint8_t> added, present;
};

// Adds 30000 items (a third of them twice, so some answers are "not new") one batch at a
// time, then looks up the added ones and as many absent ones, per item.
Answers exercise(Filter& filter) {
  auto owned = numbered("item-", 0, 20000);
  const auto again = numbered("item-", 10000, 10000);
  owned.insert(owned.end(), again.begin(), again.end());
  const std::vector<std::string_view> items(owned.begin(), owned.end());
  Answers answers;
  answers.added.resize(items.size());
  filter.add_many(items, answers.added);
  auto probes = numbered("item-", 0, 20000);
  const auto absent = numbered("absent-", 0, 20000);
  probes.insert(probes.end(), absent.begin(), absent.end());
  const std::vector<std::string_view> probe_views(probes.begin(), probes.end());
  answers.present.resize(probes.size());
  // Lookups of a small batch on a sharded filter go item by item anyway; on one server or a
  // cluster the store is asked to, so that the module's lookup is what runs.
  if (auto* store = dynamic_cast<RedisStore*>(&filter.store())) {
    store->set_bulk_mode(RedisStore::BulkMode::per_item);
  }
  filter.contains_many(probe_views, answers.present);
  return answers;
}

TEST(ModuleStore, OneServerGivesTheStockPathsAnswersAndBits) {
  RedisServer with(kWithModule);
  RedisServer without;
  for (const Layout layout : {Layout::classic, Layout::blocked}) {
    SCOPED_TRACE(std::string(to_string(layout)));
    const FilterParams params = size_filter(300000, 0.01, layout, kSmallPartition);
    ASSERT_GE(params.partitions, 2u);
    const std::string name = "m-" + std::string(to_string(layout));
    Filter on_module = Filter::create_redis(with.endpoint(), name, params);
    Filter on_stock = Filter::create_redis(without.endpoint(), name, params);
    const Answers module_answers = exercise(on_module);
    const Answers stock_answers = exercise(on_stock);
    EXPECT_EQ(module_answers.added, stock_answers.added);
    EXPECT_EQ(module_answers.present, stock_answers.present);
    for (std::uint64_t p = 0; p < params.partitions; ++p) {
      EXPECT_EQ(with.command({"GET", partition_key(name, p)}).text,
                without.command({"GET", partition_key(name, p)}).text)
          << "partition " << p;
    }
  }
  EXPECT_GT(with.calls("rb.partaddh"), 0);
  EXPECT_GT(with.calls("rb.partexistsh"), 0);
  EXPECT_EQ(with.calls("bitfield"), 0);
  EXPECT_GT(without.calls("bitfield"), 0);
}

TEST(ModuleStore, APartitionLostUnderTheModuleIsAnError) {
  RedisServer with(kWithModule);
  const FilterParams params = size_filter(300000, 0.01, Layout::blocked, kSmallPartition);
  Filter filter = Filter::create_redis(with.endpoint(), "lost", params);
  const auto owned = numbered("item-", 0, 5000);
  const std::vector<std::string_view> items(owned.begin(), owned.end());
  std::vector<std::uint8_t> flags(items.size());
  filter.add_many(items, flags);
  (void)with.command({"DEL", partition_key("lost", 1)});
  const std::string add = error_of([&] { filter.add_many(items, flags); });
  EXPECT_TRUE(contains_text(add, "vanished")) << add;
  EXPECT_TRUE(contains_text(add, partition_key("lost", 1))) << add;
  EXPECT_THROW(filter.add_many(items, flags), IncompleteWrite);
  dynamic_cast<RedisStore&>(filter.store()).set_bulk_mode(RedisStore::BulkMode::per_item);
  const std::string lookup = error_of([&] { filter.contains_many(items, flags); });
  EXPECT_TRUE(contains_text(lookup, partition_key("lost", 1))) << lookup;
  // A partition recreated shorter (a write that met the lost key) is refused just the same.
  (void)with.command({"SETBIT", partition_key("lost", 1), "7", "1"});
  const std::string shorter = error_of([&] { filter.contains_many(items, flags); });
  EXPECT_TRUE(contains_text(shorter, "changed length")) << shorter;
}

// Rounds are sent ahead of the earlier rounds' replies under the module too
// (rounds_sent_ahead.hpp).
TEST(ModuleStore, ARoundSentAheadThatFailsLeavesTheRoundsBeforeItCommitted) {
  RedisServer with(kWithModule);
  testing::expect_rounds_before_a_failed_one_committed(with, Layout::blocked);
}

TEST(ModuleStore, ShardedServersUseTheModuleOnlyWhereEveryServerHasIt) {
  RedisServer a(kWithModule), b(kWithModule), plain;
  const FilterParams params = size_filter(300000, 0.01, Layout::blocked, kSmallPartition);
  Filter both = Filter::create_redis(std::vector{a.endpoint(), b.endpoint()}, "s", params);
  Filter stock = Filter::create_redis(std::vector{plain.endpoint()}, "s", params);
  const Answers sharded = exercise(both);
  const Answers single = exercise(stock);
  EXPECT_EQ(sharded.added, single.added);
  EXPECT_EQ(sharded.present, single.present);
  EXPECT_GT(a.calls("rb.partaddh"), 0);
  EXPECT_GT(b.calls("rb.partaddh"), 0);
  EXPECT_EQ(a.calls("bitfield") + b.calls("bitfield"), 0);
}

TEST(ModuleStore, AClusterWithTheModuleOnEveryMasterUsesIt) {
  test::RedisCluster cluster(3, 0, kWithModule);
  RedisServer plain;
  const FilterParams params = size_filter(300000, 0.01, Layout::classic, kSmallPartition);
  Filter clustered = Filter::create_redis(cluster.endpoint(), "c", params);
  Filter stock = Filter::create_redis(plain.endpoint(), "c", params);
  const Answers on_cluster = exercise(clustered);
  const Answers on_stock = exercise(stock);
  EXPECT_EQ(on_cluster.added, on_stock.added);
  EXPECT_EQ(on_cluster.present, on_stock.present);
  long long module_calls = 0, bitfields = 0;
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    module_calls += cluster.node(i).calls("rb.partaddh");
    bitfields += cluster.node(i).calls("bitfield");
  }
  EXPECT_GT(module_calls, 0);
  EXPECT_EQ(bitfields, 0);
  // BF.* on one key cannot reach partitions in other slots: an error naming the kind, never 0.
  std::size_t answered = 0;
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    const auto reply = cluster.node(i).command({"BF.EXISTS", "c", "item-1"});
    if (reply.text.starts_with("MOVED")) continue;
    ++answered;
    EXPECT_EQ(reply.kind, test::RedisReply::Kind::error) << reply.integer;
    EXPECT_TRUE(contains_text(reply.text, "redbloom plain filter")) << reply.text;
    EXPECT_TRUE(contains_text(reply.text, "other slots")) << reply.text;
  }
  EXPECT_EQ(answered, 1u);
}

// The items' BF.MEXISTS answers: a 1 or 0 per item; an error reply fails the test.
std::vector<std::uint8_t> bf_mexists(const RedisServer& server, const std::string& key,
                                     const std::vector<std::string>& items) {
  std::vector<std::string> args = {"BF.MEXISTS", key};
  args.insert(args.end(), items.begin(), items.end());
  const auto reply = server.command(args);
  EXPECT_EQ(reply.kind, test::RedisReply::Kind::array) << reply.text;
  std::vector<std::uint8_t> answers;
  for (const auto& element : reply.elements) {
    answers.push_back(static_cast<std::uint8_t>(element.integer));
  }
  return answers;
}

std::size_t ones(const std::vector<std::uint8_t>& answers) {
  return static_cast<std::size_t>(std::count(answers.begin(), answers.end(), 1));
}

// A filter the library (or the CLI) made is a hash and string partitions: BF.* clients
// (redis-cli, redis-py's r.bf()) get the library's answers from it, hashed on the server.
TEST(ModuleStore, BfCommandsAnswerForTheLibrarysFilters) {
  RedisServer with(kWithModule);
  for (const Layout layout : {Layout::classic, Layout::blocked}) {
    SCOPED_TRACE(std::string(to_string(layout)));
    const FilterParams params = size_filter(300000, 0.01, layout, kSmallPartition);
    ASSERT_GE(params.partitions, 2u);
    const std::string name = "lib-" + std::string(to_string(layout));
    Filter filter = Filter::create_redis(with.endpoint(), name, params);
    const auto held = numbered("held-", 0, 10000);
    filter.add_many(std::vector<std::string_view>(held.begin(), held.end()));
    EXPECT_EQ(ones(bf_mexists(with, name, held)), held.size());
    EXPECT_EQ(with.integer({"BF.EXISTS", name, "held-7"}), 1);
    // Absent items: exactly the library's answers (its false positives too).
    const auto absent = numbered("absent-", 0, 10000);
    std::vector<std::uint8_t> expected(absent.size());
    filter.contains_many(std::vector<std::string_view>(absent.begin(), absent.end()), expected);
    EXPECT_EQ(bf_mexists(with, name, absent), expected);
    // Adds through BF.* land in the library's bits, with per-item answers.
    const auto fresh = numbered("fresh-", 0, 2000);
    std::vector<std::string> madd = {"BF.MADD", name};
    madd.insert(madd.end(), fresh.begin(), fresh.end());
    madd.push_back("held-3");
    const auto added = with.command(madd);
    ASSERT_EQ(added.kind, test::RedisReply::Kind::array) << added.text;
    ASSERT_EQ(added.elements.size(), fresh.size() + 1);
    EXPECT_EQ(added.elements.back().integer, 0);  // held already
    std::size_t new_ones = 0;
    for (std::size_t i = 0; i < fresh.size(); ++i) new_ones += added.elements[i].integer == 1;
    EXPECT_GT(new_ones, fresh.size() * 9 / 10);
    std::vector<std::uint8_t> seen(fresh.size());
    filter.contains_many(std::vector<std::string_view>(fresh.begin(), fresh.end()), seen);
    EXPECT_EQ(ones(seen), fresh.size());
    EXPECT_EQ(with.integer({"BF.ADD", name, "one-more"}), 1);
    EXPECT_EQ(with.integer({"BF.ADD", name, "one-more"}), 0);
    EXPECT_TRUE(filter.contains("one-more"));
    const auto info = with.command({"BF.INFO", name, "CAPACITY"});
    ASSERT_EQ(info.elements.size(), 1u) << info.text;
    EXPECT_EQ(static_cast<std::uint64_t>(info.elements[0].integer), params.capacity);
    // What cannot apply names the kind of filter.
    for (const std::vector<std::string>& refused :
         {std::vector<std::string>{"BF.RESERVE", name, "0.01", "100"},
          std::vector<std::string>{"BF.CARD", name},
          std::vector<std::string>{"BF.SCANDUMP", name, "0"}}) {
      const auto reply = with.command(refused);
      EXPECT_EQ(reply.kind, test::RedisReply::Kind::error) << refused[0];
      EXPECT_TRUE(contains_text(reply.text, "redbloom plain filter")) << reply.text;
    }
  }
}

TEST(ModuleStore, BfCommandsNameWhatTheyCannotServe) {
  RedisServer with(kWithModule);
  const FilterParams params = size_filter(300000, 0.01, Layout::blocked, kSmallPartition);
  Filter filter = Filter::create_redis(with.endpoint(), "gone", params);
  filter.add("x");
  for (std::uint64_t p = 0; p < params.partitions; ++p) {
    (void)with.command({"DEL", partition_key("gone", p)});
  }
  for (const char* command : {"BF.EXISTS", "BF.ADD"}) {
    const auto lost = with.command({command, "gone", "x"});
    EXPECT_EQ(lost.kind, test::RedisReply::Kind::error) << command;
    EXPECT_TRUE(contains_text(lost.text, "REDBLOOMLOST")) << lost.text;
  }
  // A sharded filter's other partitions are on other servers.
  RedisServer other(kWithModule);
  Filter sharded =
      Filter::create_redis(std::vector{with.endpoint(), other.endpoint()}, "sharded", params);
  const auto reply = with.command({"BF.MEXISTS", "sharded", "a", "b"});
  EXPECT_EQ(reply.kind, test::RedisReply::Kind::error);
  EXPECT_TRUE(contains_text(reply.text, "sharded")) << reply.text;
  // A windowed filter is not a plain one; a hash of someone else's still answers 0.
  StreamOptions window;
  window.capacity = 1000;
  window.error_rate = 0.01;
  window.window_ns = 60'000'000'000;
  Filter windowed = Filter::create(Location::redis({with.endpoint()}, "win"), window);
  windowed.add("x");
  const auto stream = with.command({"BF.EXISTS", "win", "x"});
  EXPECT_EQ(stream.kind, test::RedisReply::Kind::error);
  EXPECT_TRUE(contains_text(stream.text, "windowed or growing")) << stream.text;
  (void)with.command({"HSET", "someone", "field", "value"});
  EXPECT_EQ(with.integer({"BF.EXISTS", "someone", "x"}), 0);
}

// A filter BF.RESERVE made (the server's own engine) is opened and used through BF.*: per-item
// answers that match the server's, info from BF.INFO; what needs redbloom's bits names it.
TEST(ModuleStore, TheLibraryUsesAFilterOfTheServersOwnEngine) {
  RedisServer with(kWithModule);
  ASSERT_EQ(with.command({"BF.RESERVE", "bf", "0.001", "50000"}).text, "OK");
  ASSERT_EQ(with.integer({"BF.ADD", "bf", "held-3"}), 1);
  const Location where = Location::redis({with.endpoint()}, "bf");
  Filter filter = Filter::open(where);
  EXPECT_TRUE(contains_text(filter.backend().location(), "TYPE redbloomF"))
      << filter.backend().location();
  const auto held = numbered("held-", 0, 10000);
  const std::vector<std::string_view> items(held.begin(), held.end());
  std::vector<std::uint8_t> added(items.size());
  EXPECT_EQ(filter.add_many(items, added), items.size() - 1);
  EXPECT_EQ(added[3], 0);
  EXPECT_EQ(with.integer({"BF.CARD", "bf"}), 10000);
  std::vector<std::uint8_t> present(items.size());
  EXPECT_EQ(filter.contains_many(items, present), items.size());
  EXPECT_EQ(ones(bf_mexists(with, "bf", held)), held.size());
  const auto absent = numbered("absent-", 0, 5000);
  std::vector<std::uint8_t> absent_answers(absent.size());
  filter.contains_many(std::vector<std::string_view>(absent.begin(), absent.end()), absent_answers);
  EXPECT_EQ(absent_answers, bf_mexists(with, "bf", absent));
  const FilterInfo info = filter.info();
  ASSERT_TRUE(info.server_filter.has_value());
  EXPECT_EQ(info.server_filter->type, "redbloomF");
  EXPECT_EQ(info.server_filter->capacity, 50000u);
  EXPECT_EQ(info.server_filter->items, std::optional<std::uint64_t>(10000));
  ASSERT_EQ(info.engines.size(), 1u);
  EXPECT_TRUE(contains_text(info.engines[0], "BF.INSERT / BF.MEXISTS")) << info.engines[0];
  // Byte-for-byte copies need redbloom's bits.
  const std::string exported =
      error_of([&] { (void)copy_filter(where, Location::memory(), false); });
  EXPECT_TRUE(contains_text(exported, "redbloom.so's BF filter (TYPE redbloomF)")) << exported;
  // Deleted under the store: an error, never "absent" or a new empty filter.
  (void)with.command({"DEL", "bf"});
  const std::string lookup = error_of([&] { filter.contains_many(items, present); });
  EXPECT_TRUE(contains_text(lookup, "is gone")) << lookup;
  EXPECT_THROW(filter.add_many(items, added), IncompleteWrite);
  EXPECT_EQ(with.integer({"EXISTS", "bf"}), 0);
}

// A filter deleted and made again under an open store (DEL + BF.RESERVE, or an add after an
// eviction) holds none of the items added before: its lookups are an error, never "absent".
TEST(ModuleStore, AFilterMadeAgainUnderTheStoreIsAnError) {
  RedisServer with(kWithModule);
  for (const char* format : {"redbloom", "redisbloom"}) {
    SCOPED_TRACE(format);
    (void)with.command({"FLUSHALL"});
    ASSERT_EQ(with.command({"BF.RESERVE", "bf", "0.01", "10000", "FORMAT", format}).text, "OK");
    Filter filter = Filter::open(Location::redis({with.endpoint()}, "bf"));
    const auto held = numbered("held-", 0, 3000);
    const std::vector<std::string_view> items(held.begin(), held.end());
    std::vector<std::uint8_t> added(items.size());
    filter.add_many(items, added);
    std::vector<std::uint8_t> present(items.size());
    EXPECT_EQ(filter.contains_many(items, present), items.size());
    (void)with.command({"DEL", "bf"});
    ASSERT_EQ(with.command({"BF.RESERVE", "bf", "0.01", "10000", "FORMAT", format}).text, "OK");
    const std::string remade = error_of([&] { filter.contains_many(items, present); });
    EXPECT_TRUE(contains_text(remade, "made again")) << remade;
    // Made again by an add, as after an eviction, in the same format (same TYPE).
    (void)with.command({"DEL", "bf"});
    ASSERT_EQ(with.command({"BF.INSERT", "bf", "FORMAT", format, "ITEMS", "other"}).kind,
              test::RedisReply::Kind::array);
    const std::string by_add = error_of([&] { filter.contains_many(items, present); });
    EXPECT_TRUE(contains_text(by_add, "made again")) << by_add;
  }
}

// create_engine_filter makes the key with BF.RESERVE; four writers, each with its own Filter and
// connections, add one item set in different orders and no item is new to two of them.
TEST(ModuleStore, EngineFiltersAreReservedAndTheirAddsAreAtomic) {
  RedisServer with(kWithModule);
  const Location where = Location::redis({with.endpoint()}, "shared");
  EngineFilterOptions options;
  options.capacity = 100000;
  options.error_rate = 1e-6;
  options.expansion = 4;
  const Filter made = create_engine_filter(where, options);
  EXPECT_EQ(made.params().capacity, 100000u);
  EXPECT_EQ(made.params().error_rate, 1e-6);
  EXPECT_EQ(with.command({"TYPE", "shared"}).text, "redbloomF");
  EXPECT_THROW((void)create_engine_filter(where, options), FilterExists);
  options.nonscaling = true;
  EXPECT_THROW((void)create_engine_filter(where, options, true), InvalidArgument);
  EXPECT_EQ(with.command({"TYPE", "shared"}).text, "redbloomF");  // a bad option drops nothing
  options.nonscaling = false;

  const auto keys = numbered("event-", 0, 30000);
  constexpr int kWriters = 4;
  std::vector<std::vector<std::string>> fresh(kWriters);
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      std::vector<std::string> order = keys;
      std::shuffle(order.begin(), order.end(), std::mt19937(static_cast<unsigned>(w)));
      Filter filter = Filter::open(where);
      const std::vector<std::string_view> views(order.begin(), order.end());
      std::vector<std::uint8_t> added(views.size());
      for (std::size_t first = 0; first < views.size(); first += 2500) {
        const std::size_t count = std::min<std::size_t>(2500, views.size() - first);
        filter.add_many(std::span(views).subspan(first, count),
                        std::span(added).subspan(first, count));
      }
      for (std::size_t i = 0; i < views.size(); ++i) {
        if (added[i] != 0) fresh[static_cast<std::size_t>(w)].push_back(order[i]);
      }
    });
  }
  for (std::thread& writer : writers) writer.join();
  std::vector<std::string> all;
  for (const auto& some : fresh) all.insert(all.end(), some.begin(), some.end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "an item new twice";
  EXPECT_EQ(static_cast<long long>(all.size()), with.integer({"BF.CARD", "shared"}));
  EXPECT_GE(all.size(), keys.size() - 5);  // all but false positives at 1e-6

  // Several servers: refused, naming why, before anything is made.
  RedisServer other(kWithModule);
  const std::string sharded = error_of([&] {
    (void)create_engine_filter(Location::redis({with.endpoint(), other.endpoint()}, "s"), options);
  });
  EXPECT_TRUE(contains_text(sharded, "one key on one server")) << sharded;
  // A server without an engine.
  RedisServer stock;
  const std::string none = error_of(
      [&] { (void)create_engine_filter(Location::redis({stock.endpoint()}, "s"), options); });
  EXPECT_TRUE(contains_text(none, "has no Bloom engine of its own")) << none;
}

// info names what does the per-item work on each server.
TEST(ModuleStore, InfoNamesTheEngine) {
  RedisServer with(kWithModule);
  RedisServer without;
  const FilterParams params = size_filter(1000, 0.01, Layout::blocked, kSmallPartition);
  const Filter on_module = Filter::create_redis(with.endpoint(), "e", params);
  const Filter on_stock = Filter::create_redis(without.endpoint(), "e", params);
  const auto module_engines = on_module.info().engines;
  ASSERT_EQ(module_engines.size(), 1u);
  EXPECT_TRUE(contains_text(module_engines[0], "module redbloom (commands version"))
      << module_engines[0];
  EXPECT_TRUE(contains_text(module_engines[0], "RB.PARTADDH / RB.PARTEXISTSH"));
  const auto stock_engines = on_stock.info().engines;
  ASSERT_EQ(stock_engines.size(), 1u);
  EXPECT_TRUE(contains_text(stock_engines[0], "stock Redis commands: BITFIELD / GETRANGE"))
      << stock_engines[0];
}

}  // namespace
}  // namespace redbloom
