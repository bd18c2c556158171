// Registering one of RedisBloom's data types (MBbloom--, MBbloomCF, TDIS-TYPE) under its own
// name, so that RedisBloom's RDB files and DUMPs load here.
#pragma once

#include "redis_module_api.hpp"

namespace redbloom::module {

// The type, or nullptr, logged: the server refuses a name another module (RedisBloom itself)
// registered first, and the two modules are never loaded together.
[[nodiscard]] RedisModuleType* register_redisbloom_data_type(
    RedisModuleCtx* ctx, const char* name, int encoding_version,
    RedisModuleTypeMethods& methods) noexcept;

}  // namespace redbloom::module
