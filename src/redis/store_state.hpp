// What a RedisStore knows about its filter: the router, the keys of its partitions and which it
// holds, and how its per-partition work is said (partition_ops.hpp). Shared by the lifecycle
// (redis_admin.cpp) and the data paths (redis_store.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/redis_format.hpp"
#include "object.hpp"
#include "partition_ops.hpp"
#include "redis/redis_store.hpp"
#include "router.hpp"

namespace redbloom {

struct RedisStore::State {
  State(const RedisEndpoint& endpoint, std::string filter_name)
      : router(redis::make_router(endpoint)), name(std::move(filter_name)) {}
  State(std::unique_ptr<redis::Router> connected, std::string filter_name)
      : router(std::move(connected)), name(std::move(filter_name)) {}

  std::unique_ptr<redis::Router> router;
  std::string name;
  FilterParams params;
  std::uint32_t version = redis::kFilterVersion;
  std::uint64_t created_unix_ns = 0;
  std::vector<std::string> keys;     // partition keys, indexed by partition
  std::vector<std::uint16_t> slots;  // their cluster slots
  std::vector<std::uint32_t> salts;  // their hash tags' salts (core/redis_format.hpp)
  std::vector<std::uint64_t> owned;  // the partitions this store holds (all, unless sharded)
  ShardSpec shard;
  BulkMode mode = BulkMode::automatic;
  std::unique_ptr<redis::PartitionCommands> commands;
  long long module_version = 0;  // RB.VERSION on every master; 0 when one lacks the module

  // Scratch, reused between calls.
  std::vector<ItemHash> hashes;
  std::vector<std::uint32_t> partition_of;
  std::vector<std::uint32_t> order;  // item indices grouped by partition

  void set_partitions(const FilterParams& p, const ShardSpec& spec,
                      std::vector<std::uint32_t> tag_salts);

  // A partition key's length: its bits, then the seal (core/redis_format.hpp).
  [[nodiscard]] std::uint64_t key_bytes() const noexcept {
    return params.partition_bytes() + redis::seal_bytes(version);
  }
  [[nodiscard]] redis::PartitionKey partition(std::uint64_t p) const {
    return {keys[p], key_bytes()};
  }
  // The partitions as parts of an object (object.hpp), for the lifecycle's pipelines.
  [[nodiscard]] redis::PartSet owned_parts() const;

  void hash_items(std::span<const std::string_view> items);
  // Items [first, last) only, into `hashes` and `partition_of` already sized for the batch.
  void hash_range(std::span<const std::string_view> items, std::size_t first, std::size_t last);

  struct Group {
    std::uint64_t partition;
    std::size_t begin, end;  // range of `order`
  };
  // Groups items [first, last) by partition into `order` (appending) and returns the groups,
  // each in item order.
  std::vector<Group> group(std::size_t first, std::size_t last);
  // The group's items as a unit for the partition commands.
  [[nodiscard]] redis::UnitItems unit(const Group& g,
                                      std::span<const std::string_view> items) const {
    return {std::span<const std::uint32_t>(order).subspan(g.begin, g.end - g.begin), hashes.data(),
            items.data()};
  }

  // Routes unit i to owned partition i.
  [[nodiscard]] redis::Router::Route route_owned(bool writes = false) const;

  // Runs decode(), naming the server and operation in what it throws: a lost partition is a
  // FormatError, an error reply a StorageError.
  template <class Decode>
  void decoded(std::string_view operation, Decode&& decode) const {
    try {
      decode();
    } catch (const redis::ReplyProblem& problem) {
      if (problem.lost()) throw FormatError(router->message(operation, problem.what()));
      router->fail(operation, problem.what());
    }
  }
};

}  // namespace redbloom
