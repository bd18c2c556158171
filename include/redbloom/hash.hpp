// Item hashing: one 128-bit XXH3 hash per item; every probe position is derived from it
// (docs/design.md, "The bits"), so an item is read once however many bits it sets.
//
// The scheme is versioned: a filter records the id of the scheme that placed its bits, and
// a filter made with a scheme this build does not know is refused rather than misread.
#pragma once

#include <cstdint>
#include <string_view>

namespace redbloom {

struct ItemHash {
  std::uint64_t lo;  // XXH128_hash_t::low64
  std::uint64_t hi;  // XXH128_hash_t::high64
  friend bool operator==(const ItemHash&, const ItemHash&) = default;
};

// Scheme 1: XXH3-128 (seed 0, default secret) of the item's bytes; partition from the low
// 32 bits of `lo`; classic probes by enhanced double hashing over (lo, hi); blocked probes from
// `hi` by golden-ratio multiplication. Fixed forever once released: bytes -> bits must never
// change for scheme 1, on any platform.
inline constexpr std::uint32_t kHashSchemeXxh3V1 = 1;
inline constexpr std::uint32_t kCurrentHashScheme = kHashSchemeXxh3V1;

[[nodiscard]] bool is_known_hash_scheme(std::uint32_t scheme) noexcept;

[[nodiscard]] ItemHash hash_item(std::string_view item) noexcept;

}  // namespace redbloom
