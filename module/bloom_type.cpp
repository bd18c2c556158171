#include "bloom_type.hpp"

#include <exception>
#include <memory>
#include <string>

#include "core/chain_format.hpp"
#include "creation_ids.hpp"
#include "module_info.hpp"

namespace redbloom::module {

namespace {

RedisModuleType* g_type = nullptr;

void* server_allocate(std::size_t bytes) {
  void* block = RedisModule_Alloc(bytes);
  count_block(redbloom_stats(), block, true);
  return block;
}
void server_release(void* pointer) {
  count_block(redbloom_stats(), pointer, false);
  RedisModule_Free(pointer);
}

// RDB: the header as one string, then every link's bits in chunks of kDumpChunkBytes (a
// loader holds one chunk at a time beside the filter, not a second copy of a link).
void save(RedisModuleIO* rdb, void* value) {
  const auto& chain = *static_cast<const FilterChain*>(value);
  const std::string header = chain_format::encode_header(chain);
  RedisModule_SaveStringBuffer(rdb, header.data(), header.size());
  for (std::uint64_t offset = 0;;) {
    const auto chunk = chain.bytes_at(offset, kDumpChunkBytes);
    if (chunk.empty()) break;
    RedisModule_SaveStringBuffer(rdb, reinterpret_cast<const char*>(chunk.data()), chunk.size());
    offset += chunk.size();
  }
}

// A damaged or hostile payload (RESTORE takes any bytes with a valid checksum) is refused with
// a log line: Redis then fails the RESTORE or the load, it never crashes.
void* load(RedisModuleIO* rdb, int encver) {
  if (encver != kEncodingVersion) {
    RedisModule_LogIOError(rdb, module_api::kLogWarning,
                           "redbloom: filter encoding version %d is unknown to this module",
                           encver);
    return nullptr;
  }
  std::unique_ptr<FilterChain> chain;
  try {
    std::size_t length = 0;
    char* header = RedisModule_LoadStringBuffer(rdb, &length);
    if (RedisModule_IsIOError(rdb) || header == nullptr) return nullptr;
    try {
      chain = chain_format::decode_header(std::string_view(header, length), server_allocator(),
                                          settings().max_filter_bytes);
    } catch (...) {
      RedisModule_Free(header);
      throw;
    }
    RedisModule_Free(header);
    for (std::uint64_t offset = 0;;) {
      const auto expected = chain->bytes_at(offset, kDumpChunkBytes);
      if (expected.empty()) break;
      char* bytes = RedisModule_LoadStringBuffer(rdb, &length);
      if (RedisModule_IsIOError(rdb) || bytes == nullptr) return nullptr;
      const bool fits =
          length == expected.size() &&
          chain->write_bytes_at(offset, {reinterpret_cast<const std::uint8_t*>(bytes), length});
      RedisModule_Free(bytes);
      if (!fits) {
        RedisModule_LogIOError(rdb, module_api::kLogWarning,
                               "redbloom: filter bits chunk at byte %llu has a wrong length",
                               static_cast<unsigned long long>(offset));
        return nullptr;
      }
      offset += length;
    }
  } catch (const std::exception& e) {
    RedisModule_LogIOError(rdb, module_api::kLogWarning, "redbloom: filter not loaded: %s",
                           e.what());
    return nullptr;
  }
  ++redbloom_stats().filters;
  return chain.release();
}

// The AOF gets the same pieces SCANDUMP gives, as BF.LOADCHUNK commands.
void rewrite(RedisModuleIO* aof, RedisModuleString* key, void* value) {
  const auto& chain = *static_cast<const FilterChain*>(value);
  const std::string header = chain_format::encode_header(chain);
  RedisModule_EmitAOF(aof, "BF.LOADCHUNK", "slb", key, 1LL, header.data(), header.size());
  for (std::uint64_t offset = 0;;) {
    const auto chunk = chain.bytes_at(offset, kDumpChunkBytes);
    if (chunk.empty()) break;
    offset += chunk.size();
    RedisModule_EmitAOF(aof, "BF.LOADCHUNK", "slb", key, static_cast<long long>(offset + 1),
                        reinterpret_cast<const char*>(chunk.data()), chunk.size());
  }
}

std::size_t mem_usage(const void* value) {
  return memory_usage(*static_cast<const FilterChain*>(value));
}

void digest(RedisModuleDigest* md, void* value) {
  const auto& chain = *static_cast<const FilterChain*>(value);
  const std::string header = chain_format::encode_header(chain);
  RedisModule_DigestAddStringBuffer(md, header.data(), header.size());
  for (std::size_t i = 0; i < chain.links().size(); ++i) {
    const auto bytes = chain.link_bytes(i);
    RedisModule_DigestAddStringBuffer(md, reinterpret_cast<const char*>(bytes.data()),
                                      bytes.size());
  }
  RedisModule_DigestEndSequence(md);
}

void free_value(void* value) {
  forget_value(value);
  --redbloom_stats().filters;
  delete static_cast<FilterChain*>(value);
}

void* copy(RedisModuleString*, RedisModuleString*, const void* value) {
  try {
    auto copied = static_cast<const FilterChain*>(value)->clone();
    ++redbloom_stats().filters;
    return copied.release();
  } catch (...) {
    return nullptr;  // COPY then fails; the source is untouched
  }
}

}  // namespace

Settings& settings() noexcept {
  static Settings instance;
  return instance;
}

ChainAllocator server_allocator() noexcept {
  return {server_allocate, server_release};
}

RedisModuleType* filter_type() noexcept {
  return g_type;
}

std::size_t memory_usage(const FilterChain& chain) noexcept {
  std::size_t bytes = sizeof(FilterChain) + chain.links().size() * sizeof(FilterChain::Link);
  for (const auto& link : chain.links()) bytes += link.allocated_bytes;
  return bytes;
}

bool register_type(RedisModuleCtx* ctx) noexcept {
  RedisModuleTypeMethods methods{};
  methods.version = module_api::kTypeMethodVersion;
  methods.rdb_load = load;
  methods.rdb_save = save;
  methods.aof_rewrite = rewrite;
  methods.mem_usage = mem_usage;
  methods.digest = digest;
  methods.free = free_value;
  methods.copy = copy;
  methods.free_effort = redbloom_free_effort;
  methods.defrag = defrag_redbloom_value;
  g_type = RedisModule_CreateDataType(ctx, kTypeName, kEncodingVersion, &methods);
  return g_type != nullptr;
}

}  // namespace redbloom::module
