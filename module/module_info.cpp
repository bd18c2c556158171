#include "module_info.hpp"

#include <array>
#include <string>

#include "core/cuckoo_filter.hpp"
#include "core/redisbloom_chain.hpp"

namespace redbloom::module {

namespace {

struct CommandCount {
  const char* name = nullptr;
  std::uint64_t calls = 0;
};
// More than the module registers; a name past them gets a counter INFO does not show.
std::array<CommandCount, 96> g_commands;
std::uint64_t g_spare_counter = 0;

void* redisbloom_allocate(std::size_t bytes) {
  void* block = RedisModule_Alloc(bytes);
  count_block(redisbloom_stats(), block, true);
  return block;
}
void redisbloom_release(void* block) {
  count_block(redisbloom_stats(), block, false);
  RedisModule_Free(block);
}
void* cuckoo_allocate(std::size_t bytes) {
  void* block = RedisModule_Alloc(bytes);
  count_block(cuckoo_stats(), block, true);
  return block;
}
void cuckoo_release(void* block) {
  count_block(cuckoo_stats(), block, false);
  RedisModule_Free(block);
}

void info(RedisModuleInfoCtx* ctx, int /*for_crash_report*/) {
  RedisModule_InfoAddSection(ctx, "");
  const struct {
    const char* name;
    const TypeStats& stats;
  } types[] = {
      {"own", redbloom_stats()}, {"redisbloom", redisbloom_stats()}, {"cuckoo", cuckoo_stats()}};
  for (const auto& type : types) {
    const std::string prefix = type.name;
    RedisModule_InfoAddFieldULongLong(ctx, (prefix + "_filters").c_str(),
                                      type.stats.filters.load());
    RedisModule_InfoAddFieldULongLong(ctx, (prefix + "_bytes").c_str(), type.stats.bytes.load());
    RedisModule_InfoAddFieldULongLong(ctx, (prefix + "_defrag_moved").c_str(),
                                      type.stats.defrag_moved.load());
  }
  for (const CommandCount& command : g_commands) {
    if (command.name == nullptr) break;
    std::string field = std::string("cmd_") + command.name;
    for (char& c : field) c = c == '.' ? '_' : c;
    RedisModule_InfoAddFieldULongLong(ctx, field.c_str(), command.calls);
  }
}

struct DefragContext {
  RedisModuleDefragCtx* ctx;
};

void* move_block(void* context, void* block) {
  return RedisModule_DefragAlloc(static_cast<DefragContext*>(context)->ctx, block);
}

bool should_stop(void* context) {
  return RedisModule_DefragShouldStop(static_cast<DefragContext*>(context)->ctx) != 0;
}

// Runs `relocate(first, ...)` from the saved cursor; saves where it stopped.
template <class Relocate>
int defrag_in_slices(RedisModuleDefragCtx* ctx, std::size_t pieces, TypeStats& stats,
                     Relocate relocate) {
  unsigned long cursor = 0;
  // Without a cursor (the value defragmented at once) it starts at the first piece.
  if (RedisModule_DefragCursorGet(ctx, &cursor) != module_api::kOk) cursor = 0;
  DefragContext context{ctx};
  std::uint64_t moved = 0;
  const std::size_t next =
      relocate(static_cast<std::size_t>(cursor), move_block, &context, should_stop, &moved);
  stats.defrag_moved.fetch_add(moved, std::memory_order_relaxed);
  if (next >= pieces) return 0;
  RedisModule_DefragCursorSet(ctx, static_cast<unsigned long>(next));
  return 1;
}

}  // namespace

TypeStats& redbloom_stats() noexcept {
  static TypeStats stats;
  return stats;
}

TypeStats& redisbloom_stats() noexcept {
  static TypeStats stats;
  return stats;
}

TypeStats& cuckoo_stats() noexcept {
  static TypeStats stats;
  return stats;
}

ChainAllocator redisbloom_allocator() noexcept {
  return {redisbloom_allocate, redisbloom_release};
}

ChainAllocator cuckoo_allocator() noexcept {
  return {cuckoo_allocate, cuckoo_release};
}

void count_block(TypeStats& stats, void* block, bool allocated) noexcept {
  if (block == nullptr) return;
  const std::size_t size = RedisModule_MallocSize(block);
  if (allocated) {
    stats.bytes.fetch_add(size, std::memory_order_relaxed);
  } else {
    stats.bytes.fetch_sub(size, std::memory_order_relaxed);
  }
}

std::uint64_t* command_counter(const char* name) noexcept {
  for (CommandCount& command : g_commands) {
    if (command.name == nullptr) {
      command.name = name;
      return &command.calls;
    }
  }
  return &g_spare_counter;
}

bool register_info(RedisModuleCtx* ctx) noexcept {
  return RedisModule_RegisterInfoFunc(ctx, info) == module_api::kOk;
}

int defrag_redisbloom_value(RedisModuleDefragCtx* ctx, RedisModuleString*, void** value) {
  auto& chain = *static_cast<redisbloom::Chain*>(*value);
  return defrag_in_slices(ctx, chain.links().size(), redisbloom_stats(),
                          [&](auto... args) { return chain.relocate(args...); });
}

int defrag_redbloom_value(RedisModuleDefragCtx* ctx, RedisModuleString*, void** value) {
  auto& chain = *static_cast<FilterChain*>(*value);
  return defrag_in_slices(ctx, chain.links().size(), redbloom_stats(),
                          [&](auto... args) { return chain.relocate(args...); });
}

int defrag_cuckoo_value(RedisModuleDefragCtx* ctx, RedisModuleString*, void** value) {
  auto& filter = *static_cast<cuckoo::Filter*>(*value);
  return defrag_in_slices(ctx, filter.filters().size(), cuckoo_stats(),
                          [&](auto... args) { return filter.relocate(args...); });
}

std::size_t cuckoo_free_effort(RedisModuleString*, const void* value) {
  return static_cast<const cuckoo::Filter*>(value)->filters().size();
}

std::size_t redisbloom_free_effort(RedisModuleString*, const void* value) {
  return static_cast<const redisbloom::Chain*>(value)->links().size();
}

std::size_t redbloom_free_effort(RedisModuleString*, const void* value) {
  return static_cast<const FilterChain*>(value)->links().size();
}

}  // namespace redbloom::module
