#include "cuckoo_type.hpp"

#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "module_info.hpp"
#include "redisbloom_data_type.hpp"

namespace redbloom::module {

namespace {

using cuckoo::Filter;
using cuckoo::SubFilter;

RedisModuleType* g_type = nullptr;

// Field for field what RedisBloom 2.4 writes at encoding version 4.
void save(RedisModuleIO* rdb, void* value) {
  const auto& filter = *static_cast<const Filter*>(value);
  RedisModule_SaveUnsigned(rdb, filter.filters().size());
  RedisModule_SaveUnsigned(rdb, filter.buckets());
  RedisModule_SaveUnsigned(rdb, filter.items());
  RedisModule_SaveUnsigned(rdb, filter.deletes());
  RedisModule_SaveUnsigned(rdb, filter.bucket_size());
  RedisModule_SaveUnsigned(rdb, filter.max_iterations());
  RedisModule_SaveUnsigned(rdb, filter.expansion());
  for (const SubFilter& sub : filter.filters()) {
    RedisModule_SaveUnsigned(rdb, sub.buckets);
    RedisModule_SaveStringBuffer(rdb, reinterpret_cast<const char*>(sub.data.data()),
                                 sub.data.size());
  }
}

class LoadFailed : public std::exception {};

std::uint64_t field(RedisModuleIO* rdb) {
  const std::uint64_t value = RedisModule_LoadUnsigned(rdb);
  if (RedisModule_IsIOError(rdb)) throw LoadFailed();
  return value;
}

// A 16-bit field of RedisBloom's struct; a larger value is refused (RedisBloom would cut it).
std::uint16_t short_field(RedisModuleIO* rdb) {
  const std::uint64_t value = field(rdb);
  if (value > UINT16_MAX) throw LoadFailed();
  return static_cast<std::uint16_t>(value);
}

void refuse(RedisModuleIO* rdb, const char* why) {
  RedisModule_LogIOError(rdb, module_api::kLogWarning, "redbloom: cuckoo filter refused: %s", why);
}

// Reads RedisBloom's encodings up to 4: before 4 there are no deletes, bucket size,
// iterations, expansion nor per-sub-filter bucket counts (RedisBloom's defaults then).
void* load(RedisModuleIO* rdb, int encver) {
  if (encver < 0 || encver > kCuckooEncodingVersion) {
    RedisModule_LogIOError(rdb, module_api::kLogWarning,
                           "redbloom: cuckoo filter encoding version %d is unknown", encver);
    return nullptr;
  }
  try {
    const std::uint64_t count = field(rdb);
    const std::uint64_t buckets = field(rdb);
    if (count == 0 || count > cuckoo::kMaxFilters || buckets == 0) {
      refuse(rdb, "no sub-filters, too many, or no buckets");
      return nullptr;
    }
    const std::uint64_t items = field(rdb);
    const bool old = encver < kCuckooEncodingVersion;
    const std::uint64_t deletes = old ? 0 : field(rdb);
    const std::uint16_t bucket_size = old ? cuckoo::kDefaultBucketSize : short_field(rdb);
    const std::uint16_t iterations = old ? cuckoo::kDefaultMaxIterations : short_field(rdb);
    const std::uint16_t expansion = old ? cuckoo::kDefaultExpansion : short_field(rdb);
    std::vector<SubFilter> filters;
    // Grown sub-filter by sub-filter: a damaged count ends at the end of the data.
    for (std::uint64_t i = 0; i < count; ++i) {
      SubFilter sub;
      sub.buckets = old ? buckets : field(rdb);
      std::size_t length = 0;
      char* bytes = RedisModule_LoadStringBuffer(rdb, &length);
      if (RedisModule_IsIOError(rdb) || bytes == nullptr) throw LoadFailed();
      try {
        sub.data = redisbloom::Bits(reinterpret_cast<const std::uint8_t*>(bytes), length,
                                    cuckoo_allocator());
      } catch (...) {
        RedisModule_Free(bytes);
        throw;
      }
      RedisModule_Free(bytes);
      filters.push_back(std::move(sub));
    }
    auto filter = std::make_unique<Filter>(items, deletes, buckets, bucket_size, iterations,
                                           expansion, std::move(filters), cuckoo_allocator());
    if (const std::string problem = filter->problem(); !problem.empty()) {
      refuse(rdb, problem.c_str());
      return nullptr;
    }
    ++cuckoo_stats().filters;
    return filter.release();
  } catch (const LoadFailed&) {
    refuse(rdb, "damaged or out-of-range fields");
    return nullptr;
  } catch (const std::exception& e) {
    refuse(rdb, e.what());
    return nullptr;
  }
}

// As RedisBloom rewrites: CF.LOADCHUNK with the header, then with each chunk.
void rewrite(RedisModuleIO* aof, RedisModuleString* key, void* value) {
  rewrite_as_chunks(aof, "CF.LOADCHUNK", key, *static_cast<const Filter*>(value));
}

std::size_t mem_usage(const void* value) {
  return static_cast<const Filter*>(value)->memory_usage();
}

void digest(RedisModuleDigest* md, void* value) {
  const auto& v = *static_cast<const Filter*>(value);
  digest_header_and_pieces(md, v, v.filters());
}

void free_value(void* value) {
  --cuckoo_stats().filters;
  delete static_cast<Filter*>(value);
}

void* copy(RedisModuleString*, RedisModuleString*, const void* value) {
  try {
    auto* copied = new Filter(*static_cast<const Filter*>(value));
    ++cuckoo_stats().filters;
    return copied;
  } catch (...) {
    return nullptr;  // COPY then fails; the source is untouched
  }
}

}  // namespace

RedisModuleType* cuckoo_type() noexcept {
  return g_type;
}

bool register_cuckoo_type(RedisModuleCtx* ctx) noexcept {
  RedisModuleTypeMethods methods{};
  methods.rdb_load = load;
  methods.rdb_save = save;
  methods.aof_rewrite = rewrite;
  methods.mem_usage = mem_usage;
  methods.digest = digest;
  methods.free = free_value;
  methods.copy = copy;
  methods.free_effort = cuckoo_free_effort;
  methods.defrag = defrag_cuckoo_value;
  g_type = register_redisbloom_data_type(ctx, kCuckooTypeName, kCuckooEncodingVersion, methods);
  return g_type != nullptr;
}

}  // namespace redbloom::module
