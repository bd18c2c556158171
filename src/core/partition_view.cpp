#include "core/partition_view.hpp"

#include <cstring>

#include "core/bit_order.hpp"
#include "core/item_hash_inline.hpp"
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

std::size_t PartitionView::add(std::span<const ItemHash> hashes, std::uint8_t* newly) noexcept {
  std::size_t fresh = 0;
  for (std::size_t i = 0; i < hashes.size(); ++i) {
    newly[i] = add_one(hashes[i]) ? 1 : 0;
    fresh += newly[i];
  }
  return fresh;
}

std::size_t PartitionView::contains(std::span<const ItemHash> hashes,
                                    std::uint8_t* present) const noexcept {
  std::size_t found = 0;
  for (std::size_t i = 0; i < hashes.size(); ++i) {
    present[i] = contains_one(hashes[i]) ? 1 : 0;
    found += present[i];
  }
  return found;
}

std::size_t PartitionView::add(std::span<const std::string_view> items,
                               std::uint8_t* newly) noexcept {
  std::size_t fresh = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const ItemHash h = detail::hash_inline(items[i]);
    fresh += add(std::span<const ItemHash>(&h, 1), newly + i);
  }
  return fresh;
}

std::size_t PartitionView::contains(std::span<const std::string_view> items,
                                    std::uint8_t* present) const noexcept {
  std::size_t found = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const ItemHash h = detail::hash_inline(items[i]);
    found += contains(std::span<const ItemHash>(&h, 1), present + i);
  }
  return found;
}

}  // namespace redbloom
