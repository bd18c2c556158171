// BF.* on RedisBloom's filters (the `MBbloom--` type): RedisBloom 2.4's answers, hashing and
// growth, so that data a server kept under RedisBloom reads and grows as it did.
#pragma once

#include <span>
#include <string_view>

#include "command_support.hpp"
#include "core/redisbloom_chain.hpp"

namespace redbloom::module {

// The RedisBloom filter at the key; nullptr when it holds something else or nothing.
[[nodiscard]] redisbloom::Chain* redisbloom_at(const OpenKey& key) noexcept;

// BF.ADD (one integer: `array` false), BF.MADD and BF.INSERT on an existing filter.
int redisbloom_add(RedisModuleCtx* ctx, RedisModuleString* name, redisbloom::Chain& chain,
                   std::span<const std::string_view> items, bool array, const char* event);
// BF.EXISTS (`array` false) and BF.MEXISTS.
int redisbloom_exists(RedisModuleCtx* ctx, const redisbloom::Chain& chain,
                      std::span<const std::string_view> items, bool array);
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
