// What the bitmap kernels' two translation units share (bitmap_kernels.cpp and
// eight_lane_batch.cpp): relaxed atomic word access (bitmap_kernels.cpp says why), the
// operation a kernel does, where a pipeline gets its hashes, a filter's block geometry, the
// item-at-a-time blocked pipeline and the AVX-512 test (and set) of an item's line. Internal.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <span>
#include <string_view>

#include "core/bit_order.hpp"
#include "core/bitmap_kernels.hpp"
#include "core/item_hash_inline.hpp"
#include "core/layout.hpp"

namespace redbloom::kernels::parts {

inline constexpr std::uint64_t kWordsPerBlock = kBlockBits / 64;

inline std::uint64_t load(std::uint64_t& word) noexcept {
  return std::atomic_ref<std::uint64_t>(word).load(std::memory_order_relaxed);
}
inline void store(std::uint64_t& word, std::uint64_t value) noexcept {
  std::atomic_ref<std::uint64_t>(word).store(value, std::memory_order_relaxed);
}

enum class Op { test_and_set, set, test };

template <Op op>
inline void prefetch(const void* address) noexcept {
  __builtin_prefetch(address, op == Op::test ? 0 : 1, 3);
}

template <Op op>
inline void record(std::uint8_t* out, std::size_t i, bool all_set) noexcept {
  if constexpr (op == Op::test) {
    out[i] = all_set;
  } else if constexpr (op == Op::test_and_set) {
    out[i] = !all_set;
  }
}

// Where a pipeline gets item i's hash: hashing the item, or from hashes computed before.
struct HashItems {
  std::span<const std::string_view> items;
  std::size_t size() const noexcept { return items.size(); }
  ItemHash operator()(std::size_t i) const noexcept { return detail::hash_inline(items[i]); }
};
struct OwnedHashes {
  std::span<const ItemHash> hashes;
  std::span<const std::uint32_t> owned;
  std::size_t size() const noexcept { return owned.size(); }
  ItemHash operator()(std::size_t j) const noexcept { return hashes[owned[j]]; }
};

// A one-item call answers "was new" for an add, "is present" for a lookup.
template <Op op>
inline bool one_item_answer(bool all_set) noexcept {
  return op == Op::test_and_set ? !all_set : all_set;
}

// What the blocked kernels read per item, copied out of the Bitmap into locals: stores to the
// byte-wide output flags could alias any field of it, which would make the compiler reload
// each field after every item.
struct BlockGeometry {
  explicit BlockGeometry(const Bitmap& bitmap) noexcept
      : words(bitmap.words),
        partitions(bitmap.params.partitions),
        blocks_per_partition(bitmap.blocks_per_partition),
        hashes(bitmap.params.hashes),
        last_round((bitmap.params.hashes - 1) / 8),
        last_round_words(bitmap.last_round_words),
        last_round_lanes(bitmap.last_round_lanes),
        ones(bitmap.ones),
        probed_bytes(bitmap.probed_bytes),
        unprobed(bitmap.unprobed) {}
  std::uint64_t* line(const ItemHash& h) const noexcept {
    const std::uint64_t block = layout::partition_of(h, partitions) * blocks_per_partition +
                                layout::blocked_block_among(h, blocks_per_partition);
    return words + block * kWordsPerBlock;
  }
  std::uint64_t* words;
  std::uint64_t partitions;
  std::uint64_t blocks_per_partition;
  std::uint32_t hashes;
  std::uint32_t last_round;
  const std::uint64_t (*last_round_words)[8];
  const std::uint8_t* last_round_lanes;
  const std::uint64_t* ones;
  const std::uint64_t* probed_bytes;
  const std::uint64_t* unprobed;
};

// Items [0, n) in order with each planned kAhead items before it is applied: `plan(i)` hashes
// item i, requests its line(s) and returns what `apply(i, slot)` needs, kept in a ring meanwhile,
// so that the work on the items in between covers the lines' misses.
template <std::size_t kAhead, class Plan, class Apply>
inline void ahead_pipeline(std::size_t n, Plan&& plan, Apply&& apply) {
  using Slot = decltype(plan(std::size_t{0}));
  Slot ring[kAhead];
  std::size_t planned = 0;
  for (; planned < std::min(kAhead, n); ++planned) ring[planned] = plan(planned);
  for (std::size_t i = 0; i < n; ++i) {
    const Slot slot = ring[i % kAhead];
    if (planned < n) {
      ring[planned % kAhead] = plan(planned);
      ++planned;
    }
    apply(i, slot);
  }
}

template <Op op, class Block, class Source>
inline void blocked_pipeline(const Bitmap& bitmap, Source hash_of, std::uint8_t* out) {
  struct Slot {
    std::uint64_t* line;
    std::uint64_t hi;
  };
  const BlockGeometry geometry(bitmap);
  // Far enough ahead that the work on the items in between covers a miss out of memory.
  ahead_pipeline<64>(
      hash_of.size(),
      [&](std::size_t i) {
        const ItemHash h = hash_of(i);
        std::uint64_t* line = geometry.line(h);
        prefetch<op>(line);
        return Slot{line, h.hi};
      },
      [&](std::size_t i, const Slot& slot) {
        record<op>(out, i, Block::template apply<op>(geometry, slot.line, slot.hi));
      });
}

// With AVX-512 (k <= 8): the 8 word masks in one register, the k-of-8 word selection as a
// mask register and the line in one load, ~12 instructions fewer than the two AVX2 halves.
// A word's bit is the rotation of 1 by (field ^ 7): a rotate takes its count mod 64, so the
// 6-bit field needs no mask, and the constants are operands in memory rather than built in
// registers on every call. kRewrite: adds store the line unconditionally. (GCC 12's
// avx512fintrin.h trips -W[maybe-]uninitialized on its own _mm512_undefined placeholders.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
alignas(64) inline constexpr std::uint64_t kFieldShifts[8] = {16, 22, 28, 34, 40, 46, 52, 58};
alignas(64) inline constexpr std::uint64_t kRedisBitFlip[8] = {7, 7, 7, 7, 7, 7, 7, 7};

// An item's probes in its line, and the test (and set) of them: true iff all were set.
// `lanes` is the Bitmap's last_round_lanes, `ones` its ones.
template <Op op, bool kRewrite>
__attribute__((target("avx512f,avx512dq"), always_inline)) inline bool avx512_line_apply(
    std::uint64_t* line, std::uint64_t hi, const std::uint8_t* lanes, const std::uint64_t* ones) {
  const __m512i fields = _mm512_srlv_epi64(_mm512_set1_epi64(static_cast<long long>(hi)),
                                           _mm512_load_si512(kFieldShifts));
  const __m512i shifts = _mm512_xor_si512(fields, _mm512_load_si512(kRedisBitFlip));
  // Straight from memory into the mask register: GCC 12 compiles _load_mask8 as a byte load
  // into a general register and a move from there (two instructions for one).
  __mmask8 words;
  asm("kmovb %1, %0" : "=k"(words) : "m"(lanes[layout::blocked_start_word(hi)]));
  const __m512i mask = _mm512_maskz_rolv_epi64(words, _mm512_load_si512(ones), shifts);
  const __m512i old = _mm512_load_si512(line);
  const __m512i missing = _mm512_andnot_si512(old, mask);
  const __mmask8 unset = _mm512_test_epi64_mask(missing, missing);
  const bool all_set = _kortestz_mask8_u8(unset, unset) != 0;
  if constexpr (op != Op::test) {
    // Into private memory (kRewrite, see make_bitmap) the line is stored whatever it held, so
    // no branch waits on the missed load.
    if (kRewrite || !all_set) _mm512_store_si512(line, _mm512_or_si512(old, mask));
  }
  return all_set;
}

// The batch pipeline's block code for k <= 8 (blocked_pipeline): the batch paths serve file
// mappings too, so a line is stored only if a bit was missing.
struct Avx512Block {
  template <Op op>
  __attribute__((target("avx512f,avx512dq"))) static inline bool apply(
      const BlockGeometry& geometry, std::uint64_t* line, std::uint64_t hi) noexcept {
    return avx512_line_apply<op, false>(line, hi, geometry.last_round_lanes, geometry.ones);
  }
};

#pragma GCC diagnostic pop

}  // namespace redbloom::kernels::parts
