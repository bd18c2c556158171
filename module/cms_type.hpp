// RedisBloom's Count-Min Sketch type, `CMSk-TYPE`, registered by redbloom.so so that a RedisBloom
// data set with sketch keys loads unchanged (RDB, AOF, DUMP/RESTORE) and saves back in
// RedisBloom's encoding. The value is a core cms::Sketch, its counters in the server's memory.
#pragma once

#include <cstdint>

#include "core/count_min_sketch.hpp"
#include "redis_module_api.hpp"

namespace redbloom::module {

inline constexpr const char* kCmsTypeName = "CMSk-TYPE";
// RedisBloom 2.4's only sketch encoding.
inline constexpr int kCmsEncodingVersion = 0;

bool register_cms_type(RedisModuleCtx* ctx) noexcept;
[[nodiscard]] RedisModuleType* cms_type() noexcept;
// Server memory (RedisModule_Alloc) for a sketch's counters.
[[nodiscard]] ChainAllocator cms_allocator() noexcept;
// Whether the counters of a width x depth sketch fit the module's memory limit per value
// (MAX_FILTER_BYTES): the server ends itself when an allocation fails, so a size that a
// command or a damaged payload asks for is checked first.
[[nodiscard]] bool cms_fits(std::uint64_t width, std::uint64_t depth) noexcept;

}  // namespace redbloom::module
