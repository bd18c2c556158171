// Every scalar access goes through std::atomic_ref with relaxed order. That compiles to plain
// loads and stores on x86-64, but keeps the compiler from tearing or inventing accesses:
// other processes read a shared mapping while we write it. Writers that need exclusion
// (several processes adding to one file) are serialised by the store, not here: a locked RMW
// per probe would cost tens of cycles and stall the misses we want in flight. (The AVX2 path
// writes 32 bytes at a time; bits only ever go from 0 to 1, so a reader that saw a torn
// write would see a subset of the final bits, as it could between two scalar stores.)
//
// Pipelining: an out-of-cache filter costs one memory miss per line touched, so each kernel
// hashes an item, computes its lines and prefetches them `kAhead` items before it works on that
// item: the hashing overlaps the misses in flight instead of adding to them.
#include "core/bitmap_kernels.hpp"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <type_traits>

#include "core/bit_order.hpp"
#include "core/item_hash_inline.hpp"
#include "core/layout.hpp"

namespace redbloom::kernels {
namespace {

constexpr std::uint64_t kWordsPerBlock = kBlockBits / 64;

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

// --- blocked layout -------------------------------------------------------------------------
// Each item's work on its block: build the 8 word masks of its probes (layout.hpp), test them
// with loads only, and store only if a bit was missing and this is a write (so a page of a
// file mapping that only sees duplicates is never dirtied).

inline void block_masks_scalar(std::uint64_t hi, std::uint32_t k,
                               std::uint64_t (&mask)[kWordsPerBlock]) noexcept {
  std::fill(std::begin(mask), std::end(mask), 0);
  const unsigned s = layout::blocked_start_word(hi);
  for (std::uint32_t base = 0; base < k; base += 8) {
    const std::uint64_t x = hi * layout::kRoundMultipliers[base / 8];
    const std::uint32_t count = std::min<std::uint32_t>(8, k - base);
    for (std::uint32_t q = 0; q < count; ++q) {
      const unsigned w = (s + q) & 7;
      mask[w] |= word_mask((x >> layout::blocked_field_shift(w)) & 63);
    }
  }
}

template <Op op>
inline bool apply_block_scalar(std::uint64_t* line, std::uint64_t hi, std::uint32_t k) noexcept {
  std::uint64_t mask[kWordsPerBlock];
  block_masks_scalar(hi, k, mask);
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

template <Op op, class Block, class Source>
inline void blocked_pipeline(const Bitmap& bitmap, Source hash_of, std::uint8_t* out) {
  // Far enough ahead that the work on the items in between covers a miss out of memory.
  constexpr std::size_t kAhead = 64;
  struct Slot {
    std::uint64_t* line;
    std::uint64_t hi;
  };
  const BlockGeometry geometry(bitmap);
  const std::size_t n = hash_of.size();
  Slot ring[kAhead];
  std::size_t planned = 0;
  auto plan_next = [&] {
    const ItemHash h = hash_of(planned);
    std::uint64_t* line = geometry.line(h);
    prefetch<op>(line);
    ring[planned % kAhead] = Slot{line, h.hi};
    ++planned;
  };
  while (planned < std::min(kAhead, n)) plan_next();
  for (std::size_t i = 0; i < n; ++i) {
    const Slot slot = ring[i % kAhead];
    if (planned < n) plan_next();
    record<op>(out, i, Block::template apply<op>(geometry, slot.line, slot.hi));
  }
}

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

// With AVX-512 (k <= 8): the 8 word masks in one register, the k-of-8 word selection as a
// mask register and the line in one load, ~12 instructions fewer than the two AVX2 halves.
// A word's bit is the rotation of 1 by (field ^ 7): a rotate takes its count mod 64, so the
// 6-bit field needs no mask, and the constants are operands in memory rather than built in
// registers on every call. kOnePartition: a filter of one partition (local filters up to
// 512 MiB) skips the partition's multiply. kRewrite: adds store the line unconditionally.
// (GCC 12's avx512fintrin.h trips -W[maybe-]uninitialized on its own _mm512_undefined
// placeholders.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
alignas(64) constexpr std::uint64_t kFieldShifts[8] = {16, 22, 28, 34, 40, 46, 52, 58};
alignas(64) constexpr std::uint64_t kRedisBitFlip[8] = {7, 7, 7, 7, 7, 7, 7, 7};

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

// The batch pipeline's block code for k <= 8 (blocked_pipeline): the batch paths serve file
// mappings too, so a line is stored only if a bit was missing.
struct Avx512Block {
  template <Op op>
  __attribute__((target("avx512f,avx512dq"))) static inline bool apply(
      const BlockGeometry& geometry, std::uint64_t* line, std::uint64_t hi) noexcept {
    return avx512_line_apply<op, false>(line, hi, geometry.last_round_lanes, geometry.ones);
  }
};

template <Op op, class Source>
__attribute__((target("avx512f,avx512dq"), flatten)) void blocked_avx512(const Bitmap& bitmap,
                                                                         Source hash_of,
                                                                         std::uint8_t* out) {
  blocked_pipeline<op, Avx512Block>(bitmap, hash_of, out);
}

// XXH3-128 of eight items at once, for items of 4 to 8 bytes (scheme 1's hash, bit for bit:
// XXH3_len_4to8_128b with seed 0 and the default secret, one item a 64-bit lane). One item's
// scalar XXH3 is a chain of three multiplies, one of them 64x64->128, and costs more than the
// rest of a batched in-cache add; in vectors the eight chains share their instructions. Lanes
// with another length are hashed one by one and put in place.

// a * b per 64-bit lane as 128 bits (XXH_mult64to128), from four 32x32->64 products: AVX-512
// has no instruction for the high half, and the low half comes from the same products,
// sparing a VPMULLQ (three micro-ops).
__attribute__((target("avx512f"), always_inline)) inline void mul_64x64_128(
    __m512i a, __m512i b, __m512i& low, __m512i& high) noexcept {
  const __m512i low32 = _mm512_set1_epi64(0xffffffff);
  const __m512i a_hi = _mm512_srli_epi64(a, 32);
  const __m512i b_hi = _mm512_srli_epi64(b, 32);
  const __m512i ll = _mm512_mul_epu32(a, b);
  const __m512i lh = _mm512_mul_epu32(a, b_hi);
  const __m512i hl = _mm512_mul_epu32(a_hi, b);
  const __m512i hh = _mm512_mul_epu32(a_hi, b_hi);
  // The cross terms' sum may wrap: only its low 32 bits reach the low half.
  low = _mm512_add_epi64(ll, _mm512_slli_epi64(_mm512_add_epi64(lh, hl), 32));
  const __m512i mid =
      _mm512_add_epi64(_mm512_add_epi64(_mm512_srli_epi64(ll, 32), _mm512_and_si512(lh, low32)),
                       _mm512_and_si512(hl, low32));
  high = _mm512_add_epi64(_mm512_add_epi64(hh, _mm512_srli_epi64(mid, 32)),
                          _mm512_add_epi64(_mm512_srli_epi64(lh, 32), _mm512_srli_epi64(hl, 32)));
}

// Whether a std::string_view is {size, data} in two 64-bit words, so that eight of them load
// as two vectors. Checked once at run time; hash8 is used only where it holds.
const bool g_view_is_size_then_data = [] {
  static const char text[] = "xy";
  const std::string_view view(text, 2);
  static_assert(sizeof view == 16);
  std::uint64_t words[2];
  std::memcpy(words, &view, sizeof words);
  return words[0] == 2 && words[1] == reinterpret_cast<std::uintptr_t>(text);
}();

// Each lane's XXH3 input word, its first 4 bytes | its last 4 bytes << 32, for items of 4 to 8
// bytes (`short_items`), and 0 for the others. The words go from general registers into the
// vector by inserts, not through memory (eight scalar stores read back by one vector load stall
// on store forwarding) and not by a gather (microcoded, and slowed further by the Gather Data
// Sampling mitigation on recent Intel CPUs).
__attribute__((target("avx512f"), always_inline)) inline __m512i input_words(
    const std::string_view* items, __mmask8 short_items, bool all_eight_bytes) noexcept {
  std::uint64_t words[8];
  if (all_eight_bytes) [[likely]] {
    // 64-bit ids: the first and last 4 bytes are the whole item, one 8-byte load.
    for (unsigned j = 0; j < 8; ++j) std::memcpy(&words[j], items[j].data(), 8);
  } else {
    static constexpr char kDummy[4] = {};
    for (unsigned j = 0; j < 8; ++j) {
      const bool short_item = (short_items >> j) & 1;
      const char* bytes = short_item ? items[j].data() : kDummy;
      const std::size_t last_at = short_item ? items[j].size() - 4 : 0;
      std::uint32_t first, last;
      std::memcpy(&first, bytes, 4);
      std::memcpy(&last, bytes + last_at, 4);
      words[j] = first | std::uint64_t{last} << 32;
    }
  }
  return _mm512_set_epi64(static_cast<long long>(words[7]), static_cast<long long>(words[6]),
                          static_cast<long long>(words[5]), static_cast<long long>(words[4]),
                          static_cast<long long>(words[3]), static_cast<long long>(words[2]),
                          static_cast<long long>(words[1]), static_cast<long long>(words[0]));
}

__attribute__((target("avx512f,avx512dq"), always_inline)) inline void hash8(
    const std::string_view* items, __m512i& lo, __m512i& hi) noexcept {
  // XXH3_len_4to8_128b's constants: the bitflip of the default secret's bytes 16..31, and
  // PRIME64_1 to which the length times 4 is added.
  constexpr std::uint64_t kPrime64_1 = 0x9E3779B185EBCA87ull;
  constexpr std::uint64_t kPrimeMx1 = 0x165667919E3779F9ull;
  constexpr std::uint64_t kPrimeMx2 = 0x9FB21C651E98DF25ull;
  std::uint64_t secret[2];
  std::memcpy(secret, XXH3_kSecret + 16, sizeof secret);
  const std::uint64_t bitflip = secret[0] ^ secret[1];

  const __m512i views_0 = _mm512_loadu_si512(items);
  const __m512i views_1 = _mm512_loadu_si512(items + 4);
  const __m512i lengths =
      _mm512_permutex2var_epi64(views_0, _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14), views_1);
  const __m512i four = _mm512_set1_epi64(4);
  // length - 4 <= 4, unsigned: 4 to 8 bytes.
  const __mmask8 short_items = _mm512_cmple_epu64_mask(_mm512_sub_epi64(lengths, four), four);
  const bool all_eight_bytes = _mm512_cmpneq_epu64_mask(lengths, _mm512_set1_epi64(8)) == 0;
  const __m512i keyed = _mm512_xor_si512(input_words(items, short_items, all_eight_bytes),
                                         _mm512_set1_epi64(static_cast<long long>(bitflip)));
  const __m512i factor = _mm512_add_epi64(_mm512_set1_epi64(static_cast<long long>(kPrime64_1)),
                                          _mm512_slli_epi64(lengths, 2));
  __m512i low, high;
  mul_64x64_128(keyed, factor, low, high);
  high = _mm512_add_epi64(high, _mm512_slli_epi64(low, 1));
  low = _mm512_xor_si512(low, _mm512_srli_epi64(high, 3));
  low = _mm512_xor_si512(low, _mm512_srli_epi64(low, 35));
  low = _mm512_mullo_epi64(low, _mm512_set1_epi64(static_cast<long long>(kPrimeMx2)));
  low = _mm512_xor_si512(low, _mm512_srli_epi64(low, 28));
  high = _mm512_xor_si512(high, _mm512_srli_epi64(high, 37));
  high = _mm512_mullo_epi64(high, _mm512_set1_epi64(static_cast<long long>(kPrimeMx1)));
  high = _mm512_xor_si512(high, _mm512_srli_epi64(high, 32));
  for (unsigned others = static_cast<std::uint8_t>(~short_items); others != 0;
       others &= others - 1) {
    const unsigned j = static_cast<unsigned>(__builtin_ctz(others));
    const ItemHash h = detail::hash_inline(items[j]);
    const auto lane = static_cast<__mmask8>(1u << j);
    low = _mm512_mask_set1_epi64(low, lane, static_cast<long long>(h.lo));
    high = _mm512_mask_set1_epi64(high, lane, static_cast<long long>(h.hi));
  }
  lo = low;
  hi = high;
}

// The batch pipeline over items, eight at a time (k <= 8, blocks below 2^32 a partition):
// hash eight (hash8), compute their lines in vectors, plan their probes, prefetch the lines,
// and test (and set) the eight planned kAheadGroups groups before. Items past the last whole
// group take blocked_pipeline. `Groups` plans and applies the probes: Avx512Groups with
// AVX-512F/DQ alone, Avx512BitGroups with the byte and bit instructions of Ice Lake and Zen 4.

// The eight items' hashes and lines (line addresses into `lines`); returns their hi.
__attribute__((target("avx512f,avx512dq"), always_inline)) inline __m512i plan_lines(
    const BlockGeometry& geometry, const std::string_view* items, std::uint64_t* lines) noexcept {
  __m512i lo, hi;
  hash8(items, lo, hi);
  // layout::partition_of and blocked_block_among, per lane; with block and partition counts
  // below 2^32 each is one or two 32x32->64 products.
  const __m512i blocks = _mm512_set1_epi64(static_cast<long long>(geometry.blocks_per_partition));
  __m512i block =
      _mm512_srli_epi64(_mm512_add_epi64(_mm512_mul_epu32(_mm512_srli_epi64(lo, 32), blocks),
                                         _mm512_srli_epi64(_mm512_mul_epu32(lo, blocks), 32)),
                        32);
  if (geometry.partitions > 1) {
    const __m512i partition = _mm512_srli_epi64(
        _mm512_mul_epu32(lo, _mm512_set1_epi64(static_cast<long long>(geometry.partitions))), 32);
    block = _mm512_add_epi64(block, _mm512_mul_epu32(partition, blocks));
  }
  const __m512i words =
      _mm512_set1_epi64(static_cast<long long>(reinterpret_cast<std::uintptr_t>(geometry.words)));
  _mm512_store_si512(lines, _mm512_add_epi64(words, _mm512_slli_epi64(block, 6)));
  return hi;
}

// Each item's hi, and avx512_line_apply per item.
struct Avx512Groups {
  struct Slot {
    alignas(64) std::uint64_t line[8];  // each item's line, an address
    alignas(64) std::uint64_t hi[8];
  };
  template <Op op>
  __attribute__((target("avx512f,avx512dq"))) static inline void plan(const BlockGeometry& geometry,
                                                                      const std::string_view* items,
                                                                      Slot& slot) noexcept {
    _mm512_store_si512(slot.hi, plan_lines(geometry, items, slot.line));
  }
  template <Op op>
  __attribute__((target("avx512f,avx512dq"))) static inline bool apply(
      const BlockGeometry& geometry, const Slot& slot, unsigned j) noexcept {
    return avx512_line_apply<op, false>(reinterpret_cast<std::uint64_t*>(slot.line[j]), slot.hi[j],
                                        geometry.last_round_lanes, geometry.ones);
  }
};

// VPMULTISHIFTQB's control: byte w is the bit where word w's field starts in hi.
inline constexpr std::uint64_t kFieldStarts = [] {
  std::uint64_t starts = 0;
  for (unsigned w = 0; w < 8; ++w) starts |= std::uint64_t{layout::blocked_field_shift(w)} << 8 * w;
  return starts;
}();

// Each item's probes planned as one byte per word: VPMULTISHIFTQB cuts the eight 6-bit fields
// of layout.hpp out of hi for eight items in one instruction, and byte w holds the bit's
// position in word w (the Redis bit order's flip folded in), plus 64 for a word the item does
// not probe. A lookup reads its k bits out of the line with one VPSHUFBITQMB, which picks the
// bit named by byte w of a broadcast of the bytes out of word w, under a mask of the probed
// words' bytes. An add widens the bytes to words (VPMOVZXBQ) and shifts a 1 by each (VPSLLVQ
// gives 0 for a count of 64 or more), and stores the line only if that changed it.
struct Avx512BitGroups {
  struct Slot {
    alignas(64) std::uint64_t line[8];    // each item's line, an address
    alignas(64) std::uint64_t probes[8];  // byte w: the bit probed in word w (adds: 64+ if none)
    alignas(64) std::uint64_t probed[8];  // lookups: bit 9w (byte w of word w) if w probed
  };
  template <Op op>
  __attribute__((target("avx512f,avx512dq,avx512vbmi"))) static inline void plan(
      const BlockGeometry& geometry, const std::string_view* items, Slot& slot) noexcept {
    const __m512i hi = plan_lines(geometry, items, slot.line);
    // Byte w of each lane: the 8 bits of hi from word w's field on, the low 3 flipped. The start
    // word s = hi mod 8 picks each item's row of the tables (VPERMQ reads 3 bits of an index).
    const __m512i fields =
        _mm512_multishift_epi64_epi8(_mm512_set1_epi64(static_cast<long long>(kFieldStarts)), hi);
    if constexpr (op == Op::test) {
      // VPSHUFBITQMB reads the low 6 bits of a byte, and only the probed words' bytes.
      _mm512_store_si512(slot.probes, _mm512_xor_si512(fields, _mm512_set1_epi8(0x07)));
      _mm512_store_si512(slot.probed,
                         _mm512_permutexvar_epi64(hi, _mm512_load_si512(geometry.probed_bytes)));
    } else {
      // Shift counts: (fields & 0x3f) ^ 0x07 in one VPTERNLOGQ, 64 added for skipped words.
      const __m512i positions =
          _mm512_ternarylogic_epi64(fields, _mm512_set1_epi8(0x3f), _mm512_set1_epi8(0x07), 0x6a);
      const __m512i skipped = _mm512_permutexvar_epi64(hi, _mm512_load_si512(geometry.unprobed));
      _mm512_store_si512(slot.probes, _mm512_or_si512(positions, skipped));
    }
  }
  template <Op op>
  __attribute__((target("avx512f,avx512bw,avx512bitalg"))) static inline bool apply(
      const BlockGeometry& geometry, const Slot& slot, unsigned j) noexcept {
    auto* line = reinterpret_cast<std::uint64_t*>(slot.line[j]);
    const __m512i old = _mm512_load_si512(line);
    if constexpr (op == Op::test) {
      const __mmask64 probed = _cvtu64_mask64(slot.probed[j]);
      const __mmask64 set = _mm512_mask_bitshuffle_epi64_mask(
          probed, old, _mm512_set1_epi64(static_cast<long long>(slot.probes[j])));
      return _ktestc_mask64_u8(set, probed) != 0;  // no probed bit clear
    } else {
      const __m512i counts =
          _mm512_cvtepu8_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(&slot.probes[j])));
      const __m512i updated =
          _mm512_or_si512(old, _mm512_sllv_epi64(_mm512_load_si512(geometry.ones), counts));
      const __mmask8 changed = _mm512_cmpneq_epu64_mask(updated, old);
      if (changed != 0) _mm512_store_si512(line, updated);
      return changed == 0;
    }
  }
};

template <Op op, class Slot>
inline void prefetch_group(const Slot& slot) noexcept {
  for (unsigned j = 0; j < 8; ++j) prefetch<op>(reinterpret_cast<const void*>(slot.line[j]));
}

template <Op op, std::size_t kAheadGroups, class Groups>
inline void group_pipeline(const Bitmap& bitmap, std::span<const std::string_view> items,
                           std::uint8_t* out) {
  const BlockGeometry geometry(bitmap);
  const std::size_t groups = items.size() / 8;
  typename Groups::Slot ring[kAheadGroups];
  for (std::size_t g = 0; g < std::min(kAheadGroups, groups); ++g) {
    Groups::template plan<op>(geometry, items.data() + g * 8, ring[g]);
  }
  for (std::size_t g = 0; g < std::min(kAheadGroups, groups); ++g) prefetch_group<op>(ring[g]);
  for (std::size_t g = 0; g < groups; ++g) {
    const auto& slot = ring[g % kAheadGroups];
    for (unsigned j = 0; j < 8; ++j) {
      record<op>(out, g * 8 + j, Groups::template apply<op>(geometry, slot, j));
    }
    if (g + kAheadGroups < groups) {
      Groups::template plan<op>(geometry, items.data() + (g + kAheadGroups) * 8,
                                ring[g % kAheadGroups]);
    }
    // The lines of the group planned one pass ago: read back at once, the addresses just
    // stored from a vector register kept each group waiting on that store.
    if (g >= 1 && g + kAheadGroups - 1 < groups) {
      prefetch_group<op>(ring[(g + kAheadGroups - 1) % kAheadGroups]);
    }
  }
  const std::size_t done = groups * 8;
  blocked_pipeline<op, Avx512Block>(bitmap, HashItems{items.subspan(done)},
                                    out == nullptr ? nullptr : out + done);
}

template <Op op, std::size_t kAheadGroups>
__attribute__((target("avx512f,avx512dq"), flatten)) void blocked_avx512_items(
    const Bitmap& bitmap, std::span<const std::string_view> items, std::uint8_t* out) {
  group_pipeline<op, kAheadGroups, Avx512Groups>(bitmap, items, out);
}

template <Op op, std::size_t kAheadGroups>
__attribute__((target("avx512f,avx512dq,avx512bw,avx512vbmi,avx512bitalg"), flatten)) void
blocked_avx512_bit_items(const Bitmap& bitmap, std::span<const std::string_view> items,
                         std::uint8_t* out) {
  group_pipeline<op, kAheadGroups, Avx512BitGroups>(bitmap, items, out);
}

// Filters up to this size count as cache-resident for the batch pipeline's prefetch depth.
constexpr std::uint64_t kCacheResidentBytes = std::uint64_t{8} << 20;

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
  constexpr std::size_t kAhead = 16;
  const BlockGeometry geometry(*bitmaps[0]);
  std::uint64_t* words[kMaxAnyBitmaps];
  const std::size_t count = bitmaps.size();
  for (std::size_t b = 0; b < count; ++b) words[b] = bitmaps[b]->words;
  struct Slot {
    std::uint64_t offset;
    std::uint64_t hi;
  };
  const std::size_t n = hash_of.size();
  Slot ring[kAhead];
  std::size_t planned = 0;
  auto plan_next = [&] {
    const ItemHash h = hash_of(planned);
    const std::uint64_t offset = static_cast<std::uint64_t>(geometry.line(h) - geometry.words);
    for (std::size_t b = 0; b < count; ++b) prefetch<Op::test>(words[b] + offset);
    ring[planned % kAhead] = Slot{offset, h.hi};
    ++planned;
  };
  while (planned < std::min(kAhead, n)) plan_next();
  for (std::size_t i = 0; i < n; ++i) {
    const Slot slot = ring[i % kAhead];
    if (planned < n) plan_next();
    out[i] = test_line(geometry, words, count, slot.offset, slot.hi);
  }
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
                         block_masks_scalar(hi, geometry.hashes, mask);
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
      // plan_lines multiplies 32-bit block and partition counts (partitions up to 256 GiB).
      if (!g_view_is_size_then_data || bitmap.blocks_per_partition > 0xffffffff ||
          bitmap.params.partitions > 0xffffffff) {
        return blocked_avx512<op>(bitmap, hash_of, out);
      }
      // Four groups ahead cover a line from L2 or L3 while the prefetches of a group planned
      // a pass ago go out; out of cache, eight (64 items) keep enough misses in flight.
      const bool resident = bitmap.params.total_bytes() <= kCacheResidentBytes;
      if (g_simd >= Simd::avx512_bits) {
        resident ? blocked_avx512_bit_items<op, 4>(bitmap, hash_of.items, out)
                 : blocked_avx512_bit_items<op, 8>(bitmap, hash_of.items, out);
      } else {
        resident ? blocked_avx512_items<op, 4>(bitmap, hash_of.items, out)
                 : blocked_avx512_items<op, 8>(bitmap, hash_of.items, out);
      }
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
// a hash-and-route loop.
__attribute__((flatten)) void hash_items(std::span<const std::string_view> items,
                                         ItemHash* hashes) {
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

}  // namespace redbloom::kernels
