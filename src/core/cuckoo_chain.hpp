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
enum class RemoveKnown : std::uint8_t { removed, ambiguous, absent };
// For an item known to hold a copy (an exact set said so): clears one copy when one link alone
// holds its fingerprint. When several links do, one of them holds another item's copy (links
// place and size fingerprints differently, so items can match in one link and not in
// another), and taking the wrong one would make that item absent: the copy is left
// (`ambiguous`: a stale fingerprint, a false positive). Inside one link, items matching one
// copy match every copy there, so any of them may go.
[[nodiscard]] RemoveKnown remove_known(std::span<cuckoo_table::Table> links,
                                       const ItemHash& h) noexcept;
// Asks the cache for the item's buckets in every link.
void prefetch(std::span<const cuckoo_table::Table> links, const ItemHash& h) noexcept;
// Copies of the item's fingerprint over the links.
[[nodiscard]] std::uint32_t count(std::span<const cuckoo_table::Table> links,
                                  const ItemHash& h) noexcept;

}  // namespace redbloom::cuckoo_chain
