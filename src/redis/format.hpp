// How a filter named NAME is laid out in Redis (format version 2):
//
//   NAME                        a hash: the metadata (fields below)
//   NAME:bits:{NAME:i}          partition i, a plain string of partition_bits / 8 bytes in
//                               SETBIT order, then one zero byte (the seal), for i in
//                               [0, partitions); on a cluster the tag may be {NAME:i:salt},
//                               the salt chosen so that the partitions spread evenly over the
//                               masters (field tag_salts)
//   NAME:tmp:{NAME:i}:<random>  a short-lived delta for partition i during a bulk load,
//                               created with a TTL so that a crash leaves nothing behind
//
// Each partition key has its own hash tag, so in a Redis Cluster the partitions of one filter
// spread over slots, while a temp key always lands in its partition's slot (BITOP needs both
// keys in one slot). Names may not contain '{' or '}', which would change the hash tag.
//
// Metadata fields: format ("redbloom"), version, state ("creating" until every partition is
// allocated, then "ready"), layout, hashes, partitions, partition_bits, capacity, error_rate,
// hash_scheme, created_unix_ns, shards / shard / shard_set (sharded_store.hpp: on a
// sharded filter, every server holds the metadata and only its own partitions), and
// tag_salts (one per partition, comma-separated; written with the claim, so that drop finds
// the partitions of a creation that died).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "redbloom/params.hpp"

namespace redbloom::redis {

inline constexpr std::string_view kFormatName = "redbloom";
inline constexpr std::uint32_t kFormatVersion = 2;

// The seal: every command a filter sends writes below bit partition_bits, yet Redis creates a
// missing key for BITFIELD, SETRANGE and BITOP. So the writes that a client had pipelined behind
// a guard that found its partition gone (evicted, deleted) recreate the key without the seal,
// at most partition_bits / 8 bytes long, and every later guard, which expects the sealed
// length, still reports the loss. Unsealed, a recreated key reached the full length (BITOP OR
// of a whole delta did at once) and then passed as intact, its lost items silently absent.
// Version 1 filters have no seal; they are read and written as they are.
[[nodiscard]] constexpr std::uint64_t seal_bytes(std::uint32_t version) noexcept {
  return version >= 2 ? 1 : 0;
}

// Throws InvalidArgument unless `name` can name a filter.
void validate_filter_name(std::string_view name);

// `salt` (0: none) varies the hash tag so that a cluster's partitions spread over its masters.
[[nodiscard]] std::string partition_key(std::string_view name, std::uint64_t partition,
                                        std::uint32_t salt = 0);
// A fresh, random temp key in the slot of `partition` (same tag, same salt).
[[nodiscard]] std::string temp_key(std::string_view name, std::uint64_t partition,
                                   std::uint32_t salt = 0);
// "3,0,17": the tag_salts metadata field ("" when every salt is 0, as on one server).
[[nodiscard]] std::string encode_salts(const std::vector<std::uint32_t>& salts);

struct Metadata {
  std::uint32_t version = kFormatVersion;
  FilterParams params;
  std::uint64_t created_unix_ns = 0;
  bool ready = false;
  // Sharded over several servers: this server is shard `shard` of `shards`, of the set of
  // servers created together under `shard_set` (a random id). 0 of 1 and "" when not sharded.
  std::uint32_t shards = 1;
  std::uint32_t shard = 0;
  std::string shard_set;
  // Per partition, the salt of its hash tag (partition_key); empty or all 0 on one server.
  std::vector<std::uint32_t> tag_salts;
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
