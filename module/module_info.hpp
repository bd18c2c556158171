// What the module tells INFO (its `redbloom` section): per filter type the filters held, the
// bytes of their bits and the blocks active defragmentation moved, and how often each BF.*
// command ran. The counters of filters are atomic: a big value may be freed on the server's
// lazy-free thread (UNLINK, FLUSHALL ASYNC).
#pragma once

#include <atomic>
#include <cstdint>

#include "core/filter_chain.hpp"
#include "redis_module_api.hpp"

namespace redbloom::module {

struct TypeStats {
  std::atomic<std::uint64_t> filters{0};
  std::atomic<std::uint64_t> bytes{0};  // as the allocator sized the blocks of their bits
  std::atomic<std::uint64_t> defrag_moved{0};
};
TypeStats& redbloom_stats() noexcept;    // redbloom's own type
TypeStats& redisbloom_stats() noexcept;  // RedisBloom's type
TypeStats& cuckoo_stats() noexcept;      // RedisBloom's cuckoo filter type
TypeStats& topk_stats() noexcept;        // RedisBloom's Top-K type (its buckets)

// Server memory for the bits of RedisBloom-format filters, counted in redisbloom_stats().
[[nodiscard]] ChainAllocator redisbloom_allocator() noexcept;
// The same for cuckoo filters, counted in cuckoo_stats().
[[nodiscard]] ChainAllocator cuckoo_allocator() noexcept;
// The same for Top-K buckets, counted in topk_stats().
[[nodiscard]] ChainAllocator topk_allocator() noexcept;
// Adds a block's size (as the server's allocator sized it) to, or takes it from, `stats`.
void count_block(TypeStats& stats, void* block, bool allocated) noexcept;

// A counter of calls, shown as `cmd_NAME` (its dots as underscores). `name` must outlive the
// module (a string literal).
std::uint64_t* command_counter(const char* name) noexcept;

bool register_info(RedisModuleCtx* ctx) noexcept;

// Active defragmentation's callback for a value of either type: offers its bits' blocks to
// the server, resuming where the last call stopped when the server's time slice ran out.
// Returns 1 while blocks remain, 0 when done.
int defrag_redisbloom_value(RedisModuleDefragCtx* ctx, RedisModuleString* key, void** value);
int defrag_redbloom_value(RedisModuleDefragCtx* ctx, RedisModuleString* key, void** value);
int defrag_cuckoo_value(RedisModuleDefragCtx* ctx, RedisModuleString* key, void** value);
int defrag_topk_value(RedisModuleDefragCtx* ctx, RedisModuleString* key, void** value);
// How many pieces a value has: the server defragments a value of more pieces than its
// active-defrag-max-scan-fields in later slices.
std::size_t redisbloom_free_effort(RedisModuleString* key, const void* value);
std::size_t redbloom_free_effort(RedisModuleString* key, const void* value);
std::size_t cuckoo_free_effort(RedisModuleString* key, const void* value);

}  // namespace redbloom::module
