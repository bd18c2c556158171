// A filter in a real Redis Cluster that the test starts (tests/redis_cluster.hpp): the same bits
// and answers as a local filter, partitions spread evenly over the masters, and no lost or
// doubly-new item while slots migrate under a load or a master is killed and its replica
// takes over.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <set>
#include <thread>

#include "background_add.hpp"
#include "core/sharding.hpp"
#include "error_of.hpp"
#include "redbloom/error.hpp"
#include "redbloom/filter.hpp"
#include "redis/redis_store.hpp"
#include "redis_cluster.hpp"
#include "redis_server.hpp"
#include "same_as_local.hpp"
#include "test_items.hpp"

namespace redbloom {
namespace {

using namespace std::chrono_literals;
using redbloom::test::RedisCluster;
using redbloom::test::RedisServer;
using redbloom::testing::contains_text;
using redbloom::testing::error_of;
using redbloom::testing::expect_same_bits;
using redbloom::testing::make_items;
using redbloom::testing::views_of;

RedisStore& redis_store(Filter& filter) {
  return dynamic_cast<RedisStore&>(filter.store());
}

class ClusterStoreTest : public ::testing::TestWithParam<Layout> {
 protected:
  RedisCluster cluster_{3, 0};
};

INSTANTIATE_TEST_SUITE_P(Layouts, ClusterStoreTest,
                         ::testing::Values(Layout::classic, Layout::blocked));

TEST_P(ClusterStoreTest, SameBitsAndAnswersAsALocalFilterSpreadEvenlyOverTheMasters) {
  // 16 KiB partitions: 12 partitions, 4 per master.
  FilterParams params = size_filter(150000, 0.01, GetParam(), 16 << 10);
  ASSERT_GE(params.partitions, 9u);
  Filter remote = Filter::create_redis(cluster_.endpoint(), "f", params);
  Filter local = Filter::in_memory(params);
  const auto items = make_items(120000, "c-");
  auto views = views_of(items);
  views.insert(views.end(), views.begin(), views.begin() + 1000);  // repeats in the batch
  std::vector<std::uint8_t> from_remote(views.size());
  std::vector<std::uint8_t> from_local(views.size());
  EXPECT_EQ(remote.add_many(views, from_remote), local.add_many(views, from_local));
  EXPECT_EQ(from_remote, from_local);
  expect_same_bits(remote, local);
  EXPECT_EQ(remote.info().set_bits, local.info().set_bits);
  // Partition p lives on master p mod 3, in its key's slot.
  RedisStore& store = redis_store(remote);
  std::vector<int> per_master(3);
  for (std::uint64_t p = 0; p < params.partitions; ++p) {
    const auto slot = static_cast<unsigned>(store.partition_slot(p));
    const std::size_t owner = cluster_.owner_of(slot);
    EXPECT_EQ(owner, p % 3) << "partition " << p;
    ++per_master[owner];
  }
  for (int n : per_master) EXPECT_GE(n, static_cast<int>(params.partitions / 3));
  // Lookups, per item and bulk, answer as the local filter; zero false negatives.
  testing::expect_same_lookups(remote, store, local, views);
  // A bulk load (temp keys in each partition's slot, BITOP OR) gives the same bytes.
  Filter loaded = Filter::create_redis(cluster_.endpoint(), "g", params);
  redis_store(loaded).set_bulk_mode(RedisStore::BulkMode::bulk);
  loaded.load_many(views);
  expect_same_bits(loaded, local);
}

TEST_P(ClusterStoreTest, NoFalseNegativesAndTheFalsePositiveRateOfTheory) {
  constexpr std::size_t n = 200000;
  constexpr std::size_t queries = 200000;
  const FilterParams params = size_filter(n, 0.01, GetParam(), 16 << 10);
  Filter filter = Filter::create_redis(cluster_.endpoint(), "rate", params);
  const auto members = make_items(n, "member-");
  filter.load_many(views_of(members));
  EXPECT_EQ(filter.contains_many(views_of(members)), n) << "false negatives";
  const std::size_t false_positives =
      filter.contains_many(views_of(make_items(queries, "absent-")));
  const double theory = expected_false_positive_rate(params, n);
  const double expected = theory * queries;
  std::printf("[ rate     ] cluster %s: measured %.5f, theory %.5f\n",
              std::string(to_string(GetParam())).c_str(),
              static_cast<double>(false_positives) / queries, theory);
  // 5 standard deviations, plus 3% for the formula's own approximations.
  EXPECT_NEAR(static_cast<double>(false_positives), expected,
              5 * std::sqrt(expected * (1 - theory)) + 0.03 * expected);
}

TEST_F(ClusterStoreTest, AnyNodeOpensItAndDropRemovesEveryKeyEverywhere) {
  const FilterParams params = size_filter(100000, 0.01, Layout::blocked, 16 << 10);
  const auto items = make_items(30000, "o-");
  {
    Filter filter = Filter::create_redis(cluster_.endpoint(), "f", params);
    redis_store(filter).set_bulk_mode(RedisStore::BulkMode::bulk);
    filter.load_many(views_of(items));  // temp keys must not linger
  }
  for (std::size_t i = 0; i < cluster_.size(); ++i) {
    RedisEndpoint one;
    one.cluster_seeds = {{"127.0.0.1", cluster_.node(i).port()}};
    Filter filter = Filter::open_redis(one, "f");
    std::vector<std::uint8_t> present(items.size());
    EXPECT_EQ(filter.contains_many(views_of(items), present), items.size());
  }
  const std::string again =
      error_of([&] { (void)Filter::create_redis(cluster_.endpoint(), "f", params); });
  EXPECT_TRUE(contains_text(again, "already exists")) << again;
  long long keys = 0;
  for (std::size_t i = 0; i < cluster_.size(); ++i) keys += cluster_.node(i).integer({"DBSIZE"});
  EXPECT_EQ(keys, static_cast<long long>(1 + params.partitions));
  RedisStore::drop(cluster_.endpoint(), "f");
  for (std::size_t i = 0; i < cluster_.size(); ++i) {
    EXPECT_EQ(cluster_.node(i).integer({"DBSIZE"}), 0) << "node " << i;
  }
  EXPECT_THROW(RedisStore::drop(cluster_.endpoint(), "f"), NotFound);
}

// Each master is asked for its eviction policy: the one that may evict is named by a slot
// it serves.
TEST_F(ClusterStoreTest, AnEvictingMasterIsNamed) {
  EXPECT_EQ(RedisStore::eviction_risks(cluster_.endpoint()), std::vector<std::string>{});
  RedisServer& second = cluster_.node(1);
  ASSERT_EQ(second.command({"CONFIG", "SET", "maxmemory", "1gb"}).text, "OK");
  ASSERT_EQ(second.command({"CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"}).text, "OK");
  const auto risks = RedisStore::eviction_risks(cluster_.endpoint());
  ASSERT_EQ(risks.size(), 1u);
  EXPECT_TRUE(contains_text(risks[0], "allkeys-lfu")) << risks[0];
  const std::size_t at = risks[0].find("slot ");
  ASSERT_NE(at, std::string::npos) << risks[0];
  EXPECT_EQ(cluster_.owner_of(std::stoul(risks[0].substr(at + 5))), 1u) << risks[0];
}

TEST_F(ClusterStoreTest, ConcurrentAddersSeeEachItemNewExactlyOnce) {
  const FilterParams params = size_filter(200000, 0.001, Layout::classic, 16 << 10);
  { (void)Filter::create_redis(cluster_.endpoint(), "f", params); }
  const auto items = make_items(100000, "race-");
  const auto views = views_of(items);
  std::vector<std::vector<std::uint8_t>> fresh(3, std::vector<std::uint8_t>(views.size()));
  std::vector<std::thread> adders;
  for (int t = 0; t < 3; ++t) {
    adders.emplace_back([&, t] {
      Filter filter = Filter::open_redis(cluster_.endpoint(), "f");
      filter.add_many(views, fresh[t]);
    });
  }
  for (auto& a : adders) a.join();
  std::size_t doubly_new = 0;
  std::size_t never_new = 0;
  for (std::size_t i = 0; i < views.size(); ++i) {
    const int n = fresh[0][i] + fresh[1][i] + fresh[2][i];
    doubly_new += n > 1 ? 1 : 0;
    never_new += n == 0 ? 1 : 0;
  }
  EXPECT_EQ(doubly_new, 0u);
  // Only a false positive of the items before it can make an item never new (p = 0.1%).
  EXPECT_LT(never_new, 1000u);
}

TEST(ClusterErrors, ANonClusterServerOrABadUriIsAClearError) {
  RedisServer plain;
  RedisEndpoint endpoint;
  endpoint.cluster_seeds = {{"127.0.0.1", plain.port()}};
  const FilterParams params = size_filter(1000, 0.01, Layout::classic, 16 << 10);
  const std::string message = error_of([&] { (void)Filter::create_redis(endpoint, "f", params); });
  EXPECT_TRUE(contains_text(message, "is it a Redis Cluster?")) << message;
  EXPECT_THROW((void)parse_redis_uri("redis+cluster://127.0.0.1:7000/2"), InvalidArgument);
  const RedisEndpoint parsed =
      parse_redis_uri("redis+cluster://:pw@127.0.0.1:7000,[::1]:7001?timeout=2");
  ASSERT_EQ(parsed.cluster_seeds.size(), 2u);
  EXPECT_EQ(parsed.cluster_seeds[1], (std::pair<std::string, int>{"::1", 7001}));
  EXPECT_EQ(parsed.password, "pw");
  EXPECT_EQ(parsed.command_timeout, 2000ms);
  EXPECT_EQ(parsed.describe(), "cluster 127.0.0.1:7000,[::1]:7001");
}

// Moves every partition's slot to the next master, one key at a time, while `work` runs.
class Resharder {
 public:
  Resharder(RedisCluster& cluster, RedisStore& store, std::size_t masters)
      : thread_([&cluster, &store, masters, this] {
          try {
            for (int pass = 0; pass < 2 && !stop_; ++pass) {
              for (std::uint64_t p = 0; p < store.params().partitions && !stop_; ++p) {
                const auto slot = static_cast<unsigned>(store.partition_slot(p));
                cluster.migrate_slot(slot, (cluster.owner_of(slot) + 1) % masters);
                ++moved_;
              }
            }
          } catch (const std::exception& e) {
            error_ = e.what();
          }
        }) {}
  ~Resharder() { join(); }
  void stop() { stop_ = true; }
  void join() {
    if (thread_.joinable()) thread_.join();
  }
  [[nodiscard]] int moved() const { return moved_; }
  [[nodiscard]] const std::string& error() const { return error_; }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> moved_{0};
  std::string error_;
  std::thread thread_;
};

TEST_F(ClusterStoreTest, SlotsMigratingUnderALoadLoseNothingAndAnswerExactly) {
  const FilterParams params = size_filter(400000, 0.01, Layout::classic, 32 << 10);
  Filter remote = Filter::create_redis(cluster_.endpoint(), "m", params);
  Filter local = Filter::in_memory(params);
  RedisStore& store = redis_store(remote);
  const auto items = make_items(400000, "mig-");
  const auto views = views_of(items);
  std::size_t batches = 0;
  {
    Resharder resharder(cluster_, store, 3);
    // Per-item adds (answers must equal the local filter's: a redirected command did not run)
    // alternate with bulk loads (temp key, SETRANGE, BITOP: run again whole when moved).
    std::vector<std::uint8_t> theirs;
    std::vector<std::uint8_t> mine;
    for (std::size_t first = 0; first < views.size(); first += 10000, ++batches) {
      const auto batch =
          std::span(views).subspan(first, std::min<std::size_t>(10000, views.size() - first));
      if (batches % 2 == 0) {
        theirs.assign(batch.size(), 0);
        mine.assign(batch.size(), 0);
        store.set_bulk_mode(RedisStore::BulkMode::per_item);
        remote.add_many(batch, theirs);
        local.add_many(batch, mine);
        ASSERT_EQ(theirs, mine) << "batch " << batches;
      } else {
        store.set_bulk_mode(RedisStore::BulkMode::bulk);
        remote.load_many(batch);
        local.load_many(batch);
      }
    }
    resharder.join();
    ASSERT_EQ(resharder.error(), "");
    EXPECT_GT(resharder.moved(), 0);
    // The load did meet the moves.
    const RedisRedirectCounts met = store.redirections();
    std::printf("[ moves    ] %d slots moved; the load met %llu MOVED, %llu ASK, %llu waits\n",
                resharder.moved(), static_cast<unsigned long long>(met.moved),
                static_cast<unsigned long long>(met.ask),
                static_cast<unsigned long long>(met.waits));
    EXPECT_GT(met.moved, 0u);
    EXPECT_GT(met.ask, 0u);
  }
  cluster_.wait_until_stable();
  Filter reopened = Filter::open_redis(cluster_.endpoint(), "m");
  std::vector<std::uint8_t> present(views.size());
  EXPECT_EQ(reopened.contains_many(views, present), views.size()) << "false negatives";
  expect_same_bits(reopened, local);
}

TEST(ClusterFailover, AKilledMasterGivesACommittedPrefixAndTheReplicaServesTheRest) {
  RedisCluster cluster(3, 1);
  const FilterParams params = size_filter(2'000'000, 0.01, Layout::classic, 256 << 10);
  Filter filter = Filter::create_redis(cluster.endpoint(), "big", params);
  const auto items = make_items(600'000, "k-");
  const auto views = views_of(items);
  testing::BackgroundAdd loader(filter, views);
  // Kill master 0 once the load is under way (it has answered 30 BITFIELDs).
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!loader.finished() && std::chrono::steady_clock::now() < deadline &&
         cluster.node(0).calls("bitfield") < 30) {
    std::this_thread::sleep_for(2ms);
  }
  const bool mid_load = !loader.finished();
  cluster.node(0).kill(SIGKILL);
  loader.join();
  ASSERT_TRUE(mid_load) << "the load ended before the kill";
  const auto& committed = loader.committed();
  const std::size_t done = committed.value_or(views.size());
  if (committed) {
    EXPECT_TRUE(contains_text(loader.message(), std::to_string(cluster.node(0).port())))
        << loader.message();
  }
  // Reads wait out the failover; then every committed item is there (WAIT made the replica
  // hold what the master acknowledged).
  Filter reopened = Filter::open_redis(cluster.endpoint(), "big");
  const auto prefix = std::span(views).first(done);
  std::vector<std::uint8_t> present(prefix.size());
  EXPECT_EQ(reopened.contains_many(prefix, present), prefix.size()) << "a committed item was lost";
  // And the rest of the load goes to the promoted replica.
  reopened.add_many(std::span(views).subspan(done));
  present.assign(views.size(), 0);
  EXPECT_EQ(reopened.contains_many(views, present), views.size());
}

}  // namespace
}  // namespace redbloom
