// The library on servers with redbloom's module: it finds the module (RB.VERSION) on one
// server, on sharded servers and on every master of a cluster, and then tests-and-sets and
// looks up through RB.PARTADD / RB.PARTEXISTS: the same answers and the same bits, byte for
// byte, as the stock BITFIELD path on servers without it; and a lost partition is still an
// error, never an answer.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "error_of.hpp"
#include "redbloom/error.hpp"
#include "redbloom/filter.hpp"
#include "redis/redis_store.hpp"
#include "redis_cluster.hpp"
#include "redis_server.hpp"
#include "test_items.hpp"

namespace redbloom {
namespace {

using test::RedisServer;
using testing::contains_text;
using testing::error_of;

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

std::string partition_key(const std::string& name, std::uint64_t partition) {
  return name + ":bits:{" + name + ":" + std::to_string(partition) + "}";
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
  EXPECT_GT(with.calls("rb.partadd"), 0);
  EXPECT_GT(with.calls("rb.partexists"), 0);
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

TEST(ModuleStore, ShardedServersUseTheModuleOnlyWhereEveryServerHasIt) {
  RedisServer a(kWithModule), b(kWithModule), plain;
  const FilterParams params = size_filter(300000, 0.01, Layout::blocked, kSmallPartition);
  Filter both = Filter::create_redis(std::vector{a.endpoint(), b.endpoint()}, "s", params);
  Filter stock = Filter::create_redis(std::vector{plain.endpoint()}, "s", params);
  const Answers sharded = exercise(both);
  const Answers single = exercise(stock);
  EXPECT_EQ(sharded.added, single.added);
  EXPECT_EQ(sharded.present, single.present);
  EXPECT_GT(a.calls("rb.partadd"), 0);
  EXPECT_GT(b.calls("rb.partadd"), 0);
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
    module_calls += cluster.node(i).calls("rb.partadd");
    bitfields += cluster.node(i).calls("bitfield");
  }
  EXPECT_GT(module_calls, 0);
  EXPECT_EQ(bitfields, 0);
}

}  // namespace
}  // namespace redbloom
