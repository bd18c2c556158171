#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/sharding.hpp"
#include "redis/redis_store.hpp"

namespace redbloom::sharding {
namespace {

// Values from the Redis Cluster specification (CRC16 reference output for "123456789") and
// CLUSTER KEYSLOT examples in the Redis documentation.
TEST(ClusterSlot, MatchesTheRedisClusterSpecification) {
  EXPECT_EQ(crc16_xmodem("123456789"), 0x31C3);
  EXPECT_EQ(cluster_slot("foo"), 12182u);
  EXPECT_EQ(cluster_slot("somekey"), 11058u);
  EXPECT_EQ(cluster_slot("{user1000}.following"), cluster_slot("{user1000}.followers"));
  EXPECT_EQ(cluster_slot("{user1000}.following"), cluster_slot("user1000"));
  // An empty tag does not count: the whole key is hashed.
  EXPECT_EQ(cluster_slot("foo{}{bar}"), crc16_xmodem("foo{}{bar}") % kClusterSlots);
  // The tag ends at the first '}' after the first '{'.
  EXPECT_EQ(cluster_slot("foo{{bar}}zap"), cluster_slot("{bar"));
  EXPECT_EQ(cluster_slot("foo{bar}{zap}"), cluster_slot("bar"));
  // Read off a redis-server 7.0.15 started with --cluster-enabled yes (CLUSTER KEYSLOT).
  EXPECT_EQ(cluster_slot("urls:bits:{urls:7}"), 9418u);
  EXPECT_EQ(cluster_slot("foo{{bar}}zap"), 4015u);
  EXPECT_EQ(cluster_slot("foo{}{bar}"), 8363u);
  EXPECT_EQ(cluster_slot("a{b}c"), 3300u);
}

TEST(ClusterSlot, PartitionKeysOfOneFilterSpreadAndTempKeysFollowTheirPartition) {
  // Key names from redis_keys.hpp: NAME:bits:{NAME:i} and NAME:tmp:{NAME:i}:<random>.
  std::vector<std::uint32_t> slots;
  for (int i = 0; i < 64; ++i) {
    const std::string tag = "{urls:" + std::to_string(i) + "}";
    slots.push_back(cluster_slot("urls:bits:" + tag));
    EXPECT_EQ(cluster_slot("urls:tmp:" + tag + ":00ff00ff00ff00ff"), slots.back());
  }
  std::sort(slots.begin(), slots.end());
  EXPECT_GT(std::unique(slots.begin(), slots.end()) - slots.begin(), 60);
}

TEST(JumpConsistentHash, StaysInRangeAndBalances) {
  for (std::int32_t buckets : {1, 2, 3, 7, 64, 1000}) {
    std::vector<int> counts(static_cast<std::size_t>(buckets));
    const int keys = 20000 * buckets;
    std::uint64_t key = 0x0123456789abcdefull;
    for (int i = 0; i < keys; ++i) {
      key = key * 6364136223846793005ull + 1442695040888963407ull;
      const std::int32_t b = jump_consistent_hash(key, buckets);
      ASSERT_GE(b, 0);
      ASSERT_LT(b, buckets);
      ++counts[static_cast<std::size_t>(b)];
    }
    // 20,000 expected per bucket: 5% is over 7 standard deviations.
    for (int c : counts) EXPECT_NEAR(c, 20000, 1000) << buckets << " buckets";
  }
}

TEST(JumpConsistentHash, GrowingMovesKeysOnlyToTheNewBucket) {
  std::uint64_t key = 42;
  int moved = 0;
  const int keys = 100000;
  for (int i = 0; i < keys; ++i) {
    key = key * 6364136223846793005ull + 1442695040888963407ull;
    for (std::int32_t n = 1; n < 12; ++n) {
      const std::int32_t before = jump_consistent_hash(key, n);
      const std::int32_t after = jump_consistent_hash(key, n + 1);
      if (after != before) {
        ASSERT_EQ(after, n) << "a key moved between old buckets";
        if (n == 4) ++moved;
      }
    }
  }
  // From 4 to 5 buckets, a fifth of the keys move.
  EXPECT_NEAR(moved, keys / 5, keys / 100);
}

TEST(ShardOfPartition, SpreadsConsecutivePartitionsOverShards) {
  for (std::uint32_t shards : {1u, 2u, 3u, 5u}) {
    std::vector<int> counts(shards);
    for (std::uint64_t p = 0; p < 3000; ++p) {
      const std::uint32_t s = shard_of_partition(p, shards);
      ASSERT_LT(s, shards);
      ++counts[s];
    }
    for (int c : counts) EXPECT_NEAR(c, 3000 / static_cast<int>(shards), 150);
  }
}

}  // namespace
}  // namespace redbloom::sharding
