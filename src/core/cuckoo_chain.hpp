// One partition of a cuckoo filter as a chain of tables (links, oldest first): the rules every
// store applies inside its atomic step (a lock, a Redis script, a module command). Pure.
//
// An add tests every link first, so an item is stored once however often it is added (a
// repeated add cannot fill link after link). It goes into the newest link with room and then
// older ones, so links freed by removes are used again before the chain grows.
#pragma once

#include <cstdint>
#include <span>

#include "core/cuckoo_table.hpp"

namespace redbloom::cuckoo_chain {

enum class Add : std::uint8_t { added, present, full };

// `full`: every link refused it (the caller grows a link, or reports the filter full).
[[nodiscard]] Add add(std::span<cuckoo_table::Table> links, const ItemHash& h) noexcept;
// Stores one more copy of the item's fingerprint, held already or not (`added` or `full`): what
// keeps one copy per item of an exact set, whose items may share a fingerprint.
[[nodiscard]] Add insert(std::span<cuckoo_table::Table> links, const ItemHash& h) noexcept;
[[nodiscard]] bool contains(std::span<const cuckoo_table::Table> links, const ItemHash& h) noexcept;
// Clears one copy of the item's fingerprint, from the newest link that holds it.
bool remove(std::span<cuckoo_table::Table> links, const ItemHash& h) noexcept;
// Asks the cache for the item's buckets in every link.
void prefetch(std::span<const cuckoo_table::Table> links, const ItemHash& h) noexcept;
// Copies of the item's fingerprint over the links.
[[nodiscard]] std::uint32_t count(std::span<const cuckoo_table::Table> links,
                                  const ItemHash& h) noexcept;

}  // namespace redbloom::cuckoo_chain
