#include "redisbloom_data_type.hpp"

namespace redbloom::module {

RedisModuleType* register_redisbloom_data_type(RedisModuleCtx* ctx, const char* name,
                                               int encoding_version,
                                               RedisModuleTypeMethods& methods) noexcept {
  methods.version = module_api::kTypeMethodVersion;
  RedisModuleType* type = RedisModule_CreateDataType(ctx, name, encoding_version, &methods);
  if (type == nullptr) {
    RedisModule_Log(ctx, module_api::kLogWarning,
                    "redbloom: cannot register the %s type: another module (RedisBloom?) has "
                    "it; redbloom.so replaces RedisBloom, load only one of them",
                    name);
  }
  return type;
}

void rewrite_by_restore(RedisModuleIO* aof, RedisModuleString* key, const char* what) noexcept {
  RedisModuleCtx* ctx = RedisModule_GetThreadSafeContext(nullptr);
  RedisModuleCallReply* reply = RedisModule_Call(ctx, "DUMP", "s", key);
  if (reply != nullptr && RedisModule_CallReplyType(reply) == module_api::kCallReplyString) {
    std::size_t length = 0;
    const char* payload = RedisModule_CallReplyStringPtr(reply, &length);
    RedisModule_EmitAOF(aof, "RESTORE", "slb", key, 0LL, payload, length);
  } else {
    RedisModule_LogIOError(aof, module_api::kLogWarning,
                           "redbloom: a %s key could not be rewritten into the AOF", what);
  }
  if (reply != nullptr) RedisModule_FreeCallReply(reply);
  RedisModule_FreeThreadSafeContext(ctx);
}

}  // namespace redbloom::module
