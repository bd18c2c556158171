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

void require_flags(std::span<std::uint8_t> flags, std::size_t items) {
  if (!flags.empty() && flags.size() < items) {
    throw InvalidArgument("flag span holds " + std::to_string(flags.size()) + " entries for " +
                          std::to_string(items) + " items");
  }
}

std::size_t count_ones(std::span<const std::uint8_t> flags) {
  return static_cast<std::size_t>(std::count(flags.begin(), flags.end(), std::uint8_t{1}));
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
  std::uint8_t newly = 0;
  store_->test_and_set({&item, 1}, {&newly, 1});
  return newly != 0;
}

bool Filter::contains(std::string_view item) const {
  std::uint8_t present = 0;
  store_->test({&item, 1}, {&present, 1});
  return present != 0;
}

std::size_t Filter::add_many(std::span<const std::string_view> items,
                             std::span<std::uint8_t> newly_added) {
  require_flags(newly_added, items.size());
  std::array<std::uint8_t, kChunk> local;
  std::size_t added = 0;
  for_each_chunk(items, [&](std::span<const std::string_view> chunk, std::size_t offset) {
    const std::span<std::uint8_t> out = newly_added.empty()
                                            ? std::span<std::uint8_t>(local.data(), chunk.size())
                                            : newly_added.subspan(offset, chunk.size());
    store_->test_and_set(chunk, out);
    added += count_ones(out);
  });
  return added;
}

void Filter::insert_many(std::span<const std::string_view> items) {
  for_each_chunk(items,
                 [&](std::span<const std::string_view> chunk, std::size_t) { store_->set(chunk); });
}

std::size_t Filter::contains_many(std::span<const std::string_view> items,
                                  std::span<std::uint8_t> present) const {
  require_flags(present, items.size());
  std::array<std::uint8_t, kChunk> local;
  std::size_t found = 0;
  for_each_chunk(items, [&](std::span<const std::string_view> chunk, std::size_t offset) {
    const std::span<std::uint8_t> out = present.empty()
                                            ? std::span<std::uint8_t>(local.data(), chunk.size())
                                            : present.subspan(offset, chunk.size());
    store_->test(chunk, out);
    found += count_ones(out);
  });
  return found;
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
