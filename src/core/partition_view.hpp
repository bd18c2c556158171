// One partition's bits in memory of any alignment: a Redis string's buffer, seen in place by a
// server-side module (RedisModule_StringDMA gives the bytes behind a packed header, never 8- or
// 64-byte aligned). The bits are in Redis bit order (bit_order.hpp), as in every store.
//
// Alignment contract of the two kernel families:
//   kernels::Bitmap (bitmap_kernels.hpp)  a whole filter, 64-byte aligned, accessed by words
//                                          and vectors with atomic stores: local stores, whose
//                                          mapped files other processes read at the same time.
//   PartitionView (here)                   one partition, any alignment, accessed by bytes (a
//                                          blocked item's line by unaligned words), not
//                                          atomically: one writer at a time (a Redis module
//                                          runs single-threaded). Same bits, same answers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "redbloom/hash.hpp"
#include "redbloom/params.hpp"

namespace redbloom {

class PartitionView {
 public:
  // `bytes` holds at least partition_bits / 8 bytes; `params` is the filter's (only its layout,
  // k and partition size matter here).
  PartitionView(std::uint8_t* bytes, const FilterParams& params) noexcept
      : bytes_(bytes),
        layout_(params.layout),
        hashes_(params.hashes),
        partition_bits_(params.partition_bits) {}

  // newly[i] = 1 iff some bit of item i was 0; sets them. Items in order, so the second of two
  // equal items is not new. Returns how many were new.
  std::size_t add(std::span<const ItemHash> hashes, std::uint8_t* newly) noexcept;
  // present[i] = 1 iff every bit of item i is set. Returns how many were.
  std::size_t contains(std::span<const ItemHash> hashes, std::uint8_t* present) const noexcept;
  // One item: true iff some bit of it was 0 (add, which sets them) / every bit is set.
  bool add_one(const ItemHash& h) noexcept;
  [[nodiscard]] bool contains_one(const ItemHash& h) const noexcept;
  // Requests item h's line (blocked) or bytes (classic) into the cache, for an add (`write`) or a
  // lookup a few items later: a batch over a partition larger than the caches then pays its
  // misses in parallel. add and contains over a batch do it themselves.
  void prefetch(const ItemHash& h, bool write) const noexcept;
  // How many items ahead a batch requests: enough items in between to cover a miss out of
  // memory, few enough that a classic item's k requests stay in flight.
  static constexpr std::size_t kPrefetchAhead = 8;
  // The same, hashing the items first (hash scheme 1).
  std::size_t add(std::span<const std::string_view> items, std::uint8_t* newly) noexcept;
  std::size_t contains(std::span<const std::string_view> items,
                       std::uint8_t* present) const noexcept;

 private:
  template <class Visit>
  void probes(const ItemHash& h, Visit&& visit) const;
  // A blocked item's 64-byte block: its probes as eight word masks (layout.hpp), each word
  // read and written with an unaligned 8-byte copy.
  [[nodiscard]] std::uint8_t* block_of(const ItemHash& h) const noexcept;

  std::uint8_t* bytes_;
  Layout layout_;
  std::uint32_t hashes_;
  std::uint64_t partition_bits_;
};

}  // namespace redbloom
