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

}  // namespace redbloom::detail
