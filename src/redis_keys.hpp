// How a filter named NAME is laid out in Redis (format version 1):
//
//   NAME                        a hash: the metadata (fields below)
//   NAME:bits:{NAME:i}          partition i, a plain string of partition_bits / 8 bytes in
//                               SETBIT order, for i in [0, partitions)
//   NAME:tmp:{NAME:i}:<random>  a short-lived delta for partition i during a bulk load,
//                               created with a TTL so that a crash leaves nothing behind
//
// Each partition key has its own hash tag, so in a Redis Cluster the partitions of one filter
// spread over slots, while a temp key always lands in its partition's slot (BITOP needs both
// keys in one slot). Names may not contain '{' or '}', which would change the hash tag.
//
// Metadata fields: format ("redbloom"), version, state ("creating" until every partition is
// allocated, then "ready"), layout, hashes, partitions, partition_bits, capacity, error_rate,
// hash_scheme, created_unix_ns, and shards / shard / shard_set (sharded_store.hpp: on a
// sharded filter, every server holds the metadata and only its own partitions).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "redbloom/params.hpp"

namespace redbloom::redis {

inline constexpr std::string_view kFormatName = "redbloom";
inline constexpr std::uint32_t kFormatVersion = 1;

// Throws InvalidArgument unless `name` can name a filter.
void validate_filter_name(std::string_view name);

[[nodiscard]] std::string partition_key(std::string_view name, std::uint64_t partition);
// A fresh, random temp key in the slot of `partition`.
[[nodiscard]] std::string temp_key(std::string_view name, std::uint64_t partition);

struct Metadata {
  FilterParams params;
  std::uint64_t created_unix_ns = 0;
  bool ready = false;
  // Sharded over several servers: this server is shard `shard` of `shards`, of the set of
  // servers created together under `shard_set` (a random id). 0 of 1 and "" when not sharded.
  std::uint32_t shards = 1;
  std::uint32_t shard = 0;
  std::string shard_set;
};

// Field/value pairs for HSET.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> encode_metadata(
    const Metadata& metadata);

// Parses HGETALL's field/value pairs. For a filter still being created (ready = false) only
// params.partitions is filled, if recorded. Throws FormatError naming the problem (`what` names the
// key in messages). A hash without format=redbloom is "not a redbloom filter".
[[nodiscard]] Metadata parse_metadata(
    const std::vector<std::pair<std::string, std::string>>& fields, const std::string& what);

}  // namespace redbloom::redis
