// The scheme-1 item hash, inlinable: the one definition both hash.cpp (the public
// hash_item) and the local kernels (which hash inside their prefetch pipeline) use.
#pragma once

#include <string_view>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "redbloom/hash.hpp"

namespace redbloom::detail {

inline ItemHash hash_inline(std::string_view item) noexcept {
  const XXH128_hash_t h = XXH3_128bits(item.data(), item.size());
  return {h.low64, h.high64};
}

// The same hash, inline only for items of up to 16 bytes (ids, integer keys), with longer ones
// hashed out of line by hash_item. For the one-item kernels: XXH3's paths for long inputs need
// many registers, and inlined they make every call save and restore them, short item or not.
// 8-byte items (64-bit ids) are tested first, with the length a constant (XXH3's two 4-byte
// reads become one), then 4 to 8 bytes, with the length range known to the compiler, so that
// XXH3's own dispatch by length folds away on those paths.
inline ItemHash hash_short_inline(std::string_view item) noexcept {
  if (item.size() == 8) [[likely]] {
    return hash_inline(std::string_view(item.data(), 8));
  }
  if (item.size() - 4 <= 4) [[likely]] {
    return hash_inline(item);
  }
  if (item.size() <= 16) [[likely]] {
    return hash_inline(item);
  }
  return hash_item(item);
}

}  // namespace redbloom::detail
