#include "local/bitmap_store.hpp"

#include <cstring>
#include <utility>
#include <vector>

#include "core/bitmap_kernels.hpp"
#include "local/parallel_runner.hpp"
#include "redbloom/error.hpp"

namespace redbloom {
namespace {

void require_room(std::size_t items, std::size_t out, const char* what) {
  if (out < items) {
    throw InvalidArgument(std::string(what) + ": output span holds " + std::to_string(out) +
                          " flags for " + std::to_string(items) + " items");
  }
}

// Thread t's equal part [begin, end) of `count` items.
std::pair<std::size_t, std::size_t> slice(std::size_t count, unsigned t, unsigned threads) {
  return {count * t / threads, count * (t + 1) / threads};
}

// Below this, a split's fixed costs (waking a sleeping helper, moving the items and their
// hashes between the cores' caches) outweigh half the batch's time.
constexpr std::size_t kSplitItems = 2048;

// The items' hashes, each thread hashing an equal part.
std::vector<ItemHash> hash_on_threads(ParallelRunner& runner,
                                      std::span<const std::string_view> items) {
  std::vector<ItemHash> hashes(items.size());
  runner.run([&](unsigned t) {
    const auto [begin, end] = slice(items.size(), t, runner.threads());
    kernels::hash_items(items.subspan(begin, end - begin), hashes.data() + begin);
  });
  return hashes;
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

// Adds split by partition, so a filter with one partition adds on one thread. Blocked adds
// stay on one thread as well: one line an item is too little work to pay for the split's
// hand-over, while classic inserts, k lines an item, gain (docs/benchmarks.md).
bool BitmapStore::splits_writes(std::size_t items) const noexcept {
  return splits(items) && params_.layout == Layout::classic && params_.partitions > 1;
}

void BitmapStore::attach(std::uint64_t* words, bool private_memory) {
  bitmap_ = std::make_unique<kernels::Bitmap>(kernels::make_bitmap(words, params_, private_memory));
}

void BitmapStore::add(std::span<const std::string_view> items,
                      std::span<std::uint8_t> newly_added) {
  require_room(items.size(), newly_added.size(), "test_and_set");
  if (!splits_writes(items.size())) {
    kernels::test_and_set(*bitmap_, items, newly_added.data());
    return;
  }
  const std::vector<ItemHash> hashes = hash_on_threads(*runner_, items);
  // Each thread flags its own items into its own row; they are copied into place after the
  // run, as bytes written next to another thread's would bounce their line between the cores.
  std::vector<std::vector<std::uint32_t>> owned(runner_->threads());
  std::vector<std::vector<std::uint8_t>> flags(owned.size());
  runner_->run([&](unsigned t) {
    kernels::take_share(*bitmap_, hashes, t, runner_->threads(), owned[t]);
    flags[t].resize(owned[t].size());
    kernels::test_and_set(*bitmap_, hashes, owned[t], flags[t].data());
  });
  for (std::size_t t = 0; t < owned.size(); ++t) {
    for (std::size_t j = 0; j < owned[t].size(); ++j) newly_added[owned[t][j]] = flags[t][j];
  }
}

void BitmapStore::load(std::span<const std::string_view> items) {
  if (!splits_writes(items.size())) {
    kernels::set(*bitmap_, items);
    return;
  }
  const std::vector<ItemHash> hashes = hash_on_threads(*runner_, items);
  runner_->run([&](unsigned t) {
    std::vector<std::uint32_t> owned;
    kernels::take_share(*bitmap_, hashes, t, runner_->threads(), owned);
    kernels::set(*bitmap_, hashes, owned);
  });
}

void BitmapStore::contains(std::span<const std::string_view> items,
                           std::span<std::uint8_t> present) const {
  require_room(items.size(), present.size(), "test");
  if (!splits(items.size())) {
    kernels::test(*bitmap_, items, present.data());
    return;
  }
  runner_->run([&](unsigned t) {
    const auto [begin, end] = slice(items.size(), t, runner_->threads());
    kernels::test(*bitmap_, items.subspan(begin, end - begin), present.data() + begin);
  });
}

bool BitmapStore::add_one(std::string_view item) {
  return bitmap_->test_and_set_one(bitmap_.get(), item);
}

bool BitmapStore::contains_one(std::string_view item) const {
  return bitmap_->test_one(bitmap_.get(), item);
}

Store::OneItemCall BitmapStore::direct_contains_one() const {
  return {bitmap_->test_one, bitmap_.get()};
}

Store::OneItemCall BitmapStore::direct_add_one() {
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
