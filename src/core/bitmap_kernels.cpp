// Every scalar access goes through std::atomic_ref with relaxed order. That compiles to plain
// loads and stores on x86-64, but keeps the compiler from tearing or inventing accesses:
// other processes read a shared mapping while we write it. Writers that need exclusion
// (several processes adding to one file) are serialised by the store, not here: a locked RMW
// per probe would cost tens of cycles and stall the misses we want in flight. (The vector
// paths write 32 or 64 bytes at a time; bits only ever go from 0 to 1, so a reader that saw a
// torn write would see a subset of the final bits, as it could between two scalar stores.)
//
// Pipelining: an out-of-cache filter costs one memory miss per line touched, so each kernel
// hashes an item, computes its lines and prefetches them `kAhead` items before it works on that
// item: the hashing overlaps the misses in flight instead of adding to them.
#include "core/bitmap_kernels.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/eight_lane_batch.hpp"
#include "core/kernel_parts.hpp"

namespace redbloom::kernels {
namespace {

using namespace parts;

// --- blocked layout -------------------------------------------------------------------------
// Each item's work on its block: build the 8 word masks of its probes (layout.hpp), test them
// with loads only, and store only if a bit was missing and this is a write (so a page of a
// file mapping that only sees duplicates is never dirtied).

template <Op op>
inline bool apply_block_scalar(std::uint64_t* line, std::uint64_t hi, std::uint32_t k) noexcept {
  std::uint64_t mask[kWordsPerBlock];
  layout::blocked_word_masks(hi, k, mask);
  std::uint64_t old[kWordsPerBlock];
  std::uint64_t missing = 0;
  for (std::uint64_t w = 0; w < kWordsPerBlock; ++w) {
    old[w] = load(line[w]);
    missing |= mask[w] & ~old[w];
  }
  if constexpr (op != Op::test) {
    if (missing != 0) {
      for (std::uint64_t w = 0; w < kWordsPerBlock; ++w) store(line[w], old[w] | mask[w]);
    }
  }
  return missing == 0;
}

// The same masks, four words per register: lane w shifts x right by 16 + 6w, keeps 6 bits and
// turns them into a one-bit mask (Redis order: bit b of a word is 1 << (b ^ 7)). Rounds before
// the last probe all 8 words; in the last one only words (s + q) mod 8 for q < count do, which
// is a per-filter table indexed by s. kOneRound (k <= 8) drops the loop over earlier rounds.
struct Avx2Block {
  // One round's bit per word, for words 0-3 (lo) and 4-7 (hi).
  __attribute__((target("avx2"))) static inline void round_masks(std::uint64_t x, __m256i& lo,
                                                                 __m256i& hi) noexcept {
    const __m256i six_bits = _mm256_set1_epi64x(63);
    const __m256i seven = _mm256_set1_epi64x(7);
    const __m256i one = _mm256_set1_epi64x(1);
    const __m256i v = _mm256_set1_epi64x(static_cast<long long>(x));
    const __m256i field_lo = _mm256_srlv_epi64(v, _mm256_setr_epi64x(16, 22, 28, 34));
    const __m256i field_hi = _mm256_srlv_epi64(v, _mm256_setr_epi64x(40, 46, 52, 58));
    lo = _mm256_sllv_epi64(one, _mm256_xor_si256(_mm256_and_si256(field_lo, six_bits), seven));
    hi = _mm256_sllv_epi64(one, _mm256_xor_si256(_mm256_and_si256(field_hi, six_bits), seven));
  }

  // The item's probe bits in its block, words 0-3 and 4-7.
  template <bool kOneRound = false>
  __attribute__((target("avx2"))) static inline void masks(const BlockGeometry& geometry,
                                                           std::uint64_t hi, __m256i& mask_lo,
                                                           __m256i& mask_hi) noexcept {
    mask_lo = _mm256_setzero_si256();
    mask_hi = _mm256_setzero_si256();
    const std::uint32_t last = kOneRound ? 0 : geometry.last_round;
    for (std::uint32_t round = 0; round < last; ++round) {
      __m256i lo, high;
      round_masks(hi * layout::kRoundMultipliers[round], lo, high);
      mask_lo = _mm256_or_si256(mask_lo, lo);
      mask_hi = _mm256_or_si256(mask_hi, high);
    }
    __m256i lo, high;
    round_masks(hi * layout::kRoundMultipliers[last], lo, high);
    const std::uint64_t* words = geometry.last_round_words[layout::blocked_start_word(hi)];
    const __m256i words_lo = _mm256_load_si256(reinterpret_cast<const __m256i*>(words));
    const __m256i words_hi = _mm256_load_si256(reinterpret_cast<const __m256i*>(words + 4));
    mask_lo = _mm256_or_si256(mask_lo, _mm256_and_si256(lo, words_lo));
    mask_hi = _mm256_or_si256(mask_hi, _mm256_and_si256(high, words_hi));
  }

  template <Op op, bool kOneRound = false>
  __attribute__((target("avx2"))) static inline bool apply(const BlockGeometry& geometry,
                                                           std::uint64_t* line,
                                                           std::uint64_t hi) noexcept {
    __m256i mask_lo, mask_hi;
    masks<kOneRound>(geometry, hi, mask_lo, mask_hi);

    auto* lo_address = reinterpret_cast<__m256i*>(line);
    auto* hi_address = reinterpret_cast<__m256i*>(line + 4);
    const __m256i old_lo = _mm256_load_si256(lo_address);
    const __m256i old_hi = _mm256_load_si256(hi_address);
    // testc(a, b) = ((~a & b) == 0): every mask bit is set in the line.
    const bool all_set = _mm256_testc_si256(old_lo, mask_lo) & _mm256_testc_si256(old_hi, mask_hi);
    if constexpr (op != Op::test) {
      if (!all_set) {
        _mm256_store_si256(lo_address, _mm256_or_si256(old_lo, mask_lo));
        _mm256_store_si256(hi_address, _mm256_or_si256(old_hi, mask_hi));
      }
    }
    return all_set;
  }
};

struct ScalarBlock {
  template <Op op>
  static inline bool apply(const BlockGeometry& geometry, std::uint64_t* line,
                           std::uint64_t hi) noexcept {
    return apply_block_scalar<op>(line, hi, geometry.hashes);
  }
};

// flatten: inline the pipeline, the hash and the AVX2 block code into one function compiled
// for AVX2 (an AVX2 function cannot be inlined into a plain one, only the other way round).
template <Op op, class Source>
__attribute__((target("avx2"), flatten)) void blocked_avx2(const Bitmap& bitmap, Source hash_of,
                                                           std::uint8_t* out) {
  blocked_pipeline<op, Avx2Block>(bitmap, hash_of, out);
}

template <Op op, class Source>
__attribute__((flatten)) void blocked_scalar(const Bitmap& bitmap, Source hash_of,
                                             std::uint8_t* out) {
  blocked_pipeline<op, ScalarBlock>(bitmap, hash_of, out);
}

// One item, no pipeline (Filter::add and Filter::contains), reached through the Bitmap's
// function pointers. Out of cache, back-to-back one-item calls overlap their misses only as
// far as the CPU's reorder window holds several calls, so a call's cost grows with its
// instruction count (docs/benchmarks.md measures it). Hence one straight-line function per
// layout, k <= 8 and CPU, chosen per filter, with no dispatch left inside it.
template <Op op, bool kOneRound>
__attribute__((target("avx2"), flatten)) bool blocked_one_avx2(const void* context,
                                                               std::string_view item) {
  const Bitmap& bitmap = *static_cast<const Bitmap*>(context);
  const ItemHash h = detail::hash_short_inline(item);
  const BlockGeometry geometry(bitmap);
  return one_item_answer<op>(Avx2Block::apply<op, kOneRound>(geometry, geometry.line(h), h.hi));
}

// With AVX-512 (k <= 8), one item: avx512_line_apply (kernel_parts.hpp) on its line.
// kOnePartition: a filter of one partition (local filters up to 512 MiB) skips the
// partition's multiply. kRewrite: adds store the line unconditionally. (GCC 12's
// avx512fintrin.h trips -W[maybe-]uninitialized on its own _mm512_undefined placeholders.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
template <Op op, bool kOnePartition, bool kRewrite>
__attribute__((target("avx512f,avx512dq"), always_inline)) inline bool blocked_avx512_apply(
    const Bitmap& bitmap, const ItemHash& h) {
  const std::uint64_t block =
      kOnePartition
          ? layout::blocked_block_among(h, bitmap.blocks_per_partition)
          : layout::partition_of(h, bitmap.params.partitions) * bitmap.blocks_per_partition +
                layout::blocked_block_among(h, bitmap.blocks_per_partition);
  return one_item_answer<op>(avx512_line_apply<op, kRewrite>(
      bitmap.words + block * kWordsPerBlock, h.hi, bitmap.last_round_lanes, bitmap.ones));
}

template <Op op, class Source>
__attribute__((target("avx512f,avx512dq"), flatten)) void blocked_avx512(const Bitmap& bitmap,
                                                                         Source hash_of,
                                                                         std::uint8_t* out) {
  blocked_pipeline<op, Avx512Block>(bitmap, hash_of, out);
}

template <Op op, bool kOnePartition, bool kRewrite>
__attribute__((target("avx512f,avx512dq"), always_inline)) inline bool blocked_avx512_item(
    const Bitmap& bitmap, std::string_view item) {
  return blocked_avx512_apply<op, kOnePartition, kRewrite>(bitmap, detail::hash_inline(item));
}

template <Op op, bool kOnePartition, bool kRewrite>
__attribute__((target("avx512f,avx512dq"), noinline)) bool blocked_one_avx512_long(
    const void* context, std::string_view item) {
  return blocked_avx512_apply<op, kOnePartition, kRewrite>(*static_cast<const Bitmap*>(context),
                                                           hash_item(item));
}

// 8-byte items (64-bit ids) come first, with the length a constant: XXH3's two 4-byte reads
// become one 8-byte read and its length term a constant. Then 4 to 8 bytes, with the length
// range known to the compiler so that XXH3's own dispatch by length folds away. Items over 16
// bytes leave by a tail jump to the function above, which hashes them out of line: a call in
// this function itself would make GCC realign the stack for the vector registers on every
// call, short item or not.
template <Op op, bool kOnePartition, bool kRewrite>
__attribute__((target("avx512f,avx512dq"), flatten)) bool blocked_one_avx512(
    const void* context, std::string_view item) {
  const Bitmap& bitmap = *static_cast<const Bitmap*>(context);
  if (item.size() == 8) [[likely]] {
    return blocked_avx512_item<op, kOnePartition, kRewrite>(bitmap,
                                                            std::string_view(item.data(), 8));
  }
  if (item.size() - 4 <= 4) [[likely]] {
    return blocked_avx512_item<op, kOnePartition, kRewrite>(bitmap, item);
  }
  if (item.size() > 16) [[unlikely]] {
    return blocked_one_avx512_long<op, kOnePartition, kRewrite>(context, item);
  }
  return blocked_avx512_item<op, kOnePartition, kRewrite>(bitmap, item);
}
#pragma GCC diagnostic pop

template <Op op>
__attribute__((flatten)) bool blocked_one_scalar(const void* context, std::string_view item) {
  const Bitmap& bitmap = *static_cast<const Bitmap*>(context);
  const ItemHash h = detail::hash_short_inline(item);
  const BlockGeometry geometry(bitmap);
  return one_item_answer<op>(ScalarBlock::apply<op>(geometry, geometry.line(h), h.hi));
}

// --- classic layout -------------------------------------------------------------------------

// The global bit offsets of an item's k probes, each line prefetched. Into L2 only
// (PREFETCHT2), for reads and writes alike: with k lines an item, 8 items ahead is more lines in
// flight than L1's fill buffers track (docs/benchmarks.md has the comparison). A read prefetch
// is enough for a write: memory no other core holds arrives exclusive.
template <Op op>
inline void classic_bits(const Bitmap& bitmap, const ItemHash& h, std::uint64_t* bits) noexcept {
  const FilterParams& p = bitmap.params;
  const std::uint64_t base = layout::partition_of(h, p.partitions) * p.partition_bits;
  layout::classic_probes(h, p.partition_bits, p.hashes, [&](std::uint64_t offset) {
    *bits = base + offset;
    __builtin_prefetch(bitmap.words + word_index(*bits), 0, 1);
    ++bits;
  });
}

// Tests all k bits with loads only, then sets them if one was missing and this is a write.
template <Op op>
inline bool apply_classic(const Bitmap& bitmap, const std::uint64_t* bits) noexcept {
  const std::uint32_t k = bitmap.params.hashes;
  std::uint64_t missing = 0;
  for (std::uint32_t j = 0; j < k; ++j) {
    missing |= word_mask(bits[j]) & ~load(bitmap.words[word_index(bits[j])]);
  }
  if constexpr (op != Op::test) {
    if (missing != 0) {
      for (std::uint32_t j = 0; j < k; ++j) {
        std::uint64_t& word = bitmap.words[word_index(bits[j])];
        store(word, load(word) | word_mask(bits[j]));
      }
    }
  }
  return missing == 0;
}

template <Op op, class Source>
void classic(const Bitmap& bitmap, Source hash_of, std::uint8_t* out) {
  constexpr std::size_t kAhead = 8;  // items, k lines each: ~56 lines requested ahead
  std::uint64_t ring[kAhead][kMaxHashes];
  const std::size_t n = hash_of.size();
  for (std::size_t i = 0; i < std::min(kAhead, n); ++i) {
    classic_bits<op>(bitmap, hash_of(i), ring[i]);
  }
  for (std::size_t i = 0; i < n; ++i) {
    record<op>(out, i, apply_classic<op>(bitmap, ring[i % kAhead]));
    // The slot is free now: plan the item kAhead further on into it.
    if (i + kAhead < n) classic_bits<op>(bitmap, hash_of(i + kAhead), ring[i % kAhead]);
  }
}

// One item: no prefetch (its loads follow at once, so a prefetch only adds instructions), and
// a lookup stops at the first clear bit, as a miss needs ~1 / (1 - fill) probes rather than k
// (the loads past the loop's branch still issue speculatively). Inserts into a file mapping
// (classic_insert_rewriting below is for private memory) load all k words, then store them only if
// a bit was missing, so duplicates dirty no page.
template <Op op>
bool classic_one(const void* context, std::string_view item) {
  const Bitmap& bitmap = *static_cast<const Bitmap*>(context);
  const ItemHash h = detail::hash_short_inline(item);
  const FilterParams& p = bitmap.params;
  const std::uint64_t base = layout::partition_of(h, p.partitions) * p.partition_bits;
  if constexpr (op == Op::test) {
    bool all_set = true;
    layout::classic_probes(h, p.partition_bits, p.hashes, [&](std::uint64_t offset) {
      const std::uint64_t bit = base + offset;
      all_set = (load(bitmap.words[word_index(bit)]) & word_mask(bit)) != 0;
      return all_set;
    });
    return all_set;
  } else {
    std::uint64_t bits[kMaxHashes];
    std::uint64_t* next = bits;
    layout::classic_probes(h, p.partition_bits, p.hashes,
                           [&](std::uint64_t offset) { *next++ = base + offset; });
    return one_item_answer<op>(apply_classic<op>(bitmap, bits));
  }
}

// One-item classic insert into private memory (make_bitmap): each probed word is loaded, ORed
// and stored in one pass, whatever it held, as the textbook loop does: storing only a word
// whose bit was clear adds a branch that mispredicts as the filter fills, and a file mapping's
// two passes (classic_one) are there only to keep duplicates from dirtying pages.
bool classic_insert_rewriting(const void* context, std::string_view item) {
  const Bitmap& bitmap = *static_cast<const Bitmap*>(context);
  const ItemHash h = detail::hash_short_inline(item);
  const FilterParams& p = bitmap.params;
  const std::uint64_t base = layout::partition_of(h, p.partitions) * p.partition_bits;
  bool fresh = false;
  layout::classic_probes(h, p.partition_bits, p.hashes, [&](std::uint64_t offset) {
    const std::uint64_t bit = base + offset;
    std::uint64_t& word = bitmap.words[word_index(bit)];
    const std::uint64_t old = load(word);
    fresh |= (old & word_mask(bit)) == 0;
    store(word, old | word_mask(bit));
  });
  return fresh;
}

// --- one item in any of several bitmaps of the same parameters -------------------------------
// The item's block (or bit offsets) and probe masks are the same in each, so they are computed
// once; its line in every bitmap is requested at once, so their misses overlap.

constexpr std::size_t kMaxAnyBitmaps = 64;

template <class Source, class Test>
inline void blocked_any_pipeline(std::span<const Bitmap* const> bitmaps, Source hash_of,
                                 std::uint8_t* out, Test&& test_line) {
  const BlockGeometry geometry(*bitmaps[0]);
  std::uint64_t* words[kMaxAnyBitmaps];
  const std::size_t count = bitmaps.size();
  for (std::size_t b = 0; b < count; ++b) words[b] = bitmaps[b]->words;
  struct Slot {
    std::uint64_t offset;
    std::uint64_t hi;
  };
  // An item reads a line in every bitmap, so its lines are requested into L2 only, and from
  // further ahead: prefetches into L1 stall once its few fill buffers are taken
  // (docs/benchmarks.md has the comparison).
  ahead_pipeline<32>(
      hash_of.size(),
      [&](std::size_t i) {
        const ItemHash h = hash_of(i);
        const auto offset = static_cast<std::uint64_t>(geometry.line(h) - geometry.words);
        for (std::size_t b = 0; b < count; ++b) __builtin_prefetch(words[b] + offset, 0, 1);
        return Slot{offset, h.hi};
      },
      [&](std::size_t i, const Slot& slot) {
        out[i] = test_line(geometry, words, count, slot.offset, slot.hi);
      });
}

// kSetLast: the last bitmap is not looked up but tested-and-set (a windowed filter's current
// slice), and an item's answer is bit 0: in one of the others, bit 1: new to the last.
template <bool kSetLast, class Source>
__attribute__((target("avx2"), flatten)) void blocked_any_avx2(
    std::span<const Bitmap* const> bitmaps, Source hash_of, std::uint8_t* out) {
  blocked_any_pipeline(
      bitmaps, hash_of, out,
      [](const BlockGeometry& geometry, std::uint64_t* const* words, std::size_t count,
         std::uint64_t offset, std::uint64_t hi) __attribute__((target("avx2"))) {
        __m256i mask_lo, mask_hi;
        Avx2Block::masks(geometry, hi, mask_lo, mask_hi);
        std::uint8_t found = 0;
        for (std::size_t b = 0; b + kSetLast < count; ++b) {
          const auto* line = reinterpret_cast<const __m256i*>(words[b] + offset);
          if (_mm256_testc_si256(_mm256_load_si256(line), mask_lo) &
              _mm256_testc_si256(_mm256_load_si256(line + 1), mask_hi)) {
            found = 1;
            break;
          }
        }
        if constexpr (kSetLast) {
          auto* line = reinterpret_cast<__m256i*>(words[count - 1] + offset);
          const __m256i old_lo = _mm256_load_si256(line);
          const __m256i old_hi = _mm256_load_si256(line + 1);
          const bool all_set =
              _mm256_testc_si256(old_lo, mask_lo) & _mm256_testc_si256(old_hi, mask_hi);
          if (!all_set) {
            _mm256_store_si256(line, _mm256_or_si256(old_lo, mask_lo));
            _mm256_store_si256(line + 1, _mm256_or_si256(old_hi, mask_hi));
          }
          found |= static_cast<std::uint8_t>(!all_set << 1);
        }
        return found;
      });
}

template <bool kSetLast, class Source>
__attribute__((flatten)) void blocked_any_scalar(std::span<const Bitmap* const> bitmaps,
                                                 Source hash_of, std::uint8_t* out) {
  blocked_any_pipeline(bitmaps, hash_of, out,
                       [](const BlockGeometry& geometry, std::uint64_t* const* words,
                          std::size_t count, std::uint64_t offset, std::uint64_t hi) {
                         std::uint64_t mask[kWordsPerBlock];
                         layout::blocked_word_masks(hi, geometry.hashes, mask);
                         std::uint8_t found = 0;
                         for (std::size_t b = 0; b + kSetLast < count; ++b) {
                           std::uint64_t missing = 0;
                           for (std::uint64_t w = 0; w < kWordsPerBlock; ++w) {
                             missing |= mask[w] & ~load(words[b][offset + w]);
                           }
                           if (missing == 0) {
                             found = 1;
                             break;
                           }
                         }
                         if constexpr (kSetLast) {
                           const bool all_set = apply_block_scalar<Op::test_and_set>(
                               words[count - 1] + offset, hi, geometry.hashes);
                           found |= static_cast<std::uint8_t>(!all_set << 1);
                         }
                         return found;
                       });
}

template <bool kSetLast, class Source>
void classic_any(std::span<const Bitmap* const> bitmaps, Source hash_of, std::uint8_t* out) {
  constexpr std::size_t kAhead = 4;
  const FilterParams& p = bitmaps[0]->params;
  const std::size_t count = bitmaps.size();
  std::uint64_t ring[kAhead][kMaxHashes];
  const std::size_t n = hash_of.size();
  auto plan = [&](std::size_t i) {
    const ItemHash h = hash_of(i);
    const std::uint64_t base = layout::partition_of(h, p.partitions) * p.partition_bits;
    std::uint64_t* bits = ring[i % kAhead];
    layout::classic_probes(h, p.partition_bits, p.hashes, [&](std::uint64_t offset) {
      *bits = base + offset;
      for (std::size_t b = 0; b < count; ++b) {
        __builtin_prefetch(bitmaps[b]->words + word_index(*bits), 0, 1);
      }
      ++bits;
    });
  };
  for (std::size_t i = 0; i < std::min(kAhead, n); ++i) plan(i);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t* bits = ring[i % kAhead];
    std::uint8_t found = 0;
    for (std::size_t b = 0; b + kSetLast < count && found == 0; ++b) {
      std::uint64_t missing = 0;
      for (std::uint32_t j = 0; j < p.hashes; ++j) {
        missing |= word_mask(bits[j]) & ~load(bitmaps[b]->words[word_index(bits[j])]);
      }
      found = missing == 0;
    }
    if constexpr (kSetLast) {
      const bool all_set = apply_classic<Op::test_and_set>(*bitmaps[count - 1], bits);
      found |= static_cast<std::uint8_t>(!all_set << 1);
    }
    out[i] = found;
    if (i + kAhead < n) plan(i + kAhead);
  }
}

template <bool kSetLast>
void run_any(std::span<const Bitmap* const> bitmaps, const OwnedHashes& source, std::uint8_t* out);

Simd best_simd() noexcept {
  if (!__builtin_cpu_supports("avx2")) return Simd::scalar;
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512dq")) return Simd::avx2;
  if (!__builtin_cpu_supports("avx512bw") || !__builtin_cpu_supports("avx512vbmi") ||
      !__builtin_cpu_supports("avx512bitalg")) {
    return Simd::avx512;
  }
  return Simd::avx512_bits;
}

const Simd g_simd_available = best_simd();
Simd g_simd = g_simd_available;  // what the kernels use: use_simd lowers it

template <bool kSetLast>
void run_any(std::span<const Bitmap* const> bitmaps, const OwnedHashes& source, std::uint8_t* out) {
  if (bitmaps[0]->params.layout == Layout::classic) {
    classic_any<kSetLast>(bitmaps, source, out);
  } else if (g_simd >= Simd::avx2) {
    blocked_any_avx2<kSetLast>(bitmaps, source, out);
  } else {
    blocked_any_scalar<kSetLast>(bitmaps, source, out);
  }
}

template <Op op, class Source>
void run(const Bitmap& bitmap, Source hash_of, std::uint8_t* out) {
  if (bitmap.params.layout == Layout::classic) {
    classic<op>(bitmap, hash_of, out);
  } else if (g_simd >= Simd::avx512 && bitmap.params.hashes <= 8) {
    if constexpr (std::is_same_v<Source, HashItems>) {
      if (eight_lane_batch_fits(bitmap))
        return eight_lane_batch<op>(bitmap, hash_of.items, out, g_simd);
      blocked_avx512<op>(bitmap, hash_of, out);
    } else {
      blocked_avx512<op>(bitmap, hash_of, out);
    }
  } else if (g_simd >= Simd::avx2) {
    blocked_avx2<op>(bitmap, hash_of, out);
  } else {
    blocked_scalar<op>(bitmap, hash_of, out);
  }
}

template <Op op>
auto one_item_path(const FilterParams& params, bool private_memory) noexcept
    -> bool (*)(const void*, std::string_view) {
  if (params.layout == Layout::classic) {
    if (op == Op::test_and_set && private_memory) return classic_insert_rewriting;
    return classic_one<op>;
  }
  if (g_simd < Simd::avx2) return blocked_one_scalar<op>;
  if (params.hashes > 8) return blocked_one_avx2<op, false>;
  if (g_simd < Simd::avx512) return blocked_one_avx2<op, true>;
  if (op == Op::test_and_set && private_memory) {
    return params.partitions == 1 ? blocked_one_avx512<op, true, true>
                                  : blocked_one_avx512<op, false, true>;
  }
  return params.partitions == 1 ? blocked_one_avx512<op, true, false>
                                : blocked_one_avx512<op, false, false>;
}

}  // namespace

Bitmap make_bitmap(std::uint64_t* words, const FilterParams& params, bool private_memory) noexcept {
  Bitmap bitmap{};
  bitmap.words = words;
  bitmap.params = params;
  bitmap.blocks_per_partition = params.partition_bits / kBlockBits;
  std::fill(std::begin(bitmap.ones), std::end(bitmap.ones), 1);
  bitmap.test_and_set_one = one_item_path<Op::test_and_set>(params, private_memory);
  bitmap.test_one = one_item_path<Op::test>(params, private_memory);
  const std::uint32_t k = std::max<std::uint32_t>(params.hashes, 1);
  const std::uint32_t last_count = k - (k - 1) / 8 * 8;  // probes in the last round, 1..8
  for (unsigned start = 0; start < 8; ++start) {
    for (unsigned w = 0; w < 8; ++w) {
      const bool probed = ((w - start) & 7) < last_count;
      bitmap.last_round_words[start][w] = probed ? ~std::uint64_t{0} : 0;
      bitmap.last_round_lanes[start] |= static_cast<std::uint8_t>(probed << w);
      if (probed) {
        bitmap.probed_bytes[start] |= std::uint64_t{1} << (9 * w);
      } else {
        bitmap.unprobed[start] |= std::uint64_t{64} << (8 * w);
      }
    }
  }
  return bitmap;
}

Simd simd_available() noexcept {
  return g_simd_available;
}

Simd use_simd(Simd highest) noexcept {
  const Simd previous = g_simd;
  g_simd = std::min(highest, g_simd_available);
  return previous;
}

void test_and_set(const Bitmap& bitmap, std::span<const std::string_view> items,
                  std::uint8_t* newly_added) {
  run<Op::test_and_set>(bitmap, HashItems{items}, newly_added);
}

void set(const Bitmap& bitmap, std::span<const std::string_view> items) {
  run<Op::set>(bitmap, HashItems{items}, nullptr);
}

void test(const Bitmap& bitmap, std::span<const std::string_view> items, std::uint8_t* present) {
  run<Op::test>(bitmap, HashItems{items}, present);
}

// flatten: an out-of-line XXH3 call (its dispatch over lengths) would cost more than the rest of
// a hash-and-route loop. With AVX-512, eight items share each XXH3 instruction.
__attribute__((flatten)) void hash_items(std::span<const std::string_view> items,
                                         ItemHash* hashes) {
  if (g_simd >= Simd::avx512 && eight_lane_hash_fits()) return eight_lane_hash(items, hashes);
  for (std::size_t i = 0; i < items.size(); ++i) hashes[i] = detail::hash_inline(items[i]);
}

// The keep-or-not is a branch-free append: which thread owns an item is a coin flip, and a
// mispredicted branch an item would cost more than the rest of this loop.
void take_share(const Bitmap& bitmap, std::span<const ItemHash> hashes, unsigned t,
                unsigned threads, std::vector<std::uint32_t>& owned) {
  const std::uint64_t partitions = bitmap.params.partitions;
  const std::uint64_t first = partitions * t / threads;
  const std::uint64_t count = partitions * (t + 1) / threads - first;
  owned.resize(hashes.size());
  std::size_t kept = 0;
  for (std::size_t i = 0; i < hashes.size(); ++i) {
    owned[kept] = static_cast<std::uint32_t>(i);
    kept += layout::partition_of(hashes[i], partitions) - first < count;
  }
  owned.resize(kept);
}

void test_and_set(const Bitmap& bitmap, std::span<const ItemHash> hashes,
                  std::span<const std::uint32_t> owned, std::uint8_t* newly_added) {
  run<Op::test_and_set>(bitmap, OwnedHashes{hashes, owned}, newly_added);
}

void set(const Bitmap& bitmap, std::span<const ItemHash> hashes,
         std::span<const std::uint32_t> owned) {
  run<Op::set>(bitmap, OwnedHashes{hashes, owned}, nullptr);
}

void test(const Bitmap& bitmap, std::span<const ItemHash> hashes,
          std::span<const std::uint32_t> owned, std::uint8_t* present) {
  run<Op::test>(bitmap, OwnedHashes{hashes, owned}, present);
}

void test_any(std::span<const Bitmap* const> bitmaps, std::span<const ItemHash> hashes,
              std::span<const std::uint32_t> owned, std::uint8_t* present) {
  if (bitmaps.empty()) {
    std::fill_n(present, owned.size(), std::uint8_t{0});
    return;
  }
  if (bitmaps.size() > kMaxAnyBitmaps) {
    // Rare (a window of more slices): in groups, keeping a hit from an earlier group.
    std::vector<std::uint8_t> part(owned.size());
    std::fill_n(present, owned.size(), std::uint8_t{0});
    for (std::size_t first = 0; first < bitmaps.size(); first += kMaxAnyBitmaps) {
      test_any(bitmaps.subspan(first, std::min(kMaxAnyBitmaps, bitmaps.size() - first)), hashes,
               owned, part.data());
      for (std::size_t j = 0; j < owned.size(); ++j) present[j] |= part[j];
    }
    return;
  }
  run_any<false>(bitmaps, OwnedHashes{hashes, owned}, present);
}

void test_any_and_set(std::span<const Bitmap* const> older, const Bitmap& current,
                      std::span<const ItemHash> hashes, std::span<const std::uint32_t> owned,
                      std::uint8_t* out) {
  if (older.size() + 1 > kMaxAnyBitmaps) {
    // In two passes: the lookups in groups, then the test-and-set.
    std::vector<std::uint8_t> found(owned.size());
    test_any(older, hashes, owned, found.data());
    test_and_set(current, hashes, owned, out);
    for (std::size_t j = 0; j < owned.size(); ++j) {
      out[j] = static_cast<std::uint8_t>(found[j] | (out[j] << 1));
    }
    return;
  }
  const Bitmap* all[kMaxAnyBitmaps];
  std::copy(older.begin(), older.end(), all);
  all[older.size()] = &current;
  run_any<true>({all, older.size() + 1}, OwnedHashes{hashes, owned}, out);
}

__attribute__((target_clones("popcnt", "default"))) std::uint64_t popcount(std::uint64_t* words,
                                                                           std::uint64_t count) {
  std::uint64_t ones = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    ones += static_cast<std::uint64_t>(__builtin_popcountll(load(words[i])));
  }
  return ones;
}

__attribute__((target_clones("popcnt", "default"))) std::uint64_t count_ones(
    std::span<const std::uint8_t> bytes) {
  std::uint64_t ones = 0;
  std::size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    std::uint64_t word;
    std::memcpy(&word, bytes.data() + i, 8);
    ones += static_cast<std::uint64_t>(__builtin_popcountll(word));
  }
  for (; i < bytes.size(); ++i) ones += static_cast<std::uint64_t>(__builtin_popcount(bytes[i]));
  return ones;
}

}  // namespace redbloom::kernels
