// Server-side hashing for redbloom's own filters: the plain-string partitions that the
// library, the CLI and servers without this module use (src/redis/format.hpp), read and
// written in place, same bits, both layouts.
#pragma once

#include "redis_module_api.hpp"

namespace redbloom::module {

// The version of the RB.PART* protocol, answered by RB.VERSION (clients detect the module
// with it).
inline constexpr long long kPartitionProtocolVersion = 1;

bool register_partition_commands(RedisModuleCtx* ctx) noexcept;

}  // namespace redbloom::module
