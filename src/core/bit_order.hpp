// Redis bit order, used by every store so that a partition's bytes are a valid Redis string
// as they are: SETBIT/GETBIT offset b lives in byte b / 8 under mask 0x80 >> (b % 8), i.e. the
// most significant bit of each byte comes first (Redis src/bitops.c: `bitval = 7 - (bitoffset &
// 7)`).
//
// Local stores read and write 64-bit words for speed. On a little-endian machine the word w
// holds bytes 8w..8w+7 with byte 8w in its lowest 8 bits, so Redis bit b is word bit
// (b % 64) ^ 7: the byte index stays, the bit index inside the byte is mirrored.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace redbloom {

static_assert(std::endian::native == std::endian::little,
              "redbloom's word-level bit access assumes a little-endian machine");

constexpr std::uint64_t redis_byte_index(std::uint64_t bit) noexcept {
  return bit >> 3;
}
constexpr std::uint8_t redis_byte_mask(std::uint64_t bit) noexcept {
  return static_cast<std::uint8_t>(0x80u >> (bit & 7));
}
constexpr std::uint64_t word_index(std::uint64_t bit) noexcept {
  return bit >> 6;
}
constexpr std::uint64_t word_mask(std::uint64_t bit) noexcept {
  return std::uint64_t{1} << ((bit & 63) ^ 7);
}

}  // namespace redbloom
