#include "core/sharding.hpp"

namespace redbloom::sharding {

std::int32_t jump_consistent_hash(std::uint64_t key, std::int32_t buckets) noexcept {
  // The paper's loop: a pseudo-random walk of bucket jumps driven by a 64-bit LCG; each jump
  // lands beyond the current bucket with the probability that keeps the mapping consistent.
  std::int64_t b = -1;
  std::int64_t j = 0;
  while (j < buckets) {
    b = j;
    key = key * 2862933555777941757ULL + 1;
    j = static_cast<std::int64_t>(
        static_cast<double>(b + 1) *
        (static_cast<double>(1LL << 31) / static_cast<double>((key >> 33) + 1)));
  }
  return static_cast<std::int32_t>(b);
}

std::uint32_t shard_of_partition(std::uint64_t partition, std::uint32_t shards) noexcept {
  // splitmix64's finalizer: a bijection that spreads consecutive indexes over all 64 bits.
  std::uint64_t z = partition + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<std::uint32_t>(jump_consistent_hash(z, static_cast<std::int32_t>(shards)));
}

std::uint16_t crc16_xmodem(std::string_view bytes) noexcept {
  std::uint16_t crc = 0;
  for (unsigned char byte : bytes) {
    crc ^= static_cast<std::uint16_t>(byte << 8);
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) != 0 ? static_cast<std::uint16_t>((crc << 1) ^ 0x1021)
                                : static_cast<std::uint16_t>(crc << 1);
    }
  }
  return crc;
}

std::uint32_t cluster_slot(std::string_view key) noexcept {
  const std::size_t open = key.find('{');
  if (open != std::string_view::npos) {
    const std::size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  return crc16_xmodem(key) % kClusterSlots;
}

}  // namespace redbloom::sharding
