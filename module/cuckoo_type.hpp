// RedisBloom's cuckoo filter type, `MBbloomCF`, registered by redbloom.so so that a server
// started with it instead of RedisBloom loads RedisBloom's RDB files, AOF and SCANDUMP chunks
// of cuckoo filters unchanged, and saves them back in RedisBloom's encoding.
#pragma once

#include "core/cuckoo_filter.hpp"
#include "redis_module_api.hpp"

namespace redbloom::module {

inline constexpr const char* kCuckooTypeName = "MBbloomCF";
// RedisBloom 2.x's newest cuckoo encoding (with deletes, bucket size, iterations, expansion
// and per-sub-filter bucket counts); older ones are read too.
inline constexpr int kCuckooEncodingVersion = 4;

bool register_cuckoo_type(RedisModuleCtx* ctx) noexcept;
[[nodiscard]] RedisModuleType* cuckoo_type() noexcept;

}  // namespace redbloom::module
