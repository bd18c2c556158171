// BF.* on redbloom's own plain filters (the library's and the CLI's: a metadata hash NAME and
// string partitions NAME:bits:{NAME:i}, src/core/redis_format.hpp), hashed on the server, so a
// client that speaks BF.* gets the answers the library gets instead of 0 for every item. Other
// redbloom objects at a BF.* key are named in an error, never answered as empty.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/redis_format.hpp"
#include "redis_module_api.hpp"

namespace redbloom::module {

// What a hash at a BF.* key holds, as far as redbloom knows it.
struct RedbloomHash {
  // "a redbloom plain filter (…)", "a redbloom windowed or growing filter", …; empty when the
  // hash is not redbloom's (then BF.* answers as RedisBloom does for a key of another type).
  std::string kind;
  // Set when BF.* can read and write it here; else `problem` says why not (an error reply).
  std::optional<redis::FilterMetadata> plain;
  std::string problem;
};

// Reads the hash at `key` (named `name`), which must be open and hold a hash.
[[nodiscard]] RedbloomHash inspect_hash(RedisModuleCtx* ctx, std::string_view name,
                                        RedisModuleKey* key);

// The error for a command that cannot apply to a redbloom object of that kind
// ("ERR 'urls' holds a redbloom plain filter …: BF.RESERVE <what>").
[[nodiscard]] std::string kind_error(std::string_view name, const RedbloomHash& hash,
                                     std::string_view what);

// Test-and-set (newly[i] = 1 when item i was new) or lookup (present[i] = 1) over the
// partitions. Every partition the items need is checked first (present, a string, of its sealed
// length), so a lost one is an error that names it and nothing is written. Returns the error
// text, or nullopt on success; `changed` says whether any bit changed.
[[nodiscard]] std::optional<std::string> plain_add(RedisModuleCtx* ctx, std::string_view name,
                                                   const redis::FilterMetadata& metadata,
                                                   std::span<const std::string_view> items,
                                                   std::uint8_t* newly, bool* changed);
[[nodiscard]] std::optional<std::string> plain_contains(RedisModuleCtx* ctx, std::string_view name,
                                                        const redis::FilterMetadata& metadata,
                                                        std::span<const std::string_view> items,
                                                        std::uint8_t* present);

}  // namespace redbloom::module
