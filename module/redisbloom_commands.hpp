// BF.* on RedisBloom's filters (the `MBbloom--` type): RedisBloom 2.4's answers, hashing and
// growth, so that data a server kept under RedisBloom reads and grows as it did.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "command_support.hpp"
#include "core/redisbloom_chain.hpp"

namespace redbloom::module {

// Which type a new filter gets: redbloom's own (`redbloomF`, the default) or RedisBloom's
// (`MBbloom--`, which RedisBloom can load again). BF.RESERVE and BF.INSERT take FORMAT; the
// DEFAULT_FORMAT load argument sets it for the others.
enum class FilterFormat : std::uint8_t { redbloom, redisbloom };
[[nodiscard]] std::optional<FilterFormat> parse_format(std::string_view word) noexcept;
FilterFormat& default_format() noexcept;

// A new RedisBloom-format filter at the empty key, sized as RedisBloom's BF.RESERVE sizes it;
// nullptr after an error reply (figures RedisBloom refuses, or over MAX_FILTER_BYTES).
redisbloom::Chain* redisbloom_create(RedisModuleCtx* ctx, const OpenKey& key,
                                     std::uint64_t capacity, double error, std::uint32_t expansion,
                                     bool scaling);

// The RedisBloom filter at the key; nullptr when it holds something else or nothing.
[[nodiscard]] redisbloom::Chain* redisbloom_at(const OpenKey& key) noexcept;

// BF.ADD (one integer: `array` false), BF.MADD and BF.INSERT on an existing filter.
int redisbloom_add(RedisModuleCtx* ctx, RedisModuleString* name, redisbloom::Chain& chain,
                   std::span<const std::string_view> items, bool array, const char* event);
// BF.EXISTS (`array` false) and BF.MEXISTS.
int redisbloom_exists(RedisModuleCtx* ctx, const redisbloom::Chain& chain,
                      std::span<const std::string_view> items, bool array);
// BF.DEBUG key: RedisBloom's lines, the items then one line per sub-filter.
int redisbloom_debug(RedisModuleCtx* ctx, const redisbloom::Chain& chain);
int redisbloom_card(RedisModuleCtx* ctx, const redisbloom::Chain& chain);
// BF.INFO key [field]: `field` nullptr for all of them.
int redisbloom_info(RedisModuleCtx* ctx, const redisbloom::Chain& chain,
                    const RedisModuleString* field);
int redisbloom_scandump(RedisModuleCtx* ctx, const redisbloom::Chain& chain, long long iterator);
// BF.LOADCHUNK of a chunk of bits into an existing filter.
int redisbloom_loadchunk(RedisModuleCtx* ctx, RedisModuleString* name, redisbloom::Chain& chain,
                         long long iterator, std::string_view data);
// BF.LOADCHUNK key 1 header at an empty key, with RedisBloom's header: a new filter of its
// shape, the bits to follow.
int redisbloom_create_from_header(RedisModuleCtx* ctx, RedisModuleString* name, const OpenKey& key,
                                  std::string_view header);

}  // namespace redbloom::module
