#include "redbloom/bitmap_store.hpp"

#include "bitmap_kernels.hpp"
#include "redbloom/error.hpp"

namespace redbloom {
namespace {

void require_room(std::size_t items, std::size_t out, const char* what) {
  if (out < items) {
    throw InvalidArgument(std::string(what) + ": output span holds " + std::to_string(out) +
                          " flags for " + std::to_string(items) + " items");
  }
}

}  // namespace

void BitmapStore::test_and_set(std::span<const ItemHash> items,
                               std::span<std::uint8_t> newly_added) {
  require_room(items.size(), newly_added.size(), "test_and_set");
  kernels::test_and_set({words_, params_}, items, newly_added.data());
}

void BitmapStore::set(std::span<const ItemHash> items) {
  kernels::set({words_, params_}, items);
}

void BitmapStore::test(std::span<const ItemHash> items, std::span<std::uint8_t> present) const {
  require_room(items.size(), present.size(), "test");
  kernels::test({words_, params_}, items, present.data());
}

std::uint64_t BitmapStore::count_set_bits() const {
  return kernels::popcount(words_, params_.total_bits() / 64);
}

std::span<const std::uint8_t> BitmapStore::bytes() const noexcept {
  return {reinterpret_cast<const std::uint8_t*>(words_), params_.total_bytes()};
}

}  // namespace redbloom
