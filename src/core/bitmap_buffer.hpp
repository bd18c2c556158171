// A filter's bits in this process's heap, zeroed, for work done beside a store rather than in
// it: the Redis store builds a partition's bits here to send them as one delta, or reads a
// partition here to answer a batch of lookups at once. The bits are in Redis bit order.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "redbloom/params.hpp"

namespace redbloom {
namespace kernels {
struct Bitmap;
}

class BitmapBuffer {
 public:
  // Zeroed bits for `params` (validated). StorageError when the memory cannot be had.
  explicit BitmapBuffer(const FilterParams& params);
  ~BitmapBuffer();
  BitmapBuffer(const BitmapBuffer&) = delete;
  BitmapBuffer& operator=(const BitmapBuffer&) = delete;

  // Sets the items' bits.
  void set(std::span<const std::string_view> items);
  // present[i] = 1 iff every bit of items[i] is set.
  void test(std::span<const std::string_view> items, std::uint8_t* present) const;
  [[nodiscard]] std::span<std::uint8_t> bytes() noexcept;
  [[nodiscard]] std::span<const std::uint8_t> bytes() const noexcept;

 private:
  struct Words {
    void operator()(std::uint64_t* words) const noexcept;
  };
  std::unique_ptr<std::uint64_t, Words> words_;
  std::unique_ptr<kernels::Bitmap> bitmap_;
};

}  // namespace redbloom
