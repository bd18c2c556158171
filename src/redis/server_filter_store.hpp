// A filter kept by a server's own Bloom engine, used through the BF.* commands that redbloom's
// module, RedisBloom, Redis 8 and valkey-bloom all answer alike: a key that BF.RESERVE or
// BF.ADD made, told apart by its TYPE (redbloomF, MBbloom--, bloomfltr). Adds go as
// BF.INSERT NOCREATE (BF.MADD's per-item answers, but a key deleted meanwhile is an error, not
// a fresh empty filter), lookups as BF.MEXISTS, info as BF.INFO; commands of 1000 items, several
// in flight (Router::pipeline). The TYPE is read once at open; each lookup command is followed
// by a TYPE in the same pipeline, so a key deleted under the store is an error, not "absent",
// without a round trip of its own. The engine owns the bits, so what needs redbloom's own
// (byte-for-byte copies, a count of set bits, windows) is refused with a message naming the
// kind. One key: one server or one slot of a cluster.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "redbloom/engine_filter.hpp"
#include "redbloom/redis_endpoint.hpp"
#include "redbloom/store.hpp"

struct redisReply;

namespace redbloom {

namespace redis {
class Router;
}  // namespace redis

class ServerFilterStore final : public Store {
 public:
  // "redbloom.so's BF filter (TYPE redbloomF)" for a TYPE some engine gives its filters;
  // nullopt for any other type.
  [[nodiscard]] static std::optional<std::string> kind_of_type(std::string_view type);
  // nullptr when NAME is not such a key (missing, a hash, a string, ...).
  [[nodiscard]] static std::unique_ptr<ServerFilterStore> open_if_server_filter(
      const RedisEndpoint& endpoint, const std::string& name);
  // What BF.INFO says of the filter's size (0: not said, or BF.INFO refused).
  struct Sizes {
    std::uint64_t capacity = 0;
    double error_rate = 0;
  };
  [[nodiscard]] static Sizes sizes_of(const redisReply& info);
  // NAME known to be such a key (`type`: its TYPE), on the connection `router`, with the sizes
  // BF.INFO gave there with the kind decision (redis_filters.hpp).
  [[nodiscard]] static std::unique_ptr<ServerFilterStore> open(
      std::unique_ptr<redis::Router> router, const std::string& name, std::string_view type,
      const Sizes& sizes);
  // InvalidArgument for options no engine takes (a capacity below 1, a rate outside (0, 1), an
  // expansion with nonscaling).
  static void check_options(const EngineFilterOptions& options);
  // BF.RESERVE (engine_filter.hpp), then the store of the new key. FilterExists if NAME is taken.
  [[nodiscard]] static std::unique_ptr<ServerFilterStore> reserve(
      const RedisEndpoint& endpoint, const std::string& name, const EngineFilterOptions& options);
  // Unlinks NAME if it is such a key; false (nothing done) otherwise.
  static bool drop_if_server_filter(const RedisEndpoint& endpoint, const std::string& name);

  ~ServerFilterStore() override;

  // Placeholders but for capacity (BF.INFO's, at open) and error_rate (where the engine's
  // BF.INFO gives it, or this process reserved the key; else 0: unknown).
  [[nodiscard]] const FilterParams& params() const noexcept override;
  void add(std::span<const std::string_view> items, std::span<std::uint8_t> newly_added) override;
  // The same commands as add: the engine has no bulk path of its own.
  void load(std::span<const std::string_view> items) override;
  void contains(std::span<const std::string_view> items,
                std::span<std::uint8_t> present) const override;
  [[nodiscard]] std::uint64_t count_set_bits() const override;
  void read_bytes(std::uint64_t partition, std::uint64_t offset,
                  std::span<std::uint8_t> out) const override;
  void write_bytes(std::uint64_t partition, std::uint64_t offset,
                   std::span<const std::uint8_t> bytes) override;
  // MEMORY USAGE of the key (BF.INFO's Size where MEMORY is not allowed).
  [[nodiscard]] std::uint64_t storage_bytes() const override;
  [[nodiscard]] std::optional<ServerFilterInfo> server_filter_info() const override;
  [[nodiscard]] std::vector<std::string> engines() const override;
  void flush() override {}
  // "redis 127.0.0.1:6379 filter urls (redbloom.so's BF filter (TYPE redbloomF))".
  [[nodiscard]] std::string location() const override;
  [[nodiscard]] std::size_t batch_items() const noexcept override { return std::size_t{1} << 16; }

  struct State;

 private:
  explicit ServerFilterStore(std::unique_ptr<State> state);
  // BF.INFO's reply; its "Error rate" (valkey-bloom has one) into `error_rate` if given.
  [[nodiscard]] ServerFilterInfo info_of(const redisReply& reply, double* error_rate) const;
  [[noreturn]] void refuse(std::string_view what) const;
  std::unique_ptr<State> state_;
};

}  // namespace redbloom
