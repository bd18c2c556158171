// A filter in one Redis server (stock Redis >= 6.2: no module, so managed Redis works too).
// Keys and metadata are described in src/redis_keys.hpp and docs/redis.md.
//
// Per-item paths (every item's bits in one partition key, so one command decides it):
//   test_and_set  one `BITFIELD key SET u1 off 1 ...` per partition per round of items; the
//                 old bits come back, so each item's "newly added" is known, and the command is
//                 atomic: of two clients adding one item, exactly one sees it as new.
//   test          classic: `BITFIELD_RO key GET u1 off ...`; blocked: one 64-byte GETRANGE
//                 per item (its whole block) instead of k bit reads.
// Bulk paths, chosen per partition by the cost model below (BulkMode::automatic):
//   set           ORs a locally built delta of the partition into it: the delta goes to a temp
//                 key in the partition's slot (with a TTL), then `BITOP OR key key temp`, then
//                 the temp key is unlinked. Idempotent: loading the same items twice is harmless.
//   test          downloads the partition (GETRANGE chunks) and answers locally.
// Cost model: bytes on the wire. A BITFIELD bit costs ~43 bytes (the "SET u1 <offset> 1"
// arguments and the reply), a blocked GETRANGE ~130 bytes per item plus the key; the bulk
// path moves the partition once. The bulk path is taken when it moves fewer bytes. Both paths
// give identical answers (tests compare them).
//
// Pipelining: a batch's commands go in rounds of consecutive items, several rounds in flight
// (on one server each round hashed only as it is sent, so the client prepares the next rounds
// while the server works), so when a connection fails the rounds whose replies arrived are
// known committed: IncompleteWrite::committed() is exact.
//
// Durability is Redis's: a filter survives a restart if the server persists (AOF/RDB).
// flush() does nothing. Not thread-safe: one RedisStore (one connection) per thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "redbloom/redis_endpoint.hpp"
#include "redbloom/store.hpp"

namespace redbloom {

namespace redis {
class Router;
class Fields;
// Partition key -> its length, as a pipeline read them (object.hpp).
using KeyLengths = std::map<std::string, std::uint64_t>;
}  // namespace redis

// Which part of a filter sharded over several servers a RedisStore holds (sharded_store.hpp):
// the partitions p with sharding::shard_of_partition(p, count) == index. The default is the
// whole filter on one server. (Outside the class: GCC rejects `= {}` default arguments of a
// nested class with member initializers.)
struct RedisShardSpec {
  std::uint32_t index = 0;
  std::uint32_t count = 1;
  std::string set_id;  // shared by the shards of one filter; empty when not sharded
};

// On a cluster, how often work was sent elsewhere: MOVED (a slot had moved), ASK (a slot was
// being migrated), and waits (TRYAGAIN, CLUSTERDOWN, a lost master, a key not moved yet).
struct RedisRedirectCounts {
  std::uint64_t moved = 0;
  std::uint64_t ask = 0;
  std::uint64_t waits = 0;
};

class RedisStore final : public Store {
 public:
  using ShardSpec = RedisShardSpec;

  enum class BulkMode {
    automatic,  // the cheaper path per partition, by the cost model
    per_item,   // always BITFIELD / GETRANGE per item
    bulk,       // always whole-partition transfers for set() and test()
  };

  // Creates an empty filter: claims the metadata key, then allocates every partition zeroed.
  // An existing filter of that name throws FilterExists unless `overwrite`; a key of that name
  // that is not a redbloom filter, or an existing partition key, is never overwritten.
  static std::unique_ptr<RedisStore> create(const RedisEndpoint& endpoint, std::string name,
                                            const FilterParams& params, bool overwrite = false,
                                            const ShardSpec& shard = {});
  // Opens an existing filter after checking its metadata and every partition key (type and
  // length). Throws NotFound, or FormatError naming what is wrong.
  // A sharded filter must be opened as the shard it was created as (and, if expected.set_id is
  // given, of that set): anything else is a FormatError that says so.
  // A filter still being created by another process is waited for, up to `wait_for_creator`
  // (IncompleteFilter after that).
  // `likely_keys`: partition keys it probably holds, whose lengths are read with the metadata
  // (a sharded filter's other servers), so that checking them costs no round trip more.
  static std::unique_ptr<RedisStore> open(
      const RedisEndpoint& endpoint, std::string name, const ShardSpec& expected = {},
      std::chrono::milliseconds wait_for_creator = std::chrono::seconds(30),
      const std::vector<std::string>& likely_keys = {});
  // The same on a connection already made, with the metadata already read there (`fields`;
  // nullptr: read it now), as the one kind decision (redis_filters.hpp) hands them over, and
  // with them the lengths of partition keys read in that pipeline too: when they are every
  // partition this store holds, whole, checking them needs no round trip more.
  static std::unique_ptr<RedisStore> open(std::unique_ptr<redis::Router> router, std::string name,
                                          const redis::Fields* fields, const ShardSpec& expected,
                                          std::chrono::milliseconds wait_for_creator,
                                          const redis::KeyLengths& known_lengths = {});
  // Unlinks the filter's keys after checking that NAME is a redbloom filter (or an unfinished
  // one). Throws NotFound if there is nothing to drop.
  static void drop(const RedisEndpoint& endpoint, const std::string& name);
  // True if NAME exists on the server (whatever it holds).
  static bool exists(const RedisEndpoint& endpoint, const std::string& name);
  // One sentence for each server (each master of a cluster) that may evict a filter's keys
  // when full: a maxmemory limit with an allkeys-* policy (the volatile-* ones take only keys
  // with a TTL, which a filter's never have). Empty if none, or where CONFIG is not allowed.
  static std::vector<std::string> eviction_risks(const RedisEndpoint& endpoint);
  // The masters that hold keys: a cluster's, else 1.
  static std::size_t masters(const RedisEndpoint& endpoint);
  // The server's run_id and the endpoint's db ("<run_id>/<db>"): equal for two endpoints that
  // reach the same keyspace under different addresses (localhost, 127.0.0.1, an alias).
  static std::string keyspace_id(const RedisEndpoint& endpoint);

  ~RedisStore() override;

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
  // MEMORY USAGE of the metadata and partition keys.
  [[nodiscard]] std::uint64_t storage_bytes() const override;
  void flush() override {}
  [[nodiscard]] std::string location() const override;
  // The commands each server (each master) runs for per-item work: the module's or stock.
  [[nodiscard]] std::vector<std::string> engines() const override;
  // The endpoint and name, unless the filter is sharded over several servers.
  [[nodiscard]] std::optional<RedisKeys> redis_keys() const override;
  // Large: calls pipeline internally in rounds (exact committed prefix), and a large lookup
  // batch lets the cost model read a whole partition once instead of item by item.
  [[nodiscard]] std::size_t batch_items() const noexcept override { return std::size_t{1} << 18; }
  [[nodiscard]] std::size_t bulk_batch_items() const noexcept override { return SIZE_MAX; }

  void set_bulk_mode(BulkMode mode) noexcept;
  [[nodiscard]] const ShardSpec& shard() const noexcept;
  // True if partition `partition` is held by this store (always, when not sharded).
  [[nodiscard]] bool holds(std::uint64_t partition) const noexcept;
  [[nodiscard]] const std::string& name() const noexcept;
  [[nodiscard]] RedisRedirectCounts redirections() const noexcept;
  // The Redis Cluster slot of a partition's key (its node on a cluster).
  [[nodiscard]] std::uint64_t partition_slot(std::uint64_t partition) const;
  [[nodiscard]] const RedisEndpoint& endpoint() const noexcept;

  // What the store knows (internal: src/redis/store_state.hpp).
  struct State;

 private:
  explicit RedisStore(std::unique_ptr<State> state);
  void require_held(std::uint64_t partition) const;
  std::unique_ptr<State> state_;
};

}  // namespace redbloom
