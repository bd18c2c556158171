// A filter sharded over three private redis-servers: the same bits and answers as a local
// filter, refusal of any other list of servers, and a committed prefix that survives one
// server being killed mid-load.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "background_add.hpp"
#include "core/sharding.hpp"
#include "error_of.hpp"
#include "local/memory_store.hpp"
#include "redbloom/error.hpp"
#include "redbloom/filter.hpp"
#include "redis/sharded_store.hpp"
#include "redis_server.hpp"
#include "same_as_local.hpp"
#include "test_items.hpp"

namespace redbloom {
namespace {

using namespace std::chrono_literals;
using redbloom::test::RedisServer;
using redbloom::testing::contains_text;
using redbloom::testing::error_of;
using redbloom::testing::make_items;
using redbloom::testing::views_of;

class ShardedStoreTest : public ::testing::TestWithParam<Layout> {
 protected:
  [[nodiscard]] std::vector<RedisEndpoint> servers() const {
    return {a_.endpoint(), b_.endpoint(), c_.endpoint()};
  }
  RedisServer a_;
  RedisServer b_;
  RedisServer c_;
};

INSTANTIATE_TEST_SUITE_P(Layouts, ShardedStoreTest,
                         ::testing::Values(Layout::classic, Layout::blocked));

TEST_P(ShardedStoreTest, SameBitsAndAnswersAsALocalFilter) {
  // 8 KiB partitions: ~22 partitions over 3 servers.
  const FilterParams params = size_filter(150000, 0.01, GetParam(), 8 << 10);
  ASSERT_GE(params.partitions, 12u);
  Filter sharded = Filter::create_redis(servers(), "f", params);
  Filter local = Filter::in_memory(params);
  const auto items = make_items(120000, "s-");
  auto views = views_of(items);
  views.insert(views.end(), views.begin(), views.begin() + 1000);  // repeats in the batch
  std::vector<std::uint8_t> from_sharded(views.size());
  std::vector<std::uint8_t> from_local(views.size());
  EXPECT_EQ(sharded.add_many(views, from_sharded), local.add_many(views, from_local));
  EXPECT_EQ(from_sharded, from_local);
  // Every partition holds the local bytes, and lives on the server jump hashing names.
  auto& store = dynamic_cast<ShardedRedisStore&>(sharded.store());
  std::vector<std::uint8_t> remote(params.partition_bytes());
  std::vector<std::uint8_t> mine(params.partition_bytes());
  std::vector<int> per_server(3);
  for (std::uint64_t p = 0; p < params.partitions; ++p) {
    store.read_bytes(p, 0, remote);
    local.store().read_bytes(p, 0, mine);
    ASSERT_EQ(remote, mine) << "partition " << p;
    const std::uint32_t s = sharding::shard_of_partition(p, 3);
    ++per_server[s];
    EXPECT_TRUE(store.shard(s).holds(p));
    EXPECT_FALSE(store.shard((s + 1) % 3).holds(p));
  }
  for (int n : per_server) EXPECT_GT(n, 0);
  EXPECT_EQ(sharded.info().set_bits, local.info().set_bits);
  // Lookups, per item and bulk, answer as the local filter.
  testing::expect_same_lookups(sharded, store, local, views);
  // A bulk load into a second sharded filter gives the same bytes.
  Filter loaded = Filter::create_redis(servers(), "g", params);
  loaded.load_many(views);
  testing::expect_same_bits(loaded, local);
}

TEST_F(ShardedStoreTest, AnyOtherListOfServersIsRefused) {
  const FilterParams params = size_filter(100000, 0.01, Layout::classic, 64 << 10);
  { (void)Filter::create_redis(servers(), "f", params); }
  EXPECT_NO_THROW((void)Filter::open_redis(servers(), "f"));
  const auto a = a_.endpoint();
  const auto b = b_.endpoint();
  const auto c = c_.endpoint();
  const std::string reordered = error_of([&] { (void)Filter::open_redis({a, c, b}, "f"); });
  EXPECT_TRUE(contains_text(reordered, "same order")) << reordered;
  const std::string alone = error_of([&] { (void)Filter::open_redis(a, "f"); });
  EXPECT_TRUE(contains_text(alone, "holds shard 1 of 3 but was opened as an unsharded filter"))
      << alone;
  EXPECT_THROW((void)Filter::open_redis({a, b}, "f"), FormatError);
  // A server of another sharded filter with the same name and position is not this one's.
  RedisServer d;
  { (void)Filter::create_redis({a, b, d.endpoint()}, "f", params, /*overwrite=*/true); }
  const std::string mixed = error_of([&] { (void)Filter::open_redis({a, b, c}, "f"); });
  EXPECT_TRUE(contains_text(mixed, "of another set of servers")) << mixed;
}

TEST_F(ShardedStoreTest, CreateLeavesNothingBehindWhenAServerRefuses) {
  const FilterParams params = size_filter(100000, 0.01, Layout::classic, 64 << 10);
  ASSERT_EQ(c_.command({"SET", "f", "not a filter"}).text, "OK");
  EXPECT_THROW((void)Filter::create_redis(servers(), "f", params), Error);
  EXPECT_EQ(a_.integer({"DBSIZE"}), 0);
  EXPECT_EQ(b_.integer({"DBSIZE"}), 0);
  EXPECT_EQ(c_.command({"GET", "f"}).text, "not a filter");
  const std::string twice = error_of([&] {
    (void)Filter::create_redis({a_.endpoint(), a_.endpoint()}, "g", params);
  });
  EXPECT_TRUE(contains_text(twice, "listed twice")) << twice;
  EXPECT_EQ(a_.integer({"DBSIZE"}), 0);
}

TEST(ShardedFaults, KillingOneServerMidAddReportsACommittedPrefixThatSurvives) {
  const std::vector<std::string> aof = {"--appendonly", "yes", "--appendfsync", "always"};
  RedisServer a(aof);
  RedisServer b(aof);
  RedisServer c(aof);
  const std::vector<RedisEndpoint> servers = {a.endpoint(), b.endpoint(), c.endpoint()};
  const FilterParams params = size_filter(2'000'000, 0.01, Layout::classic, 256 << 10);
  Filter filter = Filter::create_redis(servers, "big", params);
  const auto items = make_items(1'500'000, "k-");
  const auto views = views_of(items);
  testing::BackgroundAdd loader(filter, views);
  // Kill server b once the load is under way (b's share of bits passes 200,000).
  long long bits = 0;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  try {
    while (!loader.finished() && std::chrono::steady_clock::now() < deadline) {
      bits = 0;
      for (std::uint64_t p = 0; p < params.partitions; ++p) {
        if (sharding::shard_of_partition(p, 3) != 1) continue;
        bits += b.integer({"BITCOUNT", "big:bits:{big:" + std::to_string(p) + "}"});
      }
      if (bits > 200000) break;
      std::this_thread::sleep_for(2ms);
    }
  } catch (...) {
    b.kill(SIGKILL);  // so that the loader ends
    throw;
  }
  const bool mid_load = !loader.finished() && bits > 200000;
  b.kill(SIGKILL);
  loader.join();
  const auto& committed = loader.committed();
  const std::string& message = loader.message();
  ASSERT_TRUE(mid_load) << "the load " << (loader.finished() ? "ended" : "did not start")
                        << " before the kill";
  ASSERT_TRUE(committed.has_value()) << "expected IncompleteWrite, got: " << message;
  EXPECT_TRUE(contains_text(message, "127.0.0.1:" + std::to_string(b.port()))) << message;
  EXPECT_LT(*committed, views.size());
  b.restart();
  Filter reopened = Filter::open_redis(servers, "big");
  const auto prefix = std::span(views).first(*committed);
  std::vector<std::uint8_t> present(prefix.size());
  EXPECT_EQ(reopened.contains_many(prefix, present), prefix.size()) << "a committed item was lost";
}

}  // namespace
}  // namespace redbloom
