#include "redbloom/filter.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "redbloom/error.hpp"
#include "redbloom/memory_store.hpp"
#include "redbloom/sizing.hpp"

namespace redbloom {
namespace {

// Items go to the store this many at a time: large enough to amortise a store's per-batch
// cost (a lock, a network round trip), small enough to bound how long a writer holds a lock.
constexpr std::size_t kChunk = 1024;

// Calls `apply(chunk, offset)` for consecutive chunks of items.
template <class Apply>
void for_each_chunk(std::span<const std::string_view> items, Apply&& apply) {
  for (std::size_t offset = 0; offset < items.size(); offset += kChunk) {
    apply(items.subspan(offset, std::min(kChunk, items.size() - offset)), offset);
  }
}

// Calls `apply(chunk, flags)` chunk by chunk with one output flag per item, written into
// `flags` when the caller gave room for them (or a scratch buffer when it gave none), and
// returns how many flags were set.
template <class Apply>
std::size_t for_each_flagged_chunk(std::span<const std::string_view> items,
                                   std::span<std::uint8_t> flags, Apply&& apply) {
  if (!flags.empty() && flags.size() < items.size()) {
    throw InvalidArgument("flag span holds " + std::to_string(flags.size()) + " entries for " +
                          std::to_string(items.size()) + " items");
  }
  std::array<std::uint8_t, kChunk> scratch;
  std::size_t ones = 0;
  for_each_chunk(items, [&](std::span<const std::string_view> chunk, std::size_t offset) {
    const std::span<std::uint8_t> out = flags.empty()
                                            ? std::span<std::uint8_t>(scratch.data(), chunk.size())
                                            : flags.subspan(offset, chunk.size());
    apply(chunk, out);
    ones += static_cast<std::size_t>(std::count(out.begin(), out.end(), std::uint8_t{1}));
  });
  return ones;
}

}  // namespace

Filter::Filter(std::unique_ptr<Store> store) : store_(std::move(store)) {
  if (!store_) throw InvalidArgument("Filter needs a store");
}

Filter Filter::in_memory(const FilterParams& params) {
  return Filter(std::make_unique<MemoryStore>(params));
}

Filter Filter::create_file(const std::string& path, const FilterParams& params, bool overwrite) {
  return Filter(FileStore::create(path, params, overwrite));
}

Filter Filter::open_file(const std::string& path, FileStore::Access access) {
  return Filter(FileStore::open(path, access));
}

bool Filter::add(std::string_view item) {
  return store_->test_and_set_one(item);
}

bool Filter::contains(std::string_view item) const {
  return store_->test_one(item);
}

std::size_t Filter::add_many(std::span<const std::string_view> items,
                             std::span<std::uint8_t> newly_added) {
  return for_each_flagged_chunk(items, newly_added,
                                [&](auto chunk, auto out) { store_->test_and_set(chunk, out); });
}

void Filter::insert_many(std::span<const std::string_view> items) {
  for_each_chunk(items,
                 [&](std::span<const std::string_view> chunk, std::size_t) { store_->set(chunk); });
}

std::size_t Filter::contains_many(std::span<const std::string_view> items,
                                  std::span<std::uint8_t> present) const {
  return for_each_flagged_chunk(items, present,
                                [&](auto chunk, auto out) { store_->test(chunk, out); });
}

FilterInfo Filter::info() const {
  FilterInfo info;
  info.params = params();
  info.location = store_->location();
  info.set_bits = store_->count_set_bits();
  const double m = static_cast<double>(info.params.total_bits());
  const double k = info.params.hashes;
  const double ones = static_cast<double>(info.set_bits);
  info.fill_ratio = ones / m;
  info.estimated_items = info.params.layout == Layout::blocked
                             ? blocked_estimated_items(m, k, ones)
                             : classic_estimated_items(m, k, ones);
  info.estimated_error_rate = info.params.layout == Layout::blocked
                                  ? blocked_false_positive_rate(m, k, info.estimated_items)
                                  : std::pow(info.fill_ratio, k);
  return info;
}

}  // namespace redbloom
