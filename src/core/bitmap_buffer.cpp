#include "core/bitmap_buffer.hpp"

#include <cstring>
#include <new>

#include "core/bitmap_kernels.hpp"
#include "redbloom/error.hpp"

namespace redbloom {
namespace {

constexpr std::align_val_t kLineAlignment{64};  // what kernels::Bitmap asks of its words

}  // namespace

void BitmapBuffer::Words::operator()(std::uint64_t* words) const noexcept {
  ::operator delete(words, kLineAlignment);
}

BitmapBuffer::BitmapBuffer(const FilterParams& params) {
  validate(params);
  const std::size_t bytes = params.total_bytes();
  void* memory = ::operator new(bytes, kLineAlignment, std::nothrow);
  if (memory == nullptr) {
    throw StorageError("cannot allocate " + format_bytes(double(bytes)) +
                       " for a filter's bits in memory");
  }
  std::memset(memory, 0, bytes);
  words_.reset(static_cast<std::uint64_t*>(memory));
  bitmap_ = std::make_unique<kernels::Bitmap>(
      kernels::make_bitmap(words_.get(), params, /*private_memory=*/true));
}

BitmapBuffer::~BitmapBuffer() = default;

void BitmapBuffer::set(std::span<const std::string_view> items) {
  kernels::set(*bitmap_, items);
}

void BitmapBuffer::test(std::span<const std::string_view> items, std::uint8_t* present) const {
  kernels::test(*bitmap_, items, present);
}

std::span<std::uint8_t> BitmapBuffer::bytes() noexcept {
  return {reinterpret_cast<std::uint8_t*>(words_.get()), bitmap_->params.total_bytes()};
}

std::span<const std::uint8_t> BitmapBuffer::bytes() const noexcept {
  return {reinterpret_cast<const std::uint8_t*>(words_.get()), bitmap_->params.total_bytes()};
}

}  // namespace redbloom
