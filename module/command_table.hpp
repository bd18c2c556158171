// How the module registers every command: one table per family, each entry counted (INFO
// redbloom's cmd_* fields) and guarded (no C++ exception reaches the server).
#pragma once

#include <cstdint>
#include <span>

#include "command_support.hpp"
#include "module_info.hpp"

namespace redbloom::module {

using CommandBody = int (*)(RedisModuleCtx*, RedisModuleString**, int);

struct Command {
  const char* name;
  RedisModuleCmdFunc run;
  std::uint64_t** calls;
  const char* flags;
  int first_key, last_key, key_step;  // 0, 0, 0: no key, or keys named by getkeys-api
};

// A command body with its call counter and no exception let out.
template <CommandBody Body>
struct Counted {
  static inline std::uint64_t* calls = nullptr;
  static int run(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
    // A getkeys-api command is also called to name its keys: that is not a call to count.
    if (RedisModule_IsKeysPositionRequest(ctx) == 0) ++*calls;
    return guarded(ctx, [&] { return Body(ctx, argv, argc); });
  }
};

// A table entry for a command whose key (by default) is its first argument.
template <CommandBody Body>
constexpr Command counted(const char* name, const char* flags, int first_key = 1, int last_key = 1,
                          int key_step = 1) {
  return {name, Counted<Body>::run, &Counted<Body>::calls, flags, first_key, last_key, key_step};
}

// Registers the table's commands; false (logged) when the server refuses one, as when another
// module (RedisBloom) has it.
bool register_commands(RedisModuleCtx* ctx, std::span<const Command> commands) noexcept;

}  // namespace redbloom::module
