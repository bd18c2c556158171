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

}  // namespace redbloom::module
