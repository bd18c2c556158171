// A windowed or growing filter (stream.hpp) in Redis: on one server, spread over several
// servers (partition p on sharding::shard_of_partition(p, servers), as ShardedRedisStore), or
// in a Redis Cluster (its partitions spread over the masters by hash-tag salts, as a plain
// filter's).
//
// Each (slice, partition) is one key that Redis itself retires (PEXPIREAT); every add and
// lookup is one Lua script per partition and unit of items (stream_script.hpp has the keys and
// the protocol), which runs atomically on the server: of several writers adding one item,
// exactly one sees it as new, across a slice boundary and while a link grows. The client
// hashes the items and sends each link's bit offsets; the script takes the server's time
// unless the store was given a Clock (then the client's now, in ms, goes with each call, and
// the expiries follow it too: a Clock behind the servers' would have Redis retire slices early).
// Where every master has redbloom's module at RB.VERSION 2, RB.STREAM does the script's work on
// the same keys instead, taking the items and hashing them on the server.
//
// The metadata hash NAME (format "redbloom-stream", core/redis_format.hpp) goes through the one
// object lifecycle (object.hpp); a plain RedisStore refuses it, and open_if_stream answers nullptr
// for a plain filter. Not thread-safe: one store (its connections) per thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/stream_shape.hpp"
#include "redbloom/filter_backend.hpp"
#include "redbloom/redis_endpoint.hpp"
#include "redbloom/stream.hpp"

namespace redbloom {

namespace redis {
class Router;
class Fields;
}  // namespace redis

class RedisStreamStore final : public FilterBackend, public StreamLinks {
 public:
  // Creates the metadata on every server (no slice key exists until the first add). An
  // existing filter of that name (stream or plain) throws FilterExists unless `overwrite`;
  // a server listed twice is refused.
  static std::unique_ptr<RedisStreamStore> create(const std::vector<RedisEndpoint>& servers,
                                                  const std::string& name, const StreamShape& shape,
                                                  Clock clock, bool overwrite);
  // nullptr when NAME holds no stream filter (no key, or a plain filter); waits for a creator
  // like RedisStore::open. Opened with another server list than it was made on: FormatError.
  static std::unique_ptr<RedisStreamStore> open_if_stream(
      const std::vector<RedisEndpoint>& servers, const std::string& name, Clock clock,
      std::chrono::milliseconds wait_for_creator);
  // The same, NAME known to hold one: `first_fields` are its metadata as read on the first
  // server, on the connection `first`, with the server's clock offset (redis::clock_offset_ms)
  // (the one kind decision, redis_filters.hpp).
  static std::unique_ptr<RedisStreamStore> open(std::unique_ptr<redis::Router> first,
                                                const redis::Fields& first_fields,
                                                std::int64_t server_offset_ms,
                                                const std::vector<RedisEndpoint>& servers,
                                                const std::string& name, Clock clock,
                                                std::chrono::milliseconds wait_for_creator);
  // Drops every key of the stream filter (metadata and all slices on every server); false when
  // NAME is not a stream filter.
  static bool drop_if_stream(const std::vector<RedisEndpoint>& servers, const std::string& name);

  ~RedisStreamStore() override;

  [[nodiscard]] FilterShape shape() const override;
  void add(std::span<const std::string_view> items, std::span<std::uint8_t> newly_added) override;
  void load(std::span<const std::string_view> items) override;
  void contains(std::span<const std::string_view> items,
                std::span<std::uint8_t> present) const override;
  // Over the live slices' links.
  [[nodiscard]] std::uint64_t count_set_bits() const override;
  // MEMORY USAGE of the metadata and the live slice keys.
  [[nodiscard]] std::uint64_t storage_bytes() const override;
  [[nodiscard]] std::optional<StreamInfo> stream_info() const override;
  [[nodiscard]] StreamLinks* links() noexcept override { return this; }
  [[nodiscard]] const StreamLinks* links() const noexcept override { return this; }
  [[nodiscard]] const RedisStreamStore* redis_stream_store() const noexcept override {
    return this;
  }
  // StreamLinks (stream_copy.cpp): a slice key per partition holds the links that partition
  // grew; a copy writes each key whole (header, links, expiry) and marks it in the roster.
  [[nodiscard]] std::vector<SliceCopy> live_slices() const override;
  void read_link(std::int64_t slice, std::uint32_t link, std::uint64_t partition,
                 std::uint64_t offset, std::span<std::uint8_t> out) const override;
  void restore_slices(std::span<const SliceCopy> slices) override;
  void write_link(std::int64_t slice, std::uint32_t link, std::uint64_t partition,
                  std::uint64_t offset, std::span<const std::uint8_t> bytes) override;
  [[nodiscard]] std::uint64_t created_unix_ns() const override;
  void flush() override {}
  // "redis 127.0.0.1:6379 filter clicks (windowed)".
  [[nodiscard]] std::string location() const override;
  // The commands each server (each master) runs for per-item work: the module's or stock.
  [[nodiscard]] std::vector<std::string> engines() const override;
  [[nodiscard]] std::size_t batch_items() const noexcept override { return std::size_t{1} << 16; }

  [[nodiscard]] const StreamShape& stream_shape() const noexcept;
  // The key of slice `slice` of partition `partition` (tests look at its TTL).
  [[nodiscard]] std::string slice_key(std::uint64_t partition, std::int64_t slice) const;
  // The key of partition `partition`'s slice roster (tests evict it).
  [[nodiscard]] std::string roster_key(std::uint64_t partition) const;

  // What the store knows (internal: stream_state.hpp).
  struct State;
  // For a job whose own script writes the filter's keys (redis_stream_dedup.cpp).
  [[nodiscard]] const State& state() const noexcept { return *state_; }

 private:
  explicit RedisStreamStore(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace redbloom
