// Registering one of RedisBloom's data types (MBbloom--, MBbloomCF, TDIS-TYPE, TopK-TYPE) under its
// own name, so that RedisBloom's RDB files and DUMPs load here.
#pragma once

#include <string>

#include "redis_module_api.hpp"

namespace redbloom::module {

// The type, or nullptr, logged: the server refuses a name another module (RedisBloom itself)
// registered first, and the two modules are never loaded together.
[[nodiscard]] RedisModuleType* register_redisbloom_data_type(
    RedisModuleCtx* ctx, const char* name, int encoding_version,
    RedisModuleTypeMethods& methods) noexcept;

// As RedisBloom rewrites a value without a chunked dump (TDIS-TYPE, TopK-TYPE) into the AOF:
// RESTORE with the key's DUMP, which holds the value exactly. `what` names the type in the log.
void rewrite_by_restore(RedisModuleIO* aof, RedisModuleString* key, const char* what) noexcept;

// As RedisBloom rewrites a value it dumps in chunks (MBbloom--, MBbloomCF) into the AOF:
// `command key 1 header`, then `command key next chunk` for each chunk, so that replaying the
// AOF is a LOADCHUNK sequence either module reads.
template <class Value>
void rewrite_as_chunks(RedisModuleIO* aof, const char* command, RedisModuleString* key,
                       const Value& value) {
  const std::string header = value.encode_header();
  RedisModule_EmitAOF(aof, command, "slb", key, 1LL, header.data(), header.size());
  long long iterator = 1;
  for (;;) {
    long long next = 0;
    const auto chunk = value.chunk(iterator, &next);
    if (chunk.empty()) break;
    RedisModule_EmitAOF(aof, command, "slb", key, next, reinterpret_cast<const char*>(chunk.data()),
                        chunk.size());
    iterator = next;
  }
}

// DEBUG DIGEST of such a value: its header, then the bytes of each of its pieces (sub-filters).
template <class Value, class Pieces>
void digest_header_and_pieces(RedisModuleDigest* md, const Value& value, const Pieces& pieces) {
  const std::string header = value.encode_header();
  RedisModule_DigestAddStringBuffer(md, header.data(), header.size());
  for (const auto& piece : pieces) {
    RedisModule_DigestAddStringBuffer(md, reinterpret_cast<const char*>(piece.data.data()),
                                      piece.data.size());
  }
  RedisModule_DigestEndSequence(md);
}

}  // namespace redbloom::module
