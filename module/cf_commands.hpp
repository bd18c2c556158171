// The CF.* commands, as RedisBloom 2.4 defines them (syntax, defaults, replies, error texts),
// over RedisBloom's cuckoo filter type (cuckoo_type.hpp).
#pragma once

#include "redis_module_api.hpp"

namespace redbloom::module {

bool register_cf_commands(RedisModuleCtx* ctx) noexcept;

}  // namespace redbloom::module
