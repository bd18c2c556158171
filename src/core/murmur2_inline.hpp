// RedisBloom's 32-bit MurmurHash2 (Austin Appleby's, byte order of the machine it runs on),
// inlinable: the one definition redisbloom::murmur2_32 (its Bloom filters) and the Count-Min
// Sketch (one hash per row of every item, on its hot path) use.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace redbloom::detail {

inline std::uint32_t murmur2_32_inline(std::string_view data, std::uint32_t seed) noexcept {
  constexpr std::uint32_t m = 0x5bd1e995;
  // RedisBloom passes the length as an int: items are Redis strings, under 2^31 bytes.
  std::uint32_t h = seed ^ static_cast<std::uint32_t>(static_cast<int>(data.size()));
  const char* p = data.data();
  std::size_t left = data.size();
  for (; left >= 4; left -= 4, p += 4) {
    std::uint32_t k;
    std::memcpy(&k, p, sizeof k);
    k *= m;
    k ^= k >> 24;
    k *= m;
    h *= m;
    h ^= k;
  }
  const auto byte = [&](std::size_t i) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(p[i]));
  };
  switch (left) {
    case 3:
      h ^= byte(2) << 16;
      [[fallthrough]];
    case 2:
      h ^= byte(1) << 8;
      [[fallthrough]];
    case 1:
      h ^= byte(0);
      h *= m;
      break;
    default:
      break;
  }
  h ^= h >> 13;
  h *= m;
  h ^= h >> 15;
  return h;
}

}  // namespace redbloom::detail
