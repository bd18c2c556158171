// RedisBloom 2.x's cuckoo filter (its `MBbloomCF` type), reproduced so that a server started
// with redbloom.so on RedisBloom's data answers every CF.* command as RedisBloom did: the same
// 64-bit hash (MurmurHash64A, seed 0), 8-bit fingerprint (hash mod 255 + 1), bucket indexes,
// alternate index, kick sequence (deterministic: replicas converge), growth into sub-filters,
// compaction, SCANDUMP header and chunks. Pure: no I/O; the module moves the bytes.
//
// SCANDUMP header, little-endian, packed (38 bytes):
//   u64 items | u64 buckets | u64 deletes | u64 sub-filters | u16 bucket size |
//   u16 max iterations | u16 expansion
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/redisbloom_chain.hpp"

namespace redbloom::cuckoo {

inline constexpr std::uint16_t kDefaultBucketSize = 2;
inline constexpr std::uint16_t kDefaultMaxIterations = 20;
inline constexpr std::uint16_t kDefaultExpansion = 1;
inline constexpr long long kMaxExpansion = 32768;
inline constexpr long long kMaxIterations = 65535;
inline constexpr long long kMaxBucketSize = 255;
inline constexpr std::uint64_t kMaxBuckets = 0x00FFFFFFFFFFFFFFULL;  // RedisBloom's 56 bits
inline constexpr std::uint64_t kMaxFilters = 65535;
inline constexpr std::size_t kHeaderBytes = 38;
// SCANDUMP and AOF rewrites move a sub-filter in pieces of at most this many bytes.
inline constexpr std::uint64_t kMaxChunkBytes = std::uint64_t{16} << 20;

// The hash every CF.* command computes of an item.
[[nodiscard]] std::uint64_t item_hash(std::string_view item) noexcept;

struct SubFilter {
  std::uint64_t buckets = 0;
  redisbloom::Bits data;  // buckets × bucket size fingerprints, 0 for an empty slot
};

// cannot_grow: a new sub-filter is past what RedisBloom can hold, or cannot be allocated;
// over_limit: it would take the filter past the caller's `max_bytes`.
enum class Insert : std::int8_t {
  exists = 0,
  inserted = 1,
  no_space = -1,
  cannot_grow = -2,
  over_limit = -3
};

// Why a filter could not be made: too small for two buckets, its first sub-filter past what
// RedisBloom can hold (or not allocated), or past `max_bytes`.
enum class MakeError : std::uint8_t { none, too_small, too_large, over_limit };

class Filter {
 public:
  // CF.RESERVE's filter (the caller checked the figures' ranges); nullptr and `error` when it
  // cannot be made. `max_bytes` bounds the fingerprints of all sub-filters (0: no limit).
  static std::unique_ptr<Filter> make(std::uint64_t capacity, std::uint16_t bucket_size,
                                      std::uint16_t max_iterations, std::uint16_t expansion,
                                      ChainAllocator allocator, std::uint64_t max_bytes,
                                      MakeError& error);

  // CF.ADD (counts a repeat again) and CF.ADDNX (exists when any fingerprint matches): into
  // the newest sub-filter with room, else by kicks in the newest, else into a new one.
  Insert insert(std::uint64_t hash, std::uint64_t max_bytes);
  Insert insert_unique(std::uint64_t hash, std::uint64_t max_bytes);
  [[nodiscard]] bool contains(std::uint64_t hash) const noexcept;
  // Asks the cache for the item's two buckets in each sub-filter (the first few), so that a
  // batch can fetch the next items' while it works on one.
  void prefetch(std::uint64_t hash) const noexcept;
  // contains for each hash into present[i] (1 or 0), the items ahead fetched meanwhile.
  void contains_many(std::span<const std::uint64_t> hashes, std::uint8_t* present) const noexcept;
  // How many slots hold the item's fingerprint at its two buckets, over every sub-filter.
  [[nodiscard]] std::uint64_t count(std::uint64_t hash) const noexcept;
  // Clears one matching fingerprint, newest sub-filter first; compacts when deletes pass a
  // tenth of the items. False when none matched.
  bool remove(std::uint64_t hash) noexcept;
  // Moves fingerprints into older sub-filters and frees the newest ones emptied; `go_on`: past
  // a sub-filter that could not be emptied too (CF.COMPACT), else stop there.
  void compact(bool go_on) noexcept;

  [[nodiscard]] std::uint64_t items() const noexcept { return items_; }
  [[nodiscard]] std::uint64_t deletes() const noexcept { return deletes_; }
  [[nodiscard]] std::uint64_t buckets() const noexcept { return buckets_; }
  [[nodiscard]] std::uint16_t bucket_size() const noexcept { return bucket_size_; }
  [[nodiscard]] std::uint16_t max_iterations() const noexcept { return max_iterations_; }
  [[nodiscard]] std::uint16_t expansion() const noexcept { return expansion_; }
  [[nodiscard]] const std::vector<SubFilter>& filters() const noexcept { return filters_; }
  [[nodiscard]] std::uint64_t bytes() const noexcept;
  // CF.INFO's Size and MEMORY USAGE: RedisBloom's structs and the fingerprints.
  [[nodiscard]] std::uint64_t memory_usage() const noexcept;
  // CF.DEBUG's line.
  [[nodiscard]] std::string debug_line() const;

  [[nodiscard]] std::string encode_header() const;
  // An all-empty filter of the header's shape; nullptr with `problem` set for a header
  // RedisBloom refuses, one past what it can hold, or one past `max_bytes`.
  static std::unique_ptr<Filter> decode_header(std::string_view header, std::uint64_t max_bytes,
                                               ChainAllocator allocator, std::string& problem);
  // SCANDUMP after the header: the chunk at `iterator` and the iterator after it; an empty
  // span past the end.
  [[nodiscard]] std::span<const std::uint8_t> chunk(long long iterator,
                                                    long long* next) const noexcept;
  // LOADCHUNK: the chunk that ends before `iterator`; false when it fits no sub-filter.
  bool load_chunk(long long iterator, std::string_view data) noexcept;

  // For the RDB loader: a filter built sub-filter by sub-filter, then checked by `problem`.
  Filter(std::uint64_t items, std::uint64_t deletes, std::uint64_t buckets,
         std::uint16_t bucket_size, std::uint16_t max_iterations, std::uint16_t expansion,
         std::vector<SubFilter> filters, ChainAllocator allocator) noexcept;
  Filter(const Filter& other);
  // Empty when sound (each sub-filter's bytes match its buckets, the figures as RedisBloom
  // checks them), else what is wrong.
  [[nodiscard]] std::string problem() const;

  // Active defragmentation, as redisbloom::Chain::relocate.
  std::size_t relocate(std::size_t first, void* (*move)(void* context, void* block), void* context,
                       bool (*stop)(void* context), std::uint64_t* moved) noexcept;

 private:
  struct Lookup {
    std::uint64_t h1;
    std::uint64_t h2;
    std::uint8_t fp;
  };
  static Lookup lookup(std::uint64_t hash) noexcept;
  // Insert::inserted when a sub-filter was stacked, else cannot_grow or over_limit.
  Insert grow(std::uint64_t max_bytes);
  Insert insert_fingerprint(const Lookup& at, std::uint64_t max_bytes);
  bool kick_in(SubFilter& filter, const Lookup& at) noexcept;
  bool compact_one(std::size_t index) noexcept;

  std::uint64_t items_ = 0;
  std::uint64_t deletes_ = 0;
  std::uint64_t buckets_ = 0;  // of the first sub-filter
  std::uint16_t bucket_size_ = 0;
  std::uint16_t max_iterations_ = 0;
  std::uint16_t expansion_ = 0;  // rounded up to a power of two; 0: never grows
  std::vector<SubFilter> filters_;
  ChainAllocator allocator_;
};

}  // namespace redbloom::cuckoo
