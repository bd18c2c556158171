// A filter spread over several independent Redis servers (for one filter far larger than
// one 512 MB string, or than one server). Every item keeps its partition (layout.hpp), so the
// bits are those of the same filter in a file; partition p lives on server
// sharding::shard_of_partition(p, servers). Each server holds the metadata, which records the
// shard count, its own index and an id shared by the set, so opening with another list of
// servers, or the same list in another order, is refused instead of giving wrong answers.
//
// Every operation splits its batch by server and runs the servers' pipelines at the same time
// (one thread and connection per server). Each item's test-and-set is still one atomic
// BITFIELD on one server. When a server fails, IncompleteWrite::committed() is the longest
// prefix of the batch that every server committed.
//
// Do not change the server list of a live filter: the partitions would be looked for on the
// wrong servers. (Moving to another list is an export and an import.)
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "redis/redis_store.hpp"

namespace redbloom {

class ShardedRedisStore final : public Store {
 public:
  // Creates the filter on every server (each takes its own partitions). Fails, leaving nothing
  // behind, if any server already has the name (unless `overwrite`) or a server is listed
  // twice.
  static std::unique_ptr<ShardedRedisStore> create(const std::vector<RedisEndpoint>& servers,
                                                   const std::string& name,
                                                   const FilterParams& params,
                                                   bool overwrite = false);
  static std::unique_ptr<ShardedRedisStore> open(
      const std::vector<RedisEndpoint>& servers, const std::string& name,
      std::chrono::milliseconds wait_for_creator = std::chrono::seconds(30));
  // The same with the first server's connection already made and its metadata already read
  // there (redis_store.hpp's open of the same form).
  // `first_lengths`: lengths of partition keys read there too (redis_store.hpp).
  static std::unique_ptr<ShardedRedisStore> open(std::unique_ptr<redis::Router> first,
                                                 const redis::Fields* first_fields,
                                                 const std::vector<RedisEndpoint>& servers,
                                                 const std::string& name,
                                                 std::chrono::milliseconds wait_for_creator,
                                                 const redis::KeyLengths& first_lengths = {});
  // Drops the filter's keys from every server that has them (NotFound if none has).
  static void drop(const std::vector<RedisEndpoint>& servers, const std::string& name);
  // True if any server has a key NAME.
  static bool exists(const std::vector<RedisEndpoint>& servers, const std::string& name);

  ~ShardedRedisStore() override;

  [[nodiscard]] const FilterParams& params() const noexcept override;
  void add(std::span<const std::string_view> items, std::span<std::uint8_t> newly_added) override;
  void load(std::span<const std::string_view> items) override;
  void contains(std::span<const std::string_view> items,
                std::span<std::uint8_t> present) const override;
  [[nodiscard]] std::uint64_t count_set_bits() const override;
  void read_bytes(std::uint64_t partition, std::uint64_t offset,
                  std::span<std::uint8_t> out) const override;
  void write_bytes(std::uint64_t partition, std::uint64_t offset,
                   std::span<const std::uint8_t> bytes) override;
  [[nodiscard]] std::uint64_t created_unix_ns() const override;
  [[nodiscard]] std::uint64_t storage_bytes() const override;
  void flush() override {}
  [[nodiscard]] std::string location() const override;
  // The commands each server (each master) runs for per-item work: the module's or stock.
  [[nodiscard]] std::vector<std::string> engines() const override;
  [[nodiscard]] std::size_t batch_items() const noexcept override;
  [[nodiscard]] std::size_t bulk_batch_items() const noexcept override { return SIZE_MAX; }

  void set_bulk_mode(RedisStore::BulkMode mode) noexcept;
  [[nodiscard]] std::size_t shard_count() const noexcept { return shards_.size(); }
  [[nodiscard]] RedisStore& shard(std::size_t i) noexcept { return *shards_[i]; }

 private:
  explicit ShardedRedisStore(std::vector<std::unique_ptr<RedisStore>> shards);
  RedisStore& holder(std::uint64_t partition) const;
  // Sum of a per-server measure, the servers asked at the same time.
  std::uint64_t sum_over_servers(std::uint64_t (RedisStore::*measure)() const) const;

  std::vector<std::unique_ptr<RedisStore>> shards_;
};

}  // namespace redbloom
