#include "core/exact_fingerprint.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace redbloom {

std::uint64_t exact_fingerprint(std::string_view item) noexcept {
  // A seed of its own keeps the fingerprint independent of the filter's XXH3-128 (seed 0):
  // the filter's false positives are then no likelier than any item to match here.
  constexpr std::uint64_t kSeed = 0x65786163745f7631ull;  // "exact_v1"
  return XXH3_64bits_withSeed(item.data(), item.size(), kSeed);
}

}  // namespace redbloom
