// The library's cuckoo table: fingerprint bits from the rate, zero false negatives, the
// measured false-positive rate against 1 − (1 − 2^−f)^(8α), removes and re-adds against a model
// set, kicks under a full table undone when they find no room, copies fed alike identical.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/cuckoo_table.hpp"
#include "redbloom/error.hpp"

namespace redbloom::cuckoo_table {
namespace {

ItemHash item(std::uint64_t i) {
  return hash_item("item:" + std::to_string(i));
}

struct Owned {
  Shape shape;
  std::vector<std::uint8_t> bytes;
  Table table;
  explicit Owned(const Shape& s) : shape(s), bytes(s.bytes()), table(s, bytes) {}
};

TEST(CuckooTable, FingerprintBitsFollowTheRate) {
  EXPECT_EQ(shape_for(1000, 0.01).fingerprint_bits, 10u);
  EXPECT_EQ(shape_for(1000, 0.001).fingerprint_bits, 13u);
  EXPECT_EQ(shape_for(1000, 0.0001).fingerprint_bits, 17u);
  EXPECT_EQ(shape_for(1000, 0.01).buckets, 264u);  // 1000 / (4 × 0.95), rounded up
  for (const double p : {0.01, 0.001, 0.0001, 1e-6}) {
    const Shape s = shape_for(100000, p);
    EXPECT_LE(s.error_rate(100000), p) << p;
  }
  EXPECT_THROW((void)shape_for(1000, 1e-10), InvalidArgument);
  EXPECT_THROW((void)shape_for(1000, 0), InvalidArgument);
  EXPECT_THROW((void)shape_for(0, 0.01), InvalidArgument);
}

TEST(CuckooTable, NoFalseNegativesAndTheRateOfTheFormula) {
  for (const double p : {0.01, 0.001}) {
    constexpr std::uint64_t n = 200000;
    Owned t(shape_for(n, p));
    std::uint64_t present = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      const Insert r = t.table.insert(item(i));
      ASSERT_NE(r, Insert::full) << i;
      present += r == Insert::present ? 1 : 0;
    }
    std::vector<ItemHash> added;
    for (std::uint64_t i = 0; i < n; ++i) added.push_back(item(i));
    std::vector<std::uint8_t> found(n);
    t.table.contains_many(added, found.data());
    for (std::uint64_t i = 0; i < n; ++i) ASSERT_EQ(found[i], 1) << i;
    const std::uint64_t stored = t.table.stored();
    EXPECT_EQ(stored + present, n);
    std::uint64_t false_positives = 0;
    constexpr std::uint64_t probes = 2000000;
    for (std::uint64_t i = 0; i < probes; ++i) false_positives += t.table.contains(item(n + i));
    const double measured = static_cast<double>(false_positives) / probes;
    const double theory = t.shape.error_rate(stored);
    EXPECT_NEAR(measured, theory, theory * 0.15) << p;
    EXPECT_LE(measured, p * 1.05) << p;
  }
}

TEST(CuckooTable, RemovesAndReaddsAgainstAModel) {
  Owned t(shape_for(2000, 0.001));
  std::set<std::uint64_t> model;
  std::mt19937_64 rng(5);
  for (int step = 0; step < 200000; ++step) {
    const std::uint64_t i = rng() % 3000;
    if (rng() % 2 == 0) {
      const Insert r = t.table.insert(item(i));
      ASSERT_NE(r, Insert::full);
      if (model.count(i) != 0) {
        ASSERT_EQ(r, Insert::present);
      }
      if (r == Insert::added) model.insert(i);
    } else if (model.count(i) != 0) {  // removes only what was added, as with an exact set
      ASSERT_TRUE(t.table.remove(item(i)));
      model.erase(i);
    }
    if (step % 1000 == 0) {
      for (const std::uint64_t m : model) ASSERT_TRUE(t.table.contains(item(m))) << m;
      ASSERT_EQ(t.table.stored(), model.size());
    }
  }
}

TEST(CuckooTable, AFullTableRefusesWithNothingChanged) {
  Owned t(shape_for(1000, 0.01));
  std::uint64_t added = 0, i = 0;
  for (;; ++i) {
    const std::vector<std::uint8_t> before = t.bytes;
    const Insert r = t.table.insert(item(i));
    if (r == Insert::full) {
      EXPECT_EQ(t.bytes, before);
      break;
    }
    added += r == Insert::added ? 1 : 0;
  }
  EXPECT_GE(static_cast<double>(added), 0.9 * static_cast<double>(t.shape.slots()));
  for (std::uint64_t j = 0; j < i; ++j) EXPECT_TRUE(t.table.contains(item(j))) << j;
}

TEST(CuckooTable, CopiesFedAlikeStayIdentical) {
  Owned a(shape_for(5000, 0.001));
  Owned b(shape_for(5000, 0.001));
  for (std::uint64_t i = 0; i < 4900; ++i) {
    EXPECT_EQ(a.table.insert(item(i)), b.table.insert(item(i)));
    if (i % 7 == 0) {
      EXPECT_EQ(a.table.remove(item(i / 2)), b.table.remove(item(i / 2)));
    }
  }
  EXPECT_EQ(a.bytes, b.bytes);
}

TEST(CuckooTable, EveryFingerprintWidthFindsWhatItHolds) {
  // Widths up to 14 compare a bucket in one 64-bit word, up to 30 in 128 bits, above slot by
  // slot: each must find what it holds and forget what it removed.
  for (std::uint32_t f = kMinFingerprintBits; f <= kMaxFingerprintBits; ++f) {
    Shape shape;
    shape.buckets = 300;
    shape.fingerprint_bits = f;
    Owned t(shape);
    std::set<std::uint64_t> held;
    for (std::uint64_t i = 0; i < 1000; ++i) {
      if (t.table.insert(item(i)) == Insert::added) held.insert(i);
    }
    for (const std::uint64_t i : held) ASSERT_TRUE(t.table.contains(item(i))) << f << " " << i;
    for (std::uint64_t i = 0; i < 1000; i += 2) {
      if (held.erase(i) != 0) {
        ASSERT_TRUE(t.table.remove(item(i))) << f;
      }
    }
    for (const std::uint64_t i : held) ASSERT_TRUE(t.table.contains(item(i))) << f << " " << i;
    ASSERT_EQ(t.table.stored(), held.size()) << f;
    // The batched lookup (one loop per width) answers as the single one.
    std::vector<ItemHash> all;
    for (std::uint64_t i = 0; i < 2000; ++i) all.push_back(item(i));
    std::vector<std::uint8_t> found(all.size());
    t.table.contains_many(all, found.data());
    for (std::uint64_t i = 0; i < all.size(); ++i) {
      ASSERT_EQ(found[i] != 0, t.table.contains(all[i])) << f << " " << i;
    }
    // And so does the one for tables past the cache (its lookups prefetched by groups).
    Shape large = shape;
    large.buckets = (std::uint64_t{2} << 20) * 8 / (kSlotsPerBucket * f) + 1;
    Owned big(large);
    for (std::uint64_t i = 0; i < 1000; ++i) (void)big.table.insert(item(i));
    big.table.contains_many(all, found.data());
    for (std::uint64_t i = 0; i < all.size(); ++i) {
      ASSERT_EQ(found[i] != 0, big.table.contains(all[i])) << f << " " << i;
      if (i < 1000) {
        ASSERT_EQ(found[i], 1) << f << " " << i;
      }
    }
  }
}

// BITFIELD's `GET u<f> #i`: f bits from bit i*f, the most significant bit of each byte first.
std::uint32_t bitfield_get(const std::vector<std::uint8_t>& bytes, std::uint32_t f,
                           std::uint64_t i) {
  std::uint32_t value = 0;
  for (std::uint64_t bit = i * f; bit < (i + 1) * f; ++bit) {
    value = value << 1 | ((bytes[bit / 8] >> (7 - bit % 8)) & 1);
  }
  return value;
}

TEST(CuckooTable, SlotsAreBitfieldFieldsInRedisBitOrder) {
  // A Redis script reads and writes the same table with BITFIELD: every slot must be where
  // BITFIELD finds it, and the kicks' arithmetic must be 32-bit.
  for (const std::uint32_t f : {5u, 10u, 13u, 17u, 32u}) {
    Shape shape;
    shape.buckets = 37;
    shape.fingerprint_bits = f;
    Owned t(shape);
    std::vector<std::uint32_t> expected(shape.slots());
    for (std::uint64_t i = 0; i < 100; ++i) {
      const Place p = place_of(item(i), shape);
      if (t.table.insert(item(i)) != Insert::added) continue;
      // Kicks move others: check the whole table against the bytes after each add.
      for (std::uint64_t s = 0; s < shape.slots(); ++s) expected[s] = bitfield_get(t.bytes, f, s);
      const auto in = [&](std::uint64_t bucket) {
        for (std::uint32_t j = 0; j < kSlotsPerBucket; ++j) {
          if (expected[bucket * kSlotsPerBucket + j] == p.fingerprint) return true;
        }
        return false;
      };
      ASSERT_TRUE(in(p.first) || in(p.second)) << f << " " << i;
    }
    std::uint64_t nonzero = 0;
    for (const std::uint32_t v : expected) nonzero += v != 0 ? 1 : 0;
    EXPECT_EQ(nonzero, t.table.stored()) << f;
  }
  EXPECT_EQ(mix32(1), 0x514e28b7u);  // murmur3's fmix32, as the script computes it
  EXPECT_EQ(alternate_bucket(alternate_bucket(5, 77, 1000), 77, 1000), 5u);
}

TEST(CuckooTable, CountAndRemove) {
  Owned t(shape_for(100, 0.0001));
  EXPECT_EQ(t.table.count(item(1)), 0u);
  EXPECT_EQ(t.table.insert(item(1)), Insert::added);
  EXPECT_EQ(t.table.insert(item(1)), Insert::present);
  EXPECT_EQ(t.table.count(item(1)), 1u);
  EXPECT_TRUE(t.table.remove(item(1)));
  EXPECT_FALSE(t.table.contains(item(1)));
  EXPECT_FALSE(t.table.remove(item(1)));
  std::vector<std::uint8_t> too_small(10);
  EXPECT_THROW(Table(t.shape, too_small), InvalidArgument);
}

}  // namespace
}  // namespace redbloom::cuckoo_table
