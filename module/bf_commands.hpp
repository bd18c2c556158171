// BF.* (RedisBloom 2.4's surface) and the packed-batch RB.MADD / RB.MEXISTS.
#pragma once

#include "redis_module_api.hpp"

namespace redbloom::module {
bool register_bf_commands(RedisModuleCtx* ctx) noexcept;
}
