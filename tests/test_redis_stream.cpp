// Windowed and growing filters in Redis (src/redis/stream_store.hpp) against real servers that
// the tests start: one server, two servers (sharded) and a 3-master cluster. A driven clock
// walks the filter through many windows; processes race on one item set across a slice
// boundary and through growth; a writer is killed mid-stream; slots move while slices expire.
// Built twice: on stock servers (the Lua script) and, with REDBLOOM_MODULE_PATH, on servers
// that load redbloom's module (RB.STREAM), which must pass the same scenarios.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <thread>

#include "core/layout.hpp"
#include "core/sharding.hpp"
#include "core/stream_shape.hpp"
#include "error_of.hpp"
#include "redbloom/error.hpp"
#include "redbloom/hash.hpp"
#include "redis/redis_store.hpp"
#include "redis/router.hpp"
#include "redis/stream_script.hpp"
#include "redis/stream_state.hpp"
#include "redis/stream_store.hpp"
#include "redis_cluster.hpp"
#include "redis_server.hpp"
#include "test_items.hpp"

namespace redbloom {
namespace {

using namespace std::chrono_literals;
using test::RedisCluster;
using test::RedisReply;
using test::RedisServer;
using testing::contains_text;
using testing::error_of;
using testing::make_items;
using testing::views_of;

constexpr std::uint64_t kMs = 1'000'000;

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
  explicit Servers(Where setup) : setup_(setup) {
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

  [[nodiscard]] RedisCluster& cluster() { return *cluster_; }
  [[nodiscard]] Where setup() const { return setup_; }

 private:
  Where setup_;
  std::vector<std::unique_ptr<RedisServer>> servers_;
  std::unique_ptr<RedisCluster> cluster_;
};

// A clock the test moves; starts at a slice boundary a little after the real now, so every
// slice's expiry (the driven time) lies in the servers' future.
class DrivenClock {
 public:
  explicit DrivenClock(std::uint64_t slice_ns)
      : now_(std::make_shared<std::atomic<std::uint64_t>>((system_now_ns() / slice_ns + 2) *
                                                          slice_ns)) {}
  [[nodiscard]] Clock clock() const {
    return [now = now_] { return now->load(); };
  }
  [[nodiscard]] std::uint64_t now() const { return now_->load(); }
  void advance(std::uint64_t ns) { *now_ += ns; }

 private:
  std::shared_ptr<std::atomic<std::uint64_t>> now_;
};

// Small partitions (several per filter, so that every server and master holds some).
StreamOptions windowed(std::uint64_t capacity, double rate, std::uint64_t window_ns,
                       std::uint32_t slices = 4) {
  StreamOptions options;
  options.capacity = capacity;
  options.error_rate = rate;
  options.window_ns = window_ns;
  options.slices = slices;
  options.max_partition_bytes = 128;
  return options;
}

// A filter that grows (doubling), no window; small partitions as above.
StreamOptions growing(std::uint64_t capacity, double rate) {
  StreamOptions options;
  options.capacity = capacity;
  options.error_rate = rate;
  options.growth = 2;
  options.max_partition_bytes = 128;
  return options;
}

std::size_t count_of(const std::vector<std::uint8_t>& flags) {
  return static_cast<std::size_t>(std::count(flags.begin(), flags.end(), 1));
}

std::vector<std::uint8_t> lookup(const FilterBackend& store,
                                 const std::vector<std::string>& items) {
  std::vector<std::uint8_t> present(items.size());
  const auto views = views_of(items);
  store.contains(views, present);
  return present;
}

std::vector<std::uint8_t> add(FilterBackend& store, const std::vector<std::string>& items) {
  std::vector<std::uint8_t> fresh(items.size());
  const auto views = views_of(items);
  store.add(views, fresh);
  return fresh;
}

// The bound a measured rate must stay under: the target plus four standard deviations of
// the sample.
double rate_bound(double target, std::size_t samples) {
  return target + 4 * std::sqrt(target * (1 - target) / static_cast<double>(samples));
}

// One set of servers per setup for the whole suite (each test uses its own names): starting
// a cluster for every test would take most of the suite's time.
class StreamTest : public ::testing::TestWithParam<Where> {
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

  Servers& servers_ = servers_of(GetParam());
};

INSTANTIATE_TEST_SUITE_P(Setups, StreamTest,
                         ::testing::Values(Where::one, Where::sharded, Where::cluster), setup_name);

// 21 windows of 3 slices on a driven clock, a slice a step: everything added within the last window
// is present at every step, items re-added every step never come back as new, items not added for
// window + slice are forgotten (present only at the false-positive rate), and absent items
// are false positives at no more than the target rate.
TEST_P(StreamTest, AWindowRemembersItsWindowAndForgetsTheRest) {
  constexpr std::uint64_t kSlice = 10'000 * kMs;
  constexpr double kRate = 0.01;
  constexpr std::size_t kPerStep = 430;  // and 20 hot items: 450 a slice for 500
  constexpr int kSteps = 21 * 3;
  DrivenClock clock(kSlice);
  const StreamShape shape(windowed(1500, kRate, 3 * kSlice, 3));
  ASSERT_GE(shape.partitions(), 3u);
  auto store = RedisStreamStore::create(servers_.endpoints(), "w", shape, clock.clock(), false);
  EXPECT_EQ(store->location().substr(0, 6), "redis ");
  EXPECT_TRUE(contains_text(store->location(), "filter w (windowed)")) << store->location();
  const auto hot = make_items(20, "hot-");
  std::size_t forgotten = 0, forgotten_present = 0, absent = 0, absent_present = 0;
  for (int step = 0; step < kSteps; ++step) {
    const auto fresh = make_items(kPerStep, "i-", step * kPerStep);
    const auto news = add(*store, fresh);
    ASSERT_GE(count_of(news), kPerStep - 10) << "step " << step;  // a few false positives
    const auto hot_news = add(*store, hot);
    EXPECT_EQ(count_of(hot_news), step == 0 ? hot.size() : 0u) << "step " << step;
    // Batch s was added at step s, a slice a step: ages 0 to 2 slices are inside the window,
    // 4 slices (window + slice) and more are forgotten.
    std::vector<std::string> recent = hot;
    for (int s = std::max(0, step - 2); s <= step; ++s) {
      const auto batch = make_items(kPerStep, "i-", s * kPerStep);
      recent.insert(recent.end(), batch.begin(), batch.end());
    }
    const auto present = lookup(*store, recent);
    ASSERT_EQ(count_of(present), recent.size()) << "false negatives at step " << step;
    if (step >= 4) {
      const auto old = make_items(kPerStep, "i-", (step - 4) * kPerStep);
      forgotten += old.size();
      forgotten_present += count_of(lookup(*store, old));
    }
    const auto never = make_items(200, "never-", step * 200);
    absent += never.size();
    absent_present += count_of(lookup(*store, never));
    clock.advance(kSlice);
  }
  add(*store, hot);
  const double forgotten_rate = double(forgotten_present) / double(forgotten);
  const double absent_rate = double(absent_present) / double(absent);
  std::printf("[ rate     ] forgotten %.4f of %zu, absent %.4f of %zu, target %.2f\n",
              forgotten_rate, forgotten, absent_rate, absent, kRate);
  ASSERT_GE(forgotten, 10000u);  // enough for 3x the target to be far outside chance
  EXPECT_LT(forgotten_rate, 3 * kRate);
  EXPECT_LT(absent_rate, rate_bound(kRate, absent));
  // Only the live slices are counted: 4 of them; a full slice has link 0 in every partition.
  const auto info = store->stream_info();
  ASSERT_TRUE(info.has_value());
  std::set<std::int64_t> slices;
  for (const StreamSegment& segment : info->segments) {
    slices.insert(segment.slice);
    EXPECT_EQ(segment.expires_unix_ns, shape.retire_ns(segment.slice));
    EXPECT_LE(segment.partitions, shape.partitions());
    if (segment.link == 0 && segment.items >= kPerStep) {
      EXPECT_EQ(segment.partitions, shape.partitions());
    }
  }
  EXPECT_EQ(slices.size(), 4u);
  EXPECT_EQ(*slices.rbegin(), shape.slice_at(clock.now()));
  EXPECT_GT(info->error_rate_now, 0.0);
  EXPECT_LT(info->error_rate_now, kRate);
  EXPECT_GT(store->count_set_bits(), 0u);
  EXPECT_GT(store->storage_bytes(), info->bytes);
}

// On a stock server a writer copies the older slices once and tells the script what its copies
// hold; the script takes that only while a slice is as it was copied. Here a writer whose clock
// lags three slices (so that it cannot see the current one) makes and fills an older slice after
// the other writer copied it as absent: the other still finds those items, every time.
TEST_P(StreamTest, AnOlderSliceWrittenAfterAWriterCopiedItIsStillReadByThatWriter) {
  constexpr std::uint64_t kSlice = 60'000 * kMs;
  DrivenClock clock(kSlice);
  const StreamShape shape(windowed(2000, 0.01, 4 * kSlice));
  auto ahead = RedisStreamStore::create(servers_.endpoints(), "lag", shape, clock.clock(), false);
  const Clock behind_clock = [c = clock.clock()] { return c() - 3 * kSlice; };
  auto behind = RedisStreamStore::open_if_stream(servers_.endpoints(), "lag", behind_clock, 1s);
  ASSERT_NE(behind, nullptr);
  // Every partition gets a key in the current slice; the second call copies the older ones.
  ASSERT_GE(count_of(add(*ahead, make_items(300, "now-"))), 295u);
  ASSERT_GE(count_of(add(*ahead, make_items(300, "later-"))), 295u);
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const auto late = make_items(200, "late-" + std::to_string(round) + "-");
    ASSERT_GE(count_of(add(*behind, late)), 195u);
    EXPECT_EQ(count_of(add(*ahead, late)), 0u);
    EXPECT_EQ(count_of(lookup(*ahead, late)), late.size());
  }
}

// Each slice key expires when its slice retires: PEXPIRETIME is retire_ns exactly, and with
// the servers' own clock (slices a fifth of a second long) Redis removes it with no client around.
TEST_P(StreamTest, SlicesExpireAtTheirRetirementWithoutAClient) {
  {
    constexpr std::uint64_t kSlice = 60'000 * kMs;
    DrivenClock clock(kSlice);
    const StreamShape shape(windowed(1000, 0.01, 4 * kSlice));
    auto store = RedisStreamStore::create(servers_.endpoints(), "d", shape, clock.clock(), false);
    add(*store, make_items(500, "e-"));
    const std::int64_t slice = shape.slice_at(clock.now());
    for (std::uint64_t p = 0; p < shape.partitions(); ++p) {
      const std::string key = store->slice_key(p, slice);
      EXPECT_EQ(servers_.holder(p, key).integer({"PEXPIRETIME", key}),
                static_cast<long long>(shape.retire_ns(slice) / kMs))
          << key;
    }
  }
  constexpr std::uint64_t kSlice = 200 * kMs;
  const StreamShape shape(windowed(1000, 0.01, 4 * kSlice));
  auto store = RedisStreamStore::create(servers_.endpoints(), "r", shape, Clock{}, false);
  const auto items = make_items(500, "x-");
  EXPECT_EQ(count_of(add(*store, items)), items.size());
  EXPECT_EQ(count_of(lookup(*store, items)), items.size());
  // The keys of this filter's slices, as the servers hold them now.
  const auto slice_keys = [&] {
    std::vector<std::string> keys;
    for (const std::string& key : servers_.all_keys()) {
      if (key.starts_with("r:s") && !key.starts_with("r:slices:")) keys.push_back(key);
    }
    return keys;
  };
  const auto made = slice_keys();
  ASSERT_FALSE(made.empty());
  for (const std::string& key : made) {
    const std::int64_t slice = std::stoll(key.substr(3, key.find(':', 3) - 3));
    std::uint64_t partition = shape.partitions();
    for (std::uint64_t p = 0; p < shape.partitions(); ++p) {
      if (store->slice_key(p, slice) == key) partition = p;
    }
    ASSERT_LT(partition, shape.partitions()) << key;
    EXPECT_EQ(servers_.holder(partition, key).integer({"PEXPIRETIME", key}),
              static_cast<long long>(shape.retire_ns(slice) / kMs))
        << key;
  }
  // Window + slice is 1 s: wait (bounded) until Redis has removed them all.
  const auto deadline = std::chrono::steady_clock::now() + 15s;
  while (!slice_keys().empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(slice_keys(), std::vector<std::string>{});
  // The rosters (which slices were made) stay, with no expiry: they are the filter's own.
  for (std::uint64_t p = 0; p < shape.partitions(); ++p) {
    const std::string tag = store->slice_key(p, 0).substr(std::string("r:s0:bits:").size());
    const std::string roster = "r:slices:bits:" + tag;
    EXPECT_EQ(servers_.holder(p, roster).integer({"PTTL", roster}), -1) << roster;
  }
  EXPECT_EQ(count_of(lookup(*store, items)), 0u);
  EXPECT_EQ(store->stream_info()->segments.size(), 0u);
  // The filter goes on: a new add makes a new slice.
  EXPECT_EQ(count_of(add(*store, items)), items.size());
}

// A burst of 10x the rate inside one slice grows links, partition by partition; lookups stay
// at the target rate; a growing filter (no window) grows without expiring.
TEST_P(StreamTest, ABurstGrowsLinksAndKeepsTheRate) {
  constexpr std::uint64_t kSlice = 60'000 * kMs;
  constexpr double kRate = 0.01;
  DrivenClock clock(kSlice);
  const StreamShape shape(windowed(2000, kRate, 4 * kSlice));  // 500 a slice
  auto store = RedisStreamStore::create(servers_.endpoints(), "g", shape, clock.clock(), false);
  const auto items = make_items(5000, "b-");
  EXPECT_GE(count_of(add(*store, items)), items.size() * (1 - kRate));
  EXPECT_EQ(count_of(lookup(*store, items)), items.size());
  const auto info = store->stream_info();
  ASSERT_TRUE(info.has_value());
  std::uint32_t most = 0;
  std::uint64_t items_counted = 0;
  for (const StreamSegment& segment : info->segments) {
    most = std::max(most, segment.link);
    items_counted += segment.items;
    EXPECT_LE(segment.partitions, shape.partitions());
    EXPECT_EQ(segment.capacity, shape.link_capacity(segment.link));
  }
  EXPECT_GE(most, 2u) << "10x a slice's capacity needs link 2 at least";
  EXPECT_GE(items_counted, items.size() * (1 - kRate));
  const auto never = make_items(10000, "nb-");
  const double rate = double(count_of(lookup(*store, never))) / double(never.size());
  std::printf("[ rate     ] after a 10x burst: %.4f over %u links, target %.2f\n", rate, most + 1,
              kRate);
  EXPECT_LT(rate, rate_bound(kRate, never.size()));
  // A reopened store sees the links the others made (it learns them from the script's replies).
  auto again = RedisStreamStore::open_if_stream(servers_.endpoints(), "g", clock.clock(), 1s);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(count_of(lookup(*again, items)), items.size());
  EXPECT_EQ(count_of(add(*again, items)), 0u);

  const StreamShape growing_shape(growing(500, kRate));
  auto grows = RedisStreamStore::create(servers_.endpoints(), "h", growing_shape, Clock{}, false);
  EXPECT_TRUE(contains_text(grows->location(), "(growing)")) << grows->location();
  const auto many = make_items(8000, "gr-");  // links of 500, 1000, 2000, 4000, 8000
  EXPECT_GE(count_of(add(*grows, many)), many.size() * (1 - kRate));
  EXPECT_EQ(count_of(lookup(*grows, many)), many.size());
  const double grown_rate = double(count_of(lookup(*grows, make_items(10000, "ng-")))) / 10000.0;
  EXPECT_LT(grown_rate, rate_bound(kRate, 10000));
  for (std::uint64_t p = 0; p < growing_shape.partitions(); ++p) {
    const std::string key = grows->slice_key(p, 0);
    EXPECT_EQ(servers_.holder(p, key).integer({"PTTL", key}), -1) << key;
  }
  EXPECT_GE(grows->stream_info()->segments.size(), 4u);
}

// On a stock server a writer copies a growing filter's frozen links and leaves their arguments
// out of its items; the script asks for them when the copies no longer hold. Here the filter is
// dropped and made again by another writer under one that copied its links: that writer's
// answers stay right, for the other's items and for new ones.
TEST_P(StreamTest, AWriterWhoseCopiesNoLongerHoldIsAskedForEveryLink) {
  const StreamShape shape(growing(500, 0.01));
  auto copier = RedisStreamStore::create(servers_.endpoints(), "re", shape, Clock{}, false);
  // Calls of 1000: each one after the first finds links frozen since the last and copies them.
  for (int call = 0; call < 6; ++call) {
    const auto items = make_items(1000, "first-" + std::to_string(call) + "-");
    ASSERT_GE(count_of(add(*copier, items)), 980u);
  }
  ASSERT_TRUE(RedisStreamStore::drop_if_stream(servers_.endpoints(), "re"));
  auto maker = RedisStreamStore::create(servers_.endpoints(), "re", shape, Clock{}, false);
  const auto theirs = make_items(6000, "second-");
  ASSERT_GE(count_of(add(*maker, theirs)), 5900u);
  EXPECT_EQ(count_of(add(*copier, theirs)), 0u);
  EXPECT_EQ(count_of(lookup(*copier, theirs)), theirs.size());
  const auto mine = make_items(1000, "third-");
  EXPECT_GE(count_of(add(*copier, mine)), 980u);
  EXPECT_EQ(count_of(lookup(*maker, mine)), mine.size());
}

// A server that goes back to an older state (a restart from an older snapshot, a failover to a
// lagging replica; here each slice key restored from a DUMP taken before) and whose links are
// then filled again, by another writer, to the counts they had: a writer idle meanwhile, which
// had copied the links frozen before, still finds the other's items, and they are not new to it.
TEST_P(StreamTest, AWriterIdleWhileItsServerWentBackToAnOlderStateKeepsItsAnswers) {
  const StreamShape shape(growing(1000, 0.01));
  auto copier = RedisStreamStore::create(servers_.endpoints(), "back", shape, Clock{}, false);
  ASSERT_GE(count_of(add(*copier, make_items(600, "early-"))), 590u);
  std::vector<std::string> snapshots;
  for (std::uint64_t p = 0; p < shape.partitions(); ++p) {
    const std::string key = copier->slice_key(p, 0);
    snapshots.push_back(servers_.holder(p, key).command({"DUMP", key}).text);
  }
  // Most partitions' first links fill up and their second ones are made; the next call copies
  // the first links, frozen now.
  ASSERT_GE(count_of(add(*copier, make_items(900, "late-"))), 880u);
  ASSERT_GE(count_of(add(*copier, make_items(50, "copied-"))), 48u);
  std::this_thread::sleep_for(2ms);  // a link made again gets another creation time
  for (std::uint64_t p = 0; p < shape.partitions(); ++p) {
    const std::string key = copier->slice_key(p, 0);
    ASSERT_EQ(servers_.holder(p, key).command({"RESTORE", key, "0", snapshots[p], "REPLACE"}).text,
              "OK");
  }
  auto other = RedisStreamStore::open_if_stream(servers_.endpoints(), "back", Clock{}, 1s);
  ASSERT_NE(other, nullptr);
  const auto theirs = make_items(900, "after-");
  ASSERT_GE(count_of(add(*other, theirs)), 880u);
  EXPECT_EQ(count_of(lookup(*copier, theirs)), theirs.size());
  EXPECT_EQ(count_of(add(*copier, theirs)), 0u);
}

// A user whose ACL lets it only read keys (Redis 7's %R~pattern) looks a windowed and a growing
// filter up: the lookups run the script by EVALSHA_RO, which Redis lets such a user run. A user
// not allowed EVALSHA_RO looks up by EVALSHA as before.
TEST(StreamOnOneServer, AUserWhoMayOnlyReadKeysLooksUp) {
  RedisServer server(server_args());
  test::add_lookup_users(server);
  StreamOptions window;
  window.capacity = 4000;
  window.error_rate = 0.01;
  window.window_ns = 3'600'000 * kMs;
  for (const StreamOptions& options : {window, growing(500, 0.01)}) {
    const StreamShape shape(options);
    const std::string name = options.window_ns != 0 ? "w" : "g";
    auto writer = RedisStreamStore::create({server.endpoint()}, name, shape, Clock{}, false);
    const auto items = make_items(2000, name + "-");
    ASSERT_GE(count_of(add(*writer, items)), 1980u);
    for (const char* user : {"reader", "older"}) {
      SCOPED_TRACE(name + " as " + user);
      RedisEndpoint as_user = server.endpoint();
      as_user.user = user;
      as_user.password = "pw";
      auto looker = RedisStreamStore::open_if_stream({as_user}, name, Clock{}, 1s);
      ASSERT_NE(looker, nullptr);
      EXPECT_EQ(count_of(lookup(*looker, items)), items.size());
      EXPECT_LE(count_of(lookup(*looker, make_items(2000, "absent-"))), 60u);
    }
  }
}

// The arguments of a RESP command as CommandBuffer writes them (*N, then $len and bytes each).
std::vector<std::string> resp_arguments(std::string_view resp) {
  std::vector<std::string> args;
  std::size_t at = resp.find("\r\n") + 2;
  while (at < resp.size()) {
    const std::size_t end = resp.find("\r\n", at);
    const std::size_t length = std::stoull(std::string(resp.substr(at + 1, end - at - 1)));
    args.emplace_back(resp.substr(end + 2, length));
    at = end + 2 + length + 2;
  }
  return args;
}

// The script's answer to a lookup whose claims hold for one older slice and not for another (a
// copy the writer took before the slice changed): an item whose mark names the stale copy is
// read in every slice, the valid copy's included, not taken as absent from it.
TEST(StreamScriptOnAServer, AnItemMarkedInAStaleCopyIsReadInTheValidOnesToo) {
  test::RedisServer server;
  constexpr std::uint64_t kSlice = 60'000 * kMs;
  DrivenClock clock(kSlice);
  StreamOptions options;
  options.capacity = 1000;
  options.error_rate = 0.01;
  options.window_ns = 4 * kSlice;
  const StreamShape shape(options);
  ASSERT_EQ(shape.partitions(), 1u);
  auto store = RedisStreamStore::create({server.endpoint()}, "x", shape, clock.clock(), false);
  const std::int64_t g0 = shape.slice_at(clock.now());
  ASSERT_EQ(count_of(add(*store, {"in-g0"})), 1u);
  clock.advance(kSlice);
  ASSERT_EQ(count_of(add(*store, {"in-g1"})), 1u);
  clock.advance(2 * kSlice);
  const RedisStreamStore::State& state = store->state();
  // The slices a unit declares around the current one, g0 + 3.
  const std::int64_t first = g0 + 3 - 4 - 1;
  std::vector<std::string> keys{store->roster_key(0)};
  for (std::int64_t g = first; g <= g0 + 5; ++g) keys.push_back(store->slice_key(0, g));
  redis::CommandBuffer items;
  redis::stream::append_item_arguments(
      state.form, state.links, state.link_start, hash_item("in-g0"), 1,
      [&](std::uint64_t value) { items.arg(value); },
      [&](std::string_view text) { items.arg(text); });
  const std::string fields = server.command({"GETRANGE", store->slice_key(0, g0), "8", "23"}).text;
  const std::string stale(16, 'x');
  const std::vector<redis::stream::Claim> claims{{g0 + 1, 1, stale}, {g0, 1, fields}};
  const std::string marks(1, static_cast<char>(g0 + 1 - first + 1));  // "newest in g0 + 1's copy"
  redis::stream::Call call;
  call.mode = redis::stream::Mode::lookup;
  call.guarded = state.guarded;
  call.now_ms = static_cast<std::int64_t>(clock.now() / kMs);
  call.slice_ms = kSlice / kMs;
  call.older = 4;
  call.first = first;
  call.keys = keys;
  call.budget = state.budget;
  call.links = state.link_args;
  call.with_offsets = 1;
  call.items = 1;
  call.form = state.form;
  call.item_args = items.text();
  call.item_arg_count = redis::stream::item_arguments(state.form, state.links[0]);
  call.claims = claims;
  call.marks = marks;
  redis::CommandBuffer command;
  redis::stream::encode(command, call, "");
  const std::vector<std::string> args = resp_arguments(command.text());
  const std::vector<std::string_view> views(args.begin(), args.end());
  const std::unique_ptr<redis::Router> router = redis::make_router(server.endpoint());
  const redis::Reply reply = router->call(0, views);
  const redis::stream::Reply answer = redis::stream::decode(*reply, keys);
  EXPECT_EQ(answer.verdict, "01");
  EXPECT_EQ(answer.flags, "1");
}

// max_bytes reached: CapacityExceeded, the items before it added, the error saying why.
TEST_P(StreamTest, TheByteLimitStopsGrowthWithTheCommittedPrefix) {
  StreamOptions options = growing(1000, 0.01);
  const StreamShape probe(options);
  // Room for links 0 and 1, not for link 2.
  options.max_bytes = probe.link_params(0).total_bytes() + probe.link_params(1).total_bytes() +
                      probe.link_params(2).total_bytes() / 2;
  const StreamShape shape(options);
  auto store = RedisStreamStore::create(servers_.endpoints(), "cap", shape, Clock{}, false);
  const auto items = make_items(20000, "c-");
  std::vector<std::uint8_t> fresh(items.size());
  const auto views = views_of(items);
  std::size_t committed = items.size();
  std::string message;
  try {
    store->add(views, fresh);
  } catch (const CapacityExceeded& e) {
    committed = e.committed();
    message = e.what();
  }
  ASSERT_LT(committed, items.size()) << "no CapacityExceeded";
  EXPECT_GT(committed, 1000u);  // link 0 of every partition fills first
  EXPECT_TRUE(contains_text(message, "past the limit")) << message;
  EXPECT_TRUE(contains_text(message, "first " + std::to_string(committed) + " items")) << message;
  const std::vector<std::string> prefix(items.begin(), items.begin() + committed);
  EXPECT_EQ(count_of(lookup(*store, prefix)), prefix.size());
  // The item at `committed` is the one that needed the link: alone, it fails at once.
  std::string_view first_refused = items[committed];
  std::uint8_t refused_flag = 0;
  try {
    store->add({&first_refused, 1}, {&refused_flag, 1});
    ADD_FAILURE() << "item " << committed << " was added";
  } catch (const CapacityExceeded& e) {
    EXPECT_EQ(e.committed(), 0u);
  }
  // Adding the rest again fails again at the limit, never silently.
  const std::vector<std::string> rest(items.begin() + committed, items.end());
  EXPECT_THROW(add(*store, rest), CapacityExceeded);
  const auto info = store->stream_info();
  for (const StreamSegment& segment : info->segments) {
    EXPECT_LE(segment.link, 1u);
  }
}

// A shared clock in shared memory that the parent moves and the children read.
// value[0] is the time, value[1] the children's batches done.
struct SharedClock {
  SharedClock() {
    void* page = mmap(nullptr, 2 * sizeof(std::uint64_t), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) throw std::runtime_error("mmap failed");
    value = static_cast<std::uint64_t*>(page);
  }
  ~SharedClock() { munmap(value, 2 * sizeof(std::uint64_t)); }
  SharedClock(const SharedClock&) = delete;
  SharedClock& operator=(const SharedClock&) = delete;
  [[nodiscard]] Clock clock() const {
    return [v = value] { return std::atomic_ref<std::uint64_t>(*v).load(); };
  }
  void set(std::uint64_t ns) const { std::atomic_ref<std::uint64_t>(*value).store(ns); }
  [[nodiscard]] std::uint64_t get() const { return std::atomic_ref<std::uint64_t>(*value).load(); }
  void count_batch() const { std::atomic_ref<std::uint64_t>(value[1]).fetch_add(1); }
  [[nodiscard]] std::uint64_t batches() const {
    return std::atomic_ref<std::uint64_t>(value[1]).load();
  }
  std::uint64_t* value;
};

// Four processes add one item set, each in its own order, while the parent moves the clock
// across a slice boundary and the slice grows: every item is new for exactly one of them.
TEST_P(StreamTest, ProcessesRacingAcrossASliceBoundaryAndGrowthSeeEachItemNewOnce) {
  constexpr std::uint64_t kSlice = 60'000 * kMs;
  constexpr int kProcesses = 4;
  constexpr std::size_t kItems = 6000;
  SharedClock shared;
  shared.set((system_now_ns() / kSlice + 2) * kSlice - kSlice / 20);
  const StreamShape shape(windowed(4000, 0.001, 4 * kSlice));  // 1000 a slice: grows
  { (void)RedisStreamStore::create(servers_.endpoints(), "race", shape, shared.clock(), false); }
  const std::int64_t first_slice = shape.slice_at(shared.get());
  char dir_template[] = "/tmp/redbloom-stream-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  int start_pipe[2];
  ASSERT_EQ(pipe(start_pipe), 0);
  std::vector<pid_t> children;
  for (int c = 0; c < kProcesses; ++c) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(start_pipe[1]);
      int code = 0;
      try {
        auto items = make_items(kItems, "r-");
        std::vector<std::size_t> order(kItems);
        for (std::size_t i = 0; i < kItems; ++i) order[i] = i;
        std::shuffle(order.begin(), order.end(), std::mt19937(c));
        auto store =
            RedisStreamStore::open_if_stream(servers_.endpoints(), "race", shared.clock(), 10s);
        char go = 0;
        if (store == nullptr || read(start_pipe[0], &go, 1) != 1) _exit(2);
        std::ofstream out(dir + "/out" + std::to_string(c));
        constexpr std::size_t kBatch = 100;
        for (std::size_t from = 0; from < kItems; from += kBatch) {
          std::vector<std::string_view> batch;
          for (std::size_t i = from; i < std::min(kItems, from + kBatch); ++i) {
            batch.push_back(items[order[i]]);
          }
          std::vector<std::uint8_t> fresh(batch.size());
          store->add(batch, fresh);
          shared.count_batch();
          for (std::size_t i = 0; i < batch.size(); ++i) {
            if (fresh[i]) out << order[from + i] << '\n';
          }
        }
        out.close();
        code = out ? 0 : 3;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child %d: %s\n", c, e.what());
        code = 4;
      }
      _exit(code);
    }
    children.push_back(pid);
  }
  close(start_pipe[0]);
  const std::string go(kProcesses, 'g');
  ASSERT_EQ(write(start_pipe[1], go.data(), go.size()), static_cast<ssize_t>(go.size()));
  close(start_pipe[1]);
  // Once the children are under way (20 of their 240 batches done), move the clock a little
  // at each tick of the loop below: across the boundary 10 moves later, at most a slice in all.
  std::vector<int> statuses(kProcesses, -1);
  std::size_t running = children.size();
  for (int tick = 0; running > 0 && tick < 30000; ++tick) {
    std::this_thread::sleep_for(2ms);
    if (shared.batches() >= 20 &&
        shared.get() < (first_slice + 2) * std::int64_t(kSlice) - kSlice / 20) {
      shared.set(shared.get() + kSlice / 200);
    }
    for (int c = 0; c < kProcesses; ++c) {
      if (statuses[c] != -1) continue;
      int status = 0;
      if (waitpid(children[c], &status, WNOHANG) == children[c]) {
        statuses[c] = status;
        --running;
      }
    }
  }
  for (int c = 0; c < kProcesses; ++c) {
    if (statuses[c] == -1) {
      kill(children[c], SIGKILL);
      waitpid(children[c], &statuses[c], 0);
    }
    ASSERT_TRUE(WIFEXITED(statuses[c]) && WEXITSTATUS(statuses[c]) == 0) << "child " << c;
  }
  std::multiset<std::size_t> emitted;
  for (int c = 0; c < kProcesses; ++c) {
    std::ifstream in(dir + "/out" + std::to_string(c));
    for (std::size_t i; in >> i;) emitted.insert(i);
    std::remove((dir + "/out" + std::to_string(c)).c_str());
  }
  rmdir(dir.c_str());
  const std::set<std::size_t> distinct(emitted.begin(), emitted.end());
  EXPECT_EQ(emitted.size(), distinct.size()) << "an item was new for two processes";
  EXPECT_GE(distinct.size(), kItems - 30) << "p = 0.001 leaves about 12 never new";
  // The adds did span two slices, and grew.
  auto store = RedisStreamStore::open_if_stream(servers_.endpoints(), "race", shared.clock(), 1s);
  std::set<std::int64_t> slices;
  std::uint32_t most = 0;
  const auto info = store->stream_info();
  for (const StreamSegment& segment : info->segments) {
    slices.insert(segment.slice);
    most = std::max(most, segment.link);
  }
  EXPECT_EQ(slices, (std::set<std::int64_t>{first_slice, first_slice + 1}));
  EXPECT_GE(most, 1u);
  EXPECT_EQ(count_of(lookup(*store, make_items(kItems, "r-"))), kItems);
}

// A writer killed in the middle of adding across slice rotations and growth: afterwards the
// filter opens, holds every item the writer had reported committed, and takes more.
TEST_P(StreamTest, AWriterKilledMidStreamLeavesAUsableFilterWithItsCommittedItems) {
  constexpr std::uint64_t kSlice = 60'000 * kMs;
  SharedClock shared;
  shared.set((system_now_ns() / kSlice + 2) * kSlice);
  const StreamShape shape(windowed(4000, 0.01, 4 * kSlice));
  { (void)RedisStreamStore::create(servers_.endpoints(), "crash", shape, shared.clock(), false); }
  // The child reports each committed batch's end on a pipe; the clock moves a quarter slice a
  // batch (the child moves it, so the parent knows the time of every reported batch).
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  constexpr std::size_t kBatch = 500;
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(report[0]);
    try {
      auto store =
          RedisStreamStore::open_if_stream(servers_.endpoints(), "crash", shared.clock(), 10s);
      for (std::size_t batch = 0;; ++batch) {
        const auto items = make_items(kBatch, "k-", batch * kBatch);
        std::vector<std::uint8_t> fresh(items.size());
        store->add(views_of(items), fresh);
        const std::uint64_t done = (batch + 1) * kBatch;
        if (write(report[1], &done, sizeof done) != sizeof done) _exit(3);
        shared.set(shared.get() + kSlice / 4);
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "writer: %s\n", e.what());
    }
    _exit(4);
  }
  close(report[1]);
  // Kill it once it has committed 20 batches (5 slices, each 2x a slice's capacity: growth).
  std::uint64_t committed = 0;
  while (committed < 20 * kBatch) {
    std::uint64_t done = 0;
    // Bounded: a writer that stopped reporting (stuck) ends the wait after 30 s.
    pollfd ready{report[0], POLLIN, 0};
    if (poll(&ready, 1, 30000) != 1) break;
    if (read(report[0], &done, sizeof done) != sizeof done) break;
    committed = done;
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  // Reports written before the kill but not read yet count too.
  for (std::uint64_t done = 0; read(report[0], &done, sizeof done) == sizeof done;) {
    committed = done;
  }
  close(report[0]);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the writer ended before the kill";
  ASSERT_GE(committed, 20 * kBatch);
  auto store = RedisStreamStore::open_if_stream(servers_.endpoints(), "crash", shared.clock(), 1s);
  ASSERT_NE(store, nullptr);
  const auto info = store->stream_info();  // reads every live slice's header and length
  ASSERT_TRUE(info.has_value());
  // Items of the last window (16 batches at a quarter slice each) are all present.
  const std::size_t in_window = 15 * kBatch;
  const auto recent = make_items(in_window, "k-", committed - in_window);
  EXPECT_EQ(count_of(lookup(*store, recent)), recent.size());
  const auto more = make_items(2000, "after-");
  EXPECT_GE(count_of(add(*store, more)), more.size() - 20);
  EXPECT_EQ(count_of(lookup(*store, more)), more.size());
}

// The names: a plain store refuses a stream filter and the other way round, a second create
// is refused, the wrong server list is refused, it has no single bitmap, a damaged slice key is an
// error naming it, and a drop leaves no key behind.
TEST_P(StreamTest, KindsAreToldApartAndDropRemovesEveryKey) {
  constexpr std::uint64_t kSlice = 60'000 * kMs;
  DrivenClock clock(kSlice);
  const StreamShape shape(windowed(2000, 0.01, 4 * kSlice));
  const auto endpoints = servers_.endpoints();
  auto store = RedisStreamStore::create(endpoints, "s", shape, clock.clock(), false);
  add(*store, make_items(3000, "d-"));
  clock.advance(kSlice);
  add(*store, make_items(3000, "e-"));
  const std::string opened = error_of([&] { (void)RedisStore::open(endpoints[0], "s"); });
  EXPECT_TRUE(contains_text(opened, "a windowed or growing filter") &&
              contains_text(opened, "not a redbloom filter"))
      << opened;
  EXPECT_THROW((void)RedisStore::open(endpoints[0], "s"), FormatError);
  const std::string again =
      error_of([&] { (void)RedisStreamStore::create(endpoints, "s", shape, Clock{}, false); });
  EXPECT_TRUE(contains_text(again, "already exists")) << again;
  // No single bitmap: its shape is the options asked for, with every link's parameters.
  EXPECT_EQ(store->bitmap(), nullptr);
  EXPECT_NE(store->links(), nullptr);
  const FilterShape asked = store->shape();
  ASSERT_TRUE(asked.windowed());
  EXPECT_EQ(*asked.stream, shape.options());
  EXPECT_EQ(asked.params, shape.link_params(0));
  ASSERT_GE(asked.links.size(), 2u);
  EXPECT_EQ(asked.links[1], shape.link_params(1));

  // A plain filter: no stream there, and drop_if_stream leaves it alone.
  const FilterParams plain = size_filter(1000, 0.01, Layout::classic);
  if (endpoints.size() == 1) {
    (void)RedisStore::create(endpoints[0], "plain", plain);
    EXPECT_EQ(RedisStreamStore::open_if_stream(endpoints, "plain", Clock{}, 1s), nullptr);
    EXPECT_FALSE(RedisStreamStore::drop_if_stream(endpoints, "plain"));
    EXPECT_NO_THROW((void)RedisStore::open(endpoints[0], "plain"));
    RedisStore::drop(endpoints[0], "plain");
  } else {
    // The list in another order, or one server alone, is refused.
    const std::vector<RedisEndpoint> reversed(endpoints.rbegin(), endpoints.rend());
    const std::string swapped =
        error_of([&] { (void)RedisStreamStore::open_if_stream(reversed, "s", Clock{}, 1s); });
    EXPECT_TRUE(contains_text(swapped, "give the servers it was created on")) << swapped;
    const std::string alone =
        error_of([&] { (void)RedisStreamStore::open_if_stream({endpoints[0]}, "s", Clock{}, 1s); });
    EXPECT_TRUE(contains_text(alone, "give the servers it was created on")) << alone;
  }
  EXPECT_EQ(RedisStreamStore::open_if_stream(endpoints, "nothing", Clock{}, 1s), nullptr);
  EXPECT_FALSE(RedisStreamStore::drop_if_stream(endpoints, "nothing"));

  // A slice key of the wrong length: an error naming it, never an answer.
  const std::int64_t slice = shape.slice_at(clock.now());
  const std::string key = store->slice_key(0, slice);
  RedisServer& holder = servers_.holder(0, key);
  ASSERT_EQ(holder.integer({"APPEND", key, "x"}) > 0, true);
  std::vector<std::string> in_zero;
  for (const std::string& item : make_items(3000, "e-")) {
    if (layout::partition_of(hash_item(item), shape.partitions()) == 0) in_zero.push_back(item);
  }
  ASSERT_FALSE(in_zero.empty());
  const std::string damaged = error_of([&] { (void)lookup(*store, in_zero); });
  EXPECT_TRUE(contains_text(damaged, key)) << damaged;
#ifdef REDBLOOM_MODULE_PATH
  // Every master has the module, so RB.STREAM ran instead of the script.
  EXPECT_TRUE(contains_text(damaged, "RB.STREAM")) << damaged;
#else
  EXPECT_TRUE(contains_text(damaged, "EVALSHA")) << damaged;
#endif
  const std::string damaged_add = error_of([&] { (void)add(*store, in_zero); });
  EXPECT_TRUE(contains_text(damaged_add, key)) << damaged_add;
  // A live slice key that vanished (evicted: slice keys have a TTL) is reported by the
  // partition's roster, not taken for an empty slice.
  const std::string gone = store->slice_key(1, slice);
  ASSERT_EQ(servers_.holder(1, gone).integer({"DEL", gone}), 1);
  std::vector<std::string> in_one;
  for (const std::string& item : make_items(3000, "e-")) {
    if (layout::partition_of(hash_item(item), shape.partitions()) == 1) in_one.push_back(item);
  }
  const std::string lost = error_of([&] { (void)lookup(*store, in_one); });
  EXPECT_TRUE(contains_text(lost, gone) && contains_text(lost, "lost")) << lost;
  const std::string lost_add = error_of([&] { (void)add(*store, in_one); });
  EXPECT_TRUE(contains_text(lost_add, gone) && contains_text(lost_add, "lost")) << lost_add;

  const auto keys_of_s = [&] {
    std::vector<std::string> keys;
    for (const std::string& k : servers_.all_keys()) {
      if (k == "s" || k.starts_with("s:")) keys.push_back(k);
    }
    return keys;
  };
  const std::size_t before = keys_of_s().size();
  EXPECT_GE(before, 1 + 2 * shape.partitions());
  EXPECT_TRUE(RedisStreamStore::drop_if_stream(endpoints, "s"));
  EXPECT_EQ(keys_of_s(), std::vector<std::string>{});
  EXPECT_FALSE(RedisStreamStore::drop_if_stream(endpoints, "s"));
}

// Eviction under an allkeys-* policy, as DEL makes it: a live slice key together with its
// partition's roster, or the roster alone. Every lookup and add of that partition is then an
// error naming the roster (the CLI exits 3), never "absent" or "new", and nothing is re-created;
// a store opened afresh says the same. Windowed and growing filters alike.
TEST_P(StreamTest, AnEvictedRosterIsAnErrorNeverAbsent) {
  constexpr std::uint64_t kSlice = 60'000 * kMs;
  const auto endpoints = servers_.endpoints();
  for (const bool window : {true, false}) {
    for (const bool with_slice : {true, false}) {
      SCOPED_TRACE(std::string(window ? "windowed" : "growing") +
                   (with_slice ? ", a slice and its roster" : ", the roster alone"));
      DrivenClock clock(kSlice);
      const StreamShape shape =
          window ? StreamShape(windowed(2000, 0.01, 4 * kSlice)) : StreamShape(growing(500, 0.01));
      const std::string name = std::string("ev-") + (window ? "w" : "g") + (with_slice ? "s" : "r");
      auto store = RedisStreamStore::create(endpoints, name, shape, clock.clock(), false);
      const auto items = make_items(2000, "ev-");
      ASSERT_GE(count_of(add(*store, items)), items.size() - 20);  // a few false positives
      std::vector<std::string> in_zero;
      for (const std::string& item : items) {
        if (layout::partition_of(hash_item(item), shape.partitions()) == 0) in_zero.push_back(item);
      }
      ASSERT_FALSE(in_zero.empty());
      const std::string roster = store->roster_key(0);
      RedisServer& holder = servers_.holder(0, roster);
      if (with_slice) {
        const std::string slice = store->slice_key(0, window ? shape.slice_at(clock.now()) : 0);
        ASSERT_EQ(holder.integer({"DEL", slice}), 1);
      }
      ASSERT_EQ(holder.integer({"DEL", roster}), 1);
      const std::string looked = error_of([&] { (void)lookup(*store, in_zero); });
      EXPECT_TRUE(contains_text(looked, roster) && contains_text(looked, "evicted")) << looked;
      EXPECT_THROW((void)lookup(*store, in_zero), FormatError);
      const std::string added = error_of([&] { (void)add(*store, in_zero); });
      EXPECT_TRUE(contains_text(added, roster)) << added;
      EXPECT_EQ(holder.integer({"EXISTS", roster}), 0);
      const auto reopened = RedisStreamStore::open_if_stream(endpoints, name, clock.clock(), 1s);
      ASSERT_NE(reopened, nullptr);
      EXPECT_THROW((void)lookup(*reopened, in_zero), FormatError);
      // The other partitions still answer.
      std::vector<std::string> elsewhere;
      for (const std::string& item : items) {
        if (layout::partition_of(hash_item(item), shape.partitions()) != 0)
          elsewhere.push_back(item);
      }
      EXPECT_EQ(count_of(lookup(*reopened, elsewhere)), elsewhere.size());
      EXPECT_TRUE(RedisStreamStore::drop_if_stream(endpoints, name));
    }
  }
}

// The text of `field` in INFO replication ("" if absent).
std::string replication_field(const RedisServer& server, const std::string& field) {
  const std::string info = server.command({"INFO", "replication"}).text;
  const std::size_t at = info.find(field + ":");
  if (at == std::string::npos) return {};
  const std::size_t start = at + field.size() + 1;
  return info.substr(start, info.find_first_of("\r\n", start) - start);
}

// Lookups and info of windowed and growing filters run on a read-only replica (read-only
// commands only: the script's reads and RB.STREAM_RO), answering as the master does.
TEST(StreamReplica, AReadOnlyReplicaAnswersLookupsAsItsMaster) {
  RedisServer master(server_args());
  std::vector<std::string> args = server_args();
  args.insert(args.end(), {"--replicaof", "127.0.0.1", std::to_string(master.port())});
  RedisServer replica(args);
  const auto wait_for = [](const char* what, const std::function<bool()>& done) {
    for (int i = 0; i < 600 && !done(); ++i) std::this_thread::sleep_for(100ms);
    ASSERT_TRUE(done()) << "gave up waiting for " << what;
  };
  wait_for("the replica's link",
           [&] { return replication_field(replica, "master_link_status") == "up"; });
  constexpr std::uint64_t kSlice = 60'000 * kMs;
  DrivenClock clock(kSlice);
  const auto items = make_items(3000, "rep-");
  const auto never = make_items(3000, "never-");
  for (const bool window : {true, false}) {
    SCOPED_TRACE(window ? "windowed" : "growing");
    const std::string name = window ? "rep-w" : "rep-g";
    const StreamShape shape =
        window ? StreamShape(windowed(4000, 0.01, 4 * kSlice)) : StreamShape(growing(500, 0.01));
    auto store = RedisStreamStore::create({master.endpoint()}, name, shape, clock.clock(), false);
    ASSERT_GE(count_of(add(*store, items)), items.size() - 20);  // a few false positives
    const auto on_master = lookup(*store, never);
    wait_for("the replica to catch up", [&] {
      return replication_field(replica, "master_repl_offset") ==
             replication_field(master, "master_repl_offset");
    });
    const auto read =
        RedisStreamStore::open_if_stream({replica.endpoint()}, name, clock.clock(), 1s);
    ASSERT_NE(read, nullptr);
    EXPECT_EQ(count_of(lookup(*read, items)), items.size());
    EXPECT_EQ(lookup(*read, never), on_master);
    const auto info = read->stream_info();
    ASSERT_TRUE(info.has_value());
    EXPECT_EQ(info->bytes, store->stream_info()->bytes);
    // Adding is the master's.
    const std::string refused = error_of([&] { (void)add(*read, never); });
    EXPECT_TRUE(contains_text(refused, "READONLY")) << refused;
  }
}

// A filter whose metadata hash was evicted while its rosters and slices remain: adding to it
// again never creates it anew over its keys (that would take its items for new, or answer from
// slices of another shape); overwriting removes what is left.
TEST(StreamEviction, AFilterWhoseMetadataIsGoneIsNotCreatedAgainOverItsKeys) {
  RedisServer server(server_args());
  constexpr std::uint64_t kSlice = 60'000 * kMs;
  DrivenClock clock(kSlice);
  const StreamShape shape(windowed(2000, 0.01, 4 * kSlice));
  const auto items = make_items(1000, "meta-");
  {
    auto store = RedisStreamStore::create({server.endpoint()}, "m", shape, clock.clock(), false);
    add(*store, items);
  }
  ASSERT_EQ(server.integer({"DEL", "m"}), 1);
  const auto before = server.command({"DBSIZE"}).integer;
  const std::string message = error_of([&] {
    (void)RedisStreamStore::create({server.endpoint()}, "m", shape, clock.clock(), false);
  });
  EXPECT_TRUE(contains_text(message, "lost its metadata") && contains_text(message, "--force"))
      << message;
  EXPECT_THROW(
      (void)RedisStreamStore::create({server.endpoint()}, "m", shape, clock.clock(), false),
      FormatError);
  EXPECT_EQ(server.command({"DBSIZE"}).integer, before);
  EXPECT_EQ(server.integer({"EXISTS", "m"}), 0);
  auto fresh = RedisStreamStore::create({server.endpoint()}, "m", shape, clock.clock(), true);
  EXPECT_LT(count_of(lookup(*fresh, items)), items.size() / 10);
}

// A real eviction: a server with a limit just above what it holds and allkeys-lru, and a
// windowed filter that makes a slice a step. Whatever the server evicts (slices, rosters, the
// metadata), every lookup of the items added ends in an error or finds them all.
TEST(StreamEviction, ARealEvictionEndsInAnErrorOrRightAnswers) {
  RedisServer server(server_args());
  constexpr std::uint64_t kSlice = 60'000 * kMs;
  DrivenClock clock(kSlice);
  StreamOptions options;
  options.capacity = 4'000'000;
  options.error_rate = 0.01;
  options.window_ns = 8 * kSlice;
  options.slices = 8;
  const StreamShape shape(options);
  auto store = RedisStreamStore::create({server.endpoint()}, "e", shape, clock.clock(), false);
  const auto memory = [&] {
    const std::string info = server.command({"INFO", "memory"}).text;
    const std::size_t at = info.find("used_memory:");
    return std::stoll(info.substr(at + 12));
  };
  ASSERT_EQ(server.command({"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"}).text, "OK");
  ASSERT_EQ(
      server.command({"CONFIG", "SET", "maxmemory", std::to_string(memory() + (3 << 20))}).text,
      "OK");
  const auto evicted = [&] {
    const std::string info = server.command({"INFO", "stats"}).text;
    return std::stoll(info.substr(info.find("evicted_keys:") + 13));
  };
  std::vector<std::string> added;
  bool failed = false;
  for (int step = 0; step < 60 && evicted() == 0; ++step) {
    const auto batch = make_items(2000, "ev-", step * 2000);
    try {
      add(*store, batch);
    } catch (const Error&) {
      failed = true;  // an add that met an eviction says so
      break;
    }
    added.insert(added.end(), batch.begin(), batch.end());
    // Only what is inside the window (8 slices) is asked for.
    if (added.size() > 14 * batch.size()) added.erase(added.begin(), added.begin() + 2000);
    clock.advance(kSlice / 2);
  }
  ASSERT_GT(evicted(), 0) << "the server never evicted";
  std::printf("[ evicted  ] %lld keys after %zu items%s\n", evicted(), added.size(),
              failed ? ", the last add failed" : "");
  std::size_t errors = 0;
  for (std::size_t at = 0; at < added.size(); at += 1000) {
    const std::vector<std::string> some(added.begin() + at,
                                        added.begin() + std::min(at + 1000, added.size()));
    try {
      EXPECT_EQ(count_of(lookup(*store, some)), some.size()) << "items from " << at;
    } catch (const FormatError&) {
      ++errors;
    }
  }
  std::printf("[ evicted  ] %zu of %zu lookups were errors\n", errors, (added.size() + 999) / 1000);
}

// Slots of the filter's partitions move between masters, key by key, while writes go on and
// (slices a quarter of a second long, on the servers' clock) slices expire: no error, and every
// item whose add started within the last window before a lookup ended is present.
TEST(StreamCluster, SlotsMigratingWhileSlicesExpireLoseNoItemOfTheWindow) {
  RedisCluster cluster(3, 0, server_args());
  constexpr std::uint64_t kSlice = 250 * kMs;
  const StreamShape shape(windowed(4000, 0.01, 4 * kSlice));
  ASSERT_GE(shape.partitions(), 3u);
  auto store = RedisStreamStore::create({cluster.endpoint()}, "mig", shape, Clock{}, false);
  // Each partition's slot once to the next master, key by key, the cluster settling between
  // moves (as a resharding does).
  std::set<unsigned> slots;
  for (std::uint64_t p = 0; p < shape.partitions(); ++p) {
    slots.insert(static_cast<unsigned>(redis::slot_of(store->slice_key(p, 0))));
  }
  std::atomic<bool> done{false};
  std::atomic<bool> finished{false};
  std::atomic<int> moved{0};
  std::atomic<int> written{0};  // batches added and checked
  std::string mover_error;
  std::thread mover([&] {
    try {
      for (const unsigned slot : slots) {
        // Each move starts after another batch went through, so writes and moves interleave
        // however fast either is.
        const int seen = written;
        for (int wait = 0; wait < 30000 && written == seen && !done; ++wait) {
          std::this_thread::sleep_for(1ms);
        }
        if (done) break;
        cluster.migrate_slot(slot, (cluster.owner_of(slot) + 1) % 3);
        ++moved;
        cluster.wait_until_stable();
      }
    } catch (const std::exception& e) {
      mover_error = e.what();
    }
    finished = true;
  });
  struct Batch {
    std::vector<std::string> items;
    std::chrono::steady_clock::time_point started;
  };
  std::vector<Batch> batches;
  std::size_t checked = 0;
  std::string failure;
  for (int b = 0; b < 4000 && (!finished || b < 30); ++b) {
    Batch batch{make_items(100, "m-", b * 100), std::chrono::steady_clock::now()};
    try {
      add(*store, batch.items);
    } catch (const Error& e) {
      failure = e.what();
      break;
    }
    batches.push_back(std::move(batch));
    // The last 2 batches, looked up; then kept only if their add started within the window
    // before the lookup ended.
    std::vector<std::string> recent;
    const std::size_t from = batches.size() >= 2 ? batches.size() - 2 : 0;
    for (std::size_t i = from; i < batches.size(); ++i) {
      recent.insert(recent.end(), batches[i].items.begin(), batches[i].items.end());
    }
    std::vector<std::uint8_t> present;
    try {
      present = lookup(*store, recent);
    } catch (const Error& e) {
      failure = e.what();
      break;
    }
    const auto ended = std::chrono::steady_clock::now();
    std::size_t at = 0;
    for (std::size_t i = from; i < batches.size(); ++i) {
      const bool inside = ended - batches[i].started < std::chrono::nanoseconds(4 * kSlice);
      for (std::size_t j = 0; j < batches[i].items.size(); ++j, ++at) {
        if (inside) {
          ++checked;
          if (present[at] == 0) {
            failure = "false negative: " + batches[i].items[j];
          }
        }
      }
    }
    if (!failure.empty()) break;
    ++written;
  }
  done = true;
  mover.join();
  EXPECT_EQ(failure, "");
  EXPECT_EQ(mover_error, "");
  EXPECT_EQ(moved.load(), static_cast<int>(slots.size()));
  EXPECT_GT(checked, 1000u);
  std::printf("[ moves    ] %d slots moved; %zu batches, %zu items checked inside the window\n",
              moved.load(), batches.size(), checked);
  cluster.wait_until_stable();
  // Old slices are gone (the servers' clock retired them): the early items are forgotten.
  std::this_thread::sleep_for(std::chrono::nanoseconds(6 * kSlice));
  EXPECT_LT(count_of(lookup(*store, batches.front().items)), 10u);
}

}  // namespace
}  // namespace redbloom
