// RB.CUCKOO: a unit of items of a cuckoo filter in Redis, on the keys and bytes the cuckoo
// script uses (src/redis/cuckoo_script.hpp), with the script's arguments, reply and errors, but
// run by the library's own table code on the link strings in place.
#pragma once

#include "redis_module_api.hpp"

namespace redbloom::module {

bool register_cuckoo_partition_commands(RedisModuleCtx* ctx) noexcept;

}  // namespace redbloom::module
