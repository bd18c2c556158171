#include "core/partition_view.hpp"

#include <algorithm>
#include <cstring>

#include "core/bit_order.hpp"
#include "core/bitmap_kernels.hpp"
#include "core/kernel_parts.hpp"
#include "core/layout.hpp"

namespace redbloom {

template <class Visit>
void PartitionView::probes(const ItemHash& h, Visit&& visit) const {
  if (layout_ == Layout::blocked) {
    layout::blocked_probes(h, partition_bits_, hashes_, visit);
  } else {
    layout::classic_probes(h, partition_bits_, hashes_, visit);
  }
}

std::uint8_t* PartitionView::block_of(const ItemHash& h) const noexcept {
  return bytes_ + layout::blocked_block_of(h, partition_bits_) * (kBlockBits / 8);
}

bool PartitionView::add_one(const ItemHash& h) noexcept {
  if (layout_ == Layout::blocked) {
    std::uint64_t mask[kBlockBits / 64];
    layout::blocked_word_masks(h.hi, hashes_, mask);
    std::uint8_t* block = block_of(h);
    std::uint64_t missing = 0;
    for (std::size_t w = 0; w < kBlockBits / 64; ++w) {
      std::uint64_t word = 0;
      std::memcpy(&word, block + 8 * w, 8);
      missing |= mask[w] & ~word;
      if ((mask[w] & ~word) != 0) {
        word |= mask[w];
        std::memcpy(block + 8 * w, &word, 8);
      }
    }
    return missing != 0;
  }
  bool missing = false;
  probes(h, [&](std::uint64_t bit) {
    std::uint8_t& byte = bytes_[redis_byte_index(bit)];
    const std::uint8_t mask = redis_byte_mask(bit);
    missing = missing || (byte & mask) == 0;
    byte |= mask;
  });
  return missing;
}

bool PartitionView::contains_one(const ItemHash& h) const noexcept {
  if (layout_ == Layout::blocked) {
    std::uint64_t mask[kBlockBits / 64];
    layout::blocked_word_masks(h.hi, hashes_, mask);
    const std::uint8_t* block = block_of(h);
    std::uint64_t missing = 0;
    for (std::size_t w = 0; w < kBlockBits / 64; ++w) {
      std::uint64_t word = 0;
      std::memcpy(&word, block + 8 * w, 8);
      missing |= mask[w] & ~word;
    }
    return missing == 0;
  }
  bool all = true;
  // A classic lookup stops at the first clear bit.
  probes(h, [&](std::uint64_t bit) {
    all = all && (bytes_[redis_byte_index(bit)] & redis_byte_mask(bit)) != 0;
    return all;
  });
  return all;
}

void PartitionView::prefetch(const ItemHash& h, bool write) const noexcept {
  // __builtin_prefetch takes its read/write argument as a constant.
  const auto request = [write](const void* address) {
    write ? __builtin_prefetch(address, 1, 3) : __builtin_prefetch(address, 0, 3);
  };
  if (layout_ == Layout::blocked) {
    // A line at any alignment may straddle two cache lines.
    request(block_of(h));
    request(block_of(h) + kBlockBits / 8 - 1);
  } else {
    // k lines an item, into L2 only: more in flight than L1's fill buffers track.
    probes(h, [&](std::uint64_t bit) { __builtin_prefetch(bytes_ + redis_byte_index(bit), 0, 1); });
  }
  // GCC drops calls to a function of prefetches alone, which it takes for one without effects;
  // an empty volatile asm is an effect it keeps.
  asm volatile("");
}

namespace {

// out[i] = answer(item i) for the items in order, each item's bits requested
// kPrefetchAhead items before its turn. Returns how many answered true.
template <class Answer>
std::size_t each_ahead(const PartitionView& view, std::span<const ItemHash> hashes, bool write,
                       std::uint8_t* out, Answer&& answer) {
  std::size_t count = 0;
  kernels::parts::ahead_pipeline<PartitionView::kPrefetchAhead>(
      hashes.size(),
      [&](std::size_t i) {
        view.prefetch(hashes[i], write);
        return i;
      },
      [&](std::size_t i, std::size_t) {
        out[i] = answer(hashes[i]) ? 1 : 0;
        count += out[i];
      });
  return count;
}

// Items hashed a chunk at a time (kernels::hash_items), each chunk then given to `batch`.
template <class Batch>
std::size_t hashed_in_chunks(std::span<const std::string_view> items, Batch&& batch) {
  constexpr std::size_t kChunk = 256;
  ItemHash hashes[kChunk];
  std::size_t count = 0;
  for (std::size_t at = 0; at < items.size(); at += kChunk) {
    const std::size_t n = std::min(kChunk, items.size() - at);
    kernels::hash_items(items.subspan(at, n), hashes);
    count += batch(std::span<const ItemHash>(hashes, n), at);
  }
  return count;
}

}  // namespace

std::size_t PartitionView::add(std::span<const ItemHash> hashes, std::uint8_t* newly) noexcept {
  return each_ahead(*this, hashes, true, newly, [this](const ItemHash& h) { return add_one(h); });
}

std::size_t PartitionView::contains(std::span<const ItemHash> hashes,
                                    std::uint8_t* present) const noexcept {
  return each_ahead(*this, hashes, false, present,
                    [this](const ItemHash& h) { return contains_one(h); });
}

std::size_t PartitionView::add(std::span<const std::string_view> items,
                               std::uint8_t* newly) noexcept {
  return hashed_in_chunks(items, [&](std::span<const ItemHash> hashes, std::size_t at) {
    return add(hashes, newly + at);
  });
}

std::size_t PartitionView::contains(std::span<const std::string_view> items,
                                    std::uint8_t* present) const noexcept {
  return hashed_in_chunks(items, [&](std::span<const ItemHash> hashes, std::size_t at) {
    return contains(hashes, present + at);
  });
}

}  // namespace redbloom
