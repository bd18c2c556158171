// Server-side hashing for redbloom's own filters: the plain-string partitions that the
// library, the CLI and servers without this module use (src/core/redis_format.hpp), read and
// written in place, same bits, both layouts.
#pragma once

#include "core/module_protocol.hpp"
#include "redis_module_api.hpp"

namespace redbloom::module {

// The version of the module's commands, answered by RB.VERSION (clients detect the module
// and what it offers with it).
inline constexpr long long kPartitionProtocolVersion = module_protocol::kVersion;

bool register_partition_commands(RedisModuleCtx* ctx) noexcept;

}  // namespace redbloom::module
