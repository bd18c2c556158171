// TOPK.*: RedisBloom's Top-K commands, with its arguments, replies and errors, over the
// `TopK-TYPE` values of topk_type.hpp.
#pragma once

#include "redis_module_api.hpp"

namespace redbloom::module {

bool register_topk_commands(RedisModuleCtx* ctx) noexcept;

}  // namespace redbloom::module
