// CMS.*: RedisBloom's Count-Min Sketch commands, with its arguments, replies and errors, over
// the `CMSk-TYPE` values of cms_type.hpp.
#pragma once

#include "redis_module_api.hpp"

namespace redbloom::module {

bool register_cms_commands(RedisModuleCtx* ctx) noexcept;

}  // namespace redbloom::module
