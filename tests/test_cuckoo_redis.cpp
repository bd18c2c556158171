// Cuckoo filters in Redis (src/redis/cuckoo_redis_store.hpp) against real servers that the
// tests start: one server, two servers (sharded) and a 3-master cluster. The Lua script must
// repeat the library's table step for step: the same adds and removes leave byte-identical
// tables in Redis and in a file, through kicks, growth and removes. Built twice: on stock
// servers (the script) and, with REDBLOOM_MODULE_PATH, on servers that load redbloom's module
// (RB.CUCKOO), which must pass the same scenarios.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <thread>

#include "core/cuckoo_shape.hpp"
#include "core/sharding.hpp"
#include "error_of.hpp"
#include "redbloom/error.hpp"
#include "redbloom/filter.hpp"
#include "redbloom/location.hpp"
#include "redbloom/transfer.hpp"
#include "redis/cuckoo_redis_store.hpp"
#include "redis/router.hpp"
#include "redis_cluster.hpp"
#include "redis_server.hpp"
#include "test_items.hpp"

namespace redbloom {
namespace {

using test::RedisCluster;
using test::RedisReply;
using test::RedisServer;
using testing::contains_text;
using testing::error_of;
using testing::make_items;
using testing::views_of;

// The servers' extra arguments: the module, in the build that tests it.
std::vector<std::string> server_args() {
#ifdef REDBLOOM_MODULE_PATH
  return {"--loadmodule", REDBLOOM_MODULE_PATH};
#else
  return {};
#endif
}

// Where the filter lives: one server, two servers (sharded), or a 3-master cluster.
enum class Where { one, sharded, cluster };

std::string setup_name(const ::testing::TestParamInfo<Where>& info) {
  switch (info.param) {
    case Where::one:
      return "OneServer";
    case Where::sharded:
      return "TwoServers";
    case Where::cluster:
      return "Cluster";
  }
  return "?";
}

class Servers {
 public:
  explicit Servers(Where setup) {
    if (setup == Where::cluster) {
      cluster_ = std::make_unique<RedisCluster>(3, 0, server_args());
    } else {
      for (int i = 0; i < (setup == Where::sharded ? 2 : 1); ++i) {
        servers_.push_back(std::make_unique<RedisServer>(server_args()));
      }
    }
  }

  [[nodiscard]] std::vector<RedisEndpoint> endpoints() const {
    if (cluster_) return {cluster_->endpoint()};
    std::vector<RedisEndpoint> out;
    for (const auto& server : servers_) out.push_back(server->endpoint());
    return out;
  }

  [[nodiscard]] Location location(const std::string& name) const {
    return Location::redis(endpoints(), name);
  }

  // The node holding `key` of partition `partition`.
  [[nodiscard]] RedisServer& holder(std::uint64_t partition, const std::string& key) const {
    if (cluster_) return cluster_->node(cluster_->owner_of(redis::slot_of(key)));
    const auto shard =
        sharding::shard_of_partition(partition, static_cast<std::uint32_t>(servers_.size()));
    return *servers_[servers_.size() == 1 ? 0 : shard];
  }

  // Every key on every node.
  [[nodiscard]] std::vector<std::string> all_keys() const {
    std::vector<std::string> keys;
    const auto scan = [&](RedisServer& node) {
      std::string cursor = "0";
      do {
        const RedisReply reply = node.command({"SCAN", cursor, "COUNT", "1000"});
        cursor = reply.elements.at(0).text;
        for (const RedisReply& key : reply.elements.at(1).elements) keys.push_back(key.text);
      } while (cursor != "0");
    };
    if (cluster_) {
      for (std::size_t i = 0; i < cluster_->size(); ++i) scan(cluster_->node(i));
    }
    for (const auto& server : servers_) scan(*server);
    return keys;
  }

  [[nodiscard]] std::size_t server_count() const { return cluster_ ? 1 : servers_.size(); }

 private:
  std::vector<std::unique_ptr<RedisServer>> servers_;
  std::unique_ptr<RedisCluster> cluster_;
};

// One set of servers per setup for the whole suite (each test uses its own names).
class CuckooRedisTest : public ::testing::TestWithParam<Where> {
 protected:
  static std::map<Where, std::unique_ptr<Servers>>& shared() {
    static std::map<Where, std::unique_ptr<Servers>> servers;
    return servers;
  }
  static Servers& servers_of(Where setup) {
    auto& slot = shared()[setup];
    if (!slot) slot = std::make_unique<Servers>(setup);
    return *slot;
  }
  static void TearDownTestSuite() { shared().clear(); }

  // A file beside the test's Redis filter, for byte comparisons.
  std::string file_path(const std::string& name) const {
    return ::testing::TempDir() + "cuckoo_redis_" + name + "_" +
           std::to_string(static_cast<int>(GetParam())) + ".rbf";
  }

  Servers& servers_ = servers_of(GetParam());
};

INSTANTIATE_TEST_SUITE_P(Setups, CuckooRedisTest,
                         ::testing::Values(Where::one, Where::sharded, Where::cluster), setup_name);

CuckooOptions options_of(std::uint64_t capacity, double rate, std::uint32_t growth,
                         std::uint32_t partitions, std::uint64_t max_bytes = 0) {
  CuckooOptions options;
  options.capacity = capacity;
  options.error_rate = rate;
  options.growth = growth;
  options.partitions = partitions;
  options.max_bytes = max_bytes;
  return options;
}

std::vector<std::uint8_t> add(Filter& filter, const std::vector<std::string>& items) {
  std::vector<std::uint8_t> fresh(items.size());
  filter.add_many(views_of(items), fresh);
  return fresh;
}

std::vector<std::uint8_t> remove(Filter& filter, const std::vector<std::string>& items) {
  std::vector<std::uint8_t> removed(items.size());
  filter.remove_many(views_of(items), removed);
  return removed;
}

std::vector<std::uint8_t> lookup(const Filter& filter, const std::vector<std::string>& items) {
  std::vector<std::uint8_t> present(items.size());
  filter.contains_many(views_of(items), present);
  return present;
}

std::vector<std::uint32_t> counts(const Filter& filter, const std::vector<std::string>& items) {
  std::vector<std::uint32_t> out(items.size());
  filter.count_many(views_of(items), out);
  return out;
}

// The partition of a key "NAME:part:bits:{NAME:p[:salt]}".
std::uint64_t redis_partition_of(const std::string& key) {
  const std::size_t tag = key.find('{');
  const std::size_t colon = key.find(':', tag);
  return std::stoull(key.substr(colon + 1));
}

const RedisCuckooStore& redis_store(const Filter& filter) {
  const auto* store = dynamic_cast<const RedisCuckooStore*>(&filter.backend());
  if (store == nullptr) throw std::runtime_error("not a Redis cuckoo filter");
  return *store;
}

RedisCuckooStore& redis_store(Filter& filter) {
  auto* store = dynamic_cast<RedisCuckooStore*>(&filter.backend());
  if (store == nullptr) throw std::runtime_error("not a Redis cuckoo filter");
  return *store;
}

// Every table of the Redis filter, read from the node that holds it, equals the file's; the
// two hold the same links.
void expect_same_tables(const Servers& servers, const Filter& in_redis, const Filter& in_file) {
  const CuckooTables& file = *in_file.backend().cuckoo_tables();
  const std::vector<std::uint32_t> links = file.link_counts();
  ASSERT_EQ(in_redis.backend().cuckoo_tables()->link_counts(), links);
  for (std::uint32_t p = 0; p < links.size(); ++p) {
    for (std::uint32_t l = 0; l < links[p]; ++l) {
      const std::string key = redis_store(in_redis).link_key(p, l);
      const std::string bytes = servers.holder(p, key).command({"GETRANGE", key, "0", "-1"}).text;
      const std::vector<std::uint8_t> expected = file.read_table(p, l);
      ASSERT_EQ(bytes.size(), expected.size()) << key;
      EXPECT_TRUE(
          std::equal(bytes.begin(), bytes.end(), expected.begin(),
                     [](char a, std::uint8_t b) { return static_cast<std::uint8_t>(a) == b; }))
          << "partition " << p << " link " << l << " differs from the file's";
    }
  }
}

// Both filters take the same calls and answer alike; their tables stay byte-identical.
void same_bytes_scenario(const Servers& servers, const Location& where, const std::string& path,
                         const CuckooOptions& options, std::size_t adds) {
  Filter in_redis = Filter::create(where, options, true);
  Filter in_file = Filter::create(Location::file(path), options, true);
  const auto items = make_items(adds, "page-");
  EXPECT_EQ(add(in_redis, items), add(in_file, items));
  expect_same_tables(servers, in_redis, in_file);
  // Removes of every third item and of items never added (which may clear another's copy,
  // the same one in both), then re-adds of a part, then lookups and counts.
  std::vector<std::string> gone;
  for (std::size_t i = 0; i < items.size(); i += 3) gone.push_back(items[i]);
  const auto strangers = make_items(adds / 4, "stranger-");
  gone.insert(gone.end(), strangers.begin(), strangers.end());
  EXPECT_EQ(remove(in_redis, gone), remove(in_file, gone));
  expect_same_tables(servers, in_redis, in_file);
  const std::vector<std::string> again(gone.begin(), gone.begin() + gone.size() / 2);
  EXPECT_EQ(add(in_redis, again), add(in_file, again));
  expect_same_tables(servers, in_redis, in_file);
  // Lookups and counts by the script and from the tables read whole answer alike.
  const auto mixed = make_items(adds, "page-", adds / 2);
  for (const auto mode :
       {RedisCuckooStore::LookupMode::script, RedisCuckooStore::LookupMode::tables,
        RedisCuckooStore::LookupMode::automatic}) {
    redis_store(in_redis).set_lookup_mode(mode);
    EXPECT_EQ(lookup(in_redis, mixed), lookup(in_file, mixed));
    EXPECT_EQ(counts(in_redis, mixed), counts(in_file, mixed));
  }
  const auto info = in_redis.backend().cuckoo_info();
  ASSERT_TRUE(info);
  EXPECT_EQ(info->items, in_file.backend().cuckoo_info()->items);
  Filter::drop(where);
  Filter::drop(Location::file(path));
}

TEST_P(CuckooRedisTest, TablesAreByteIdenticalToAFilesThroughKicksGrowthAndRemoves) {
  // Growth 2 from a small first link: several links, each with one more fingerprint bit (odd
  // and even widths), kicks in every one of them as it fills.
  same_bytes_scenario(servers_, servers_.location("same-grow"), file_path("grow"),
                      options_of(600, 0.01, 2, 3), 6000);
  // 32-bit fingerprints, a full table: the widest slots and long kick walks.
  same_bytes_scenario(servers_, servers_.location("same-wide"), file_path("wide"),
                      options_of(1500, 3e-9, 0, 2), 1450);
}

TEST_P(CuckooRedisTest, TheScriptRunsOnStockServersAndTheModuleWhereItIsLoaded) {
  const Location where = servers_.location("engine");
  Filter filter = Filter::create(where, options_of(1'000, 0.01, 0, 2), true);
  add(filter, make_items(100, "e-"));
  const std::vector<std::string> engines = filter.info().engines;
  ASSERT_FALSE(engines.empty());
  for (const std::string& engine : engines) {
#ifdef REDBLOOM_MODULE_PATH
    EXPECT_TRUE(contains_text(engine, "RB.CUCKOO")) << engine;
#else
    EXPECT_TRUE(contains_text(engine, "Lua script")) << engine;
#endif
  }
  Filter::drop(where);
}

TEST_P(CuckooRedisTest, NoFalseNegativesAndTheRateOfItsTables) {
  const Location where = servers_.location("rate");
  const CuckooOptions options = options_of(20'000, 0.01, 0, 4);
  Filter filter = Filter::create(where, options, true);
  const auto items = make_items(19'000, "in-");
  add(filter, items);
  const auto present = lookup(filter, items);
  EXPECT_EQ(std::count(present.begin(), present.end(), 1), static_cast<long>(items.size()));
  const auto absent = make_items(60'000, "out-");
  const auto hits = lookup(filter, absent);
  const double measured = static_cast<double>(std::count(hits.begin(), hits.end(), 1)) /
                          static_cast<double>(absent.size());
  const CuckooShape shape(options);
  const double expected = shape.link(0).error_rate(items.size() / options.partitions);
  const double bound = expected + 4 * std::sqrt(expected * (1 - expected) / absent.size());
  EXPECT_LE(measured, bound) << "expected " << expected;
  EXPECT_GT(measured, expected / 4) << "the fingerprints are shorter than the shape says?";
  Filter::drop(where);
}

TEST_P(CuckooRedisTest, RemovesAndReAddsFollowAModelWithNoFalseNegatives) {
  const Location where = servers_.location("model");
  Filter filter = Filter::create(where, options_of(1'000, 0.001, 2, 2), true);
  const auto pool = make_items(3'000, "m-");
  std::map<std::string, std::uint32_t> model;  // copies the filter must hold
  std::mt19937_64 random(42);
  for (int round = 0; round < 12; ++round) {
    std::vector<std::string> adds, removes;
    for (int k = 0; k < 400; ++k) {
      const std::string& item = pool[random() % pool.size()];
      if (random() % 3 == 0 && model[item] > 0 &&
          std::count(removes.begin(), removes.end(), item) < model[item]) {
        removes.push_back(item);
      } else if (random() % 2 == 0) {
        adds.push_back(item);
      }
    }
    const auto fresh = add(filter, adds);
    for (std::size_t i = 0; i < adds.size(); ++i) model[adds[i]] += fresh[i];
    const auto removed = remove(filter, removes);
    for (std::size_t i = 0; i < removes.size(); ++i) {
      EXPECT_EQ(removed[i], 1) << removes[i] << " was in the filter";
      model[removes[i]] -= 1;
    }
    std::vector<std::string> held;
    std::vector<std::uint32_t> copies;
    for (const auto& [item, n] : model) {
      if (n == 0) continue;
      held.push_back(item);
      copies.push_back(n);
    }
    // The script's lookups and the tables read whole, in turn.
    redis_store(filter).set_lookup_mode(round % 2 == 0 ? RedisCuckooStore::LookupMode::script
                                                       : RedisCuckooStore::LookupMode::tables);
    const auto present = lookup(filter, held);
    const auto counted = counts(filter, held);
    for (std::size_t i = 0; i < held.size(); ++i) {
      ASSERT_EQ(present[i], 1) << held[i] << " in round " << round;
      ASSERT_GE(counted[i], copies[i]) << held[i];
    }
  }
  Filter::drop(where);
}

TEST_P(CuckooRedisTest, GrowthStopsAtMaxLinksWithTheCommittedCount) {
  const Location where = servers_.location("bounded");
  // A partition a server (partitions default to that in Redis), growth 2, max_bytes for three
  // links each.
  const auto partitions = static_cast<std::uint32_t>(servers_.server_count());
  CuckooOptions options = options_of(400, 0.01, 2, partitions);
  const CuckooShape unbounded(options);
  options.max_bytes = unbounded.partition_bytes(3) * partitions + 8;
  const CuckooShape bounded(options);
  ASSERT_EQ(bounded.max_links(), 3u);
  Filter in_redis = Filter::create(where, options, true);
  Filter in_file = Filter::create(Location::file(file_path("bounded")), options, true);
  const auto items = make_items(20'000, "b-");
  std::size_t redis_committed = 0, file_committed = 0;
  try {
    add(in_redis, items);
    FAIL() << "the filter took every item";
  } catch (const CapacityExceeded& e) {
    redis_committed = e.committed();
    EXPECT_TRUE(contains_text(e.what(), "full")) << e.what();
  }
  try {
    add(in_file, items);
  } catch (const CapacityExceeded& e) {
    file_committed = e.committed();
  }
  // The first item no link had room for, in batch order, as the file's.
  EXPECT_EQ(redis_committed, file_committed);
  EXPECT_GT(redis_committed, 400u * 6);  // links of 400, 800 and 1600 items
  const std::vector<std::uint32_t> links = in_redis.backend().cuckoo_tables()->link_counts();
  EXPECT_EQ(*std::max_element(links.begin(), links.end()), 3u);
  const std::vector<std::string> committed(items.begin(), items.begin() + redis_committed);
  const auto present = lookup(in_redis, committed);
  EXPECT_EQ(std::count(present.begin(), present.end(), 1), static_cast<long>(committed.size()));
  // With one partition no other partition went on past the refused item.
  if (partitions == 1) expect_same_tables(servers_, in_redis, in_file);
  Filter::drop(where);
  Filter::drop(Location::file(file_path("bounded")));
}

TEST_P(CuckooRedisTest, EightClientsAddingOverlappingItemsSeeEachNewOnce) {
  const Location where = servers_.location("racing");
  // A small first link so the racing adds grow links; a rate low enough that two distinct
  // items sharing a fingerprint is out of reach.
  const CuckooOptions options = options_of(500, 1e-7, 2, 3);
  { Filter made = Filter::create(where, options, true); }
  const auto items = make_items(4'000, "r-");
  constexpr int kClients = 8;
  std::vector<std::vector<std::uint8_t>> answers(kClients);
  std::vector<std::thread> clients;
  std::atomic<int> failures{0};
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      try {
        Filter filter = Filter::open(where);
        std::vector<std::size_t> order(items.size());
        for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::shuffle(order.begin(), order.end(), std::mt19937_64(c));
        answers[c].assign(items.size(), 0);
        for (std::size_t at = 0; at < order.size(); at += 250) {
          std::vector<std::string> batch;
          for (std::size_t j = at; j < std::min(order.size(), at + 250); ++j) {
            batch.push_back(items[order[j]]);
          }
          const auto fresh = add(filter, batch);
          for (std::size_t j = 0; j < batch.size(); ++j) answers[c][order[at + j]] = fresh[j];
        }
      } catch (const std::exception& e) {
        ADD_FAILURE() << "client " << c << ": " << e.what();
        ++failures;
      }
    });
  }
  for (std::thread& t : clients) t.join();
  ASSERT_EQ(failures.load(), 0);
  for (std::size_t i = 0; i < items.size(); ++i) {
    int fresh = 0;
    for (int c = 0; c < kClients; ++c) fresh += answers[c][i];
    ASSERT_EQ(fresh, 1) << items[i] << " was new for " << fresh << " clients";
  }
  Filter filter = Filter::open(where);
  const auto info = filter.backend().cuckoo_info();
  ASSERT_TRUE(info);
  EXPECT_EQ(info->items, items.size());
  EXPECT_GT(info->links.size(), 1u);
  Filter::drop(where);
}

TEST_P(CuckooRedisTest, EightClientsAddingAndRemovingLoseNothing) {
  const Location where = servers_.location("churn");
  // A rate low enough that no two items here share a fingerprint; links grow meanwhile.
  Filter first = Filter::create(where, options_of(1'000, 1e-7, 2, 3), true);
  const auto kept = make_items(2'000, "kept-");
  const auto gone = make_items(2'000, "gone-");
  add(first, kept);
  add(first, gone);
  constexpr int kClients = 8;
  std::atomic<int> failures{0};
  std::atomic<std::size_t> removed{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      try {
        Filter filter = Filter::open(where);
        std::vector<std::string> mine;
        for (std::size_t i = static_cast<std::size_t>(c); i < gone.size(); i += kClients) {
          mine.push_back(gone[i]);
        }
        const auto fresh = make_items(500, "new-" + std::to_string(c) + "-");
        for (std::size_t at = 0; at < mine.size(); at += 50) {
          const std::vector<std::string> out(mine.begin() + at,
                                             mine.begin() + std::min(mine.size(), at + 50));
          const auto flags = remove(filter, out);
          removed += static_cast<std::size_t>(std::count(flags.begin(), flags.end(), 1));
          const std::vector<std::string> in(fresh.begin() + at * 2,
                                            fresh.begin() + std::min(fresh.size(), at * 2 + 100));
          if (!in.empty()) add(filter, in);
        }
      } catch (const std::exception& e) {
        ADD_FAILURE() << "client " << c << ": " << e.what();
        ++failures;
      }
    });
  }
  for (std::thread& t : clients) t.join();
  ASSERT_EQ(failures.load(), 0);
  EXPECT_EQ(removed.load(), gone.size());
  const auto present = lookup(first, kept);
  EXPECT_EQ(std::count(present.begin(), present.end(), 1), static_cast<long>(kept.size()));
  for (int c = 0; c < kClients; ++c) {
    const auto fresh = make_items(500, "new-" + std::to_string(c) + "-");
    const auto found = lookup(first, fresh);
    EXPECT_EQ(std::count(found.begin(), found.end(), 1), 500) << "client " << c;
  }
  const auto absent = lookup(first, gone);
  EXPECT_EQ(std::count(absent.begin(), absent.end(), 1), 0);
  EXPECT_EQ(first.backend().cuckoo_info()->items, kept.size() + kClients * 500u);
  Filter::drop(where);
}

TEST_P(CuckooRedisTest, InsertKeepsACopyAnItemAndRemoveKnownTakesOnlyASoleLinksCopy) {
  const Location where = servers_.location("copies");
  Filter filter = Filter::create(where, options_of(200, 0.001, 2, 1), true);
  RedisCuckooStore& store = redis_store(filter);
  const std::vector<std::string> x = {"x"};
  const auto views = views_of(x);
  // Three copies, in one link (the only one yet).
  for (int i = 0; i < 3; ++i) store.insert(views);
  EXPECT_EQ(counts(filter, x)[0], 3u);
  EXPECT_EQ(add(filter, x)[0], 0);  // add tests first: present, no copy more
  EXPECT_EQ(counts(filter, x)[0], 3u);
  std::vector<std::uint8_t> removed(1);
  store.remove_known(views, removed);
  EXPECT_EQ(removed[0], 1);
  EXPECT_EQ(counts(filter, x)[0], 2u);
  // Other items until a second link grows, then one more copy of x: it goes to the newest link,
  // so two links hold x's fingerprint and neither copy is taken.
  const auto others = make_items(600, "o-");
  const auto other_views = views_of(others);
  store.insert(other_views);
  ASSERT_GE(filter.backend().cuckoo_tables()->link_counts()[0], 2u);
  store.insert(views);
  EXPECT_EQ(counts(filter, x)[0], 3u);
  store.remove_known(views, removed);
  EXPECT_EQ(removed[0], 0) << "two links hold x: a copy could be another item's";
  EXPECT_EQ(counts(filter, x)[0], 3u);
  // The others: each has one copy; removing every one leaves none of them.
  std::vector<std::uint8_t> gone(others.size());
  store.remove_known(other_views, gone);
  const auto present = lookup(filter, others);
  for (std::size_t i = 0; i < others.size(); ++i) {
    if (gone[i] == 0) {
      EXPECT_EQ(present[i], 1) << others[i] << ": kept, so still present";
    }
  }
  EXPECT_GT(std::count(gone.begin(), gone.end(), 1), 500);
  std::vector<std::uint8_t> none(1);
  const std::vector<std::string> never = {"never-inserted"};
  store.remove_known(views_of(never), none);
  EXPECT_EQ(none[0], 0);
  Filter::drop(where);
}

// A user whose ACL lets it only read keys (Redis 7's %R~pattern) looks items up and counts
// them through the script, run by EVALSHA_RO; a user not allowed that command, by EVALSHA.
TEST(CuckooOnOneServer, AUserWhoMayOnlyReadKeysLooksUpAndCounts) {
  test::RedisServer server(server_args());
  test::add_lookup_users(server);
  Filter writer = Filter::create(Location::redis({server.endpoint()}, "c"),
                                 options_of(5'000, 0.01, 2, 1), true);
  const auto items = make_items(2'000, "c-");
  add(writer, items);
  for (const char* user : {"reader", "older"}) {
    SCOPED_TRACE(user);
    RedisEndpoint as_user = server.endpoint();
    as_user.user = user;
    as_user.password = "pw";
    Filter looker = Filter::open(Location::redis({as_user}, "c"), OpenOptions::read_only());
    redis_store(looker).set_lookup_mode(RedisCuckooStore::LookupMode::script);
    const auto present = lookup(looker, items);
    EXPECT_EQ(std::count(present.begin(), present.end(), 1), static_cast<long>(items.size()));
    const auto copies = counts(looker, items);
    EXPECT_EQ(std::count(copies.begin(), copies.end(), 0u), 0);
  }
}

TEST_P(CuckooRedisTest, AnotherClientOpensTheSameFilterAndDropRemovesEveryKey) {
  const Location where = servers_.location("shared");
  CuckooOptions asked = options_of(50'000, 0.001, 2, 1);
  Filter first = Filter::open(where, OpenOptions::create_cuckoo(asked, true));
  // Partitions default to at least one per server.
  ASSERT_TRUE(first.shape().cuckoo);
  EXPECT_GE(first.shape().cuckoo->partitions, servers_.server_count());
  const auto items = make_items(2'000, "s-");
  add(first, items);
  {
    Filter second = Filter::open(where, OpenOptions::create_cuckoo(asked, true));
    EXPECT_EQ(second.shape().cuckoo, first.shape().cuckoo);
    const auto present = lookup(second, items);
    EXPECT_EQ(std::count(present.begin(), present.end(), 1), static_cast<long>(items.size()));
    EXPECT_EQ(second.info().created_unix_ns, first.info().created_unix_ns);
    EXPECT_TRUE(second.remove(items[0]));
  }
  EXPECT_FALSE(first.contains(items[0]));
  EXPECT_TRUE(
      contains_text(error_of([&] { (void)Filter::create(where, asked); }), "already exists"));
  // Other options are refused by an open that requires them.
  CuckooOptions other = asked;
  other.error_rate = 0.01;
  EXPECT_TRUE(contains_text(
      error_of([&] { (void)Filter::open(where, OpenOptions::create_cuckoo(other, true)); }),
      "other parameters"));
  Filter::drop(where);
  for (const std::string& key : servers_.all_keys()) {
    EXPECT_FALSE(key == "shared" || contains_text(key, "{shared:")) << key << " was left";
  }
  EXPECT_FALSE(Filter::exists(where));
  // Made again under the same name: empty.
  Filter again = Filter::create(where, asked);
  const auto present = lookup(again, items);
  EXPECT_EQ(std::count(present.begin(), present.end(), 1), 0);
  // A Bloom filter may replace it, and it may replace a Bloom filter.
  FilterParams bloom = size_filter(10'000, 0.01, Layout::blocked);
  (void)Filter::create(where, bloom, true);
  EXPECT_FALSE(Filter::open(where).shape().cuckoo);
  Filter back = Filter::create(where, asked, true);
  EXPECT_TRUE(back.shape().cuckoo);
  Filter::drop(where);
  for (const std::string& key : servers_.all_keys()) {
    EXPECT_FALSE(key == "shared" || contains_text(key, "{shared:")) << key << " was left";
  }
}

TEST_P(CuckooRedisTest, CopiesMoveTablesVerbatimBetweenAFileAndRedis) {
  // A file filter of one partition keeps it in Redis (sharded too), and comes back whole.
  const std::string source = file_path("copy-source");
  const std::string back = file_path("copy-back");
  const Location where = servers_.location("copied");
  Filter local = Filter::create(Location::file(source), options_of(800, 0.001, 2, 1), true);
  const auto items = make_items(3'000, "c-");
  add(local, items);
  (void)remove(local, make_items(500, "c-"));
  copy_filter(Location::file(source), where, true);
  Filter in_redis = Filter::open(where);
  EXPECT_EQ(in_redis.shape().cuckoo, local.shape().cuckoo);
  expect_same_tables(servers_, in_redis, local);
  EXPECT_EQ(lookup(in_redis, items), lookup(local, items));
  copy_filter(where, Location::file(back), true);
  Filter returned = Filter::open(Location::file(back));
  expect_same_tables(servers_, in_redis, returned);
  EXPECT_EQ(counts(returned, items), counts(local, items));
  Filter::drop(where);
  Filter::drop(Location::file(source));
  Filter::drop(Location::file(back));
}

TEST_P(CuckooRedisTest, AForeignKeyStopsTheCreationAndNothingOfItIsLeft) {
  const Location where = servers_.location("foreign");
  const CuckooOptions options = options_of(5'000, 0.01, 0, 1);
  std::string key;
  {
    Filter made = Filter::create(where, options, true);
    const auto partitions = made.shape().cuckoo->partitions;
    key = redis_store(made).link_key(partitions - 1, 0);
  }
  Filter::drop(where);
  // Another program's key where the last partition's link 0 goes (the same name on the same
  // servers gets the same keys).
  RedisServer& holder = servers_.holder(redis_partition_of(key), key);
  ASSERT_EQ(holder.command({"SET", key, "theirs"}).text, "OK");
  const std::string message = error_of([&] { (void)Filter::create(where, options); });
  EXPECT_TRUE(contains_text(message, key)) << message;
  EXPECT_EQ(holder.command({"GET", key}).text, "theirs");
  for (const std::string& left : servers_.all_keys()) {
    EXPECT_TRUE(left == key || !(left == "foreign" || contains_text(left, "{foreign:")))
        << left << " was left";
  }
  EXPECT_FALSE(Filter::exists(where));
  ASSERT_EQ(holder.integer({"DEL", key}), 1);
}

TEST_P(CuckooRedisTest, ALostLinkOrRosterIsAnErrorNeverAbsent) {
  const Location where = servers_.location("lost");
  Filter filter = Filter::create(where, options_of(300, 0.01, 2, 2), true);
  const auto items = make_items(2'000, "l-");
  add(filter, items);
  const std::vector<std::uint32_t> links = filter.backend().cuckoo_tables()->link_counts();
  ASSERT_GE(links[1], 2u);
  // The newest link of partition 1 goes (as an eviction would take it): the links below it
  // alone would answer "absent" for its items.
  const RedisCuckooStore& store = redis_store(filter);
  const std::string newest = store.link_key(1, links[1] - 1);
  ASSERT_EQ(servers_.holder(1, newest).integer({"DEL", newest}), 1);
  std::string message;
  for (const auto mode :
       {RedisCuckooStore::LookupMode::script, RedisCuckooStore::LookupMode::tables}) {
    redis_store(filter).set_lookup_mode(mode);
    message = error_of([&] { lookup(filter, items); });
    EXPECT_TRUE(contains_text(message, "gone")) << message;
    EXPECT_TRUE(contains_text(message, newest)) << message;
    message = error_of([&] { counts(filter, items); });
    EXPECT_TRUE(contains_text(message, newest)) << message;
  }
  redis_store(filter).set_lookup_mode(RedisCuckooStore::LookupMode::automatic);
  EXPECT_TRUE(contains_text(error_of([&] { add(filter, items); }), newest));
  // Partition 0 answers on; partition 1 answers nothing, removes included.
  std::vector<std::string> first, second;
  for (const std::string& item : items) {
    const bool lost = contains_text(error_of([&] { (void)filter.contains(item); }), "gone");
    (lost ? second : first).push_back(item);
  }
  EXPECT_TRUE(contains_text(error_of([&] { remove(filter, second); }), newest));
  EXPECT_FALSE(first.empty());
  EXPECT_FALSE(second.empty());
  for (const std::string& item : first) EXPECT_TRUE(filter.contains(item)) << item;
  // Its roster goes: an error too, by its name.
  const std::string roster_key =
      store.link_key(0, 0).replace(store.link_key(0, 0).find(":c0:"), 4, ":clinks:");
  ASSERT_EQ(servers_.holder(0, roster_key).integer({"DEL", roster_key}), 1);
  message = error_of([&] { (void)filter.contains(first[0]); });
  EXPECT_TRUE(contains_text(message, roster_key)) << message;
  Filter::drop(where);
  for (const std::string& key : servers_.all_keys()) {
    EXPECT_FALSE(key == "lost" || contains_text(key, "{lost:")) << key << " was left";
  }
}

TEST(CuckooRedisPartitions, EachLinkZeroTableFitsABloomPartitionAndEveryServerHasOne) {
  for (const std::uint64_t capacity :
       {std::uint64_t{1'000}, std::uint64_t{1'000'000'000}, std::uint64_t{20'000'000'000}}) {
    for (const std::uint32_t growth : {0u, 2u}) {
      for (const std::size_t servers : {std::size_t{1}, std::size_t{3}}) {
        const CuckooOptions made = RedisCuckooStore::with_redis_partitions(
            options_of(capacity, 0.001, growth, 1), servers);
        const CuckooShape shape(made);
        EXPECT_LE(shape.link(0).bytes(), kDefaultPartitionBytes) << capacity;
        EXPECT_GE(made.partitions, servers);
        // Not more than a partition more than the bytes need.
        const double need = static_cast<double>(shape.partition_bytes(1)) * made.partitions /
                            static_cast<double>(kDefaultPartitionBytes);
        EXPECT_LE(made.partitions, std::max<double>(servers, std::ceil(need) + 1)) << capacity;
      }
    }
  }
  // Partitions given are kept.
  EXPECT_EQ(RedisCuckooStore::with_redis_partitions(options_of(1'000, 0.01, 0, 5), 2).partitions,
            5u);
}

}  // namespace
}  // namespace redbloom
