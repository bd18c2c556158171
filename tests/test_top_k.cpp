// The core Top-K's properties (RedisBloom's exact replies are held by tests/module/test_topk.py):
// the heaviest items of a skewed stream listed with counts near their frequencies, RedisBloom's
// rules on small cases worked by hand, the draws' state carried through a save, damaged saved
// fields refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/top_k.hpp"

namespace redbloom::topk {
namespace {

std::vector<std::string> zipf_stream(std::size_t n, std::size_t distinct, unsigned seed) {
  std::vector<double> weights(distinct);
  for (std::size_t i = 0; i < distinct; ++i) weights[i] = 1.0 / static_cast<double>(i + 1);
  std::discrete_distribution<std::size_t> pick(weights.begin(), weights.end());
  std::mt19937_64 rng(seed);
  std::vector<std::string> out(n);
  for (auto& item : out) item = "item" + std::to_string(pick(rng));
  return out;
}

TEST(TopK, ListsTheHeaviestItemsOfASkewedStream) {
  const auto stream = zipf_stream(200000, 5000, 1);
  std::map<std::string, std::uint32_t> truth;
  for (const auto& item : stream) ++truth[item];
  TopK topk(10, 2000, 5, 0.9, default_chain_allocator());
  for (const auto& item : stream) topk.add(item, 1);

  const auto listed = topk.list();
  ASSERT_EQ(listed.size(), 10u);
  int true_top = 0;
  for (const Entry& e : listed) {
    const int rank = std::stoi(e.item.substr(4));
    if (rank < 10) ++true_top;
    // HeavyKeeper only decays other items' buckets: a heavy item's count is close to its
    // frequency, never far above it.
    EXPECT_LE(e.count, truth[e.item] + truth[e.item] / 100 + 5) << e.item;
    EXPECT_GE(e.count, truth[e.item] * 9 / 10) << e.item;
    EXPECT_TRUE(topk.query(e.item));
  }
  EXPECT_GE(true_top, 9);
  for (std::size_t i = 1; i < listed.size(); ++i) EXPECT_GE(listed[i - 1].count, listed[i].count);
  EXPECT_FALSE(topk.query("item4999"));
}

TEST(TopK, ExpelsTheLeastItemAsRedisBloomDoes) {
  // One bucket, decay 1: each add of another item takes one off the bucket for sure.
  TopK topk(1, 1, 1, 1.0, default_chain_allocator());
  EXPECT_EQ(topk.add("a", 3), std::nullopt);  // an empty heap slot expels nothing
  EXPECT_EQ(topk.count("a"), 3u);
  // b's units take the bucket's 3 off one by one; the unit that empties it claims it with the
  // units left, itself included (2), below the heap's least (3): the heap keeps a.
  EXPECT_EQ(topk.add("b", 4), std::nullopt);
  EXPECT_TRUE(topk.query("a"));
  EXPECT_EQ(topk.count("b"), 2u);
  // b again: its own bucket now, 2 + 5 = 7 >= 3: b replaces a, which is expelled.
  EXPECT_EQ(topk.add("b", 5), std::optional<std::string>("a"));
  EXPECT_TRUE(topk.query("b"));
  EXPECT_FALSE(topk.query("a"));
  const auto listed = topk.list();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].item, "b");
  EXPECT_EQ(listed[0].count, 7u);
}

TEST(TopK, ASavedValueDrawsOnAsTheOriginal) {
  const auto stream = zipf_stream(40000, 400, 2);
  TopK original(10, 16, 3, 0.9, default_chain_allocator());
  for (std::size_t i = 0; i < 20000; ++i) original.add(stream[i], 1);
  const Saved saved = original.saved();
  ASSERT_EQ(TopK::problem(saved), "");
  TopK restored = TopK::restore(saved, default_chain_allocator());
  EXPECT_EQ(restored.saved().buckets, saved.buckets);
  EXPECT_EQ(restored.saved().heap, saved.heap);
  EXPECT_EQ(restored.saved().items, saved.items);
  for (std::size_t i = 20000; i < stream.size(); ++i) {
    EXPECT_EQ(original.add(stream[i], 1), restored.add(stream[i], 1)) << i;
  }
  for (int i = 0; i < 50; ++i) {
    const std::string item = "item" + std::to_string(i);
    EXPECT_EQ(original.count(item), restored.count(item)) << item;
  }
}

TEST(TopK, DamagedSavedFieldsAreRefused) {
  TopK topk(3, 8, 2, 0.9, default_chain_allocator());
  topk.add("x", 2);
  const Saved good = topk.saved();
  ASSERT_EQ(TopK::problem(good), "");
  auto damaged = [&](auto change) {
    Saved s = good;
    change(s);
    return !TopK::problem(s).empty();
  };
  EXPECT_TRUE(damaged([](Saved& s) { s.k = 0; }));
  EXPECT_TRUE(damaged([](Saved& s) { s.width = 9; }));
  EXPECT_TRUE(damaged([](Saved& s) { s.depth = 1ull << 33; }));
  EXPECT_TRUE(damaged([](Saved& s) { s.decay = 0; }));
  EXPECT_TRUE(damaged([](Saved& s) { s.decay = 1.5; }));
  EXPECT_TRUE(damaged([](Saved& s) { s.buckets.pop_back(); }));
  EXPECT_TRUE(damaged([](Saved& s) { s.heap += "x"; }));
  EXPECT_TRUE(damaged([](Saved& s) { s.items.pop_back(); }));
  EXPECT_TRUE(damaged([](Saved& s) { s.items[0] = ""; }));
  EXPECT_TRUE(damaged([](Saved& s) { s.items[1] = "no terminator"; }));
  EXPECT_FALSE(bytes_for(1, 1ull << 40, 1ull << 40).has_value());
}

}  // namespace
}  // namespace redbloom::topk
