// The filter data type: a FilterChain as a Redis value, with its persistence (RDB, AOF
// rewrite, DUMP/RESTORE, replication's full syncs), COPY and MEMORY USAGE; and the module's
// load-time settings.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/filter_chain.hpp"
#include "redis_module_api.hpp"

namespace redbloom::module {

struct Settings {
  // What BF.ADD, BF.MADD and BF.INSERT create a missing filter with (RedisBloom's defaults).
  std::uint64_t capacity = 100;
  double error_rate = 0.01;
  std::uint32_t expansion = 2;
  Layout layout = Layout::blocked;
  // No filter may grow past this (its bits, all links together): a typo in a capacity must
  // not take the server's memory.
  std::uint64_t max_filter_bytes = std::uint64_t{512} << 20;
  // A filter made or grown must fit in the room the server's maxmemory leaves (memory_room.hpp).
  bool maxmemory_check = true;
  // RedisBloom's CF_MAX_EXPANSIONS: adds to a cuckoo filter of this many sub-filters fail.
  long long cf_max_expansions = 32;
  // RedisBloom 8's cf-* settings: what CF.RESERVE takes when not told, and what CF.ADD and
  // CF.INSERT make at a missing key.
  long long cf_bucket_size = 2;
  long long cf_initial_size = 1024;
  long long cf_max_iterations = 20;
  long long cf_expansion = 1;
};
Settings& settings() noexcept;

// Memory the server accounts for (INFO memory, maxmemory).
[[nodiscard]] ChainAllocator server_allocator() noexcept;

// The type's name as TYPE shows it, and its RDB encoding version.
inline constexpr const char* kTypeName = "redbloomF";
inline constexpr int kEncodingVersion = 1;
// Dumps (SCANDUMP, AOF rewrites, RDB) move bits in pieces of at most this many bytes.
inline constexpr std::uint64_t kDumpChunkBytes = std::uint64_t{16} << 20;

bool register_type(RedisModuleCtx* ctx) noexcept;
[[nodiscard]] RedisModuleType* filter_type() noexcept;

// The server's accounting of one filter: the chain, its links and their bits.
[[nodiscard]] std::size_t memory_usage(const FilterChain& chain) noexcept;

}  // namespace redbloom::module
