// The floor of every BF.* implementation, for scripts/bench-module.sh: a module whose BF.MADD and
// BF.MEXISTS take the same arguments and reply as a filter would (an integer per item) without
// looking at a key or an item. What Redis spends reading the command, calling a module and
// writing the reply is all that is left. Built only for the benchmark, never installed.
#include <cstddef>

#include "redis_module_api.hpp"

namespace {

using namespace redbloom;

// BF.MADD / BF.MEXISTS key item [item ...]: 1 per item (added; present).
int reply_ones(RedisModuleCtx* ctx, RedisModuleString**, int argc) {
  if (argc < 3) return RedisModule_WrongArity(ctx);
  RedisModule_ReplyWithArray(ctx, argc - 2);
  for (int i = 2; i < argc; ++i) RedisModule_ReplyWithLongLong(ctx, 1);
  return module_api::kOk;
}

// BF.RESERVE key error_rate capacity: nothing to make.
int reply_ok(RedisModuleCtx* ctx, RedisModuleString**, int argc) {
  if (argc < 4) return RedisModule_WrongArity(ctx);
  return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

// BF.INFO key: no fields.
int reply_empty(RedisModuleCtx* ctx, RedisModuleString**, int) {
  return RedisModule_ReplyWithArray(ctx, 0);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int RedisModule_OnLoad(RedisModuleCtx* ctx,
                                                                         RedisModuleString**, int) {
  const char* missing = nullptr;
  if (!module_api::load(ctx, &missing)) return module_api::kErr;
  if (RedisModule_IsModuleNameBusy("bfnoop")) return module_api::kErr;
  RedisModule_SetModuleAttribs(ctx, "bfnoop", 1, module_api::kApiVersion1);
  const struct {
    const char* name;
    RedisModuleCmdFunc body;
    const char* flags;
  } commands[] = {
      {"bf.madd", reply_ones, "write deny-oom"},
      {"bf.mexists", reply_ones, "readonly fast"},
      {"bf.reserve", reply_ok, "write deny-oom"},
      {"bf.info", reply_empty, "readonly fast"},
  };
  for (const auto& command : commands) {
    if (RedisModule_CreateCommand(ctx, command.name, command.body, command.flags, 1, 1, 1) !=
        module_api::kOk) {
      return module_api::kErr;
    }
  }
  return module_api::kOk;
}
