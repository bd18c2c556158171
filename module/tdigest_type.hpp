// RedisBloom's t-digest type, `TDIS-TYPE`, registered by redbloom.so so that a RedisBloom data
// set with t-digest keys loads unchanged (RDB, AOF, DUMP/RESTORE) and saves back in RedisBloom's
// encoding. The value is a core tdigest::Digest, its centroids in the server's memory.
#pragma once

#include <cstddef>

#include "core/tdigest.hpp"
#include "redis_module_api.hpp"

namespace redbloom::module {

inline constexpr const char* kTDigestTypeName = "TDIS-TYPE";
// RedisBloom 2.4's only t-digest encoding.
inline constexpr int kTDigestEncodingVersion = 0;

bool register_tdigest_type(RedisModuleCtx* ctx) noexcept;
[[nodiscard]] RedisModuleType* tdigest_type() noexcept;
// Server memory (RedisModule_Alloc) for a digest's centroids.
[[nodiscard]] ChainAllocator tdigest_allocator() noexcept;
// Whether a digest of `compression` fits the module's memory limit per value
// (MAX_FILTER_BYTES): the server ends itself when an allocation fails, so a size that a
// command or a damaged payload asks for is checked first.
[[nodiscard]] bool tdigest_fits(long long compression) noexcept;

}  // namespace redbloom::module
