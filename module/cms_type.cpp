#include "cms_type.hpp"

#include <memory>
#include <new>

#include "bloom_type.hpp"
#include "redisbloom_data_type.hpp"

namespace redbloom::module {

namespace {

using cms::Sketch;

RedisModuleType* g_type = nullptr;

void* allocate(std::size_t bytes) {
  return RedisModule_Alloc(bytes);
}

void release(void* pointer) {
  RedisModule_Free(pointer);
}

// Field for field what RedisBloom 2.4 writes: width, depth, the total count, then the
// counters row after row as one string (32-bit little-endian words).
void save(RedisModuleIO* rdb, void* value) {
  const auto& sketch = *static_cast<const Sketch*>(value);
  RedisModule_SaveUnsigned(rdb, sketch.width());
  RedisModule_SaveUnsigned(rdb, sketch.depth());
  RedisModule_SaveUnsigned(rdb, sketch.count());
  const auto counters = sketch.counters();
  RedisModule_SaveStringBuffer(rdb, reinterpret_cast<const char*>(counters.data()),
                               counters.size_bytes());
}

// The dimensions are checked before the counters are read, so a damaged header cannot ask for
// memory past the limit; the counters' length must be the one they give.
void* load(RedisModuleIO* rdb, int encver) {
  if (encver != kCmsEncodingVersion) {
    RedisModule_LogIOError(rdb, module_api::kLogWarning,
                           "redbloom: count-min sketch encoding version %d is unknown", encver);
    return nullptr;
  }
  const std::uint64_t width = RedisModule_LoadUnsigned(rdb);
  const std::uint64_t depth = RedisModule_LoadUnsigned(rdb);
  const std::uint64_t count = RedisModule_LoadUnsigned(rdb);
  if (RedisModule_IsIOError(rdb)) return nullptr;
  const auto bytes = cms::counter_bytes(width, depth);
  if (!bytes) {
    RedisModule_LogIOError(rdb, module_api::kLogWarning,
                           "redbloom: count-min sketch of width %llu and depth %llu refused",
                           static_cast<unsigned long long>(width),
                           static_cast<unsigned long long>(depth));
    return nullptr;
  }
  if (!cms_fits(width, depth)) {
    RedisModule_LogIOError(rdb, module_api::kLogWarning,
                           "redbloom: count-min sketch of %zu bytes refused: over the module's "
                           "memory limit per value (MAX_FILTER_BYTES)",
                           *bytes);
    return nullptr;
  }
  std::size_t length = 0;
  char* counters = RedisModule_LoadStringBuffer(rdb, &length);
  if (RedisModule_IsIOError(rdb) || counters == nullptr) {
    if (counters != nullptr) RedisModule_Free(counters);
    return nullptr;
  }
  if (length != *bytes) {
    RedisModule_Free(counters);
    RedisModule_LogIOError(rdb, module_api::kLogWarning,
                           "redbloom: count-min sketch refused: %zu bytes of counters where its "
                           "dimensions give %zu",
                           length, *bytes);
    return nullptr;
  }
  // The block came from RedisModule_Alloc: the sketch keeps it.
  auto* sketch = new (std::nothrow) Sketch(width, depth, count, counters, cms_allocator());
  if (sketch == nullptr) RedisModule_Free(counters);
  return sketch;
}

// As RedisBloom rewrites: RESTORE with the key's DUMP (no sequence of commands gives a merged
// sketch its counters).
void rewrite(RedisModuleIO* aof, RedisModuleString* key, void*) {
  RedisModuleCtx* ctx = RedisModule_GetThreadSafeContext(nullptr);
  RedisModuleCallReply* reply = RedisModule_Call(ctx, "DUMP", "s", key);
  if (reply != nullptr && RedisModule_CallReplyType(reply) == module_api::kCallReplyString) {
    std::size_t length = 0;
    const char* payload = RedisModule_CallReplyStringPtr(reply, &length);
    RedisModule_EmitAOF(aof, "RESTORE", "slb", key, 0LL, payload, length);
  } else {
    RedisModule_LogIOError(aof, module_api::kLogWarning,
                           "redbloom: a count-min sketch key could not be rewritten into the AOF");
  }
  if (reply != nullptr) RedisModule_FreeCallReply(reply);
  RedisModule_FreeThreadSafeContext(ctx);
}

// RedisBloom's figure (a pointer and eight bytes a counter), so MEMORY USAGE answers alike.
std::size_t mem_usage(const void* value) {
  const auto& sketch = *static_cast<const Sketch*>(value);
  return sizeof(void*) + static_cast<std::size_t>(sketch.width() * sketch.depth()) * 8;
}

void digest(RedisModuleDigest* md, void* value) {
  const auto& sketch = *static_cast<const Sketch*>(value);
  const std::uint64_t header[] = {sketch.width(), sketch.depth(), sketch.count()};
  RedisModule_DigestAddStringBuffer(md, reinterpret_cast<const char*>(header), sizeof header);
  const auto counters = sketch.counters();
  RedisModule_DigestAddStringBuffer(md, reinterpret_cast<const char*>(counters.data()),
                                    counters.size_bytes());
  RedisModule_DigestEndSequence(md);
}

void free_value(void* value) {
  delete static_cast<Sketch*>(value);
}

void* copy(RedisModuleString*, RedisModuleString*, const void* value) {
  try {
    return new Sketch(*static_cast<const Sketch*>(value));
  } catch (...) {
    return nullptr;  // COPY then fails; the source is untouched
  }
}

void* move_block(void* context, void* block) {
  return RedisModule_DefragAlloc(static_cast<RedisModuleDefragCtx*>(context), block);
}

// One block of counters: moved at once.
int defrag(RedisModuleDefragCtx* ctx, RedisModuleString*, void** value) {
  static_cast<Sketch*>(*value)->relocate(move_block, ctx);
  return 0;
}

}  // namespace

bool cms_fits(std::uint64_t width, std::uint64_t depth) noexcept {
  const auto bytes = cms::counter_bytes(width, depth);
  return bytes && *bytes <= settings().max_filter_bytes;
}

ChainAllocator cms_allocator() noexcept {
  return {allocate, release};
}

RedisModuleType* cms_type() noexcept {
  return g_type;
}

bool register_cms_type(RedisModuleCtx* ctx) noexcept {
  RedisModuleTypeMethods methods{};
  methods.rdb_load = load;
  methods.rdb_save = save;
  methods.aof_rewrite = rewrite;
  methods.mem_usage = mem_usage;
  methods.digest = digest;
  methods.free = free_value;
  methods.copy = copy;
  methods.defrag = defrag;
  g_type = register_redisbloom_data_type(ctx, kCmsTypeName, kCmsEncodingVersion, methods);
  return g_type != nullptr;
}

}  // namespace redbloom::module
