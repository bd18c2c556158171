// Many items in one byte string, for commands that take a whole batch as one argument: each
// item is its length as 4 bytes little-endian, then its bytes. One argument instead of one per
// item spares the server an object per item when it parses the command. Or the items' hashes,
// 16 bytes each (XXH3-128's low then high half, little-endian): the server then neither
// receives nor hashes the items' bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "redbloom/hash.hpp"

namespace redbloom::packed {

inline constexpr std::size_t kHashedItemBytes = 16;

// Appends `item` to `out`.
void append(std::string& out, std::string_view item);
// Appends every item.
void append_all(std::string& out, std::span<const std::string_view> items);
// Views into `bytes` (which must outlive them), or nullopt when `bytes` ends inside an item.
[[nodiscard]] std::optional<std::vector<std::string_view>> split(std::string_view bytes);

// Appends `hash`'s 16 bytes to `out`.
void append_hash(std::string& out, const ItemHash& hash);
// Writes `hash`'s 16 bytes at `out`: a batch's hashes into a string sized once for them all.
void write_hash(char* out, const ItemHash& hash) noexcept;
// The hash whose 16 bytes start at `bytes`.
[[nodiscard]] ItemHash read_hash(const char* bytes) noexcept;
// out[i] = the hash at bytes + 16 i, for every i of `out` (bytes holds 16 x out.size()).
void read_hashes(const char* bytes, std::span<ItemHash> out) noexcept;

}  // namespace redbloom::packed
