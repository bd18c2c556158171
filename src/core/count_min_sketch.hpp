// A Count-Min Sketch as RedisBloom 2.4 keeps it (`CMSk-TYPE`): `depth` rows of `width` 32-bit
// counters, row i indexed by 32-bit MurmurHash2 of the item with seed i modulo the width; an
// increment adds to one counter per row (saturating at 2^32 - 1), a query answers the smallest
// of them. The same hashing, saturation and merge rules as RedisBloom's, so counts are identical
// and a sketch moves between the two modules unchanged.
//
// Pure: no I/O; the counters come from the caller's allocator (a Redis module passes
// RedisModule_Alloc so that the server accounts for them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "core/filter_chain.hpp"

namespace redbloom::cms {

// What a counter saturates at: an increment reaching it is RedisBloom's "INCRBY overflow".
inline constexpr std::uint32_t kSaturated = UINT32_MAX;

struct Dimensions {
  std::uint64_t width = 0;
  std::uint64_t depth = 0;
};

// CMS.INITBYPROB's dimensions for an overestimation `error` (of the total count) and a
// probability `probability` of passing it, both in (0, 1), computed as RedisBloom does
// (ceil(2 / error) columns; ceil(log10(p) / log10(0.5)) rows, in single precision). nullopt
// when they are not positive or their product passes a signed 64-bit integer, which RedisBloom
// refuses too.
[[nodiscard]] std::optional<Dimensions> dimensions_for(double error, double probability) noexcept;

// Bytes of the counters of a width x depth sketch; nullopt when it overflows a size_t.
[[nodiscard]] std::optional<std::size_t> counter_bytes(std::uint64_t width,
                                                       std::uint64_t depth) noexcept;

class Sketch {
 public:
  // Zeroed counters; bad_alloc when they cannot be allocated, InvalidArgument for a zero or
  // overflowing dimension.
  Sketch(std::uint64_t width, std::uint64_t depth, ChainAllocator allocator);
  // Takes over `counters`, a block of counter_bytes(width, depth) from `allocator` (a loaded
  // value's).
  Sketch(std::uint64_t width, std::uint64_t depth, std::uint64_t count, void* counters,
         ChainAllocator allocator) noexcept;
  Sketch(const Sketch& other);
  Sketch& operator=(const Sketch&) = delete;
  ~Sketch();

  // Adds `by` to the item's counter in every row; returns the smallest of them afterwards
  // (kSaturated when every row's has saturated). The total count wraps as RedisBloom's does.
  std::uint32_t increment(std::string_view item, std::uint64_t by) noexcept;
  [[nodiscard]] std::uint32_t query(std::string_view item) const noexcept;
  // increment() and query() of each item in turn (out[i] their answers): the same results,
  // with the counters of the next items fetched from memory while the current ones are read.
  void increment_all(std::span<const std::string_view> items, std::span<const std::uint64_t> by,
                     std::span<std::uint32_t> out) noexcept;
  void query_all(std::span<const std::string_view> items,
                 std::span<std::uint32_t> out) const noexcept;

  // Sets this sketch to the weighted sum of `sources` (this one may be among them), all of
  // this sketch's dimensions. False, with nothing changed, when a counter would leave
  // [0, 2^32 - 1] or a total count [0, 2^63 - 1] (or an intermediate sum a signed 64-bit
  // integer), as RedisBloom checks.
  bool merge(std::span<const Sketch* const> sources, std::span<const long long> weights) noexcept;

  [[nodiscard]] std::uint64_t width() const noexcept { return width_; }
  [[nodiscard]] std::uint64_t depth() const noexcept { return depth_; }
  // The sum of every increment (RedisBloom's `count`).
  [[nodiscard]] std::uint64_t count() const noexcept { return count_; }
  // Row after row, each `width` counters.
  [[nodiscard]] std::span<const std::uint32_t> counters() const noexcept {
    return {counters_, static_cast<std::size_t>(width_ * depth_)};
  }
  // Active defragmentation: offers the counters' block to `move`, which returns the block the
  // bytes now live in (the old one then belongs to it) or nullptr to leave them.
  bool relocate(void* (*move)(void* context, void* block), void* context) noexcept;

 private:
  // Where the item's counter of row `row` is: its hash with seed `row`, mod the width.
  [[nodiscard]] inline std::size_t column(std::string_view item, std::uint64_t row) const noexcept;
  // Calls apply(i, positions) for each item in turn, positions its counters' indexes row after
  // row, computed (and their cache lines requested) a few items ahead.
  template <class Apply>
  void in_batches(std::span<const std::string_view> items, Apply apply) const noexcept;

  ChainAllocator allocator_;
  std::uint64_t width_;
  std::uint64_t depth_;
  // Lemire's fastmod constant for a width under 2^32: a 32-bit hash mod the width by two
  // multiplications instead of a division (a wider sketch's hash mod width is the hash).
  std::uint64_t inverse_ = 0;
  std::uint64_t count_ = 0;
  std::uint32_t* counters_ = nullptr;
};

}  // namespace redbloom::cms
