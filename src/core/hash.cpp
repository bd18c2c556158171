#include "redbloom/hash.hpp"

#include "core/item_hash_inline.hpp"

namespace redbloom {

bool is_known_hash_scheme(std::uint32_t scheme) noexcept {
  return scheme == kHashSchemeXxh3V1;
}

ItemHash hash_item(std::string_view item) noexcept {
  return detail::hash_inline(item);
}

}  // namespace redbloom
