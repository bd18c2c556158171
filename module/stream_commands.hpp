// RB.STREAM: one partition and unit of items of a windowed or growing filter, on the keys and
// bytes of the stream script (src/redis/stream_script.hpp), hashing the items on the server.
#pragma once

#include "redis_module_api.hpp"

namespace redbloom::module {

bool register_stream_commands(RedisModuleCtx* ctx) noexcept;

}  // namespace redbloom::module
