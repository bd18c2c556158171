// TDIGEST.*: RedisBloom's t-digest commands, with its arguments, replies and errors, over the
// `TDIS-TYPE` values of tdigest_type.hpp.
#pragma once

#include "redis_module_api.hpp"

namespace redbloom::module {

bool register_tdigest_commands(RedisModuleCtx* ctx) noexcept;

}  // namespace redbloom::module
