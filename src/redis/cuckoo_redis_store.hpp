// A cuckoo filter (redbloom/cuckoo.hpp) in Redis: on one server, spread over several servers
// (partition p on sharding::shard_of_partition(p, servers), as ShardedRedisStore), or in a
// Redis Cluster (its partitions spread over the masters by hash-tag salts, as a plain
// filter's). Each (partition, link) is one string holding that link's table exactly as a
// cuckoo file does, so tables copy between stores verbatim.
//
// Every add and remove is one Lua script per unit of items and server (per partition on a
// cluster, cuckoo_script.hpp), atomic on its server: an add with its kicks and a link's growth
// is one step. The client hashes the items; the script finds buckets and fingerprints. Lookups
// and counts go the same way, or, for a partition with many items in the batch, read its
// roster and tables whole (one GET each: kicks move fingerprints only inside a table, so an
// item added before the call and not removed is in the table read) and answer here.
//
// The metadata hash NAME (format "redbloom-cuckoo", core/redis_format.hpp) goes through the one
// object lifecycle (object.hpp): claimed on every server, link 0 of each partition made zeroed,
// then marked ready. Not thread-safe: one store (its connections) per thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/cuckoo_shape.hpp"
#include "redbloom/filter_backend.hpp"
#include "redbloom/redis_endpoint.hpp"

namespace redbloom {

namespace redis {
class Router;
class Fields;
}  // namespace redis

class RedisCuckooStore final : public FilterBackend, public CuckooTables {
 public:
  // An existing filter of that name throws FilterExists unless `overwrite` (the caller dropped
  // other kinds first); a server listed twice is refused.
  static std::unique_ptr<RedisCuckooStore> create(const std::vector<RedisEndpoint>& servers,
                                                  const std::string& name,
                                                  const CuckooOptions& options, bool overwrite);
  // NAME known to hold a cuckoo filter: `first_fields` its metadata as read on the first server
  // by `first` (the one kind decision, redis_filters.hpp). Waits for a creator as
  // RedisStore::open; opened with another server list than it was made on: FormatError.
  static std::unique_ptr<RedisCuckooStore> open(std::unique_ptr<redis::Router> first,
                                                const redis::Fields& first_fields,
                                                const std::vector<RedisEndpoint>& servers,
                                                const std::string& name,
                                                std::chrono::milliseconds wait_for_creator);
  // Drops every key of the cuckoo filter (metadata and links on every server); false when NAME
  // holds no cuckoo filter on any of them.
  static bool drop_if_cuckoo(const std::vector<RedisEndpoint>& servers, const std::string& name);
  // The partitions a Redis filter of `options` gets when its options leave them at 1: enough
  // that each link-0 table is at most a Bloom filter's default partition, and at least
  // `servers`.
  [[nodiscard]] static CuckooOptions with_redis_partitions(CuckooOptions options,
                                                           std::size_t servers);

  // How lookups and counts go: chosen per partition by the batch's items (automatic), or
  // always by the script, or always by reading the tables (tests compare the two).
  enum class LookupMode { automatic, script, tables };
  void set_lookup_mode(LookupMode mode) noexcept;

  ~RedisCuckooStore() override;

  [[nodiscard]] FilterShape shape() const override;
  void add(std::span<const std::string_view> items, std::span<std::uint8_t> newly_added) override;
  void load(std::span<const std::string_view> items) override;
  void contains(std::span<const std::string_view> items,
                std::span<std::uint8_t> present) const override;
  void remove(std::span<const std::string_view> items, std::span<std::uint8_t> removed) override;
  // For a filter kept with an exact set (FilterBackend's insert and remove_known, where it
  // declares them): one more copy of each item whatever the links hold (CapacityExceeded as
  // add), and the removal of an item's copy only where one link alone holds its fingerprint
  // (removed[i] = 0 otherwise), each batch atomic per server as add is.
  void insert(std::span<const std::string_view> items) override;
  void remove_known(std::span<const std::string_view> items,
                    std::span<std::uint8_t> removed) override;
  void count(std::span<const std::string_view> items,
             std::span<std::uint32_t> counts) const override;
  [[nodiscard]] std::optional<CuckooInfo> cuckoo_info() const override;
  [[nodiscard]] std::uint64_t count_set_bits() const override;
  [[nodiscard]] std::uint64_t created_unix_ns() const override;
  // The links' bytes (as strings in Redis).
  [[nodiscard]] std::uint64_t storage_bytes() const override;
  void flush() override {}
  // "redis 127.0.0.1:6379 filter pages (cuckoo)".
  [[nodiscard]] std::string location() const override;
  [[nodiscard]] std::vector<std::string> engines() const override;
  [[nodiscard]] std::size_t batch_items() const noexcept override { return std::size_t{1} << 14; }
  [[nodiscard]] CuckooTables* cuckoo_tables() noexcept override { return this; }
  [[nodiscard]] const CuckooTables* cuckoo_tables() const noexcept override { return this; }

  [[nodiscard]] std::vector<std::uint32_t> link_counts() const override;
  [[nodiscard]] std::vector<std::uint8_t> read_table(std::uint32_t partition,
                                                     std::uint32_t link) const override;
  void write_table(std::uint32_t partition, std::uint32_t link,
                   std::span<const std::uint8_t> bytes) override;

  // The key of link `link` of partition `partition` (tests read its bytes).
  [[nodiscard]] std::string link_key(std::uint32_t partition, std::uint32_t link) const;

  struct State;

 private:
  explicit RedisCuckooStore(std::unique_ptr<State> state);
  // add's and insert's work (`mode` one of them); flags[i] from the answers.
  void write_items(char mode, std::span<const std::string_view> items,
                   std::span<std::uint8_t> flags);
  // remove's and remove_known's.
  void clear_items(char mode, std::span<const std::string_view> items,
                   std::span<std::uint8_t> removed);
  std::unique_ptr<State> state_;
};

}  // namespace redbloom
