#include "topk_type.hpp"

#include <memory>
#include <new>
#include <string>

#include "bloom_type.hpp"
#include "module_info.hpp"
#include "redisbloom_data_type.hpp"

namespace redbloom::module {

namespace {

using topk::Saved;
using topk::TopK;

RedisModuleType* g_type = nullptr;

// Field for field what RedisBloom 2.4 writes: the figures, the buckets and the heap as raw
// arrays, then each heap entry's item with its terminating NUL.
void save(RedisModuleIO* rdb, void* value) {
  const Saved s = static_cast<TopK*>(value)->saved();
  RedisModule_SaveUnsigned(rdb, s.k);
  RedisModule_SaveUnsigned(rdb, s.width);
  RedisModule_SaveUnsigned(rdb, s.depth);
  RedisModule_SaveDouble(rdb, s.decay);
  RedisModule_SaveStringBuffer(rdb, s.buckets.data(), s.buckets.size());
  RedisModule_SaveStringBuffer(rdb, s.heap.data(), s.heap.size());
  for (const std::string& item : s.items) {
    RedisModule_SaveStringBuffer(rdb, item.data(), item.size());
  }
}

// A string field; false on a read error. Its length is checked by the caller against the
// figures before anything is sized from it.
bool load_string(RedisModuleIO* rdb, std::string& out) {
  std::size_t length = 0;
  char* bytes = RedisModule_LoadStringBuffer(rdb, &length);
  if (RedisModule_IsIOError(rdb) || bytes == nullptr) return false;
  out.assign(bytes, length);
  RedisModule_Free(bytes);
  return true;
}

void* fail(RedisModuleIO* rdb, const char* why) {
  RedisModule_LogIOError(rdb, module_api::kLogWarning, "redbloom: Top-K refused: %s", why);
  return nullptr;
}

// The figures are checked against the memory limit before the arrays are read, and the arrays
// against the figures before the heap's items, so a damaged payload cannot ask for memory.
void* load(RedisModuleIO* rdb, int encver) {
  if (encver != kTopKEncodingVersion) {
    RedisModule_LogIOError(rdb, module_api::kLogWarning,
                           "redbloom: Top-K encoding version %d is unknown", encver);
    return nullptr;
  }
  Saved s;
  s.k = RedisModule_LoadUnsigned(rdb);
  s.width = RedisModule_LoadUnsigned(rdb);
  s.depth = RedisModule_LoadUnsigned(rdb);
  s.decay = RedisModule_LoadDouble(rdb);
  if (RedisModule_IsIOError(rdb)) return nullptr;
  if (!topk_fits(s.k, s.width, s.depth)) {
    return fail(rdb,
                "its figures are past the module's memory limit per value "
                "(MAX_FILTER_BYTES) or out of range");
  }
  if (!load_string(rdb, s.buckets) || !load_string(rdb, s.heap)) return nullptr;
  if (s.buckets.size() != s.width * s.depth * topk::kBucketBytes ||
      s.heap.size() != s.k * topk::kHeapEntryBytes) {
    return fail(rdb, "its arrays do not match its figures");
  }
  s.items.resize(s.k);
  for (std::string& item : s.items) {
    if (!load_string(rdb, item)) return nullptr;
  }
  if (const std::string problem = TopK::problem(s); !problem.empty()) {
    return fail(rdb, problem.c_str());
  }
  try {
    auto* value = new TopK(TopK::restore(s, topk_allocator()));
    ++topk_stats().filters;
    return value;
  } catch (const std::exception& e) {
    return fail(rdb, e.what());
  }
}

void rewrite(RedisModuleIO* aof, RedisModuleString* key, void*) {
  rewrite_by_restore(aof, key, "Top-K");
}

// RedisBloom's figure, so MEMORY USAGE answers alike: its value struct (the figures, two
// pointers and a 256-entry table of decay powers) and the two arrays.
constexpr std::size_t kRedisBloomStructBytes = 24 + 2 * sizeof(void*) + 256 * sizeof(double);
std::size_t mem_usage(const void* value) {
  return kRedisBloomStructBytes +
         static_cast<std::size_t>(static_cast<const TopK*>(value)->memory_bytes());
}

void free_value(void* value) {
  delete static_cast<TopK*>(value);
  --topk_stats().filters;
}

void* copy(RedisModuleString*, RedisModuleString*, const void* value) {
  try {
    auto* copied = new TopK(*static_cast<const TopK*>(value));
    ++topk_stats().filters;
    return copied;
  } catch (...) {
    return nullptr;  // COPY then fails; the source is untouched
  }
}

}  // namespace

bool topk_fits(std::uint64_t k, std::uint64_t width, std::uint64_t depth) noexcept {
  constexpr std::uint64_t kMax32 = 0xffffffffULL;
  if (k == 0 || width == 0 || depth == 0 || k > kMax32 || width > kMax32 || depth > kMax32) {
    return false;
  }
  const auto bytes = topk::bytes_for(k, width, depth);
  return bytes && *bytes <= settings().max_filter_bytes;
}

RedisModuleType* topk_type() noexcept {
  return g_type;
}

bool register_topk_type(RedisModuleCtx* ctx) noexcept {
  RedisModuleTypeMethods methods{};
  methods.rdb_load = load;
  methods.rdb_save = save;
  methods.aof_rewrite = rewrite;
  methods.mem_usage = mem_usage;
  methods.free = free_value;
  methods.copy = copy;
  methods.defrag = defrag_topk_value;
  g_type = register_redisbloom_data_type(ctx, kTopKTypeName, kTopKEncodingVersion, methods);
  return g_type != nullptr;
}

}  // namespace redbloom::module
