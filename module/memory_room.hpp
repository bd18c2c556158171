// The room the server's maxmemory leaves for a new filter or a new sub-filter. Without this
// check one BF.RESERVE of a huge capacity takes the server past its limit (every later write
// then fails OOM, or an evicting policy empties other keys).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "redis_module_api.hpp"

namespace redbloom::module {

// Bytes maxmemory leaves free; nullopt when no limit applies: no maxmemory, the MAXMEMORY_CHECK
// load argument off, or a command the server must apply whatever its size (from the master,
// or loaded from the AOF).
[[nodiscard]] std::optional<std::uint64_t> maxmemory_room(RedisModuleCtx* ctx) noexcept;

// Throws InvalidArgument when `need` bytes of new bits do not fit in `room`.
void check_new_filter_fits(std::uint64_t need, std::optional<std::uint64_t> room);

// The error for a sub-filter refused because it would pass the room.
[[nodiscard]] std::string growth_refusal(std::uint64_t room);

}  // namespace redbloom::module
