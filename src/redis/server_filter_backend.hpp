// A filter kept by a server's own Bloom engine, used through the BF.* commands that redbloom's
// module, RedisBloom, Redis 8 and valkey-bloom all answer alike: a key that BF.RESERVE or
// BF.ADD made, told apart by its TYPE (redbloomF, MBbloom--, bloomfltr). Adds go as
// BF.INSERT NOCREATE (BF.MADD's per-item answers, but a key deleted meanwhile is an error, not
// a fresh empty filter), lookups as BF.MEXISTS, info as BF.INFO; commands of 1000 items, several
// in flight (Router::pipeline). The TYPE is read once at open; each lookup command is followed
// by a TYPE in the same pipeline, so a key deleted under the backend is an error, not "absent",
// without a round trip of its own. The engine owns the bits in its own layout, so the backend
// offers no bitmap (copies refuse it by its shape, which names the kind), and its shape carries
// what the server says of the filter. One key: one server or one slot of a cluster.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "redbloom/filter_backend.hpp"
#include "redbloom/filter_request.hpp"
#include "redbloom/redis_endpoint.hpp"

struct redisReply;

namespace redbloom {

namespace redis {
class Router;
}  // namespace redis

class ServerFilterBackend final : public FilterBackend {
 public:
  // "redbloom.so's BF filter (TYPE redbloomF)" for a TYPE some engine gives its filters;
  // nullopt for any other type.
  [[nodiscard]] static std::optional<std::string> kind_of_type(std::string_view type);
  // nullptr when NAME is not such a key (missing, a hash, a string, ...).
  [[nodiscard]] static std::unique_ptr<ServerFilterBackend> open_if_server_filter(
      const RedisEndpoint& endpoint, const std::string& name);
  // What BF.INFO (its reply `info`) says of a filter of TYPE `type`, and its "Error rate" into
  // `error_rate` where the engine gives one (valkey-bloom). A refused BF.INFO (ACLs) leaves the
  // sizes at 0: unknown.
  [[nodiscard]] static ServerFilterInfo info_of(std::string_view type, const redisReply& info,
                                                double* error_rate);
  // NAME known to be such a key, on the connection `router`, with what BF.INFO said there with
  // the kind decision (redis_filters.hpp; `error_rate` 0: not said).
  [[nodiscard]] static std::unique_ptr<ServerFilterBackend> open(
      std::unique_ptr<redis::Router> router, const std::string& name, const ServerFilterInfo& info,
      double error_rate);
  // BF.RESERVE (engine_filter.hpp), then the backend of the new key. FilterExists if NAME is taken.
  [[nodiscard]] static std::unique_ptr<ServerFilterBackend> reserve(
      const RedisEndpoint& endpoint, const std::string& name, const EngineFilterOptions& options);
  // Unlinks NAME if it is such a key; false (nothing done) otherwise.
  static bool drop_if_server_filter(const RedisEndpoint& endpoint, const std::string& name);

  ~ServerFilterBackend() override;

  // The facts BF.INFO gave at open; params hold the capacity and the error rate (where the
  // engine's BF.INFO gives it, or this process reserved the key; else 0: unknown).
  [[nodiscard]] FilterShape shape() const override;
  void add(std::span<const std::string_view> items, std::span<std::uint8_t> newly_added) override;
  // The same commands as add: the engine has no bulk path of its own.
  void load(std::span<const std::string_view> items) override;
  void contains(std::span<const std::string_view> items,
                std::span<std::uint8_t> present) const override;
  [[nodiscard]] std::size_t batch_items() const noexcept override { return std::size_t{1} << 16; }
  // The engine counts items, not bits: InvalidArgument naming the kind.
  [[nodiscard]] std::uint64_t count_set_bits() const override;
  // MEMORY USAGE of the key (BF.INFO's Size where MEMORY is not allowed).
  [[nodiscard]] std::uint64_t storage_bytes() const override;
  // BF.INFO now.
  [[nodiscard]] std::optional<ServerFilterInfo> server_filter_info() const override;
  [[nodiscard]] std::vector<std::string> engines() const override;
  void flush() override {}
  // "redis 127.0.0.1:6379 filter urls (redbloom.so's BF filter (TYPE redbloomF))".
  [[nodiscard]] std::string location() const override;

  struct State;

 private:
  explicit ServerFilterBackend(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace redbloom
