#include "core/cuckoo_table.hpp"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include "redbloom/error.hpp"

namespace redbloom::cuckoo_table {

namespace {

// A bucket of 4 lanes of f bits starts on a byte for even f and 4 bits into one for odd f, so
// it fits one 8-byte load for f <= 16 and one 16-byte load for any f up to 32.
constexpr std::uint32_t kNarrowBits = 16;
// A table this small stays in a core's cache: its lookups need no prefetching.
constexpr std::size_t kCachedBytes = std::size_t{1} << 20;
static_assert(kMaxFingerprintBits * kSlotsPerBucket <= 128);
static_assert(kSlotsPerBucket == 4, "the kick's victim is drawn from the top 2 bits");

// Eight bytes as one word in Redis bit order: the first byte's most significant bit on top.
std::uint64_t load_be64(const std::uint8_t* at) noexcept {
  std::uint64_t value;
  std::memcpy(&value, at, sizeof value);
  return __builtin_bswap64(value);
}

void store_be64(std::uint8_t* at, std::uint64_t value) noexcept {
  value = __builtin_bswap64(value);
  std::memcpy(at, &value, sizeof value);
}

}  // namespace

std::size_t Shape::bytes() const noexcept {
  return static_cast<std::size_t>((slots() * fingerprint_bits + 7) / 8) + kTailBytes;
}

double Shape::error_rate(std::uint64_t items) const noexcept {
  if (slots() == 0) return 1;
  const double load = static_cast<double>(items) / static_cast<double>(slots());
  return 1 - std::pow(1 - std::ldexp(1.0, -static_cast<int>(fingerprint_bits)),
                      2.0 * kSlotsPerBucket * load);
}

Shape shape_for(std::uint64_t capacity, double error_rate) {
  if (!(error_rate > 0 && error_rate < 1)) {
    throw InvalidArgument("the error rate of a cuckoo filter must be between 0 and 1");
  }
  if (capacity == 0) throw InvalidArgument("a cuckoo filter needs a capacity of at least 1");
  Shape shape;
  shape.buckets = static_cast<std::uint64_t>(
      std::ceil(static_cast<double>(capacity) / (kSlotsPerBucket * kTargetLoad)));
  if (shape.buckets > kMaxBuckets) {
    throw InvalidArgument("a cuckoo table holds at most " +
                          std::to_string(kMaxBuckets * kSlotsPerBucket) +
                          " fingerprints: give the filter more partitions or let it grow");
  }
  shape.fingerprint_bits = fingerprint_bits_for(error_rate);
  return shape;
}

std::uint32_t fingerprint_bits_for(double error_rate) {
  if (!(error_rate > 0 && error_rate < 1)) {
    throw InvalidArgument("the error rate of a cuckoo filter must be between 0 and 1");
  }
  // ε = 1 − (1 − 2^−f)^(8α) ≈ 8α / 2^f at the target load α.
  const double needed = std::log2(2.0 * kSlotsPerBucket * kTargetLoad / error_rate);
  const auto bits = static_cast<std::uint32_t>(std::max(1.0, std::ceil(needed - 1e-9)));
  if (bits > kMaxFingerprintBits) {
    throw InvalidArgument("a cuckoo filter's fingerprints (at most " +
                          std::to_string(kMaxFingerprintBits) +
                          " bits) cannot reach that error rate; use a Bloom filter, or a rate "
                          "of 2e-9 or more");
  }
  return std::max(bits, kMinFingerprintBits);
}

Place place_of(const ItemHash& h, const Shape& shape) noexcept {
  auto fingerprint = static_cast<std::uint32_t>(h.hi >> 32) >> (32 - shape.fingerprint_bits);
  if (fingerprint == 0) fingerprint = 1;
  const std::uint64_t first = fastrange32(static_cast<std::uint32_t>(h.lo >> 32), shape.buckets);
  return {first, alternate_bucket(first, fingerprint, shape.buckets), fingerprint};
}

Table::Table(const Shape& shape, std::span<std::uint8_t> bytes)
    : shape_(shape),
      bytes_(bytes.data()),
      mask_(shape.fingerprint_bits == 64 ? ~0ULL : (1ULL << shape.fingerprint_bits) - 1) {
  if (shape.buckets == 0 || shape.buckets > kMaxBuckets ||
      shape.fingerprint_bits < kMinFingerprintBits ||
      shape.fingerprint_bits > kMaxFingerprintBits || bytes.size() < shape.bytes()) {
    throw InvalidArgument("cuckoo table: its bytes do not match its shape");
  }
  for (std::uint32_t j = 0; j < kSlotsPerBucket; ++j) {
    low_ |= static_cast<unsigned __int128>(1) << (j * shape.fingerprint_bits);
  }
  high_ = low_ << (shape.fingerprint_bits - 1);
  narrow_ = shape.fingerprint_bits <= kNarrowBits;
}

// Whether a slot of the bucket holds the fingerprint: for short fingerprints all four lanes at
// once (a lane of bucket XOR fingerprint is zero; the borrow test is exact for "any lane").
__attribute__((always_inline)) inline bool Table::holds(std::uint64_t bucket,
                                                        std::uint32_t fingerprint) const noexcept {
  const std::uint32_t bucket_bits = kSlotsPerBucket * shape_.fingerprint_bits;
  const std::uint64_t bit = bucket * bucket_bits;
  const std::uint8_t* at = bytes_ + bit / 8;
  if (narrow_) {
    const auto low = static_cast<std::uint64_t>(low_);
    const std::uint64_t lanes = (load_be64(at) << (bit % 8)) >> (64 - bucket_bits);
    const std::uint64_t x = lanes ^ (fingerprint * low);
    return ((x - low) & ~x & static_cast<std::uint64_t>(high_)) != 0;
  }
  const unsigned __int128 word =
      (static_cast<unsigned __int128>(load_be64(at)) << 64) | load_be64(at + 8);
  const unsigned __int128 x = ((word << (bit % 8)) >> (128 - bucket_bits)) ^ (fingerprint * low_);
  return ((x - low_) & ~x & high_) != 0;
}

std::uint32_t Table::slot(std::uint64_t index) const noexcept {
  const std::uint64_t bit = index * shape_.fingerprint_bits;
  return static_cast<std::uint32_t>((load_be64(bytes_ + bit / 8) << (bit % 8)) >>
                                    (64 - shape_.fingerprint_bits));
}

void Table::set_slot(std::uint64_t index, std::uint32_t value) noexcept {
  const std::uint64_t bit = index * shape_.fingerprint_bits;
  std::uint8_t* at = bytes_ + bit / 8;
  const unsigned shift = 64 - shape_.fingerprint_bits - static_cast<unsigned>(bit % 8);
  const std::uint64_t word = load_be64(at);
  store_be64(at, (word & ~(mask_ << shift)) | (std::uint64_t{value} << shift));
}

// The first slot of the bucket (slot 0 is its top lane) holding `fingerprint` (0: an empty
// one), or -1: the lanes equal to it flagged exactly (no borrow between lanes: each lane's low
// bits plus all ones below its top bit cannot carry out of it), the topmost flag taken.
int Table::find(std::uint64_t bucket, std::uint32_t fingerprint) const noexcept {
  const std::uint32_t f = shape_.fingerprint_bits;
  const std::uint32_t bucket_bits = kSlotsPerBucket * f;
  const std::uint64_t bit = bucket * bucket_bits;
  const std::uint8_t* at = bytes_ + bit / 8;
  int lane = -1;
  if (narrow_) {
    const auto low = static_cast<std::uint64_t>(low_);
    const auto high = static_cast<std::uint64_t>(high_);
    const std::uint64_t rest = high - low;  // every lane's bits below its top
    const std::uint64_t x =
        ((load_be64(at) << (bit % 8)) >> (64 - bucket_bits)) ^ (fingerprint * low);
    const std::uint64_t zero = ~(((x & rest) + rest) | x | rest) & high;
    if (zero != 0) lane = (63 - __builtin_clzll(zero)) / static_cast<int>(f);
  } else {
    const unsigned __int128 rest = high_ - low_;
    const unsigned __int128 word =
        (static_cast<unsigned __int128>(load_be64(at)) << 64) | load_be64(at + 8);
    const unsigned __int128 x = ((word << (bit % 8)) >> (128 - bucket_bits)) ^ (fingerprint * low_);
    const unsigned __int128 zero = ~(((x & rest) + rest) | x | rest) & high_;
    const auto top = static_cast<std::uint64_t>(zero >> 64);
    const auto bottom = static_cast<std::uint64_t>(zero);
    if (top != 0) {
      lane = (127 - __builtin_clzll(top)) / static_cast<int>(f);
    } else if (bottom != 0) {
      lane = (63 - __builtin_clzll(bottom)) / static_cast<int>(f);
    }
  }
  return lane < 0 ? -1 : static_cast<int>(kSlotsPerBucket) - 1 - lane;
}

bool Table::put_in_empty(std::uint64_t bucket, std::uint32_t fingerprint) noexcept {
  const int empty = find(bucket, 0);
  if (empty < 0) return false;
  set_slot(bucket * kSlotsPerBucket + static_cast<std::uint64_t>(empty), fingerprint);
  return true;
}

bool Table::contains(const ItemHash& h) const noexcept {
  const Place p = place_of(h);
  return holds(p.first, p.fingerprint) || holds(p.second, p.fingerprint);
}

namespace {

// One bit at the bottom of each of a bucket's 4 lanes of F bits, the lanes `at` bits up.
template <typename Word, std::uint32_t F>
constexpr Word lanes_low(std::uint32_t at) noexcept {
  Word low = 0;
  for (std::uint32_t j = 0; j < kSlotsPerBucket; ++j) low |= Word{1} << (at + j * F);
  return low;
}

// Whether a lane of x under `high` (the lanes' top bits) is zero: exact for "any lane", as no
// borrow starts below the lowest zero lane.
template <typename Word>
__attribute__((always_inline)) inline bool any_zero_lane(Word x, Word low, Word high) noexcept {
  return ((x - low) & ~x & high) != 0;
}

// A bucket's bytes as a word in the machine's order: for F of 4, 8 or 16 every lane is whole
// bytes (or a nibble of one), so testing lanes for equality needs no byte swap, only (for 16)
// the fingerprint's.
template <typename Word>
Word load_native(const std::uint8_t* at) noexcept {
  Word value;
  std::memcpy(&value, at, sizeof value);
  return value;
}

// The first byte of bucket `bucket` of a table of F-bit fingerprints (bucket·4F/8 bits in).
template <std::uint32_t F>
__attribute__((always_inline)) inline const std::uint8_t* bucket_at(const std::uint8_t* bytes,
                                                                    std::uint64_t bucket) noexcept {
  return bytes + (F % 2 == 0 ? bucket * (F / 2) : (bucket * F) >> 1);
}

// Whether a slot of bucket `bucket` of a table of F-bit fingerprints holds `fingerprint`, all
// four lanes at once (as Table::holds, its shifts constants). The bucket is left at the top of
// the word read: the bits below it are never borrowed from, so they need no masking.
template <std::uint32_t F>
__attribute__((always_inline)) inline bool holds_of(const std::uint8_t* bytes, std::uint64_t bucket,
                                                    std::uint32_t fingerprint) noexcept {
  constexpr std::uint32_t kBucketBits = kSlotsPerBucket * F;
  // An odd F starts every other bucket 4 bits into its byte.
  const unsigned shift = F % 2 == 0 ? 0 : static_cast<unsigned>(bucket & 1) * 4;
  const std::uint8_t* at = bucket_at<F>(bytes, bucket);
  if constexpr (F == 16) {
    constexpr std::uint64_t kLow = lanes_low<std::uint64_t, F>(0);
    // Hidden from GCC, which would otherwise spread the fingerprint by 6 shifts and adds where
    // one multiplication does.
    std::uint64_t low = kLow;
    asm("" : "+r"(low));
    const auto lane = static_cast<std::uint16_t>(fingerprint);
    const std::uint64_t x =
        load_native<std::uint64_t>(at) ^
        ((std::endian::native == std::endian::little ? __builtin_bswap16(lane) : lane) * low);
    return any_zero_lane(x, kLow, kLow << (F - 1));
  } else if constexpr (F <= kNarrowBits) {
    constexpr std::uint64_t kLow = lanes_low<std::uint64_t, F>(64 - kBucketBits);
    const std::uint64_t x = (load_be64(at) << shift) ^ (fingerprint * kLow);
    return any_zero_lane(x, kLow, kLow << (F - 1));
  } else {
    constexpr unsigned __int128 kLow = lanes_low<unsigned __int128, F>(128 - kBucketBits);
    const unsigned __int128 word =
        (static_cast<unsigned __int128>(load_be64(at)) << 64) | load_be64(at + 8);
    const unsigned __int128 x = (word << shift) ^ (fingerprint * kLow);
    return any_zero_lane(x, kLow, kLow << (F - 1));
  }
}

// holds_of for both buckets. For F of 4 and 8 a bucket is 16 or 32 bits: both buckets' lanes
// fit one word and one test.
template <std::uint32_t F>
__attribute__((always_inline)) inline bool holds_either_of(const std::uint8_t* bytes,
                                                           std::uint64_t first,
                                                           std::uint64_t second,
                                                           std::uint32_t fingerprint) noexcept {
  if constexpr (F == 4 || F == 8) {
    using Half = std::conditional_t<F == 4, std::uint16_t, std::uint32_t>;
    constexpr std::uint32_t kBucketBits = kSlotsPerBucket * F;
    constexpr std::uint64_t kLow =
        lanes_low<std::uint64_t, F>(0) * ((std::uint64_t{1} << kBucketBits) + 1);
    const std::uint64_t word =
        load_native<Half>(bucket_at<F>(bytes, first)) |
        (std::uint64_t{load_native<Half>(bucket_at<F>(bytes, second))} << kBucketBits);
    return any_zero_lane(word ^ (fingerprint * kLow), kLow, kLow << (F - 1));
  } else {
    return holds_of<F>(bytes, first, fingerprint) | holds_of<F>(bytes, second, fingerprint);
  }
}

template <std::uint32_t... F>
using Widths = std::integer_sequence<std::uint32_t, F...>;

}  // namespace

template <std::uint32_t F>
void Table::contains_many_of(std::span<const ItemHash> hashes,
                             std::uint8_t* present) const noexcept {
  const std::size_t n = hashes.size();
  const std::uint64_t buckets = shape_.buckets;
  const auto place = [buckets](const ItemHash& h) {
    std::uint32_t fingerprint = static_cast<std::uint32_t>(h.hi >> 32) >> (32 - F);
    fingerprint += fingerprint == 0 ? 1 : 0;
    const std::uint64_t first = fastrange32(static_cast<std::uint32_t>(h.lo >> 32), buckets);
    return Place{first, alternate_bucket(first, fingerprint, buckets), fingerprint};
  };
  // A local copy: present's bytes may alias the member, which would be reloaded per item.
  const std::uint8_t* const bytes = bytes_;
  const auto test = [bytes](std::uint64_t first, std::uint64_t second, std::uint32_t fingerprint) {
    return static_cast<std::uint8_t>(holds_either_of<F>(bytes, first, second, fingerprint));
  };
  if (shape_.bytes() <= kCachedBytes) {
    // Four items an iteration: the loop's own instructions are shared by them.
#pragma GCC unroll 4
    for (std::size_t i = 0; i < n; ++i) {
      const Place p = place(hashes[i]);
      present[i] = test(p.first, p.second, p.fingerprint);
    }
    return;
  }
  // The places of a group of items are worked out and their buckets asked of memory while the
  // group before is tested: two groups' misses in flight, each place computed once. Kept as
  // separate arrays: a Place copied whole through the stack stalls on store forwarding.
  constexpr std::size_t kGroup = 16;
  std::uint64_t first[2][kGroup], second[2][kGroup];
  std::uint32_t fingerprint[2][kGroup];
  const auto plan = [&](std::size_t start, std::size_t group) {
    const std::size_t end = std::min(n, start + kGroup);
    for (std::size_t i = start; i < end; ++i) {
      const Place p = place(hashes[i]);
      __builtin_prefetch(bucket_at<F>(bytes, p.first));
      __builtin_prefetch(bucket_at<F>(bytes, p.second));
      first[group][i - start] = p.first;
      second[group][i - start] = p.second;
      fingerprint[group][i - start] = p.fingerprint;
    }
  };
  plan(0, 0);
  for (std::size_t start = 0, group = 0; start < n; start += kGroup, group ^= 1) {
    if (start + kGroup < n) plan(start + kGroup, group ^ 1);
    const std::size_t end = std::min(n, start + kGroup);
    for (std::size_t i = start; i < end; ++i) {
      const std::size_t j = i - start;
      present[i] = test(first[group][j], second[group][j], fingerprint[group][j]);
    }
  }
}

void Table::contains_many(std::span<const ItemHash> hashes, std::uint8_t* present) const noexcept {
  // One loop per fingerprint width, chosen once per batch.
  const auto dispatch = [&]<std::uint32_t... F>(Widths<F...>) {
    (void)((shape_.fingerprint_bits == F ? (contains_many_of<F>(hashes, present), true) : false) ||
           ...);
  };
  dispatch(Widths<4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25,
                  26, 27, 28, 29, 30, 31, 32>{});
}

void Table::prefetch(const ItemHash& h) const noexcept {
  const Place p = place_of(h);
  const std::uint64_t bucket_bits = kSlotsPerBucket * shape_.fingerprint_bits;
  __builtin_prefetch(bytes_ + p.first * bucket_bits / 8);
  __builtin_prefetch(bytes_ + p.second * bucket_bits / 8);
}

Insert Table::insert(const ItemHash& h) noexcept {
  const Place p = place_of(h);
  if (holds(p.first, p.fingerprint) || holds(p.second, p.fingerprint)) return Insert::present;
  return insert_absent(h);
}

Insert Table::insert_absent(const ItemHash& h) noexcept {
  const Place p = place_of(h);
  if (put_in_empty(p.first, p.fingerprint) || put_in_empty(p.second, p.fingerprint)) {
    return Insert::added;
  }
  // Kicks: move a victim to its other bucket until one has room. The victim's slot follows
  // from the fingerprint in hand, so the walk is a function of the table's state. The walk is
  // planned first and written from its end back to its start, so that every fingerprint is in
  // some slot at every moment (a process killed mid-way over a mapped file loses none). A walk
  // moves each slot at most once: back in a bucket, it takes the next slot not moved yet.
  struct Move {
    std::uint64_t slot;
    std::uint32_t value;
  };
  std::array<Move, kMaxKicks> path;
  std::uint64_t bucket = (p.fingerprint & 1) != 0 ? p.second : p.first;
  std::uint32_t carried = p.fingerprint;
  for (std::uint32_t kick = 0; kick < kMaxKicks; ++kick) {
    // The victim's slot, or the next of its bucket that the walk has not moved yet.
    const std::uint32_t first_choice = victim_slot(carried, kick);
    std::uint64_t index = 0;
    bool free_slot = false;
    for (std::uint32_t j = 0; j < kSlotsPerBucket && !free_slot; ++j) {
      index = bucket * kSlotsPerBucket + ((first_choice + j) & (kSlotsPerBucket - 1));
      free_slot = true;
      for (std::uint32_t k = 0; k < kick; ++k) free_slot &= path[k].slot != index;
    }
    if (!free_slot) return Insert::full;
    path[kick] = {index, carried};
    carried = slot(index);
    bucket = alternate(bucket, carried);
    if (put_in_empty(bucket, carried)) {
      for (std::uint32_t k = kick + 1; k-- > 0;) set_slot(path[k].slot, path[k].value);
      return Insert::added;
    }
  }
  return Insert::full;
}

bool Table::remove(const ItemHash& h) noexcept {
  const Place p = place_of(h);
  for (const std::uint64_t bucket : {p.first, p.second}) {
    const int at = find(bucket, p.fingerprint);
    if (at >= 0) {
      set_slot(bucket * kSlotsPerBucket + static_cast<std::uint64_t>(at), 0);
      return true;
    }
  }
  return false;
}

std::uint32_t Table::count(const ItemHash& h) const noexcept {
  const Place p = place_of(h);
  std::uint32_t n = 0;
  for (std::uint32_t j = 0; j < kSlotsPerBucket; ++j) {
    n += slot(p.first * kSlotsPerBucket + j) == p.fingerprint ? 1 : 0;
    if (p.second != p.first) n += slot(p.second * kSlotsPerBucket + j) == p.fingerprint ? 1 : 0;
  }
  return n;
}

std::uint64_t Table::stored() const noexcept {
  std::uint64_t n = 0;
  for (std::uint64_t i = 0; i < shape_.slots(); ++i) n += slot(i) != 0 ? 1 : 0;
  return n;
}

}  // namespace redbloom::cuckoo_table
