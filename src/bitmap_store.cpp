#include "redbloom/bitmap_store.hpp"

#include <cstring>

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

BitmapStore::BitmapStore(const FilterParams& params) : params_(params) {}
BitmapStore::~BitmapStore() = default;

void BitmapStore::attach(std::uint64_t* words) {
  bitmap_ = std::make_unique<kernels::Bitmap>(kernels::make_bitmap(words, params_));
}

void BitmapStore::test_and_set(std::span<const std::string_view> items,
                               std::span<std::uint8_t> newly_added) {
  require_room(items.size(), newly_added.size(), "test_and_set");
  kernels::test_and_set(*bitmap_, items, newly_added.data());
}

void BitmapStore::set(std::span<const std::string_view> items) {
  kernels::set(*bitmap_, items);
}

void BitmapStore::test(std::span<const std::string_view> items,
                       std::span<std::uint8_t> present) const {
  require_room(items.size(), present.size(), "test");
  kernels::test(*bitmap_, items, present.data());
}

bool BitmapStore::test_and_set_one(std::string_view item) {
  return bitmap_->test_and_set_one(bitmap_.get(), item);
}

bool BitmapStore::test_one(std::string_view item) const {
  return bitmap_->test_one(bitmap_.get(), item);
}

Store::OneItemCall BitmapStore::direct_test_one() const {
  return {bitmap_->test_one, bitmap_.get()};
}

Store::OneItemCall BitmapStore::direct_test_and_set_one() {
  return {bitmap_->test_and_set_one, bitmap_.get()};
}

std::uint64_t BitmapStore::count_set_bits() const {
  return kernels::popcount(bitmap_->words, params_.total_bits() / 64);
}

void BitmapStore::read_bytes(std::uint64_t partition, std::uint64_t offset,
                             std::span<std::uint8_t> out) const {
  check_byte_range(params_, partition, offset, out.size());
  std::memcpy(out.data(), bytes().data() + partition * params_.partition_bytes() + offset,
              out.size());
}

void BitmapStore::write_bytes(std::uint64_t partition, std::uint64_t offset,
                              std::span<const std::uint8_t> in) {
  check_byte_range(params_, partition, offset, in.size());
  auto* base = reinterpret_cast<std::uint8_t*>(bitmap_->words);
  std::memcpy(base + partition * params_.partition_bytes() + offset, in.data(), in.size());
}

std::span<const std::uint8_t> BitmapStore::bytes() const noexcept {
  return {reinterpret_cast<const std::uint8_t*>(bitmap_->words), params_.total_bytes()};
}

}  // namespace redbloom
