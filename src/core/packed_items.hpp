// Many items in one byte string, for commands that take a whole batch as one argument: each
// item is its length as 4 bytes little-endian, then its bytes. One argument instead of one per
// item spares the server an object per item when it parses the command.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace redbloom::packed {

// Appends `item` to `out`.
void append(std::string& out, std::string_view item);
// Appends every item.
void append_all(std::string& out, std::span<const std::string_view> items);
// Views into `bytes` (which must outlive them), or nullopt when `bytes` ends inside an item.
[[nodiscard]] std::optional<std::vector<std::string_view>> split(std::string_view bytes);

}  // namespace redbloom::packed
