// Copying windowed and growing filters (transfer.hpp) between a file, one Redis server, two
// sharded servers and a 3-master Cluster, each started by the test: every hop keeps the live
// slices with their numbers (so their retirement), each link's count and creation time; what
// was added within the window is present after the copy, what left the window + slice is
// absent at the false-positive rate, the window goes on retiring slices at the target as at
// the source, and a copy taken while writers add holds every item added before it began.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "redbloom/error.hpp"
#include "redbloom/filter.hpp"
#include "redbloom/sizing.hpp"
#include "redbloom/transfer.hpp"
#include "redis/stream_store.hpp"
#include "redis_cluster.hpp"
#include "redis_server.hpp"
#include "temp_dir.hpp"
#include "test_items.hpp"

namespace redbloom {
namespace {

using test::RedisCluster;
using test::RedisServer;
using testing::make_items;
using testing::views_of;

constexpr std::uint64_t kMs = 1'000'000;

// The servers' extra arguments: the module, in the build that tests it (RB.STREAM then reads
// and writes what the copies made).
std::vector<std::string> server_args() {
#ifdef REDBLOOM_MODULE_PATH
  return {"--loadmodule", REDBLOOM_MODULE_PATH};
#else
  return {};
#endif
}
constexpr std::uint64_t kSlice = 10'000 * kMs;
constexpr std::uint32_t kSlices = 4;
constexpr double kRate = 0.01;

// A clock the test moves: slice-aligned, a little after the real now, so that every slice's
// expiry (the driven time) lies in the servers' future.
class DrivenClock {
 public:
  DrivenClock()
      : now_(
            std::make_shared<std::atomic<std::uint64_t>>((system_now_ns() / kSlice + 2) * kSlice)) {
  }
  [[nodiscard]] Clock clock() const {
    return [now = now_] { return now->load(); };
  }
  void advance(std::uint64_t ns) { *now_ += ns; }

 private:
  std::shared_ptr<std::atomic<std::uint64_t>> now_;
};

StreamOptions windowed() {
  StreamOptions options;
  options.capacity = 4000;
  options.error_rate = kRate;
  options.window_ns = kSlices * kSlice;
  options.slices = kSlices;
  options.max_partition_bytes = 1024;  // several partitions: every server and master holds some
  return options;
}

StreamOptions growing() {
  StreamOptions options;
  options.capacity = 1000;
  options.error_rate = kRate;
  options.layout = Layout::classic;
  options.growth = 2;
  options.max_partition_bytes = 1024;
  return options;
}

// The bound a measured rate must stay under: the target plus four standard deviations.
double rate_bound(double target, std::size_t samples) {
  return target + 4 * std::sqrt(target * (1 - target) / static_cast<double>(samples));
}

std::size_t present(const Filter& filter, const std::vector<std::string>& items) {
  const auto views = views_of(items);
  return filter.contains_many(views);
}

std::vector<std::string> batch(int step) {
  return make_items(300, "s" + std::to_string(step) + "-");
}

// Every kind of store, one of each for the whole suite.
class StreamCopy : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    one_ = new RedisServer(server_args());
    shard_a_ = new RedisServer(server_args());
    shard_b_ = new RedisServer(server_args());
    cluster_ = new RedisCluster(3, 0, server_args());
  }
  static void TearDownTestSuite() {
    delete cluster_;
    delete shard_b_;
    delete shard_a_;
    delete one_;
  }

  Location file(const std::string& name) const { return Location::file(dir_.file(name)); }
  static Location one(const std::string& name) { return Location::redis({one_->endpoint()}, name); }
  static Location sharded(const std::string& name) {
    return Location::redis({shard_a_->endpoint(), shard_b_->endpoint()}, name);
  }
  static Location cluster(const std::string& name) {
    return Location::redis({cluster_->endpoint()}, name);
  }
  Filter open(const Location& where) const {
    OpenOptions options;
    options.clock = clock_.clock();
    return Filter::open(where, options);
  }

  // The slices, links and counts a copy must keep: (slice, link) -> (items, expiry, created).
  static std::map<std::pair<std::int64_t, std::uint32_t>, std::array<std::uint64_t, 3>> links_of(
      const Filter& filter) {
    std::map<std::pair<std::int64_t, std::uint32_t>, std::array<std::uint64_t, 3>> out;
    const FilterInfo info = filter.info();
    for (const StreamSegment& s : info.stream->segments) {
      out[{s.slice, s.link}] = {s.items, s.expires_unix_ns, s.created_unix_ns / kMs};
    }
    return out;
  }

  testing::TempDir dir_;
  DrivenClock clock_;
  static RedisServer* one_;
  static RedisServer* shard_a_;
  static RedisServer* shard_b_;
  static RedisCluster* cluster_;
};

RedisServer* StreamCopy::one_ = nullptr;
RedisServer* StreamCopy::shard_a_ = nullptr;
RedisServer* StreamCopy::shard_b_ = nullptr;
RedisCluster* StreamCopy::cluster_ = nullptr;

// A window of 4 slices filled for 9 slices at a file, then copied file -> file -> one server
// -> cluster -> sharded servers -> file. At every hop: the same live slices, counts, expiries
// and creation times; the last 5 slices' items all present; the older ones absent at the
// false-positive rate; the copy's add and lookups those of the source. Then time moves on by
// a slice at the last copy and the source alike: the oldest live slice leaves both.
TEST_F(StreamCopy, AWindowKeepsItsSlicesAndTheirRetirementThroughEveryStore) {
  const Location source_at = file("w.rbf");
  {
    Filter source = Filter::create(source_at, windowed(), false, nullptr, clock_.clock());
    for (int step = 0; step < 9; ++step) {
      const auto items = batch(step);
      source.add_many(views_of(items));
      if (step < 8) clock_.advance(kSlice);
    }
  }
  const Filter source = open(source_at);
  const auto source_links = links_of(source);
  ASSERT_EQ(source_links.size(), kSlices + 1);
  // Steps 4..8 are live (ages 0 to 4 slices); 0..3 left the window + slice.
  std::vector<std::string> recent, old;
  for (int step = 0; step < 9; ++step) {
    const auto items = batch(step);
    (step >= 4 ? recent : old).insert((step >= 4 ? recent : old).end(), items.begin(), items.end());
  }
  ASSERT_EQ(present(source, recent), recent.size());

  const std::vector<std::pair<Location, Location>> hops{
      {source_at, file("w2.rbf")},  {file("w2.rbf"), one("w")},     {one("w"), cluster("w")},
      {cluster("w"), sharded("w")}, {sharded("w"), file("w3.rbf")},
  };
  for (const auto& [from, to] : hops) {
    SCOPED_TRACE(from.describe() + " -> " + to.describe());
    const CopyReport report = copy_filter(from, to, false, {}, clock_.clock());
    EXPECT_GT(report.bytes, 0u);
    const Filter copy = open(to);
    ASSERT_TRUE(copy.shape().windowed());
    EXPECT_EQ(*copy.shape().stream, *source.shape().stream);
    EXPECT_EQ(links_of(copy), source_links);
    EXPECT_EQ(present(copy, recent), recent.size()) << "an item of the window is missing";
    const std::size_t stale = present(copy, old);
    EXPECT_LE(double(stale) / double(old.size()), rate_bound(kRate, old.size()));
    EXPECT_EQ(copy.info().set_bits, source.info().set_bits);
  }
  // The Redis copy's slice keys expire when their slices retire, as the script sets them.
  {
    const Filter copy = open(one("w"));
    const auto& redis = dynamic_cast<const RedisStreamStore&>(copy.backend());
    const auto last = source_links.rbegin()->first.first;
    const std::string key = redis.slice_key(0, last);
    EXPECT_EQ(one_->integer({"PEXPIRETIME", key}),
              static_cast<long long>(source_links.rbegin()->second[1] / kMs));
  }
  // One slice later, step 4's items (then 5 slices old) leave the copies as the source.
  clock_.advance(kSlice);
  const auto leaving = batch(4);
  for (const Location& at : {source_at, file("w3.rbf"), one("w"), cluster("w"), sharded("w")}) {
    SCOPED_TRACE(at.describe());
    Filter filter = open(at);
    EXPECT_LE(double(present(filter, leaving)) / double(leaving.size()),
              rate_bound(kRate, leaving.size()));
    const auto kept = batch(5);
    EXPECT_EQ(present(filter, kept), kept.size());
    // An add restarts an item's window in the new slice, as at the source.
    EXPECT_FALSE(filter.add(kept.front()));
    const auto fresh = make_items(1000, at.describe() + "-fresh-");
    EXPECT_GE(filter.add_many(views_of(fresh)), fresh.size() - 50);
  }
}

// A growing filter past three links: copied file -> one server -> cluster -> sharded -> file,
// every item present, absent items at the rate, the links and their counts kept, and the copy
// grows on from where the source was.
TEST_F(StreamCopy, AGrowingFilterKeepsItsLinksAndGrowsOn) {
  const Location source_at = file("g.rbf");
  const auto items = make_items(6000, "g-");
  {
    Filter source = Filter::create(source_at, growing(), false, nullptr, clock_.clock());
    source.add_many(views_of(items));
  }
  const Filter source = open(source_at);
  const auto source_links = links_of(source);
  ASSERT_GE(source_links.size(), 3u);
  const auto never = make_items(20000, "never-");
  const std::vector<std::pair<Location, Location>> hops{
      {source_at, one("g")},
      {one("g"), cluster("g")},
      {cluster("g"), sharded("g")},
      {sharded("g"), file("g2.rbf")},
  };
  for (const auto& [from, to] : hops) {
    SCOPED_TRACE(from.describe() + " -> " + to.describe());
    (void)copy_filter(from, to, false, {}, clock_.clock());
    Filter copy = open(to);
    ASSERT_TRUE(copy.shape().growing());
    EXPECT_EQ(copy.params().capacity, 1000u);  // what was asked, not a link's
    EXPECT_EQ(copy.params().error_rate, kRate);
    EXPECT_EQ(links_of(copy), source_links);
    EXPECT_EQ(present(copy, items), items.size());
    EXPECT_LE(double(present(copy, never)) / double(never.size()), rate_bound(kRate, never.size()));
  }
  Filter last = open(file("g2.rbf"));
  const auto more = make_items(10000, "more-");
  EXPECT_GE(last.add_many(views_of(more)), more.size() - 300);
  EXPECT_GT(last.info().stream->segments.size(), source_links.size());
  EXPECT_EQ(present(last, items), items.size());
  EXPECT_EQ(present(last, more), more.size());
}

// A copy taken while another writer adds to the source: it succeeds, and holds every item
// whose add returned before it began (the writer's later items may or may not be there).
TEST_F(StreamCopy, ACopyWhileWritersAddHoldsEverythingAddedBeforeIt) {
  for (const bool window : {true, false}) {
    for (const bool in_file : {true, false}) {
      SCOPED_TRACE(std::string(window ? "windowed" : "growing") + (in_file ? " file" : " redis"));
      const std::string name = std::string(window ? "busy-w" : "busy-g") + (in_file ? "-f" : "-r");
      const Location source_at = in_file ? file(name + ".rbf") : one(name);
      Filter source = Filter::create(source_at, window ? windowed() : growing(), false, nullptr,
                                     clock_.clock());
      const auto before = make_items(3000, name + "-before-");
      source.add_many(views_of(before));
      std::atomic<bool> stop{false};
      std::atomic<int> batches{0};
      std::thread writer([&] {
        Filter mine = open(source_at);
        for (int b = 0; b < 200 && !stop.load(); ++b) {
          const auto items = make_items(500, name + "-during-" + std::to_string(b) + "-");
          mine.add_many(views_of(items));
          ++batches;
        }
      });
      while (batches.load() < 1) std::this_thread::yield();
      CopyReport report;
      EXPECT_NO_THROW(report = copy_filter(source_at, cluster(name), false, {}, clock_.clock()));
      stop = true;
      writer.join();
      const Filter copy = open(cluster(name));
      EXPECT_EQ(present(copy, before), before.size());
      const auto first_during = make_items(500, name + "-during-0-");
      EXPECT_EQ(present(copy, first_during), first_during.size());
    }
  }
}

// A copy refuses a target that exists (unless asked to replace it), and then leaves it as it
// was; with overwrite it replaces a plain filter by the window.
TEST_F(StreamCopy, AnExistingTargetIsRefusedOrReplaced) {
  const Location source_at = file("r.rbf");
  {
    Filter source = Filter::create(source_at, growing(), false, nullptr, clock_.clock());
    const auto items = make_items(100, "r-");
    source.add_many(views_of(items));
  }
  (void)Filter::create(one("taken"), size_filter(1000, 0.01, Layout::classic));
  EXPECT_THROW((void)copy_filter(source_at, one("taken"), false, {}, clock_.clock()), FilterExists);
  EXPECT_TRUE(open(one("taken")).shape().plain());
  (void)copy_filter(source_at, one("taken"), true, {}, clock_.clock());
  const Filter replaced = open(one("taken"));
  EXPECT_TRUE(replaced.shape().growing());
  EXPECT_TRUE(replaced.contains("r-0"));
}

}  // namespace
}  // namespace redbloom
