// Everything redbloom keeps in Redis, as names and bytes: the key families, the metadata
// schemas, the seals and the format versions. Pure: no I/O (object.hpp does the lifecycle,
// partition_ops.hpp the commands).
//
// A filter named NAME (format "redbloom", version 2):
//   NAME                          hash: the metadata (FilterMetadata)
//   NAME:bits:{NAME:i}            partition i: partition_bits / 8 bytes in SETBIT order, then
//                                 one zero byte, the seal; on a cluster the tag may be
//                                 {NAME:i:salt}, the salt chosen so that the partitions spread
//                                 evenly over the masters (field tag_salts)
//   NAME:tmp:{NAME:i}:<random>    a bulk load's delta for partition i, as long as the partition
//                                 (seal included), created with a TTL so that a crash leaves
//                                 nothing behind
// Its exact set (format "redbloom-exact", version 2):
//   NAME:exact                    hash: the metadata (ExactMetadata)
//   NAME:exact:{NAME:x<b>}        bucket b: one zero byte, the seal, then 6-byte tags
// Parts of one filter that come and go (growth links, window generations) take a part id
// outside the hash tag, "NAME:<part>:bits:{NAME:i}", so every part of partition i shares its
// slot and one script can reach them all.
// A windowed or growing filter (format "redbloom-stream", version 1, stream_script.hpp):
//   NAME                          hash: the metadata (StreamMetadata: the shape's fields)
//   NAME:s<g>:bits:{NAME:i}       slice g of partition i: a header, then its links' bits;
//                                 made by the first add into it, with PEXPIREAT at the
//                                 slice's retirement (no expiry without a window)
//   NAME:slices:bits:{NAME:i}     partition i's roster of the slices made (no expiry), so a
//                                 live slice that vanished is reported, not taken for empty
// A cuckoo filter (format "redbloom-cuckoo", version 1, cuckoo_script.hpp):
//   NAME                          hash: the metadata (CuckooMetadata: the options' fields)
//   NAME:c<l>:bits:{NAME:i}       link l of partition i: its table's bytes as a cuckoo file
//                                 holds them (core/cuckoo_table.hpp); link 0 made with the
//                                 filter, the others by the add that needs them
//   NAME:clinks:bits:{NAME:i}     partition i's roster: one byte, its links minus one, made
//                                 with the filter, so a link that vanished is an error
//
// Every key of an object carries a hash tag of the object's name, so on a cluster each
// partition or bucket sits in its own slot (spread over the masters) while a temp key lands in
// its partition's slot (BITOP needs both in one). Names may not contain '{' or '}'.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "redbloom/cuckoo.hpp"
#include "redbloom/params.hpp"

namespace redbloom::redis {

// --- names ---------------------------------------------------------------------------------

// Throws InvalidArgument unless `name` can name a filter.
void validate_filter_name(std::string_view name);

// `salt` (0: none) varies the hash tag so that a cluster's partitions spread over its masters;
// `part` (empty: the filter itself) names a growth link or a window generation.
[[nodiscard]] std::string partition_key(std::string_view name, std::uint64_t partition,
                                        std::uint32_t salt = 0, std::string_view part = {});
// A fresh, random temp key in the slot of `partition` (same tag, same salt).
[[nodiscard]] std::string temp_key(std::string_view name, std::uint64_t partition,
                                   std::uint32_t salt = 0, std::string_view part = {});
[[nodiscard]] std::string exact_meta_key(std::string_view name);
[[nodiscard]] std::string exact_bucket_key(std::string_view name, std::uint64_t bucket);

// --- seals ---------------------------------------------------------------------------------

// Redis creates a missing key for BITFIELD, SETRANGE, BITOP and APPEND. So a write that meets
// a part that vanished (evicted, deleted) recreates it without the seal, and every check that
// expects the sealed length (partition) or a seal before whole tags (bucket) reports the loss
// instead of answering from the recreated, emptier key. Version 1 objects have no seal.
[[nodiscard]] constexpr std::uint64_t seal_bytes(std::uint32_t version) noexcept {
  return version >= 2 ? 1 : 0;
}

// --- metadata ------------------------------------------------------------------------------

// One metadata hash as HGETALL returns it, read with typed getters whose errors name the key
// and the field ("key 'urls' on redis 127.0.0.1:6379: metadata field 'hashes' is missing").
class Fields {
 public:
  Fields(std::vector<std::pair<std::string, std::string>> pairs, std::string what);

  [[nodiscard]] bool has(std::string_view field) const;
  [[nodiscard]] const std::string& text(std::string_view field) const;
  [[nodiscard]] std::uint64_t number(std::string_view field) const;
  [[nodiscard]] double real(std::string_view field) const;
  // "key 'NAME' on redis HOST": for messages.
  [[nodiscard]] const std::string& what() const noexcept { return what_; }
  // The object's format name, version (checked against `newest`) and whether its creation
  // finished ("state" = "ready"; objects of version 1 had no state and were always ready).
  void check_format(std::string_view format, std::string_view noun, std::uint32_t newest) const;
  [[nodiscard]] std::uint32_t version() const;
  [[nodiscard]] bool ready() const;
  [[nodiscard]] const std::map<std::string, std::string, std::less<>>& all() const noexcept {
    return fields_;
  }

 private:
  std::map<std::string, std::string, std::less<>> fields_;
  std::string what_;
};

inline constexpr std::string_view kFilterFormat = "redbloom";
inline constexpr std::uint32_t kFilterVersion = 2;

// What a filter's metadata says of where its partitions are and of its creation, plain or
// windowed and growing alike.
struct Placement {
  std::uint64_t created_unix_ns = 0;
  bool ready = false;
  // Sharded over several servers: this server is shard `shard` of `shards`, of the set of
  // servers created together under `shard_set` (a random id). 0 of 1 and "" when not sharded.
  std::uint32_t shards = 1;
  std::uint32_t shard = 0;
  std::string shard_set;
  // Per partition, the salt of its hash tag (partition_key); empty or all 0 on one server.
  std::vector<std::uint32_t> tag_salts;
  // When the creation started (its claim), so that a creation that never finished can be told
  // from one still running.
  std::uint64_t claimed_unix_ns = 0;
};

struct FilterMetadata : Placement {
  std::uint32_t version = kFilterVersion;
  FilterParams params;
};

// The fields a creation claims the name with (state "creating"): enough for drop() to find the
// partitions of a creation that died, and to tell them from keys someone else put there.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> filter_claim_fields(
    const FilterMetadata& metadata);
// Field/value pairs for HSET, once the filter is complete.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> encode_filter_metadata(
    const FilterMetadata& metadata);
// For a filter still being created (ready = false) only the partition count and size, salts
// and claim time are read, if recorded. Throws FormatError naming the problem.
[[nodiscard]] FilterMetadata parse_filter_metadata(const Fields& fields);
// "3,0,17": the tag_salts field ("" when every salt is 0, as on one server).
[[nodiscard]] std::string encode_salts(const std::vector<std::uint32_t>& salts);

inline constexpr std::string_view kExactFormat = "redbloom-exact";
inline constexpr std::uint32_t kExactVersion = 2;
inline constexpr std::size_t kExactTagBytes = 6;
inline constexpr unsigned kMaxBucketBits = 24;

struct ExactMetadata {
  std::uint32_t version = kExactVersion;
  unsigned bucket_bits = 0;
  bool ready = false;
  std::uint64_t claimed_unix_ns = 0;
  std::uint64_t filter_id = 0;  // the filter's creation time (0: not recorded)
};

[[nodiscard]] std::vector<std::pair<std::string, std::string>> exact_claim_fields(
    const ExactMetadata& metadata);
[[nodiscard]] ExactMetadata parse_exact_metadata(const Fields& fields);

inline constexpr std::string_view kStreamFormat = "redbloom-stream";
// Version 2: every partition's slice roster is made with the filter (stream_script.hpp).
inline constexpr std::uint32_t kStreamVersion = 2;

// The part id of window slice g ("s<g>"; slice 0 is the one slice of a growing filter).
[[nodiscard]] std::string slice_part(std::int64_t slice);

// A stream filter's metadata: the shape's own fields (StreamShape::encode) and, as a plain
// filter has them, the sharding and the hash-tag salts.
struct StreamMetadata : Placement {
  std::uint32_t version = kStreamVersion;
  std::vector<std::pair<std::string, std::string>> shape_fields;
};

[[nodiscard]] std::vector<std::pair<std::string, std::string>> stream_claim_fields(
    const StreamMetadata& metadata);
[[nodiscard]] std::vector<std::pair<std::string, std::string>> encode_stream_metadata(
    const StreamMetadata& metadata);
// Checks the format and version (FormatError naming the key otherwise). The shape's fields are
// returned as they are (StreamShape::parse reads them); a creation that has not finished has
// only the partitions and salts.
[[nodiscard]] StreamMetadata parse_stream_metadata(const Fields& fields);
// The fields as a map, for StreamShape::parse.
[[nodiscard]] std::map<std::string, std::string, std::less<>> stream_shape_fields(
    const StreamMetadata& metadata);

inline constexpr std::string_view kCuckooFormat = "redbloom-cuckoo";
inline constexpr std::uint32_t kCuckooVersion = 1;

// The part id of a cuckoo filter's link l ("c<l>"), and of a partition's roster ("clinks").
[[nodiscard]] std::string cuckoo_link_part(std::uint32_t link);
inline constexpr std::string_view kCuckooRosterPart = "clinks";

struct CuckooMetadata : Placement {
  std::uint32_t version = kCuckooVersion;
  CuckooOptions options;
};

[[nodiscard]] std::vector<std::pair<std::string, std::string>> cuckoo_claim_fields(
    const CuckooMetadata& metadata);
[[nodiscard]] std::vector<std::pair<std::string, std::string>> encode_cuckoo_metadata(
    const CuckooMetadata& metadata);
// Checks the format and version (FormatError naming the key otherwise); a creation that has not
// finished has only the partitions and salts.
[[nodiscard]] CuckooMetadata parse_cuckoo_metadata(const Fields& fields);

}  // namespace redbloom::redis
