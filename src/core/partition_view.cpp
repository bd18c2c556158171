#include "core/partition_view.hpp"

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

std::size_t PartitionView::add(std::span<const ItemHash> hashes, std::uint8_t* newly) noexcept {
  std::size_t fresh = 0;
  for (std::size_t i = 0; i < hashes.size(); ++i) {
    std::uint8_t missing = 0;
    probes(hashes[i], [&](std::uint64_t bit) {
      std::uint8_t& byte = bytes_[redis_byte_index(bit)];
      const std::uint8_t mask = redis_byte_mask(bit);
      missing |= (byte & mask) == 0 ? 1 : 0;
      byte |= mask;
    });
    newly[i] = missing;
    fresh += missing;
  }
  return fresh;
}

std::size_t PartitionView::contains(std::span<const ItemHash> hashes,
                                    std::uint8_t* present) const noexcept {
  std::size_t found = 0;
  for (std::size_t i = 0; i < hashes.size(); ++i) {
    bool all = true;
    // A classic lookup stops at the first clear bit (a blocked one reads its one line).
    probes(hashes[i], [&](std::uint64_t bit) {
      all = all && (bytes_[redis_byte_index(bit)] & redis_byte_mask(bit)) != 0;
      return all;
    });
    present[i] = all ? 1 : 0;
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
