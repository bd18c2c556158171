// Which filter a key holds, as its users may ask it: a filter deleted and made again at the
// same key (DEL + BF.RESERVE, or BF.ADD after an eviction) reads as an empty one, and only an
// id that no other filter of this server had tells a client that had it open. Values that the
// server loaded (RDB, a replica's full sync, RESTORE, COPY, the AOF, commands from the master)
// have id 0: their origin is not known, and a replica or a restarted server must not report
// a filter it kept as new.
#pragma once

#include <cstdint>

#include "redis_module_api.hpp"

namespace redbloom::module {

// Gives the value a client's command just made a fresh id (0 when the command came from the
// master or the AOF).
void note_created(RedisModuleCtx* ctx, const void* value);
// Called as a value is freed (maybe on the server's lazy-free thread).
void forget_value(const void* value) noexcept;
[[nodiscard]] std::uint64_t creation_id(const void* value) noexcept;

}  // namespace redbloom::module
