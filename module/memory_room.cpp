#include "memory_room.hpp"

#include <cstdlib>
#include <string>

#include "bloom_type.hpp"
#include "redbloom/error.hpp"
#include "redbloom/params.hpp"

namespace redbloom::module {

std::optional<std::uint64_t> maxmemory_room(RedisModuleCtx* ctx) noexcept {
  if (!settings().maxmemory_check) return std::nullopt;
  const int flags = RedisModule_GetContextFlags(ctx);
  if ((flags & module_api::kContextFlagMaxmemory) == 0) return std::nullopt;
  if ((flags & (module_api::kContextFlagReplicated | module_api::kContextFlagLoading)) != 0) {
    return std::nullopt;
  }
  RedisModuleServerInfoData* info = RedisModule_GetServerInfo(ctx, "memory");
  if (info == nullptr) return std::nullopt;
  const char* limit_text = RedisModule_ServerInfoGetFieldC(info, "maxmemory");
  const double limit = limit_text != nullptr ? std::strtod(limit_text, nullptr) : 0;
  RedisModule_FreeServerInfo(ctx, info);
  if (!(limit > 0)) return std::nullopt;
  // The share the server itself weighs against maxmemory (without its replication and AOF
  // buffers), as its OOM check does.
  const double used = static_cast<double>(RedisModule_GetUsedMemoryRatio()) * limit;
  return used >= limit ? 0 : static_cast<std::uint64_t>(limit - used);
}

void check_new_filter_fits(std::uint64_t need, std::optional<std::uint64_t> room) {
  if (!room || need <= *room) return;
  throw InvalidArgument("the filter would need " + format_bytes(static_cast<double>(need)) +
                        " for its bits, more than the " + format_bytes(static_cast<double>(*room)) +
                        " this server's maxmemory leaves free: nothing was created (ask for a "
                        "smaller capacity or a higher error rate, or give the server more "
                        "maxmemory)");
}

std::string growth_refusal(std::uint64_t room) {
  return "ERR filter cannot grow: its next sub-filter would need more than the " +
         format_bytes(static_cast<double>(room)) + " this server's maxmemory leaves free";
}

}  // namespace redbloom::module
