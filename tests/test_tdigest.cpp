// The core t-digest's properties (RedisBloom's exact replies are held by
// tests/module/test_tdigest.py): quantiles within the digest's error of the true ones, CDF and
// quantile inverse to each other, merging the same as adding, weights that would overflow
// refused with nothing changed, damaged saved fields refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/tdigest.hpp"

namespace redbloom::tdigest {
namespace {

Digest filled(long long compression, const std::vector<double>& values) {
  Digest d(compression, default_chain_allocator());
  for (const double v : values) EXPECT_TRUE(d.add(v, 1));
  return d;
}

std::vector<double> normal_samples(std::size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> dist(100, 15);
  std::vector<double> out(n);
  for (auto& v : out) v = dist(rng);
  return out;
}

TEST(TDigest, CapacityFollowsCompression) {
  EXPECT_EQ(capacity_for(100), 610u);
  EXPECT_EQ(capacity_for(1), 16u);
  EXPECT_FALSE(capacity_for(0).has_value());
  EXPECT_FALSE(capacity_for(1LL << 40).has_value());
}

TEST(TDigest, QuantilesAreCloseToTheSortedSamples) {
  const auto values = normal_samples(100000, 1);
  Digest d = filled(100, values);
  auto sorted = values;
  std::sort(sorted.begin(), sorted.end());
  for (const double q : {0.001, 0.01, 0.1, 0.5, 0.9, 0.99, 0.999}) {
    const double exact = sorted[static_cast<std::size_t>(q * (sorted.size() - 1))];
    // The t-digest's rank error is about q(1 - q) / compression, tightest at the tails.
    const double rank = d.cdf(exact);
    EXPECT_NEAR(rank, q, 0.002 + 0.02 * q * (1 - q)) << "q=" << q;
  }
  EXPECT_EQ(d.min(), sorted.front());
  EXPECT_EQ(d.max(), sorted.back());
  EXPECT_EQ(d.quantile(0), sorted.front());
  EXPECT_EQ(d.quantile(1), sorted.back());
  EXPECT_LE(d.merged_nodes(), d.capacity());
}

TEST(TDigest, QuantilesAreMonotoneAndMatchTheBatchedWalk) {
  Digest d = filled(50, normal_samples(20000, 2));
  std::vector<double> qs;
  for (int i = 0; i <= 200; ++i) qs.push_back(i / 200.0);
  std::vector<double> batched(qs.size());
  d.ascending_quantiles(qs, batched);
  double last = -INFINITY;
  for (std::size_t i = 0; i < qs.size(); ++i) {
    const double one = d.quantile(qs[i]);
    EXPECT_GE(one, last);
    last = one;
    if (qs[i] * static_cast<double>(d.size()) >= 1) {
      EXPECT_EQ(one, batched[i]) << qs[i];
    }
  }
}

TEST(TDigest, MergingIsAddingTheOthersCentroids) {
  const auto a_values = normal_samples(5000, 3);
  const auto b_values = normal_samples(7000, 4);
  Digest a = filled(100, a_values);
  Digest b = filled(100, b_values);
  Digest merged(100, default_chain_allocator());
  ASSERT_TRUE(merged.merge_from(a));
  ASSERT_TRUE(merged.merge_from(b));
  EXPECT_EQ(merged.size(), 12000);
  EXPECT_EQ(merged.min(), std::min(a.min(), b.min()));
  EXPECT_EQ(merged.max(), std::max(a.max(), b.max()));
  EXPECT_NEAR(merged.quantile(0.5), 100, 1.0);
}

TEST(TDigest, OneSampleStaysUnmergedAsRedisBloomLeavesIt) {
  Digest d = filled(100, {42.5});
  EXPECT_TRUE(std::isnan(d.quantile(0.5)));
  EXPECT_TRUE(std::isnan(d.cdf(42.5)));
  EXPECT_EQ(d.unmerged_nodes(), 1);
  EXPECT_EQ(d.size(), 1);
  EXPECT_EQ(d.min(), 42.5);
}

TEST(TDigest, OverflowingWeightsAreRefusedWithNothingChanged) {
  Digest d(10, default_chain_allocator());
  ASSERT_TRUE(d.add(1, 1));
  EXPECT_FALSE(d.add(2, LLONG_MAX));
  EXPECT_EQ(d.size(), 1);
  EXPECT_EQ(d.max(), 1);
}

TEST(TDigest, ACopyIsIndependent) {
  Digest d = filled(20, normal_samples(500, 5));
  Digest copy(d);
  ASSERT_TRUE(copy.add(1e6, 1));
  EXPECT_EQ(copy.max(), 1e6);
  EXPECT_LT(d.max(), 1e6);
  EXPECT_EQ(copy.size(), d.size() + 1);
}

TEST(TDigest, SavedFieldsRoundTripAndDamagedOnesAreRefused) {
  Digest d = filled(30, normal_samples(3000, 6));
  const Saved s = d.saved();
  EXPECT_EQ(Digest::problem(s), "");
  std::vector<double> means, weights;
  for (int i = 0; i < d.merged_nodes(); ++i) {
    means.push_back(d.mean_at(i));
    weights.push_back(static_cast<double>(d.weight_at(i)));
  }
  Digest back(30, default_chain_allocator());
  back.restore(s, means, weights);
  for (const double q : {0.0, 0.1, 0.5, 0.77, 1.0}) EXPECT_EQ(back.quantile(q), d.quantile(q));

  Saved bad = s;
  bad.capacity = 1 << 30;
  EXPECT_NE(Digest::problem(bad), "");
  bad = s;
  bad.merged_nodes = s.capacity + 1;
  EXPECT_NE(Digest::problem(bad), "");
  bad = s;
  bad.compression = 30.5;
  EXPECT_NE(Digest::problem(bad), "");
  bad = s;
  bad.unmerged_nodes = -1;
  EXPECT_NE(Digest::problem(bad), "");
  bad = s;
  bad.merged_weight = NAN;
  EXPECT_NE(Digest::problem(bad), "");
}

}  // namespace
}  // namespace redbloom::tdigest
