#include "tdigest_type.hpp"

#include <memory>
#include <new>
#include <vector>

#include "bloom_type.hpp"
#include "redisbloom_data_type.hpp"

namespace redbloom::module {

namespace {

using tdigest::Digest;
using tdigest::Saved;

RedisModuleType* g_type = nullptr;

void* allocate(std::size_t bytes) {
  return RedisModule_Alloc(bytes);
}

void release(void* pointer) {
  RedisModule_Free(pointer);
}

// Field for field what RedisBloom 2.4 writes: the digest compressed, then its merged centroids'
// means and their weights (as doubles).
void save(RedisModuleIO* rdb, void* value) {
  auto& digest = *static_cast<Digest*>(value);
  const Saved s = digest.saved();
  RedisModule_SaveDouble(rdb, s.compression);
  RedisModule_SaveDouble(rdb, s.min);
  RedisModule_SaveDouble(rdb, s.max);
  RedisModule_SaveSigned(rdb, s.capacity);
  RedisModule_SaveSigned(rdb, s.merged_nodes);
  RedisModule_SaveSigned(rdb, s.unmerged_nodes);
  RedisModule_SaveSigned(rdb, s.total_compressions);
  RedisModule_SaveDouble(rdb, s.merged_weight);
  RedisModule_SaveDouble(rdb, s.unmerged_weight);
  for (int i = 0; i < digest.merged_nodes(); ++i) RedisModule_SaveDouble(rdb, digest.mean_at(i));
  for (int i = 0; i < digest.merged_nodes(); ++i) {
    RedisModule_SaveDouble(rdb, static_cast<double>(digest.weight_at(i)));
  }
}

// Reads `count` doubles; false on a read error.
bool load_doubles(RedisModuleIO* rdb, std::vector<double>& out, long long count) {
  for (long long i = 0; i < count; ++i) {
    out.push_back(RedisModule_LoadDouble(rdb));
    if (RedisModule_IsIOError(rdb)) return false;
  }
  return true;
}

// The header is checked before the centroids are read, so a damaged count cannot ask for
// memory: RedisBloom trusts the saved capacity, redbloom.so requires the one the compression
// gives.
void* load(RedisModuleIO* rdb, int encver) {
  if (encver != kTDigestEncodingVersion) {
    RedisModule_LogIOError(rdb, module_api::kLogWarning,
                           "redbloom: t-digest encoding version %d is unknown", encver);
    return nullptr;
  }
  Saved s;
  s.compression = RedisModule_LoadDouble(rdb);
  s.min = RedisModule_LoadDouble(rdb);
  s.max = RedisModule_LoadDouble(rdb);
  s.capacity = RedisModule_LoadSigned(rdb);
  s.merged_nodes = RedisModule_LoadSigned(rdb);
  s.unmerged_nodes = RedisModule_LoadSigned(rdb);
  s.total_compressions = RedisModule_LoadSigned(rdb);
  s.merged_weight = RedisModule_LoadDouble(rdb);
  s.unmerged_weight = RedisModule_LoadDouble(rdb);
  if (RedisModule_IsIOError(rdb)) return nullptr;
  if (const std::string problem = Digest::problem(s); !problem.empty()) {
    RedisModule_LogIOError(rdb, module_api::kLogWarning, "redbloom: t-digest refused: %s",
                           problem.c_str());
    return nullptr;
  }
  if (!tdigest_fits(static_cast<long long>(s.compression))) {
    RedisModule_LogIOError(rdb, module_api::kLogWarning,
                           "redbloom: t-digest of compression %.0f refused: over the module's "
                           "memory limit per value (MAX_FILTER_BYTES)",
                           s.compression);
    return nullptr;
  }
  try {
    std::vector<double> means;
    std::vector<double> weights;
    if (!load_doubles(rdb, means, s.merged_nodes) || !load_doubles(rdb, weights, s.merged_nodes)) {
      return nullptr;
    }
    auto digest =
        std::make_unique<Digest>(static_cast<long long>(s.compression), tdigest_allocator());
    digest->restore(s, means, weights);
    return digest.release();
  } catch (const std::exception& e) {
    RedisModule_LogIOError(rdb, module_api::kLogWarning, "redbloom: t-digest not loaded: %s",
                           e.what());
    return nullptr;
  }
}

// As RedisBloom rewrites: RESTORE with the key's DUMP, which holds the centroids exactly (no
// sequence of TDIGEST.ADD can give a merged centroid its weight).
void rewrite(RedisModuleIO* aof, RedisModuleString* key, void*) {
  rewrite_by_restore(aof, key, "t-digest");
}

// RedisBloom's figure (a pointer and the two centroid arrays), so MEMORY USAGE answers alike.
std::size_t mem_usage(const void* value) {
  const auto& digest = *static_cast<const Digest*>(value);
  return sizeof(void*) + 2 * static_cast<std::size_t>(digest.capacity()) * sizeof(double);
}

void free_value(void* value) {
  delete static_cast<Digest*>(value);
}

void* copy(RedisModuleString*, RedisModuleString*, const void* value) {
  try {
    return new Digest(*static_cast<const Digest*>(value));
  } catch (...) {
    return nullptr;  // COPY then fails; the source is untouched
  }
}

}  // namespace

bool tdigest_fits(long long compression) noexcept {
  const auto capacity = tdigest::capacity_for(compression);
  return capacity && *capacity * 2 * sizeof(double) <= settings().max_filter_bytes;
}

ChainAllocator tdigest_allocator() noexcept {
  return {allocate, release};
}

RedisModuleType* tdigest_type() noexcept {
  return g_type;
}

bool register_tdigest_type(RedisModuleCtx* ctx) noexcept {
  RedisModuleTypeMethods methods{};
  methods.rdb_load = load;
  methods.rdb_save = save;
  methods.aof_rewrite = rewrite;
  methods.mem_usage = mem_usage;
  methods.free = free_value;
  methods.copy = copy;
  g_type = register_redisbloom_data_type(ctx, kTDigestTypeName, kTDigestEncodingVersion, methods);
  return g_type != nullptr;
}

}  // namespace redbloom::module
