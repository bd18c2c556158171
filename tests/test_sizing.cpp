#include <gtest/gtest.h>

#include <cmath>

#include "error_of.hpp"
#include "redbloom/error.hpp"
#include "redbloom/params.hpp"
#include "redbloom/sizing.hpp"

namespace redbloom {
namespace {

TEST(Sizing, ClassicBitsAndHashesMatchTheTextbook) {
  // m = ceil(-n ln p / ln^2 2), k = round(m/n ln 2); values computed independently.
  EXPECT_EQ(classic_bits_for(1e6, 0.01), 9585059u);
  EXPECT_EQ(classic_bits_for(1e6, 0.001), 14377588u);
  EXPECT_EQ(classic_bits_for(1e9, 1e-9), 43132762699u);
  EXPECT_EQ(classic_hashes_for(9.585059), 7u);  // floor() would give 6
  EXPECT_EQ(classic_hashes_for(14.377588), 10u);
  EXPECT_EQ(classic_hashes_for(43.13), 30u);
  EXPECT_EQ(classic_hashes_for(0.1), 1u);
  EXPECT_EQ(classic_hashes_for(1000), 64u);
}

TEST(Sizing, ClassicRateAtOptimumIsTheTarget) {
  for (double p : {0.1, 0.01, 1e-3, 1e-6, 1e-9}) {
    const double n = 1e6;
    const auto m = static_cast<double>(classic_bits_for(n, p));
    const double k = classic_hashes_for(m / n);
    // k is rounded, so the rate is near p but not exactly p.
    EXPECT_NEAR(std::log(classic_false_positive_rate(m, k, n)), std::log(p), 0.05) << p;
  }
}

TEST(Sizing, RejectsBadItemsAndRates) {
  EXPECT_THROW((void)classic_bits_for(0, 0.01), InvalidArgument);
  EXPECT_THROW((void)classic_bits_for(1e6, 0), InvalidArgument);
  EXPECT_THROW((void)classic_bits_for(1e6, 1), InvalidArgument);
  EXPECT_THROW((void)classic_bits_for(1e6, -0.5), InvalidArgument);
  EXPECT_THROW((void)classic_bits_for(NAN, 0.01), InvalidArgument);
  EXPECT_THROW((void)blocked_bits_for(1e6, 2), InvalidArgument);
  EXPECT_THROW((void)size_filter(1e6, 0.01, Layout::classic, 100), InvalidArgument);
  EXPECT_THROW((void)size_filter(1e6, 0.01, Layout::classic, std::uint64_t{1} << 30),
               InvalidArgument);
  EXPECT_THROW((void)explicit_filter(1000, 0, Layout::classic), InvalidArgument);
  EXPECT_THROW((void)explicit_filter(1000, 65, Layout::classic), InvalidArgument);
}

// Seed 001's first table: n = 1e9, m/n in {30, 50}, k in {8, 16}.
struct SeedRow {
  double bits_per_item;
  double k;
  double printed_rate;
};

// Every filter the library sizes states the error-rate rule in the same words.
TEST(Sizing, ErrorRateRuleIsStatedOneWay) {
  using testing::error_of;
  EXPECT_EQ(error_of([] { (void)classic_bits_for(1e6, 0.6); }),
            "error rate 0.6 is too high: the error rate must be above 0 and at most 0.5 "
            "(0.01 is common); above 0.5 a filter answers 'present' for most items it never saw");
  EXPECT_EQ(error_of([] { (void)classic_bits_for(1e6, 1); }),
            "error rate 1 is too high: the error rate must be above 0 and at most 0.5 "
            "(0.01 is common); above 0.5 a filter answers 'present' for most items it never saw");
  EXPECT_EQ(error_of([] { (void)blocked_bits_for(1e6, 2); }),
            "error rate 2 is too high: the error rate must be above 0 and at most 0.5 "
            "(0.01 is common); above 0.5 a filter answers 'present' for most items it never saw");
  EXPECT_EQ(error_of([] { (void)size_filter(1e6, 0.75, Layout::blocked); }),
            "error rate 0.75 is too high: the error rate must be above 0 and at most 0.5 "
            "(0.01 is common); above 0.5 a filter answers 'present' for most items it never saw");
  EXPECT_EQ(error_of([] { (void)classic_bits_for(1e6, 0); }),
            "error rate 0 is too low: the error rate must be above 0 and at most 0.5 "
            "(0.01 is common)");
  EXPECT_EQ(error_of([] { (void)classic_bits_for(1e6, -0.5); }),
            "error rate -0.5 is too low: the error rate must be above 0 and at most 0.5 "
            "(0.01 is common)");
  EXPECT_EQ(error_of([] { check_error_rate(0.5); }), "(no error)");
}

TEST(Sizing, ReproducesSeed001Tables) {
  const SeedRow rows[] = {{30, 8, 9.01e-6}, {30, 16, 7.26e-7}, {50, 8, 2.28e-7}, {50, 16, 1e-9}};
  for (const SeedRow& row : rows) {
    const double n = 1e9;
    const double rate = classic_false_positive_rate(row.bits_per_item * n, row.k, n);
    // The seed prints 3 significant digits (1e-9 is rounded from 1.00e-9).
    EXPECT_NEAR(rate / row.printed_rate, 1.0, 0.01) << row.bits_per_item << " " << row.k;
  }
  // The seed's memory column: 3.49 GB = 30e9 bits in GiB; 5.82 GB = 50e9 bits.
  EXPECT_NEAR(30e9 / 8 / (1 << 30), 3.49, 0.005);
  EXPECT_NEAR(50e9 / 8 / (1 << 30), 5.82, 0.005);
  // Its second table (n = 7e6) prints m = 2100万 and 3500万 (2.1e7, 3.5e7 bits): a tenth of
  // m/n * n; its memory column (25.03 MB, 41.72 MB) is right for 2.1e8 and 3.5e8 bits
  // (documented in docs/sizing.md).
  EXPECT_NEAR(30 * 7e6 / 8 / (1 << 20), 25.03, 0.005);
  EXPECT_NEAR(50 * 7e6 / 8 / (1 << 20), 41.72, 0.005);
  // Expected false positives over n queries for absent items: 9011, 726, 228, 1 and 63, 5, 1.6, 0.
  EXPECT_NEAR(expected_false_positives(classic_false_positive_rate(30e9, 8, 1e9), 1e9), 9011, 10);
  EXPECT_NEAR(expected_false_positives(classic_false_positive_rate(30 * 7e6, 8, 7e6), 7e6), 63,
              0.5);
}

TEST(Sizing, ReproducesSeed002Table) {
  // Rows m/n = 22..32, columns k = 17..24, as printed in seed 002 (blank cells omitted).
  struct Cell {
    int bits_per_item;
    int k;
    double printed;
  };
  const Cell cells[] = {
      {22, 17, 2.67e-05}, {23, 17, 1.61e-05}, {24, 17, 9.84e-06}, {24, 18, 1e-05},
      {25, 17, 6.08e-06}, {25, 18, 6.11e-06}, {25, 19, 6.27e-06}, {26, 17, 3.81e-06},
      {26, 18, 3.76e-06}, {26, 19, 3.8e-06},  {26, 20, 3.92e-06}, {27, 17, 2.41e-06},
      {27, 18, 2.34e-06}, {27, 19, 2.33e-06}, {27, 20, 2.37e-06}, {28, 17, 1.54e-06},
      {28, 18, 1.47e-06}, {28, 19, 1.44e-06}, {28, 20, 1.44e-06}, {28, 21, 1.48e-06},
      {29, 17, 9.96e-07}, {29, 18, 9.35e-07}, {29, 19, 9.01e-07}, {29, 20, 8.89e-07},
      {29, 21, 8.96e-07}, {29, 22, 9.21e-07}, {30, 17, 6.5e-07},  {30, 18, 6e-07},
      {30, 19, 5.69e-07}, {30, 20, 5.54e-07}, {30, 21, 5.5e-07},  {30, 22, 5.58e-07},
      {31, 17, 4.29e-07}, {31, 18, 3.89e-07}, {31, 19, 3.63e-07}, {31, 20, 3.48e-07},
      {31, 21, 3.41e-07}, {31, 22, 3.41e-07}, {31, 23, 3.48e-07}, {32, 17, 2.85e-07},
      {32, 18, 2.55e-07}, {32, 19, 2.34e-07}, {32, 20, 2.21e-07}, {32, 21, 2.13e-07},
      {32, 22, 2.1e-07},  {32, 23, 2.12e-07}, {32, 24, 2.17e-07},
  };
  for (const Cell& c : cells) {
    const double rate = classic_false_positive_rate(c.bits_per_item, c.k, 1);
    EXPECT_NEAR(rate / c.printed, 1.0, 0.01) << c.bits_per_item << " " << c.k;
  }
}

TEST(Sizing, BlockedNeedsAFewMoreBitsAndMeetsTheTarget) {
  for (double p : {0.01, 0.001}) {
    const double n = 1e6;
    const BitsAndHashes sized = blocked_bits_for(n, p);
    const double m = static_cast<double>(sized.bits);
    EXPECT_LE(blocked_false_positive_rate(m, sized.hashes, n), p);
    // Minimal: 1% fewer bits miss the target with every k.
    const double fewer = m * 0.99;
    EXPECT_GT(blocked_false_positive_rate(fewer, blocked_best_hashes(fewer, n), n), p);
    // More than classic needs, but not absurdly more.
    const auto classic = static_cast<double>(classic_bits_for(n, p));
    EXPECT_GT(m, classic);
    EXPECT_LT(m, 1.25 * classic);
  }
  // At p = 1% the blocked layout fits in 11 bits per item.
  EXPECT_LE(static_cast<double>(blocked_bits_for(1e8, 0.01).bits) / 1e8, 11.0);
}

TEST(Sizing, BlockedRateExceedsClassicAtTheSameSize) {
  // Uneven block loads make the blocked rate strictly worse than the textbook's.
  const double n = 1e6;
  for (double bits_per_item : {8.0, 10.0, 16.0}) {
    const double m = bits_per_item * n;
    const double k = classic_hashes_for(bits_per_item);
    EXPECT_GT(blocked_false_positive_rate(m, k, n), classic_false_positive_rate(m, k, n));
  }
}

TEST(Sizing, BlockedBitSurvivalFollowsTheWordRotation) {
  EXPECT_DOUBLE_EQ(blocked_bit_survival(1), 1 - 1.0 / 512);
  EXPECT_DOUBLE_EQ(blocked_bit_survival(6), 1 - 6.0 / 512);
  EXPECT_DOUBLE_EQ(blocked_bit_survival(8), 63.0 / 64);
  // k = 12: half the words get 2 probes, half 1.
  EXPECT_DOUBLE_EQ(blocked_bit_survival(12), 0.5 * (63.0 / 64) * (63.0 / 64) + 0.5 * (63.0 / 64));
  EXPECT_DOUBLE_EQ(blocked_bit_survival(64), std::pow(63.0 / 64, 8));
}

TEST(Sizing, CardinalityEstimatesInvertTheExpectedFill) {
  const double m = 1e7;
  const double k = 7;
  const double n = 8e5;
  const double classic_ones = m * (1 - std::exp(-k * n / m));
  EXPECT_NEAR(classic_estimated_items(m, k, classic_ones), n, 1e-6 * n);
  const double lambda = 512 * n / m;
  const double blocked_ones = m * (1 - std::exp(-lambda * (k / 512)));  // q = 1 - k/512, k <= 8
  EXPECT_NEAR(blocked_estimated_items(m, k, blocked_ones), n, 1e-6 * n);
  EXPECT_TRUE(std::isinf(classic_estimated_items(m, k, m)));
}

TEST(Params, PartitionsRespectTheRedisLimitAndBlockAlignment) {
  // 1e9 items at 1e-9: 5.02 GiB of bits; with 512 MiB partitions that is 11 partitions.
  const FilterParams big = size_filter(1e9, 1e-9, Layout::classic, std::uint64_t{512} << 20);
  EXPECT_EQ(big.partitions, 11u);
  EXPECT_LE(big.partition_bits, kRedisMaxStringBits);
  EXPECT_EQ(big.partition_bits % 512, 0u);
  EXPECT_GE(big.total_bits(), classic_bits_for(1e9, 1e-9));
  EXPECT_EQ(big.hashes, 30u);
  // Default 64 MiB partitions.
  const FilterParams def = size_filter(1e9, 1e-9, Layout::classic);
  EXPECT_EQ(def.partitions, 81u);
  const FilterParams small = size_filter(1000, 0.01, Layout::blocked);
  EXPECT_EQ(small.partitions, 1u);
  EXPECT_LE(small.error_rate, 0.01);
}

TEST(Params, ExplicitBitsAndHashesAsInSeed001) {
  const FilterParams p = explicit_filter(350'000'000, 16, Layout::classic, 7'000'000);
  EXPECT_EQ(p.hashes, 16u);
  EXPECT_GE(p.total_bits(), 350'000'000u);
  EXPECT_LT(p.total_bits(), 350'000'000u + 512 * p.partitions);
  EXPECT_NEAR(p.error_rate / 1e-9, 1.0, 0.02);
}

}  // namespace
}  // namespace redbloom
