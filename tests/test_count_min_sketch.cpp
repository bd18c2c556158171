// The core Count-Min Sketch: RedisBloom 2.4.23's counts for recorded sequences (its replies,
// recorded from redis-cli against RedisBloom; tests/module/test_cms.py holds the module's replies
// to a longer recorded sequence), never an undercount, the error bound its dimensions promise,
// saturation, and merges checked before they change anything.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/count_min_sketch.hpp"
#include "core/redisbloom_chain.hpp"
#include "redbloom/error.hpp"

namespace redbloom::cms {
namespace {

Sketch sketch(std::uint64_t width, std::uint64_t depth) {
  return Sketch(width, depth, default_chain_allocator());
}

TEST(CountMinSketch, DimensionsFromProbabilityAreRedisBloomS) {
  // CMS.INITBYPROB e p, then CMS.INFO, on RedisBloom 2.4.23.
  const struct {
    double error, probability;
    std::uint64_t width, depth;
  } recorded[] = {{0.001, 0.01, 2000, 7}, {0.01, 0.001, 200, 10},       {0.5, 0.5, 4, 1},
                  {0.1, 1e-40, 20, 133},  {1e-10, 0.5, 20000000000, 1}, {1e-7, 1e-5, 20000000, 17},
                  {0.07, 0.123, 29, 4},   {0.002, 0.0001, 1000, 14},    {0.9, 0.9, 3, 1}};
  for (const auto& r : recorded) {
    const auto d = dimensions_for(r.error, r.probability);
    ASSERT_TRUE(d.has_value()) << r.error << " " << r.probability;
    EXPECT_EQ(d->width, r.width) << r.error;
    EXPECT_EQ(d->depth, r.depth) << r.probability;
  }
  // RedisBloom answers "CMS: invalid init arguments" to these.
  EXPECT_FALSE(dimensions_for(0.3, 0.99999999));  // rounds to 1.0f: no rows
  EXPECT_FALSE(dimensions_for(0.1, 1e-50));       // under the smallest float
  EXPECT_FALSE(dimensions_for(1e-19, 0.5));       // 2e19 columns
  EXPECT_FALSE(dimensions_for(0, 0.5));
  EXPECT_FALSE(dimensions_for(0.5, 1));
}

TEST(CountMinSketch, CountsAreRedisBloomS) {
  // CMS.INITBYDIM s 5 3, CMS.INCRBY s item:0 1 item:1 2 ... item:19 20, CMS.QUERY of each.
  Sketch s = sketch(5, 3);
  const std::vector<std::uint32_t> increments = {1,  2,  3,  4,  5,  8,  11, 8,  9,  10,
                                                 11, 18, 16, 35, 23, 26, 25, 43, 30, 63};
  const std::vector<std::uint32_t> queries = {18, 40, 16, 26, 18, 43, 27, 39, 49, 26,
                                              27, 18, 16, 41, 39, 26, 40, 43, 30, 63};
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(s.increment("item:" + std::to_string(i), i + 1), increments[i]) << i;
  }
  for (int i = 0; i < 20; ++i) EXPECT_EQ(s.query("item:" + std::to_string(i)), queries[i]) << i;
  EXPECT_EQ(s.count(), 210u);

  // One row of 97: each answer is the number of items in the item's column, which shows the
  // hash of every one. CMS.INITBYDIM w 97 1, CMS.INCRBY w 0 1 1 1 ... 199 1, CMS.QUERY w 0..199.
  const std::string columns =
      "2312362324223234313446313355322233223242331333223234133223122356333434213331223635523423"
      "3231422223452332533236333344424362424326523133112632123366613123133321321252162221132223"
      "532223233234411333423332";
  Sketch w = sketch(97, 1);
  for (int i = 0; i < 200; ++i) w.increment(std::to_string(i), 1);
  for (int i = 0; i < 200; ++i) {
    EXPECT_EQ(w.query(std::to_string(i)), static_cast<std::uint32_t>(columns[i] - '0')) << i;
  }
}

TEST(CountMinSketch, NeverUndercountsAndKeepsItsErrorBound) {
  const double error = 0.001;
  const double probability = 0.01;
  const auto d = dimensions_for(error, probability);
  ASSERT_TRUE(d);
  Sketch s = sketch(d->width, d->depth);
  std::mt19937_64 rng(43);
  // Skewed counts over many distinct items, so that collisions matter.
  std::geometric_distribution<int> pick(0.0002);
  std::map<std::string, std::uint64_t> truth;
  std::uint64_t total = 0;
  for (int i = 0; i < 200000; ++i) {
    // Appended, not "k" + to_string: GCC 12 at -O3 warns falsely (-Wrestrict) on that form.
    std::string item = "k";
    item += std::to_string(pick(rng));
    const std::uint64_t by = 1 + rng() % 3;
    s.increment(item, by);
    truth[item] += by;
    total += by;
  }
  EXPECT_EQ(s.count(), total);
  std::size_t over_bound = 0;
  for (const auto& [item, count] : truth) {
    const std::uint32_t estimate = s.query(item);
    ASSERT_GE(estimate, count) << item;
    if (static_cast<double>(estimate - count) > error * static_cast<double>(total)) ++over_bound;
  }
  // The bound holds for each item with probability 1 - δ; over thousands of items the share
  // that passes it stays under δ.
  EXPECT_GT(truth.size(), 1000u);
  EXPECT_LE(static_cast<double>(over_bound), probability * static_cast<double>(truth.size()))
      << over_bound << " of " << truth.size();
}

TEST(CountMinSketch, CountersSaturateAsRedisBloomS) {
  Sketch s = sketch(7, 3);
  // RedisBloom answers an increment to just under 2^32 as it is; ten more overflow.
  EXPECT_EQ(s.increment("x", 4294967290u), 4294967290u);
  EXPECT_EQ(s.increment("x", 10), kSaturated);
  EXPECT_EQ(s.query("x"), kSaturated);
  EXPECT_EQ(s.increment("y", 1ULL << 32), kSaturated);
  EXPECT_EQ(s.increment("x", 0), kSaturated);
  EXPECT_EQ(s.count(), 4294967300ULL + (1ULL << 32));
}

TEST(CountMinSketch, MergeIsTheWeightedSumAndChecksFirst) {
  Sketch a = sketch(50, 4);
  Sketch b = sketch(50, 4);
  Sketch into = sketch(50, 4);
  for (int i = 0; i < 300; ++i) a.increment(std::to_string(i % 37), 2);
  for (int i = 0; i < 100; ++i) b.increment(std::to_string(i % 11), 1);
  const Sketch* sources[] = {&a, &b};
  const long long weights[] = {3, 1};
  ASSERT_TRUE(into.merge(sources, weights));
  for (std::size_t cell = 0; cell < into.counters().size(); ++cell) {
    EXPECT_EQ(into.counters()[cell], 3 * a.counters()[cell] + b.counters()[cell]);
  }
  EXPECT_EQ(into.count(), 3 * a.count() + b.count());

  // A negative sum somewhere: refused, nothing changed.
  const std::vector<std::uint32_t> before(into.counters().begin(), into.counters().end());
  const long long negative[] = {-1, 1};
  EXPECT_FALSE(into.merge(sources, negative));
  EXPECT_TRUE(std::equal(before.begin(), before.end(), into.counters().begin()));
  // A counter past 2^32 - 1: refused.
  const long long huge[] = {1LL << 40, 0};
  EXPECT_FALSE(into.merge(sources, huge));
  EXPECT_EQ(into.count(), 3 * a.count() + b.count());

  // The destination among the sources: each cell read before it is written.
  const Sketch* self[] = {&into, &a};
  const long long twice[] = {2, 1};
  ASSERT_TRUE(into.merge(self, twice));
  for (std::size_t cell = 0; cell < into.counters().size(); ++cell) {
    EXPECT_EQ(into.counters()[cell], 2 * before[cell] + a.counters()[cell]);
  }
}

TEST(CountMinSketch, CopiesAndBadDimensions) {
  Sketch a = sketch(10, 2);
  a.increment("x", 5);
  Sketch b(a);
  b.increment("x", 1);
  EXPECT_EQ(a.query("x"), 5u);
  EXPECT_EQ(b.query("x"), 6u);
  EXPECT_EQ(b.count(), 6u);
  EXPECT_THROW(sketch(0, 3), InvalidArgument);
  EXPECT_THROW(sketch(1ULL << 62, 4), InvalidArgument);
  EXPECT_FALSE(counter_bytes(1ULL << 32, 1ULL << 32));
  EXPECT_EQ(counter_bytes(3, 5), 60u);
}

TEST(CountMinSketch, BatchesAnswerAsOneAtATime) {
  std::mt19937_64 rng(5);
  for (const std::uint64_t depth : {1u, 7u, 16u, 17u}) {
    Sketch one = sketch(31, depth);
    Sketch batched = sketch(31, depth);
    std::vector<std::string> names;
    std::vector<std::uint64_t> by;
    for (int i = 0; i < 203; ++i) {
      names.push_back(std::string("n").append(std::to_string(rng() % 40)));  // repeats in a batch
      by.push_back(i % 50 == 7 ? 4294967000u : rng() % 1000);                // some saturate
    }
    const std::vector<std::string_view> items(names.begin(), names.end());
    std::vector<std::uint32_t> expected;
    for (std::size_t i = 0; i < items.size(); ++i)
      expected.push_back(one.increment(items[i], by[i]));
    std::vector<std::uint32_t> got(items.size());
    batched.increment_all(items, by, got);
    EXPECT_EQ(got, expected) << depth;
    EXPECT_EQ(batched.count(), one.count());
    EXPECT_TRUE(
        std::equal(one.counters().begin(), one.counters().end(), batched.counters().begin()));
    std::vector<std::uint32_t> queried(items.size());
    batched.query_all(items, queried);
    for (std::size_t i = 0; i < items.size(); ++i) EXPECT_EQ(queried[i], one.query(items[i]));
  }
}

// The column is hash mod width by a multiplication: the same as the division for every width.
TEST(CountMinSketch, ColumnsAreHashModWidth) {
  std::mt19937_64 rng(9);
  const std::uint64_t widths[] = {1, 2, 3, 7, 1000, 65537, (1ULL << 31) + 11, UINT32_MAX - 1};
  for (const std::uint64_t width : widths) {
    // A one-row sketch of this width would be too large to allocate for the widest: the same
    // arithmetic is checked on a sketch whose row holds each probed column.
    for (int i = 0; i < 2000; ++i) {
      const std::uint32_t hash = static_cast<std::uint32_t>(rng());
      const std::uint64_t inverse = width <= UINT32_MAX ? UINT64_MAX / width + 1 : 0;
      const std::uint64_t low = inverse * hash;
      const auto column =
          static_cast<std::uint64_t>((static_cast<unsigned __int128>(low) * width) >> 64);
      ASSERT_EQ(column, hash % width) << width << " " << hash;
    }
  }
  // And through the sketch: a prime width (past 2^20) places every item where hash mod width
  // says.
  Sketch s = sketch(1000003, 2);
  for (int i = 0; i < 1000; ++i) {
    const std::string item = std::to_string(rng());
    s.increment(item, 1);
    for (std::uint32_t row = 0; row < 2; ++row) {
      const std::size_t at = row * 1000003 + redisbloom::murmur2_32(item, row) % 1000003;
      EXPECT_GE(s.counters()[at], 1u);
    }
  }
}

// Active defragmentation: the counters move to the block the mover gives, or stay.
TEST(CountMinSketch, RelocatedCountersKeepTheirCounts) {
  Sketch s = sketch(64, 4);
  for (int i = 0; i < 100; ++i) s.increment(std::to_string(i), i);
  const std::vector<std::uint32_t> before(s.counters().begin(), s.counters().end());
  const void* old_block = s.counters().data();
  struct Mover {
    static void* move(void* context, void* block) {
      const std::size_t bytes = *static_cast<std::size_t*>(context);
      void* fresh = std::malloc(bytes);
      std::memcpy(fresh, block, bytes);
      std::memset(block, 0xAB, bytes);  // what a stale read would then see
      std::free(block);
      return fresh;
    }
    static void* refuse(void*, void*) { return nullptr; }
  };
  std::size_t bytes = before.size() * sizeof(std::uint32_t);
  EXPECT_FALSE(s.relocate(Mover::refuse, &bytes));
  EXPECT_EQ(s.counters().data(), old_block);
  ASSERT_TRUE(s.relocate(Mover::move, &bytes));
  EXPECT_TRUE(std::equal(before.begin(), before.end(), s.counters().begin()));
  for (int i = 0; i < 100; ++i) EXPECT_GE(s.query(std::to_string(i)), static_cast<unsigned>(i));
}

}  // namespace
}  // namespace redbloom::cms
