#include "redbloom/hash.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace redbloom {

bool is_known_hash_scheme(std::uint32_t scheme) noexcept {
  return scheme == kHashSchemeXxh3V1;
}

ItemHash hash_item(std::string_view item) noexcept {
  const XXH128_hash_t h = XXH3_128bits(item.data(), item.size());
  return {h.low64, h.high64};
}

void hash_items(std::span<const std::string_view> items, std::span<ItemHash> out) noexcept {
  for (std::size_t i = 0; i < items.size(); ++i) out[i] = hash_item(items[i]);
}

}  // namespace redbloom
