// Pure functions for spreading a filter over several Redis servers or a Redis Cluster (no
// I/O). Items keep their partition (layout.hpp) whatever the deployment, so a sharded filter
// holds the same bits as a file; only where each partition lives changes.
#pragma once

#include <cstdint>
#include <string_view>

namespace redbloom::sharding {

// Jump consistent hash (Lamping & Veach, 2014): maps a 64-bit key to a bucket in [0, buckets)
// uniformly, and when buckets grows from n to n + 1 only a 1/(n + 1) share of keys move, all
// to the new bucket. No table, O(ln buckets) time. The key must be well mixed.
[[nodiscard]] std::int32_t jump_consistent_hash(std::uint64_t key, std::int32_t buckets) noexcept;

// The shard (in [0, shards)) that holds partition `partition`: jump hash of the partition
// index, mixed first (consecutive indexes are not well-mixed keys).
[[nodiscard]] std::uint32_t shard_of_partition(std::uint64_t partition,
                                               std::uint32_t shards) noexcept;

inline constexpr std::uint32_t kClusterSlots = 16384;

// Redis Cluster's key slot: CRC16 (XMODEM) of the key's hash tag, modulo 16384. The tag is the
// part between the first '{' and the first '}' after it, if that part is non-empty; otherwise
// the whole key is hashed (as Redis's keyHashSlot does).
[[nodiscard]] std::uint32_t cluster_slot(std::string_view key) noexcept;

// CRC16-CCITT (XMODEM: polynomial 0x1021, initial 0), the checksum Redis Cluster uses.
[[nodiscard]] std::uint16_t crc16_xmodem(std::string_view bytes) noexcept;

}  // namespace redbloom::sharding
