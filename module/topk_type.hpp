// RedisBloom's Top-K type, `TopK-TYPE`, registered by redbloom.so so that a RedisBloom data set
// with Top-K keys loads unchanged (RDB, AOF, DUMP/RESTORE) and saves back in RedisBloom's
// encoding. The value is a core topk::TopK, its buckets in the server's memory.
#pragma once

#include <cstdint>

#include "core/top_k.hpp"
#include "redis_module_api.hpp"

namespace redbloom::module {

inline constexpr const char* kTopKTypeName = "TopK-TYPE";
// RedisBloom 2.4's only Top-K encoding.
inline constexpr int kTopKEncodingVersion = 0;

bool register_topk_type(RedisModuleCtx* ctx) noexcept;
[[nodiscard]] RedisModuleType* topk_type() noexcept;
// Whether a Top-K of these figures fits the module's memory limit per value
// (MAX_FILTER_BYTES): the server ends itself when an allocation fails, so a size that a command
// or a damaged payload asks for is checked first.
[[nodiscard]] bool topk_fits(std::uint64_t k, std::uint64_t width, std::uint64_t depth) noexcept;

}  // namespace redbloom::module
