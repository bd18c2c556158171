#include "redis_module_api.hpp"

#define REDBLOOM_DEFINE_MODULE_FUNCTION(ret, name, args) ret(*RedisModule_##name) args = nullptr;
extern "C" {
REDBLOOM_MODULE_FUNCTIONS(REDBLOOM_DEFINE_MODULE_FUNCTION)
REDBLOOM_OPTIONAL_MODULE_FUNCTIONS(REDBLOOM_DEFINE_MODULE_FUNCTION)
}
#undef REDBLOOM_DEFINE_MODULE_FUNCTION

namespace redbloom::module_api {

bool load(RedisModuleCtx* ctx, const char** missing) noexcept {
  // The server puts its lookup function in the context's first word.
  using GetApi = int (*)(const char* name, void* out);
  const auto get_api = reinterpret_cast<GetApi>(reinterpret_cast<void**>(ctx)[0]);
#define REDBLOOM_LOAD_MODULE_FUNCTION(ret, name, args)                                      \
  if (get_api("RedisModule_" #name, reinterpret_cast<void*>(&RedisModule_##name)) != kOk) { \
    *missing = "RedisModule_" #name;                                                        \
    return false;                                                                           \
  }
  REDBLOOM_MODULE_FUNCTIONS(REDBLOOM_LOAD_MODULE_FUNCTION)
#undef REDBLOOM_LOAD_MODULE_FUNCTION
#define REDBLOOM_LOAD_OPTIONAL_MODULE_FUNCTION(ret, name, args)                             \
  if (get_api("RedisModule_" #name, reinterpret_cast<void*>(&RedisModule_##name)) != kOk) { \
    RedisModule_##name = nullptr;                                                           \
  }
  REDBLOOM_OPTIONAL_MODULE_FUNCTIONS(REDBLOOM_LOAD_OPTIONAL_MODULE_FUNCTION)
#undef REDBLOOM_LOAD_OPTIONAL_MODULE_FUNCTION
  return true;
}

}  // namespace redbloom::module_api
