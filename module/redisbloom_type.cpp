#include "redisbloom_type.hpp"

#include <cmath>
#include <exception>
#include <memory>
#include <optional>
#include <string>

#include "bloom_type.hpp"
#include "creation_ids.hpp"
#include "module_info.hpp"
#include "redisbloom_data_type.hpp"

namespace redbloom::module {

namespace {

using redisbloom::Chain;
using redisbloom::Link;

RedisModuleType* g_type = nullptr;

// Field for field what RedisBloom 2.4 writes at encoding version 4.
void save(RedisModuleIO* rdb, void* value) {
  const auto& chain = *static_cast<const Chain*>(value);
  RedisModule_SaveUnsigned(rdb, chain.items());
  RedisModule_SaveUnsigned(rdb, chain.links().size());
  RedisModule_SaveUnsigned(rdb, chain.options());
  RedisModule_SaveUnsigned(rdb, chain.expansion());
  for (const Link& link : chain.links()) {
    RedisModule_SaveUnsigned(rdb, link.capacity);
    RedisModule_SaveDouble(rdb, link.error);
    RedisModule_SaveUnsigned(rdb, link.hashes);
    RedisModule_SaveDouble(rdb, link.bits_per_entry);
    RedisModule_SaveUnsigned(rdb, link.bits);
    RedisModule_SaveUnsigned(rdb, link.n2);
    RedisModule_SaveStringBuffer(rdb, reinterpret_cast<const char*>(link.data.data()),
                                 link.data.size());
    RedisModule_SaveUnsigned(rdb, link.items);
  }
}

class LoadFailed : public std::exception {};

// The fields of one value in an RDB file; a failed read throws LoadFailed.
struct RdbFields {
  RedisModuleIO* rdb;
  std::uint64_t unsigned_field() const {
    const std::uint64_t value = RedisModule_LoadUnsigned(rdb);
    if (RedisModule_IsIOError(rdb)) throw LoadFailed();
    return value;
  }
  double double_field() const {
    const double value = RedisModule_LoadDouble(rdb);
    if (RedisModule_IsIOError(rdb)) throw LoadFailed();
    return value;
  }
};

// Sub-filter `i` of a RedisBloom filter; nullopt (logged) if it is refused.
std::optional<Link> load_link(const RdbFields& in, int encver, std::uint64_t i) {
  RedisModuleIO* rdb = in.rdb;
  Link link;
  link.capacity = in.unsigned_field();
  link.error = in.double_field();
  const std::uint64_t hashes = in.unsigned_field();
  link.hashes = hashes > redisbloom::kMaxHashes ? redisbloom::kMaxHashes + 1
                                                : static_cast<std::uint32_t>(hashes);
  link.bits_per_entry = in.double_field();
  if (encver == 0) {
    const double bits = static_cast<double>(link.capacity) * link.bits_per_entry;
    link.bits = bits >= 0 && bits < 18446744073709551616.0 ? static_cast<std::uint64_t>(bits) : 0;
  } else {
    link.bits = in.unsigned_field();
    const std::uint64_t n2 = in.unsigned_field();
    link.n2 = n2 > 63 ? 64 : static_cast<std::uint8_t>(n2);
  }
  std::size_t length = 0;
  char* bytes = RedisModule_LoadStringBuffer(rdb, &length);
  if (RedisModule_IsIOError(rdb) || bytes == nullptr) throw LoadFailed();
  try {
    link.data = redisbloom::Bits(reinterpret_cast<const std::uint8_t*>(bytes), length,
                                 redisbloom_allocator());
  } catch (...) {
    RedisModule_Free(bytes);
    throw;
  }
  RedisModule_Free(bytes);
  if (const std::string problem = redisbloom::link_problem(link); !problem.empty()) {
    RedisModule_LogIOError(rdb, module_api::kLogWarning,
                           "redbloom: RedisBloom sub-filter %llu refused: %s",
                           static_cast<unsigned long long>(i), problem.c_str());
    return std::nullopt;
  }
  link.items = in.unsigned_field();
  return link;
}

// Reads RedisBloom's encodings 0 to 4: 0 has no bit count (it follows from the capacity),
// below 2 no options (32-bit hashes), below 4 no expansion (2).
void* load(RedisModuleIO* rdb, int encver) {
  if (encver < 0 || encver > kRedisBloomEncodingVersion) {
    RedisModule_LogIOError(rdb, module_api::kLogWarning,
                           "redbloom: RedisBloom filter encoding version %d is unknown", encver);
    return nullptr;
  }
  const RdbFields in{rdb};
  try {
    const std::uint64_t items = in.unsigned_field();
    const std::uint64_t count = in.unsigned_field();
    if (count == 0 || count > UINT32_MAX) {
      RedisModule_LogIOError(rdb, module_api::kLogWarning,
                             "redbloom: RedisBloom filter with %llu sub-filters refused",
                             static_cast<unsigned long long>(count));
      return nullptr;
    }
    const std::uint64_t options = encver >= 2 ? in.unsigned_field() : 0;
    const std::uint64_t expansion = encver >= 4 ? in.unsigned_field() : 2;
    if (options > UINT32_MAX || expansion > UINT32_MAX) {
      RedisModule_LogIOError(rdb, module_api::kLogWarning,
                             "redbloom: RedisBloom filter options out of range");
      return nullptr;
    }
    std::vector<Link> links;
    // Grown link by link: a damaged count ends at the end of the data, not in one allocation.
    for (std::uint64_t i = 0; i < count; ++i) {
      std::optional<Link> link = load_link(in, encver, i);
      if (!link) return nullptr;
      links.push_back(std::move(*link));
    }
    auto chain = std::make_unique<Chain>(items, static_cast<std::uint32_t>(options),
                                         static_cast<std::uint32_t>(expansion), std::move(links),
                                         redisbloom_allocator());
    if (const std::string problem = chain->problem(); !problem.empty()) {
      RedisModule_LogIOError(rdb, module_api::kLogWarning,
                             "redbloom: RedisBloom filter refused: %s", problem.c_str());
      return nullptr;
    }
    ++redisbloom_stats().filters;
    return chain.release();
  } catch (const LoadFailed&) {
    return nullptr;
  } catch (const std::exception& e) {
    RedisModule_LogIOError(rdb, module_api::kLogWarning,
                           "redbloom: RedisBloom filter not loaded: %s", e.what());
    return nullptr;
  }
}

// As RedisBloom rewrites: BF.LOADCHUNK with the header, then with each chunk of bits.
void rewrite(RedisModuleIO* aof, RedisModuleString* key, void* value) {
  rewrite_as_chunks(aof, "BF.LOADCHUNK", key, *static_cast<const Chain*>(value));
}

std::size_t mem_usage(const void* value) {
  return static_cast<const Chain*>(value)->memory_usage();
}

void digest(RedisModuleDigest* md, void* value) {
  const auto& v = *static_cast<const Chain*>(value);
  digest_header_and_pieces(md, v, v.links());
}

void free_value(void* value) {
  forget_value(value);
  --redisbloom_stats().filters;
  delete static_cast<Chain*>(value);
}

void* copy(RedisModuleString*, RedisModuleString*, const void* value) {
  try {
    auto* copied = new Chain(*static_cast<const Chain*>(value));
    ++redisbloom_stats().filters;
    return copied;
  } catch (...) {
    return nullptr;  // COPY then fails; the source is untouched
  }
}

}  // namespace

RedisModuleType* redisbloom_type() noexcept {
  return g_type;
}

bool register_redisbloom_type(RedisModuleCtx* ctx) noexcept {
  RedisModuleTypeMethods methods{};
  methods.rdb_load = load;
  methods.rdb_save = save;
  methods.aof_rewrite = rewrite;
  methods.mem_usage = mem_usage;
  methods.digest = digest;
  methods.free = free_value;
  methods.copy = copy;
  methods.free_effort = redisbloom_free_effort;
  methods.defrag = defrag_redisbloom_value;
  g_type =
      register_redisbloom_data_type(ctx, kRedisBloomTypeName, kRedisBloomEncodingVersion, methods);
  return g_type != nullptr;
}

}  // namespace redbloom::module
