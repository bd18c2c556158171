#include "core/eight_lane_batch.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace redbloom::kernels::parts {
namespace {

// (GCC 12's avx512fintrin.h trips -W[maybe-]uninitialized on its own _mm512_undefined
// placeholders.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// XXH3-128 of eight items at once (scheme 1's hash, bit for bit: seed 0, the default secret,
// one item a 64-bit lane), for items of 4 to 8 bytes (XXH3_len_4to8_128b), 9 to 16
// (XXH3_len_9to16_128b), 17 to 128 (XXH3_len_17to128_128b) and 129 to 240
// (XXH3_len_129to240_128b). One item's scalar XXH3 is a chain of multiplies, 64x64->128 among
// them, and costs more than the rest of a batched in-cache add; in vectors the eight chains
// share their instructions. Lanes of other lengths are hashed one by one and put in place.

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

// Read in place of an item a lane does not hash, so that every lane loads from valid memory.
alignas(16) constexpr char kZeros[16] = {};

// words[j] in lane j.
__attribute__((target("avx512f"), always_inline)) inline __m512i lanes(
    const std::uint64_t (&words)[8]) noexcept {
  return _mm512_set_epi64(static_cast<long long>(words[7]), static_cast<long long>(words[6]),
                          static_cast<long long>(words[5]), static_cast<long long>(words[4]),
                          static_cast<long long>(words[3]), static_cast<long long>(words[2]),
                          static_cast<long long>(words[1]), static_cast<long long>(words[0]));
}

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
    for (unsigned j = 0; j < 8; ++j) {
      const bool short_item = (short_items >> j) & 1;
      const char* bytes = short_item ? items[j].data() : kZeros;
      const std::size_t last_at = short_item ? items[j].size() - 4 : 0;
      std::uint32_t first, last;
      std::memcpy(&first, bytes, 4);
      std::memcpy(&last, bytes + last_at, 4);
      words[j] = first | std::uint64_t{last} << 32;
    }
  }
  return lanes(words);
}

// a * b per lane, the low 64 bits.
__attribute__((target("avx512f,avx512dq"), always_inline)) inline __m512i times(
    __m512i a, std::uint64_t b) noexcept {
  return _mm512_mullo_epi64(a, _mm512_set1_epi64(static_cast<long long>(b)));
}

// XXH3's final mix (XXH3_avalanche), per lane.
__attribute__((target("avx512f,avx512dq"), always_inline)) inline __m512i avalanche(
    __m512i h) noexcept {
  constexpr std::uint64_t kPrimeMx1 = 0x165667919E3779F9ull;
  h = _mm512_xor_si512(h, _mm512_srli_epi64(h, 37));
  h = times(h, kPrimeMx1);
  return _mm512_xor_si512(h, _mm512_srli_epi64(h, 32));
}

constexpr std::uint64_t kPrime64_1 = 0x9E3779B185EBCA87ull;
constexpr std::uint64_t kPrime64_2 = 0xC2B2AE3D27D4EB4Full;
constexpr std::uint64_t kPrime64_4 = 0x85EBCA77C2B2AE63ull;

// XXH3_len_4to8_128b, for the lanes in `short_items` (the others' results are meaningless).
__attribute__((target("avx512f,avx512dq"), always_inline)) inline void hash8_4to8(
    const std::string_view* items, __m512i lengths, __mmask8 short_items, __m512i& low,
    __m512i& high) noexcept {
  // The bitflip of the default secret's bytes 16..31; the factor, PRIME64_1 plus 4 * length.
  constexpr std::uint64_t kPrimeMx2 = 0x9FB21C651E98DF25ull;
  std::uint64_t secret[2];
  std::memcpy(secret, XXH3_kSecret + 16, sizeof secret);
  const std::uint64_t bitflip = secret[0] ^ secret[1];
  const bool all_eight_bytes = _mm512_cmpneq_epu64_mask(lengths, _mm512_set1_epi64(8)) == 0;
  const __m512i keyed = _mm512_xor_si512(input_words(items, short_items, all_eight_bytes),
                                         _mm512_set1_epi64(static_cast<long long>(bitflip)));
  const __m512i factor = _mm512_add_epi64(_mm512_set1_epi64(static_cast<long long>(kPrime64_1)),
                                          _mm512_slli_epi64(lengths, 2));
  mul_64x64_128(keyed, factor, low, high);
  high = _mm512_add_epi64(high, _mm512_slli_epi64(low, 1));
  low = _mm512_xor_si512(low, _mm512_srli_epi64(high, 3));
  low = _mm512_xor_si512(low, _mm512_srli_epi64(low, 35));
  low = times(low, kPrimeMx2);
  low = _mm512_xor_si512(low, _mm512_srli_epi64(low, 28));
  high = avalanche(high);
}

// 16 bytes from each of eight addresses, as the eight first and the eight second 64-bit words.
__attribute__((target("avx512f"), always_inline)) inline void load_16_bytes(
    const char* const (&at)[8], __m512i& first, __m512i& second) noexcept {
  const auto bytes = [&](unsigned j) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(at[j]));
  };
  __m512i lanes_0_3 = _mm512_castsi128_si512(bytes(0));
  lanes_0_3 = _mm512_inserti32x4(lanes_0_3, bytes(1), 1);
  lanes_0_3 = _mm512_inserti32x4(lanes_0_3, bytes(2), 2);
  lanes_0_3 = _mm512_inserti32x4(lanes_0_3, bytes(3), 3);
  __m512i lanes_4_7 = _mm512_castsi128_si512(bytes(4));
  lanes_4_7 = _mm512_inserti32x4(lanes_4_7, bytes(5), 1);
  lanes_4_7 = _mm512_inserti32x4(lanes_4_7, bytes(6), 2);
  lanes_4_7 = _mm512_inserti32x4(lanes_4_7, bytes(7), 3);
  first =
      _mm512_permutex2var_epi64(lanes_0_3, _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14), lanes_4_7);
  second =
      _mm512_permutex2var_epi64(lanes_0_3, _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15), lanes_4_7);
}

// XXH3_mix16B with seed 0 for eight 16-byte pieces: the 128-bit product of the two words, each
// XORed with its secret word, folded to 64 bits.
__attribute__((target("avx512f"), always_inline)) inline __m512i mix_16_bytes(
    __m512i first, __m512i second, const std::uint8_t* secret) noexcept {
  std::uint64_t words[2];
  std::memcpy(words, secret, sizeof words);
  __m512i low, high;
  mul_64x64_128(_mm512_xor_si512(first, _mm512_set1_epi64(static_cast<long long>(words[0]))),
                _mm512_xor_si512(second, _mm512_set1_epi64(static_cast<long long>(words[1]))), low,
                high);
  return _mm512_xor_si512(low, high);
}

// XXH128_mix32B with seed 0 and the 32 bytes of `secret`, for the lanes in `in_round`: 16
// bytes at `front` and 16 at `back` of each item.
__attribute__((target("avx512f"), always_inline)) inline void mix_32_bytes(
    const std::uint8_t* secret, __mmask8 in_round, const char* const (&front)[8],
    const char* const (&back)[8], __m512i& acc_low, __m512i& acc_high) noexcept {
  __m512i front_0, front_1, back_0, back_1;
  load_16_bytes(front, front_0, front_1);
  load_16_bytes(back, back_0, back_1);
  acc_low =
      _mm512_mask_add_epi64(acc_low, in_round, acc_low, mix_16_bytes(front_0, front_1, secret));
  acc_low = _mm512_mask_xor_epi64(acc_low, in_round, acc_low, _mm512_add_epi64(back_0, back_1));
  acc_high = _mm512_mask_add_epi64(acc_high, in_round, acc_high,
                                   mix_16_bytes(back_0, back_1, secret + 16));
  acc_high =
      _mm512_mask_xor_epi64(acc_high, in_round, acc_high, _mm512_add_epi64(front_0, front_1));
}

// The last step of XXH3_len_17to128_128b and XXH3_len_129to240_128b (seed 0): the 128-bit
// hash from the two accumulators and the lengths.
__attribute__((target("avx512f,avx512dq"), always_inline)) inline void finish_17to240(
    __m512i acc_low, __m512i acc_high, __m512i lengths, __m512i& low, __m512i& high) noexcept {
  low = avalanche(_mm512_add_epi64(acc_low, acc_high));
  high = _mm512_add_epi64(_mm512_add_epi64(times(acc_low, kPrime64_1), times(acc_high, kPrime64_4)),
                          times(lengths, kPrime64_2));
  high = _mm512_sub_epi64(_mm512_setzero_si512(), avalanche(high));
}

// Each lane's bytes: its item's for the lanes in `lanes`, kZeros (all 16 bytes of it) for the
// others. Returns the longest.
inline std::size_t lane_bytes(const std::string_view* items, __mmask8 lanes, const char* (&data)[8],
                              std::size_t (&size)[8]) noexcept {
  std::size_t longest = 0;
  for (unsigned j = 0; j < 8; ++j) {
    const bool in_lanes = (lanes >> j) & 1;
    data[j] = in_lanes ? items[j].data() : kZeros;
    size[j] = in_lanes ? items[j].size() : sizeof kZeros;
    longest = std::max(longest, size[j]);
  }
  return longest;
}

// XXH3_len_17to128_128b with seed 0, for the lanes in `long_items` (URLs, paths, hex digests):
// one to four rounds of XXH128_mix32B over 32 bytes, round r taken by items longer than 32r
// (rounds from the last down, as XXH3 does). A lane a round skips, or that is not in
// `long_items`, still loads: its first and last 16 bytes, or zeros, never past its item.
__attribute__((target("avx512f,avx512dq"), always_inline)) inline void hash8_17to128(
    const std::string_view* items, __m512i lengths, __mmask8 long_items, __m512i& low,
    __m512i& high) noexcept {
  const char* data[8];
  std::size_t size[8];
  const std::size_t longest = lane_bytes(items, long_items, data, size);
  __m512i acc_low = times(lengths, kPrime64_1);
  __m512i acc_high = _mm512_setzero_si512();
  const char* front[8];
  const char* back[8];
  for (std::size_t round = (longest - 1) / 32; round > 0; --round) {
    const __mmask8 in_round = static_cast<__mmask8>(
        long_items &
        _mm512_cmpgt_epu64_mask(lengths, _mm512_set1_epi64(static_cast<long long>(32 * round))));
    for (unsigned j = 0; j < 8; ++j) {
      const bool takes = (in_round >> j) & 1;
      front[j] = data[j] + (takes ? 16 * round : 0);
      back[j] = data[j] + size[j] - (takes ? 16 * (round + 1) : 16);
    }
    mix_32_bytes(XXH3_kSecret + 32 * round, in_round, front, back, acc_low, acc_high);
  }
  // Round 0, which every item takes: its first and last 16 bytes.
  for (unsigned j = 0; j < 8; ++j) {
    front[j] = data[j];
    back[j] = data[j] + size[j] - 16;
  }
  mix_32_bytes(XXH3_kSecret, long_items, front, back, acc_low, acc_high);
  finish_17to240(acc_low, acc_high, lengths, low, high);
}

// XXH3_len_129to240_128b with seed 0, for the lanes in `longer_items` (long URLs and paths):
// four rounds over the first 128 bytes, an avalanche of both halves, a round for each further
// whole 32 bytes (one to three more, lane by lane), and one over the last 32. A lane a round
// skips, or that is not in `longer_items`, reads zeros.
__attribute__((target("avx512f,avx512dq"), always_inline)) inline void hash8_129to240(
    const std::string_view* items, __m512i lengths, __mmask8 longer_items, __m512i& low,
    __m512i& high) noexcept {
  // XXH3_MIDSIZE_STARTOFFSET and XXH3_SECRET_SIZE_MIN - XXH3_MIDSIZE_LASTOFFSET - 16.
  constexpr std::size_t kMidSecretStart = 3;
  constexpr std::size_t kLastSecretStart = 136 - 17 - 16;
  const char* data[8];
  std::size_t size[8];
  const std::size_t rounds = lane_bytes(items, longer_items, data, size) / 32;
  __m512i acc_low = times(lengths, kPrime64_1);
  __m512i acc_high = _mm512_setzero_si512();
  const char* front[8];
  const char* back[8];
  for (std::size_t round = 0; round < rounds; ++round) {
    __mmask8 in_round = 0;
    for (unsigned j = 0; j < 8; ++j) {
      const bool takes = round < size[j] / 32;
      in_round |= static_cast<__mmask8>(takes << j);
      front[j] = takes ? data[j] + 32 * round : kZeros;
      back[j] = takes ? data[j] + 32 * round + 16 : kZeros;
    }
    const std::uint8_t* secret =
        round < 4 ? XXH3_kSecret + 32 * round : XXH3_kSecret + kMidSecretStart + 32 * (round - 4);
    mix_32_bytes(secret, in_round, front, back, acc_low, acc_high);
    if (round == 3) {
      acc_low = avalanche(acc_low);
      acc_high = avalanche(acc_high);
    }
  }
  for (unsigned j = 0; j < 8; ++j) {
    const bool longer_item = (longer_items >> j) & 1;
    front[j] = longer_item ? data[j] + size[j] - 16 : kZeros;
    back[j] = longer_item ? data[j] + size[j] - 32 : kZeros;
  }
  mix_32_bytes(XXH3_kSecret + kLastSecretStart, longer_items, front, back, acc_low, acc_high);
  finish_17to240(acc_low, acc_high, lengths, low, high);
}

// Each lane's 8 bytes at `at`.
__attribute__((target("avx512f"), always_inline)) inline __m512i load_8_bytes(
    const char* const (&at)[8]) noexcept {
  std::uint64_t words[8];
  for (unsigned j = 0; j < 8; ++j) std::memcpy(&words[j], at[j], 8);
  return lanes(words);
}

// XXH_swap64 per lane with AVX-512F alone: swap the 32-bit halves, then the 16-bit halves of
// each, then the bytes of each 16 bits.
__attribute__((target("avx512f"), always_inline)) inline __m512i swap_bytes(__m512i x) noexcept {
  x = _mm512_rol_epi32(_mm512_rol_epi64(x, 32), 16);
  const __m512i odd_bytes = _mm512_set1_epi64(static_cast<long long>(0xff00ff00ff00ff00ull));
  // odd bytes ? x << 8 : x >> 8, bit by bit.
  return _mm512_ternarylogic_epi64(odd_bytes, _mm512_slli_epi64(x, 8), _mm512_srli_epi64(x, 8),
                                   0xca);
}

// XXH3_len_9to16_128b with seed 0, for the lanes in `medium_items` (short names, decimal ids,
// "user:12345"): the first and last 8 bytes of each item, or zeros for the other lanes.
__attribute__((target("avx512f,avx512dq"), always_inline)) inline void hash8_9to16(
    const std::string_view* items, __m512i lengths, __mmask8 medium_items, __m512i& low,
    __m512i& high) noexcept {
  constexpr std::uint32_t kPrime32_2 = 0x85EBCA77u;
  std::uint64_t secret[4];
  std::memcpy(secret, XXH3_kSecret + 32, sizeof secret);
  const char* first[8];
  const char* last[8];
  for (unsigned j = 0; j < 8; ++j) {
    const bool medium = (medium_items >> j) & 1;
    first[j] = medium ? items[j].data() : kZeros;
    last[j] = medium ? items[j].data() + items[j].size() - 8 : kZeros + 8;
  }
  const __m512i input_lo = load_8_bytes(first);
  const __m512i input_hi = load_8_bytes(last);
  __m512i m_low, m_high;
  mul_64x64_128(_mm512_ternarylogic_epi64(
                    input_lo, input_hi,
                    _mm512_set1_epi64(static_cast<long long>(secret[0] ^ secret[1])), 0x96),
                _mm512_set1_epi64(static_cast<long long>(kPrime64_1)), m_low, m_high);
  m_low = _mm512_add_epi64(m_low,
                           _mm512_slli_epi64(_mm512_sub_epi64(lengths, _mm512_set1_epi64(1)), 54));
  const __m512i keyed_hi =
      _mm512_xor_si512(input_hi, _mm512_set1_epi64(static_cast<long long>(secret[2] ^ secret[3])));
  m_high = _mm512_add_epi64(
      m_high,
      _mm512_add_epi64(keyed_hi, _mm512_mul_epu32(keyed_hi, _mm512_set1_epi64(kPrime32_2 - 1))));
  m_low = _mm512_xor_si512(m_low, swap_bytes(m_high));
  mul_64x64_128(m_low, _mm512_set1_epi64(static_cast<long long>(kPrime64_2)), low, high);
  high = _mm512_add_epi64(high, times(m_high, kPrime64_2));
  low = avalanche(low);
  high = avalanche(high);
}

// Each lane's item length (a std::string_view's size is its first word:
// g_view_is_size_then_data).
__attribute__((target("avx512f"), always_inline)) inline __m512i item_lengths(
    const std::string_view* items) noexcept {
  const __m512i views_0 = _mm512_loadu_si512(items);
  const __m512i views_1 = _mm512_loadu_si512(items + 4);
  return _mm512_permutex2var_epi64(views_0, _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14), views_1);
}

// The lanes in `rare` (the lengths a loop's vector paths leave) hashed into `lo` and `hi`: 129
// to 240 bytes eight at a time (length - 129 <= 111, unsigned), the others one by one. Out of
// line: these lengths are rare, and inlined, the long path's registers slowed the common
// lengths' loop.
__attribute__((target("avx512f,avx512dq"), noinline)) void hash8_rare(
    const std::string_view* items, __mmask8 rare, std::uint64_t (&lo)[8],
    std::uint64_t (&hi)[8]) noexcept {
  const __m512i lengths = item_lengths(items);
  const __mmask8 longer_items = static_cast<__mmask8>(
      rare & _mm512_cmple_epu64_mask(_mm512_sub_epi64(lengths, _mm512_set1_epi64(129)),
                                     _mm512_set1_epi64(111)));
  if (longer_items != 0) {
    __m512i longer_low, longer_high;
    hash8_129to240(items, lengths, longer_items, longer_low, longer_high);
    _mm512_storeu_si512(lo, longer_low);
    _mm512_storeu_si512(hi, longer_high);
  }
  for (unsigned left = rare & ~longer_items; left != 0; left &= left - 1) {
    const unsigned j = static_cast<unsigned>(__builtin_ctz(left));
    const ItemHash h = detail::hash_inline(items[j]);
    lo[j] = h.lo;
    hi[j] = h.hi;
  }
}

// hash8_rare for the lanes in `rest`, put in place.
__attribute__((target("avx512f,avx512dq"), always_inline)) inline void put_rare(
    const std::string_view* items, __mmask8 rest, __m512i& lo, __m512i& hi) noexcept {
  if (rest == 0) return;
  alignas(64) std::uint64_t rest_lo[8];
  alignas(64) std::uint64_t rest_hi[8];
  hash8_rare(items, rest, rest_lo, rest_hi);
  lo = _mm512_mask_load_epi64(lo, rest, rest_lo);
  hi = _mm512_mask_load_epi64(hi, rest, rest_hi);
}

// hash8 for batches of any length: lanes of 4 to 240 bytes in vectors, the others (0 to 3 and
// over 240 bytes) one by one.
__attribute__((target("avx512f,avx512dq"), always_inline)) inline void hash8_mixed(
    const std::string_view* items, const __m512i& lengths, __mmask8 short_items, __m512i& lo,
    __m512i& hi) noexcept {
  // length - 9 <= 7 and length - 17 <= 111, unsigned: 9 to 16 and 17 to 128 bytes.
  const __mmask8 medium_items = _mm512_cmple_epu64_mask(
      _mm512_sub_epi64(lengths, _mm512_set1_epi64(9)), _mm512_set1_epi64(7));
  const __mmask8 long_items = _mm512_cmple_epu64_mask(
      _mm512_sub_epi64(lengths, _mm512_set1_epi64(17)), _mm512_set1_epi64(111));
  __m512i low = _mm512_setzero_si512();
  __m512i high = _mm512_setzero_si512();
  if (short_items != 0) hash8_4to8(items, lengths, short_items, low, high);
  if (long_items != 0) {
    __m512i long_low, long_high;
    hash8_17to128(items, lengths, long_items, long_low, long_high);
    low = _mm512_mask_mov_epi64(low, long_items, long_low);
    high = _mm512_mask_mov_epi64(high, long_items, long_high);
  }
  if (medium_items != 0) {
    __m512i medium_low, medium_high;
    hash8_9to16(items, lengths, medium_items, medium_low, medium_high);
    low = _mm512_mask_mov_epi64(low, medium_items, medium_low);
    high = _mm512_mask_mov_epi64(high, medium_items, medium_high);
  }
  put_rare(items, static_cast<__mmask8>(~(short_items | medium_items | long_items)), low, high);
  lo = low;
  hi = high;
}

// XXH3-128 of eight items, one a 64-bit lane. kAnyLength false (batches of 64-bit ids and
// the like): lanes of 4 to 8 bytes in vectors, the others by hash8_rare. True: hash8_mixed.
template <bool kAnyLength>
__attribute__((target("avx512f,avx512dq"), always_inline)) inline void hash8(
    const std::string_view* items, __m512i& lo, __m512i& hi) noexcept {
  const __m512i lengths = item_lengths(items);
  const __m512i four = _mm512_set1_epi64(4);
  // length - 4 <= 4, unsigned: 4 to 8 bytes.
  const __mmask8 short_items = _mm512_cmple_epu64_mask(_mm512_sub_epi64(lengths, four), four);
  if constexpr (kAnyLength) {
    hash8_mixed(items, lengths, short_items, lo, hi);
  } else {
    hash8_4to8(items, lengths, short_items, lo, hi);
    put_rare(items, static_cast<__mmask8>(~short_items), lo, hi);
  }
}

// The batch pipeline over items, eight at a time (k <= 8, blocks below 2^32 a partition):
// hash eight (hash8), compute their lines in vectors, plan their probes, prefetch the lines,
// and test (and set) the eight planned kAheadGroups groups before. Items past the last whole
// group take blocked_pipeline. `Groups` plans and applies the probes: Avx512Groups with
// AVX-512F/DQ alone, Avx512BitGroups with the byte and bit instructions of Ice Lake and Zen 4.

// The eight items' hashes and lines (line addresses into `lines`); returns their hi.
template <bool kAnyLength>
__attribute__((target("avx512f,avx512dq"), always_inline)) inline __m512i plan_lines(
    const BlockGeometry& geometry, const std::string_view* items, std::uint64_t* lines) noexcept {
  __m512i lo, hi;
  hash8<kAnyLength>(items, lo, hi);
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
  template <Op op, bool kAnyLength>
  __attribute__((target("avx512f,avx512dq"))) static inline void plan(const BlockGeometry& geometry,
                                                                      const std::string_view* items,
                                                                      Slot& slot) noexcept {
    _mm512_store_si512(slot.hi, plan_lines<kAnyLength>(geometry, items, slot.line));
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
  template <Op op, bool kAnyLength>
  __attribute__((target("avx512f,avx512dq,avx512vbmi"))) static inline void plan(
      const BlockGeometry& geometry, const std::string_view* items, Slot& slot) noexcept {
    const __m512i hi = plan_lines<kAnyLength>(geometry, items, slot.line);
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

template <Op op, std::size_t kAheadGroups, class Groups, bool kAnyLength>
inline void group_pipeline(const Bitmap& bitmap, std::span<const std::string_view> items,
                           std::uint8_t* out) {
  const BlockGeometry geometry(bitmap);
  const std::size_t groups = items.size() / 8;
  typename Groups::Slot ring[kAheadGroups];
  for (std::size_t g = 0; g < std::min(kAheadGroups, groups); ++g) {
    Groups::template plan<op, kAnyLength>(geometry, items.data() + g * 8, ring[g]);
  }
  for (std::size_t g = 0; g < std::min(kAheadGroups, groups); ++g) prefetch_group<op>(ring[g]);
  for (std::size_t g = 0; g < groups; ++g) {
    const auto& slot = ring[g % kAheadGroups];
    for (unsigned j = 0; j < 8; ++j) {
      record<op>(out, g * 8 + j, Groups::template apply<op>(geometry, slot, j));
    }
    if (g + kAheadGroups < groups) {
      Groups::template plan<op, kAnyLength>(geometry, items.data() + (g + kAheadGroups) * 8,
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

template <Op op, std::size_t kAheadGroups, bool kAnyLength>
__attribute__((target("avx512f,avx512dq"), flatten)) void blocked_avx512_items(
    const Bitmap& bitmap, std::span<const std::string_view> items, std::uint8_t* out) {
  group_pipeline<op, kAheadGroups, Avx512Groups, kAnyLength>(bitmap, items, out);
}

template <Op op, std::size_t kAheadGroups, bool kAnyLength>
__attribute__((target("avx512f,avx512dq,avx512bw,avx512vbmi,avx512bitalg"), flatten)) void
blocked_avx512_bit_items(const Bitmap& bitmap, std::span<const std::string_view> items,
                         std::uint8_t* out) {
  group_pipeline<op, kAheadGroups, Avx512BitGroups, kAnyLength>(bitmap, items, out);
}

// Filters up to this size count as cache-resident for the batch pipeline's prefetch depth.
constexpr std::uint64_t kCacheResidentBytes = std::uint64_t{8} << 20;

template <Op op, bool kAnyLength>
void run_groups(const Bitmap& bitmap, std::span<const std::string_view> items, std::uint8_t* out,
                Simd level) {
  // Four groups ahead cover a line from L2 or L3 while the prefetches of a group planned a
  // pass ago go out; out of cache, eight (64 items) keep enough misses in flight.
  const bool resident = bitmap.params.total_bytes() <= kCacheResidentBytes;
  if (level >= Simd::avx512_bits) {
    resident ? blocked_avx512_bit_items<op, 4, kAnyLength>(bitmap, items, out)
             : blocked_avx512_bit_items<op, 8, kAnyLength>(bitmap, items, out);
  } else {
    resident ? blocked_avx512_items<op, 4, kAnyLength>(bitmap, items, out)
             : blocked_avx512_items<op, 8, kAnyLength>(bitmap, items, out);
  }
}

// The first and last eight items pick the hashing for a batch: a batch of 64-bit ids keeps the
// loop made for them (registers held for it alone), any other takes the one that also hashes
// 9- to 240-byte items (names, URLs, hex digests) in vectors. Both hash every length.
bool batch_of_ids(std::span<const std::string_view> items) noexcept {
  const auto id_sized = [](std::string_view item) { return item.size() - 4 <= 4; };
  const std::size_t ends = std::min<std::size_t>(8, items.size());
  return std::all_of(items.begin(), items.begin() + ends, id_sized) &&
         std::all_of(items.end() - ends, items.end(), id_sized);
}

template <bool kAnyLength>
__attribute__((target("avx512f,avx512dq"))) void hash_groups(
    std::span<const std::string_view> items, ItemHash* hashes) noexcept {
  static_assert(sizeof(ItemHash) == 16 && offsetof(ItemHash, hi) == 8);
  const std::size_t whole = items.size() / 8 * 8;
  for (std::size_t i = 0; i < whole; i += 8) {
    __m512i lo, hi;
    hash8<kAnyLength>(items.data() + i, lo, hi);
    // Items 0-3, then 4-7, as ItemHash {lo, hi} pairs.
    const __m512i pairs_even = _mm512_unpacklo_epi64(lo, hi);  // items 0, 2, 4, 6
    const __m512i pairs_odd = _mm512_unpackhi_epi64(lo, hi);   // items 1, 3, 5, 7
    auto* out = reinterpret_cast<__m512i*>(hashes + i);
    _mm512_storeu_si512(
        out, _mm512_permutex2var_epi64(pairs_even, _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0),
                                       pairs_odd));
    _mm512_storeu_si512(
        out + 1, _mm512_permutex2var_epi64(pairs_even, _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4),
                                           pairs_odd));
  }
  for (std::size_t i = whole; i < items.size(); ++i) hashes[i] = detail::hash_inline(items[i]);
}

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
  batch_of_ids(items) ? run_groups<op, false>(bitmap, items, out, level)
                      : run_groups<op, true>(bitmap, items, out, level);
}

bool eight_lane_hash_fits() noexcept {
  return g_view_is_size_then_data;
}

void eight_lane_hash(std::span<const std::string_view> items, ItemHash* hashes) {
  batch_of_ids(items) ? hash_groups<false>(items, hashes) : hash_groups<true>(items, hashes);
}

template void eight_lane_batch<Op::test_and_set>(const Bitmap&, std::span<const std::string_view>,
                                                 std::uint8_t*, Simd);
template void eight_lane_batch<Op::set>(const Bitmap&, std::span<const std::string_view>,
                                        std::uint8_t*, Simd);
template void eight_lane_batch<Op::test>(const Bitmap&, std::span<const std::string_view>,
                                         std::uint8_t*, Simd);

}  // namespace redbloom::kernels::parts
