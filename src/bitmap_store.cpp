#include "redbloom/bitmap_store.hpp"

#include <cstring>
#include <vector>

#include "bitmap_kernels.hpp"
#include "parallel_runner.hpp"
#include "redbloom/error.hpp"
#include "redbloom/layout.hpp"

namespace redbloom {
namespace {

void require_room(std::size_t items, std::size_t out, const char* what) {
  if (out < items) {
    throw InvalidArgument(std::string(what) + ": output span holds " + std::to_string(out) +
                          " flags for " + std::to_string(items) + " items");
  }
}

// Below this, waking a helper (~10-50 us on these VMs) costs more than half the batch saves.
constexpr std::size_t kSplitItems = 2048;

// Thread t's share of an add batch: the items of partitions p with p mod threads == t, in
// batch order, and where each came from.
struct WriteShare {
  std::vector<std::string_view> items;
  std::vector<std::uint32_t> from;
};

WriteShare write_share(const FilterParams& params, std::span<const std::string_view> items,
                       unsigned t, unsigned threads) {
  WriteShare share;
  share.items.reserve(items.size() / threads + items.size() / 16);
  share.from.reserve(share.items.capacity());
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (layout::partition_of(hash_item(items[i]), params.partitions) % threads == t) {
      share.items.push_back(items[i]);
      share.from.push_back(static_cast<std::uint32_t>(i));
    }
  }
  return share;
}

}  // namespace

BitmapStore::BitmapStore(const FilterParams& params) : params_(params) {}
BitmapStore::~BitmapStore() = default;

void BitmapStore::use_threads(unsigned threads) {
  if (threads == 0) throw InvalidArgument("use_threads: at least one thread");
  runner_ = threads > 1 ? std::make_unique<ParallelRunner>(threads) : nullptr;
}

std::size_t BitmapStore::batch_items() const noexcept {
  return runner_ ? std::size_t{1} << 16 : 1024;
}

bool BitmapStore::splits(std::size_t items) const noexcept {
  return runner_ && items >= kSplitItems;
}

bool BitmapStore::splits_writes(std::size_t items) const noexcept {
  return splits(items) && params_.partitions > 1;
}

void BitmapStore::attach(std::uint64_t* words) {
  bitmap_ = std::make_unique<kernels::Bitmap>(kernels::make_bitmap(words, params_));
}

void BitmapStore::test_and_set(std::span<const std::string_view> items,
                               std::span<std::uint8_t> newly_added) {
  require_room(items.size(), newly_added.size(), "test_and_set");
  if (!splits_writes(items.size())) {
    kernels::test_and_set(*bitmap_, items, newly_added.data());
    return;
  }
  runner_->run([&](unsigned t) {
    const WriteShare share = write_share(params_, items, t, runner_->threads());
    std::vector<std::uint8_t> flags(share.items.size());
    kernels::test_and_set(*bitmap_, share.items, flags.data());
    for (std::size_t j = 0; j < flags.size(); ++j) newly_added[share.from[j]] = flags[j];
  });
}

void BitmapStore::set(std::span<const std::string_view> items) {
  if (!splits_writes(items.size())) {
    kernels::set(*bitmap_, items);
    return;
  }
  runner_->run([&](unsigned t) {
    kernels::set(*bitmap_, write_share(params_, items, t, runner_->threads()).items);
  });
}

void BitmapStore::test(std::span<const std::string_view> items,
                       std::span<std::uint8_t> present) const {
  require_room(items.size(), present.size(), "test");
  if (!splits(items.size())) {
    kernels::test(*bitmap_, items, present.data());
    return;
  }
  runner_->run([&](unsigned t) {
    const std::size_t threads = runner_->threads();
    const std::size_t begin = items.size() * t / threads;
    const std::size_t end = items.size() * (t + 1) / threads;
    kernels::test(*bitmap_, items.subspan(begin, end - begin), present.data() + begin);
  });
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
