// The library's cuckoo filter table (Fan et al., 2014), for filters that must forget one item:
// buckets of 4 slots, each slot an f-bit fingerprint packed back to back in Redis bit order
// (slot i is BITFIELD's `u<f> #i`: its bits from the most significant bit of byte i*f/8 on), so
// a mapped file, a Redis string and a Lua script's BITFIELD calls share the bytes. Unlike
// RedisBloom's layout (cuckoo_filter.hpp, fixed 8-bit fingerprints, 2 slots), f follows from the
// error rate: a lookup compares the item's fingerprint with 8 slots, so ε ≈ 8·α / 2^f at load α.
//
// The alternate bucket is (h(fp) − i) mod m, an involution for any bucket count m, so the
// table is sized to the capacity instead of a power of two. Kicks are deterministic (the
// victim follows from the table's state), so two copies given the same adds stay identical,
// and an insert that finds no room changes nothing: a full table refuses as it is. Every step after
// the item's hash is 32-bit arithmetic (mix32, fastrange32), which a Redis script can repeat
// exactly. Pure: no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "redbloom/hash.hpp"

namespace redbloom::cuckoo_table {

inline constexpr std::uint32_t kSlotsPerBucket = 4;
inline constexpr std::uint32_t kMinFingerprintBits = 4;
inline constexpr std::uint32_t kMaxFingerprintBits = 32;
// The load a table is sized for: 4-slot buckets fill to about 95% before kicks fail.
inline constexpr double kTargetLoad = 0.95;
inline constexpr std::uint32_t kMaxKicks = 500;
// Bytes past the slots, so that any bucket is read by one unaligned 16-byte load.
inline constexpr std::size_t kTailBytes = 16;
// Bucket numbers are 32-bit (fastrange32 of a 32-bit mix): a larger filter has partitions.
inline constexpr std::uint64_t kMaxBuckets = std::uint64_t{1} << 32;

// murmur3's 32-bit finalizer: the kick's victim.
[[nodiscard]] constexpr std::uint32_t mix32(std::uint32_t x) noexcept {
  x ^= x >> 16;
  x *= 0x85ebca6bu;
  x ^= x >> 13;
  x *= 0xc2b2ae35u;
  x ^= x >> 16;
  return x;
}
// (x * n) >> 32: x mapped to [0, n), n <= 2^32.
[[nodiscard]] constexpr std::uint64_t fastrange32(std::uint32_t x, std::uint64_t n) noexcept {
  return (std::uint64_t{x} * n) >> 32;
}
// The bucket a fingerprint moves to from `bucket`, and back: (h(fp) − bucket) mod buckets, with
// h(fp) one multiplication (murmur2's constant) mod 2^32, ranged by its high bits.
[[nodiscard]] constexpr std::uint64_t alternate_bucket(std::uint64_t bucket,
                                                       std::uint32_t fingerprint,
                                                       std::uint64_t buckets) noexcept {
  const std::uint64_t h = fastrange32(fingerprint * 0x5bd1e995u, buckets);
  const std::uint64_t difference = h - bucket;
  return h >= bucket ? difference : difference + buckets;
}
// The slot of its bucket the kick numbered `kick` takes for the fingerprint in hand.
[[nodiscard]] constexpr std::uint32_t victim_slot(std::uint32_t carried,
                                                  std::uint32_t kick) noexcept {
  return mix32(carried ^ (kick * 0x9E3779B9u)) >> 30;
}

// Where an item goes: its two buckets and its fingerprint (never 0, which marks an empty slot).
struct Place {
  std::uint64_t first, second;
  std::uint32_t fingerprint;
};

struct Shape {
  std::uint64_t buckets = 0;
  std::uint32_t fingerprint_bits = 0;
  // The slots' bytes and the tail.
  [[nodiscard]] std::size_t bytes() const noexcept;
  [[nodiscard]] std::uint64_t slots() const noexcept { return buckets * kSlotsPerBucket; }
  // The false-positive rate of a lookup with `items` stored: 1 − (1 − 2^−f)^(8·load).
  [[nodiscard]] double error_rate(std::uint64_t items) const noexcept;
};

// The table for `capacity` items at false-positive rate `error_rate` when full; throws
// InvalidArgument for a rate the fingerprints cannot reach (below 2e-9) or out of (0, 1), and
// for more than kMaxBuckets buckets.
[[nodiscard]] Shape shape_for(std::uint64_t capacity, double error_rate);
// The fingerprint bits `error_rate` needs (shape_for's), InvalidArgument as there.
[[nodiscard]] std::uint32_t fingerprint_bits_for(double error_rate);

// The item's place in a table of `shape`: the first bucket from the top 32 bits of lo
// (partitions use its low 32 bits), the fingerprint from the top f bits of hi. A script that is
// given those two 32-bit words finds the item in any table.
[[nodiscard]] Place place_of(const ItemHash& h, const Shape& shape) noexcept;

enum class Insert : std::uint8_t { added, present, full };

// A table over caller-owned bytes (shape.bytes() of them, zeroed for an empty table).
class Table {
 public:
  Table(const Shape& shape, std::span<std::uint8_t> bytes);

  // Test-and-set: `present` when a slot of the item's two buckets holds its fingerprint (then
  // nothing changes), else stored (with kicks when both buckets are full), or `full` with
  // nothing changed.
  Insert insert(const ItemHash& h) noexcept;
  // insert for an item known to be absent (its buckets were just tested): `added` or `full`.
  // For an item held already it stores one more copy.
  Insert insert_absent(const ItemHash& h) noexcept;
  // Asks the cache for the item's two buckets (a batch's later items, while one is worked on).
  void prefetch(const ItemHash& h) const noexcept;
  [[nodiscard]] bool contains(const ItemHash& h) const noexcept;
  // contains for each item into present[i] (1 or 0), the buckets of the items ahead fetched
  // meanwhile.
  void contains_many(std::span<const ItemHash> hashes, std::uint8_t* present) const noexcept;
  // Clears one slot holding the item's fingerprint; false when none does. Removing an item
  // never added can clear another item's fingerprint (a later false negative for it): callers
  // that must not allow that check an exact set first.
  bool remove(const ItemHash& h) noexcept;
  // How many slots of the item's buckets hold its fingerprint.
  [[nodiscard]] std::uint32_t count(const ItemHash& h) const noexcept;
  // Fingerprints stored (a full scan).
  [[nodiscard]] std::uint64_t stored() const noexcept;

  [[nodiscard]] const Shape& shape() const noexcept { return shape_; }

 private:
  [[nodiscard]] Place place_of(const ItemHash& h) const noexcept {
    return cuckoo_table::place_of(h, shape_);
  }
  [[nodiscard]] std::uint64_t alternate(std::uint64_t bucket,
                                        std::uint32_t fingerprint) const noexcept {
    return alternate_bucket(bucket, fingerprint, shape_.buckets);
  }
  [[nodiscard]] std::uint32_t slot(std::uint64_t index) const noexcept;
  void set_slot(std::uint64_t index, std::uint32_t value) noexcept;
  [[nodiscard]] int find(std::uint64_t bucket, std::uint32_t fingerprint) const noexcept;
  [[nodiscard]] bool holds(std::uint64_t bucket, std::uint32_t fingerprint) const noexcept;
  // contains_many for fingerprints of F bits: every shift and mask a constant.
  template <std::uint32_t F>
  void contains_many_of(std::span<const ItemHash> hashes, std::uint8_t* present) const noexcept;
  bool put_in_empty(std::uint64_t bucket, std::uint32_t fingerprint) noexcept;

  Shape shape_;
  std::uint8_t* bytes_;
  std::uint64_t mask_;
  // A bucket's slots as lanes of one word (64 bits for fingerprints of up to 14 bits, 128 up
  // to 30): one bit at the bottom (low_) and at the top (high_) of each lane. Zero: slot by slot.
  unsigned __int128 low_ = 0, high_ = 0;
  bool narrow_ = false;
};

}  // namespace redbloom::cuckoo_table
