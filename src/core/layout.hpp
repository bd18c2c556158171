// Where an item's k bits go (hash scheme 1), as Redis bit offsets inside the item's partition.
// Pure functions, shared by every store: the file store and a Redis store set the same bits.
//
// Range reduction is multiply-shift ("fastrange", Lemire 2016): x -> (x * n) >> 64 maps a
// uniform 64-bit x to [0, n) with bias below n / 2^64 and no division on the hot path. It uses
// the *high* bits of x, so the partition is taken from the *low* 32 bits of `lo`: partition and
// probe positions then come from disjoint hash bits. (Reusing the same bits for both would
// confine each partition's probes to a slice of it and multiply the false-positive rate.)
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>
#include <type_traits>

#include "core/bit_order.hpp"
#include "redbloom/hash.hpp"
#include "redbloom/sizing.hpp"

namespace redbloom::layout {

inline std::uint64_t fastrange64(std::uint64_t x, std::uint64_t n) noexcept {
  return static_cast<std::uint64_t>((static_cast<unsigned __int128>(x) * n) >> 64);
}

// Partition index in [0, partitions), partitions <= 2^32.
inline std::uint64_t partition_of(const ItemHash& h, std::uint64_t partitions) noexcept {
  return ((h.lo & 0xffffffffu) * partitions) >> 32;
}

// Classic: enhanced double hashing (Dillinger & Manolios, 2004) in 64-bit arithmetic,
//   x_0 = lo, y_0 = hi;  x_{i+1} = x_i + y_i,  y_{i+1} = y_i + i,
// each x_i reduced to [0, partition_bits). The cubic term of "enhanced" double hashing avoids
// the short cycles plain double hashing falls into when y is a multiple of a large power of 2.
// A visitor that returns bool stops the walk by returning false (a lookup that met a clear bit).
template <class Visit>
inline void classic_probes(const ItemHash& h, std::uint64_t partition_bits, std::uint32_t k,
                           Visit&& visit) {
  std::uint64_t x = h.lo;
  std::uint64_t y = h.hi;
  for (std::uint32_t i = 0; i < k; ++i) {
    if constexpr (std::is_same_v<decltype(visit(std::uint64_t{0})), bool>) {
      if (!visit(fastrange64(x, partition_bits))) return;
    } else {
      visit(fastrange64(x, partition_bits));
    }
    x += y;
    y += i;
  }
}

// Blocked: the block is fastrange(lo) over the partition's blocks. Inside it (8 words of 64
// bits), probe i goes to word w = (s + i) mod 8 with s = hi mod 8, so up to 8 probes land in 8
// different words, and the rotation by s spreads items with k < 8 over all words. The bit in
// word w is the 6-bit field at bit 16 + 6w of x_r, where round r = i / 8 uses x_0 = hi and
// x_r = hi * phi^r (phi = 2^64 / golden ratio, odd) for the 9th probe on. hi is a 64-bit
// XXH3 output, so its fields are independent uniform bits; the products remix hi for later
// rounds. A per-word field also means one vector shift computes all 8 words' bits at once.
// sizing.hpp's blocked formula is derived for exactly this placement.
inline std::uint64_t blocked_block_among(const ItemHash& h, std::uint64_t blocks) noexcept {
  return fastrange64(h.lo, blocks);
}
inline std::uint64_t blocked_block_of(const ItemHash& h, std::uint64_t partition_bits) noexcept {
  return blocked_block_among(h, partition_bits / kBlockBits);
}

inline constexpr std::uint64_t kGoldenMultiplier = 0x9E3779B97F4A7C15ull;

// kRoundMultipliers[r] = phi^r mod 2^64 (r = 0 gives x_0 = hi).
inline constexpr auto kRoundMultipliers = [] {
  std::array<std::uint64_t, kMaxHashes / 8> powers{};
  std::uint64_t x = 1;
  for (auto& power : powers) {
    power = x;
    x *= kGoldenMultiplier;
  }
  return powers;
}();

inline constexpr unsigned blocked_start_word(std::uint64_t hi) noexcept {
  return static_cast<unsigned>(hi & 7);
}
inline constexpr unsigned blocked_field_shift(unsigned word) noexcept {
  return 16 + 6 * word;
}

// Calls visit(offset in block, 0..511) for the k probes, in probe order.
template <class Visit>
inline void blocked_probes_in_block(const ItemHash& h, std::uint32_t k, Visit&& visit) {
  const unsigned s = blocked_start_word(h.hi);
  for (std::uint32_t i = 0; i < k; ++i) {
    const std::uint64_t x = h.hi * kRoundMultipliers[i / 8];
    const unsigned w = (s + i) & 7;
    visit(std::uint64_t{w} * 64 + ((x >> blocked_field_shift(w)) & 63));
  }
}

// The same k probes as eight masks over the block's 64-bit little-endian words, in Redis bit
// order (bit_order.hpp): one multiply per round of eight probes. What every kernel tests and
// sets a blocked item's line with, aligned or not.
inline void blocked_word_masks(std::uint64_t hi, std::uint32_t k,
                               std::uint64_t (&mask)[kBlockBits / 64]) noexcept {
  std::fill(std::begin(mask), std::end(mask), 0);
  const unsigned s = blocked_start_word(hi);
  for (std::uint32_t base = 0; base < k; base += 8) {
    const std::uint64_t x = hi * kRoundMultipliers[base / 8];
    const std::uint32_t count = std::min<std::uint32_t>(8, k - base);
    for (std::uint32_t q = 0; q < count; ++q) {
      const unsigned w = (s + q) & 7;
      mask[w] |= word_mask((x >> blocked_field_shift(w)) & 63);
    }
  }
}

// A blocked item's bits as the bytes of its line that hold them: a (byte in the line, mask)
// pair per such byte, in byte order, masks in Redis bit order (bit 0 is a byte's highest). How
// the server-side scripts test a line read whole (GETRANGE) and set it. Returns the bytes written.
inline std::size_t blocked_line_pairs(const ItemHash& h, std::uint32_t k,
                                      std::array<char, 2 * kBlockBits / 8>& out) noexcept {
  std::array<std::uint8_t, kBlockBits / 8> masks{};
  blocked_probes_in_block(h, k, [&](std::uint64_t bit) {
    masks[bit / 8] |= static_cast<std::uint8_t>(0x80u >> (bit % 8));
  });
  std::size_t n = 0;
  for (std::size_t b = 0; b < masks.size(); ++b) {
    if (masks[b] == 0) continue;
    out[n++] = static_cast<char>(b);
    out[n++] = static_cast<char>(masks[b]);
  }
  return n;
}

// A blocked item's line as a script reads and writes it whole: its first byte (from `base`, the
// byte where its partition starts in the key), its last, and blocked_line_pairs.
struct BlockedLine {
  std::uint64_t first = 0;
  std::array<char, 2 * kBlockBits / 8> pair_bytes;
  std::size_t pair_count = 0;  // bytes of pair_bytes in use
  [[nodiscard]] std::uint64_t last() const noexcept { return first + kBlockBits / 8 - 1; }
  [[nodiscard]] std::string_view pairs() const noexcept { return {pair_bytes.data(), pair_count}; }
};

template <class Visit>
inline void blocked_probes(const ItemHash& h, std::uint64_t partition_bits, std::uint32_t k,
                           Visit&& visit) {
  const std::uint64_t base = blocked_block_of(h, partition_bits) * kBlockBits;
  blocked_probes_in_block(h, k, [&](std::uint64_t bit) { visit(base + bit); });
}

inline BlockedLine blocked_line(const ItemHash& h, std::uint64_t partition_bits, std::uint32_t k,
                                std::uint64_t base) noexcept {
  BlockedLine line;
  line.first = base + blocked_block_of(h, partition_bits) * (kBlockBits / 8);
  line.pair_count = blocked_line_pairs(h, k, line.pair_bytes);
  return line;
}

}  // namespace redbloom::layout
