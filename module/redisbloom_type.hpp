// RedisBloom's Bloom filter type, `MBbloom--`, registered by redbloom.so so that a server
// started with it instead of RedisBloom loads RedisBloom's RDB files, AOF and SCANDUMP chunks
// unchanged, and saves them back in RedisBloom's encoding. The two modules are never loaded
// together: both define the type and the BF.* commands.
#pragma once

#include "core/redisbloom_chain.hpp"
#include "redis_module_api.hpp"

namespace redbloom::module {

inline constexpr const char* kRedisBloomTypeName = "MBbloom--";
// RedisBloom 2.x's newest encoding (with the expansion); 0 to 3 are read too.
inline constexpr int kRedisBloomEncodingVersion = 4;

bool register_redisbloom_type(RedisModuleCtx* ctx) noexcept;
[[nodiscard]] RedisModuleType* redisbloom_type() noexcept;

}  // namespace redbloom::module
