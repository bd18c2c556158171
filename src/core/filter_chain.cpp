#include "core/filter_chain.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "redbloom/error.hpp"
#include "redbloom/sizing.hpp"

namespace redbloom {

namespace {

// A link is one in-memory filter: no Redis string holds it, but its partitions keep Redis's
// limit so that its bytes could be copied into one.
constexpr std::uint64_t kLinkPartitionBytes = kRedisMaxStringBits / 8;
// Link i's capacity is capacity x expansion^i: past this it no longer counts items exactly.
constexpr double kMaxLinkCapacity = 9007199254740992.0;  // 2^53

void* allocate_with_malloc(std::size_t bytes) {
  return std::malloc(bytes);
}
void release_with_free(void* pointer) {
  std::free(pointer);
}

// Scratch for one batch, per thread: kept between calls without costing every filter memory.
struct Scratch {
  std::vector<ItemHash> hashes;
  std::vector<std::uint32_t> order;
  std::vector<std::uint8_t> flags;
};
Scratch& scratch() {
  thread_local Scratch instance;
  return instance;
}

kernels::Bitmap bitmap_of(const FilterChain::Link& link) noexcept {
  return kernels::make_bitmap(link.words, link.params, /*private_memory=*/true);
}

// Drops from `order` the items `flags` marks present (flags[j] is for order[j]).
void keep_absent(std::vector<std::uint32_t>& order, const std::vector<std::uint8_t>& flags) {
  std::size_t kept = 0;
  for (std::size_t j = 0; j < order.size(); ++j) {
    order[kept] = order[j];
    kept += flags[j] == 0;
  }
  order.resize(kept);
}

void check_options(const ChainOptions& options) {
  if (options.capacity < 1) throw InvalidArgument("capacity must be at least 1");
  if (!(options.error_rate > 0.0 && options.error_rate < 1.0)) {
    // RedisBloom's BF.RESERVE takes (0, 1), so this filter does; its links are sized for at most
    // kMaxErrorRate (link_params).
    char shown[32];
    std::snprintf(shown, sizeof shown, "%g", options.error_rate);
    throw InvalidArgument(std::string("error rate ") + shown +
                          " is out of range: a RedisBloom-compatible filter (BF.RESERVE, "
                          "BF.INSERT) takes a rate above 0 and below 1, as RedisBloom does; rates "
                          "above 0.5 are sized as 0.5 (0.01 is common)");
  }
  if (options.expansion < 1 || options.expansion > kMaxExpansion) {
    throw InvalidArgument("expansion must be between 1 and " + std::to_string(kMaxExpansion));
  }
}

}  // namespace

ChainAllocator default_chain_allocator() noexcept {
  return {allocate_with_malloc, release_with_free};
}

FilterChain::FilterChain(const ChainOptions& options, ChainAllocator allocator, std::nullptr_t)
    : options_(options), allocator_(allocator) {
  check_options(options_);
}

FilterChain::FilterChain(const ChainOptions& options, ChainAllocator allocator)
    : FilterChain(options, allocator, nullptr) {
  double target = 0;
  const FilterParams first = link_params(0, &target);
  if (options_.max_bytes != 0 && first.total_bytes() > options_.max_bytes) {
    throw InvalidArgument("a filter for " + std::to_string(options_.capacity) +
                          " items at this error rate needs " + format_bytes(first.total_bytes()) +
                          ", over the limit of " + format_bytes(options_.max_bytes) +
                          " per filter");
  }
  add_link_with_params(first, target, 0);
}

FilterChain::~FilterChain() {
  release();
}

void FilterChain::release() noexcept {
  for (Link& link : links_) allocator_.release(link.allocation);
  links_.clear();
}

std::unique_ptr<FilterChain> FilterChain::clone() const {
  auto copy = std::make_unique<FilterChain>(options_, allocator_, nullptr);
  for (std::size_t i = 0; i < links_.size(); ++i) {
    const Link& link = links_[i];
    copy->add_link_with_params(link.params, link.target_error, link.items);
    std::memcpy(copy->links_.back().words, link.words, link.params.total_bytes());
  }
  return copy;
}

FilterParams FilterChain::link_params(std::size_t index, double* target_error) const {
  const double capacity = static_cast<double>(options_.capacity) *
                          std::pow(static_cast<double>(options_.expansion), double(index));
  if (!(capacity <= kMaxLinkCapacity)) {
    throw InvalidArgument("the next link would hold more than 2^53 items");
  }
  double target = options_.error_rate;
  if (options_.scaling) target *= std::pow(kTighteningRatio, double(index + 1));
  *target_error = target;
  // Sizing refuses rates above 0.5 (most absent items would read as present); a link sized
  // for 0.5 meets any higher target.
  const double rate = std::min(target, kMaxErrorRate);
  if (options_.layout == Layout::blocked) {
    try {
      return size_filter(std::floor(capacity), rate, Layout::blocked, kLinkPartitionBytes);
    } catch (const InvalidArgument&) {
      // Rates far below 1e-20 are out of a 512-bit block's reach: such a link is classic.
    }
  }
  return size_filter(std::floor(capacity), rate, Layout::classic, kLinkPartitionBytes);
}

FilterParams FilterChain::next_link_params(double* target_error) const {
  return link_params(links_.size(), target_error);
}

std::size_t FilterChain::relocate(std::size_t first, void* (*move)(void*, void*), void* context,
                                  bool (*stop)(void*), std::uint64_t* moved) noexcept {
  std::size_t i = first;
  for (; i < links_.size(); ++i) {
    if (stop != nullptr && i > first && stop(context)) break;
    Link& link = links_[i];
    const std::size_t bytes = link.params.total_bytes();
    // Offered only when the moved copy can keep its bits on a cache line: whole lines (an
    // allocator's block of such a size sits on one) or 63 spare bytes to shift them by.
    if (bytes % 64 != 0 && link.allocated_bytes < bytes + 63) continue;
    const std::size_t offset =
        static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(link.words) -
                                 reinterpret_cast<std::uintptr_t>(link.allocation));
    void* block = move(context, link.allocation);
    if (block == nullptr) continue;
    ++*moved;
    const auto address = reinterpret_cast<std::uintptr_t>(block);
    const std::uintptr_t aligned = (address + 63) & ~std::uintptr_t{63};
    if (aligned + bytes <= address + link.allocated_bytes) {
      // The kernels want the bits on a cache line: moved within the block when its start moved
      // off one.
      std::memmove(reinterpret_cast<void*>(aligned), static_cast<char*>(block) + offset, bytes);
      link.allocation = block;
      link.words = reinterpret_cast<std::uint64_t*>(aligned);
      continue;
    }
    // The new block is off a cache line with no room to shift: the bits go to a block of 63
    // bytes more. (Redis's allocator never returns null: it ends the server when out of memory.)
    void* wider = allocator_.allocate(bytes + 63);
    if (wider == nullptr) std::abort();
    const std::uintptr_t start =
        (reinterpret_cast<std::uintptr_t>(wider) + 63) & ~std::uintptr_t{63};
    std::memcpy(reinterpret_cast<void*>(start), static_cast<char*>(block) + offset, bytes);
    allocator_.release(block);
    link.allocation = wider;
    link.allocated_bytes = bytes + 63;
    link.words = reinterpret_cast<std::uint64_t*>(start);
  }
  return i;
}

FilterChain::Link& FilterChain::add_link_with_params(const FilterParams& params,
                                                     double target_error, std::uint64_t items) {
  validate(params, /*from_storage=*/true);
  const std::uint64_t bytes = params.total_bytes();
  if (options_.max_bytes != 0 && this->bytes() + bytes > options_.max_bytes) {
    throw InvalidArgument("the filter would grow to " + format_bytes(this->bytes() + bytes) +
                          ", over the limit of " + format_bytes(options_.max_bytes) +
                          " per filter");
  }
  // The kernels want the bits on a cache line. Allocators that place blocks of 64-byte
  // multiples on their own size (jemalloc, Redis's) give that as asked; others get 63 more.
  std::size_t allocated = bytes;
  void* allocation = allocator_.allocate(allocated);
  if (allocation != nullptr && reinterpret_cast<std::uintptr_t>(allocation) % 64 != 0) {
    allocator_.release(allocation);
    allocated = bytes + 63;
    allocation = allocator_.allocate(allocated);
  }
  if (allocation == nullptr) throw StorageError("out of memory for " + format_bytes(bytes));
  auto address = reinterpret_cast<std::uintptr_t>(allocation);
  auto* words = reinterpret_cast<std::uint64_t*>((address + 63) & ~std::uintptr_t{63});
  std::memset(words, 0, bytes);
  Link link;
  link.params = params;
  link.target_error = target_error;
  link.items = items;
  link.words = words;
  link.allocation = allocation;
  link.allocated_bytes = allocated;
  links_.push_back(link);
  return links_.back();
}

void FilterChain::grow() {
  if (links_.size() >= kMaxLinks) {
    throw InvalidArgument("the filter has " + std::to_string(kMaxLinks) +
                          " links, the most it may have");
  }
  double target = 0;
  const FilterParams next = next_link_params(&target);
  add_link_with_params(next, target, 0);
}

std::uint64_t FilterChain::items() const noexcept {
  std::uint64_t total = 0;
  for (const Link& link : links_) total += link.items;
  return total;
}

std::uint64_t FilterChain::capacity() const noexcept {
  std::uint64_t total = 0;
  for (const Link& link : links_) total += link.params.capacity;
  return total;
}

std::uint64_t FilterChain::bytes() const noexcept {
  std::uint64_t total = 0;
  for (const Link& link : links_) total += link.params.total_bytes();
  return total;
}

std::span<std::uint8_t> FilterChain::link_bytes(std::size_t i) noexcept {
  return {reinterpret_cast<std::uint8_t*>(links_[i].words), links_[i].params.total_bytes()};
}

std::span<const std::uint8_t> FilterChain::link_bytes(std::size_t i) const noexcept {
  return {reinterpret_cast<const std::uint8_t*>(links_[i].words), links_[i].params.total_bytes()};
}

std::span<const std::uint8_t> FilterChain::bytes_at(std::uint64_t offset,
                                                    std::uint64_t max) const noexcept {
  for (std::size_t i = 0; i < links_.size(); ++i) {
    const std::span<const std::uint8_t> link = link_bytes(i);
    if (offset < link.size()) return link.subspan(offset, std::min(max, link.size() - offset));
    offset -= link.size();
  }
  return {};
}

bool FilterChain::write_bytes_at(std::uint64_t offset,
                                 std::span<const std::uint8_t> bytes) noexcept {
  for (std::size_t i = 0; i < links_.size(); ++i) {
    const std::span<std::uint8_t> link = link_bytes(i);
    if (offset < link.size()) {
      if (bytes.size() > link.size() - offset) return false;
      std::memcpy(link.data() + offset, bytes.data(), bytes.size());
      return true;
    }
    offset -= link.size();
  }
  return false;
}

std::size_t FilterChain::add(std::span<const std::string_view> items, AddResult* results) {
  Scratch& work = scratch();
  const std::size_t n = items.size();
  work.hashes.resize(n);
  kernels::hash_items(items, work.hashes.data());
  std::size_t done = 0;
  while (done < n) {
    Link* newest = &links_.back();
    if (newest->items >= newest->params.capacity) {
      // Full: a link is added only when a new item arrives, so one item at a time.
      work.order.assign(1, static_cast<std::uint32_t>(done));
      bool present = false;
      for (const Link& link : links_) {
        std::uint8_t hit = 0;
        kernels::test(bitmap_of(link), work.hashes, work.order, &hit);
        if (hit != 0) {
          present = true;
          break;
        }
      }
      if (present) {
        results[done++] = AddResult::present;
        continue;
      }
      if (!options_.scaling) {
        results[done] = AddResult::full;
        return done;
      }
      try {
        grow();
      } catch (const InvalidArgument&) {
        results[done] = AddResult::over_limit;
        return done;
      }
      newest = &links_.back();
    }
    const std::size_t chunk = static_cast<std::size_t>(
        std::min<std::uint64_t>(n - done, newest->params.capacity - newest->items));
    work.order.resize(chunk);
    for (std::size_t j = 0; j < chunk; ++j) {
      work.order[j] = static_cast<std::uint32_t>(done + j);
      results[done + j] = AddResult::present;
    }
    // Absent from every older link first; the survivors are tested-and-set in the newest.
    work.flags.resize(chunk);
    for (std::size_t l = 0; l + 1 < links_.size() && !work.order.empty(); ++l) {
      kernels::test(bitmap_of(links_[l]), work.hashes, work.order, work.flags.data());
      keep_absent(work.order, work.flags);
    }
    kernels::test_and_set(bitmap_of(*newest), work.hashes, work.order, work.flags.data());
    for (std::size_t j = 0; j < work.order.size(); ++j) {
      if (work.flags[j] != 0) results[work.order[j]] = AddResult::added;
      newest->items += work.flags[j];
    }
    done += chunk;
  }
  return done;
}

void FilterChain::contains(std::span<const std::string_view> items, std::uint8_t* present) const {
  Scratch& work = scratch();
  const std::size_t n = items.size();
  work.hashes.resize(n);
  kernels::hash_items(items, work.hashes.data());
  work.order.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    work.order[i] = static_cast<std::uint32_t>(i);
    present[i] = 0;
  }
  work.flags.resize(n);
  // Newest first: in a grown chain most items live in the largest links.
  for (std::size_t l = links_.size(); l-- > 0 && !work.order.empty();) {
    kernels::test(bitmap_of(links_[l]), work.hashes, work.order, work.flags.data());
    for (std::size_t j = 0; j < work.order.size(); ++j) present[work.order[j]] = work.flags[j];
    keep_absent(work.order, work.flags);
  }
}

}  // namespace redbloom
