#include "core/eight_lane_batch.hpp"

#include <immintrin.h>

#include <cstring>

namespace redbloom::kernels::parts {
namespace {

// (GCC 12's avx512fintrin.h trips -W[maybe-]uninitialized on its own _mm512_undefined
// placeholders.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

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

#pragma GCC diagnostic pop

}  // namespace

bool eight_lane_batch_fits(const Bitmap& bitmap) noexcept {
  // plan_lines multiplies 32-bit block and partition counts (partitions up to 256 GiB).
  return g_view_is_size_then_data && bitmap.blocks_per_partition <= 0xffffffff &&
         bitmap.params.partitions <= 0xffffffff;
}

template <Op op>
void eight_lane_batch(const Bitmap& bitmap, std::span<const std::string_view> items,
                      std::uint8_t* out, Simd level) {
  // Four groups ahead cover a line from L2 or L3 while the prefetches of a group planned a
  // pass ago go out; out of cache, eight (64 items) keep enough misses in flight.
  const bool resident = bitmap.params.total_bytes() <= kCacheResidentBytes;
  if (level >= Simd::avx512_bits) {
    resident ? blocked_avx512_bit_items<op, 4>(bitmap, items, out)
             : blocked_avx512_bit_items<op, 8>(bitmap, items, out);
  } else {
    resident ? blocked_avx512_items<op, 4>(bitmap, items, out)
             : blocked_avx512_items<op, 8>(bitmap, items, out);
  }
}

template void eight_lane_batch<Op::test_and_set>(const Bitmap&, std::span<const std::string_view>,
                                                 std::uint8_t*, Simd);
template void eight_lane_batch<Op::set>(const Bitmap&, std::span<const std::string_view>,
                                        std::uint8_t*, Simd);
template void eight_lane_batch<Op::test>(const Bitmap&, std::span<const std::string_view>,
                                         std::uint8_t*, Simd);

}  // namespace redbloom::kernels::parts
