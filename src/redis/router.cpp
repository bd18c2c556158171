#include "router.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

#include "cluster_router.hpp"
#include "core/sharding.hpp"
#include "redbloom/error.hpp"
#include "redbloom/stream.hpp"

namespace redbloom::redis {
namespace {

// One server: every unit goes down the one connection, in order; slots mean nothing.
class SingleRouter final : public Router {
 public:
  explicit SingleRouter(const RedisEndpoint& endpoint) : connection_(endpoint) {}

  void pipeline(std::size_t units, std::string_view operation, const Route& /*route*/,
                const Make& make, const OnUnit& on_unit, OnLostNode /*lost*/) override {
    redis::pipeline(connection_, units, operation, make, on_unit);
  }
  using Router::call;
  Reply call(std::uint16_t /*slot*/, std::span<const std::string_view> args,
             OnLostNode /*lost*/) override {
    connection_.append(args);
    return connection_.read(args.empty() ? std::string_view{"?"} : args.front());
  }
  [[nodiscard]] std::size_t masters() const override { return 1; }
  [[nodiscard]] std::size_t master_of(std::uint16_t /*slot*/) const override { return 0; }
  [[nodiscard]] std::string keyspace_id() override {
    Reply info = call(0, {"INFO", "server"}, OnLostNode::retry);
    // Managed services often refuse INFO (an ACL without @dangerous, or renamed): the address
    // then stands for the server, so only the same address is recognised as the same keys.
    if (is_error(*info)) return "address/" + connection_.endpoint().describe();
    const std::string_view text = text_of(*info);
    const std::size_t at = text.find("run_id:");
    if (at == std::string_view::npos) fail("INFO server", "no run_id in the reply");
    const std::size_t end = text.find_first_of("\r\n", at);
    return std::string(text.substr(at + 7, end - at - 7)) + "/" +
           std::to_string(connection_.endpoint().db);
  }
  [[nodiscard]] bool is_cluster() const noexcept override { return false; }
  [[nodiscard]] const RedisEndpoint& endpoint() const noexcept override {
    return connection_.endpoint();
  }
  [[nodiscard]] std::string message(std::string_view operation,
                                    std::string_view what) const override {
    std::string text = connection_.message(operation, what);
    // A redirect means the server is a cluster node that does not hold the key's slot.
    if (what.starts_with("MOVED ") || what.starts_with("ASK ") || what.starts_with("CLUSTERDOWN")) {
      const RedisEndpoint& server = connection_.endpoint();
      text += " (this server is a Redis Cluster node: give the cluster as redis+cluster://" +
              server.host + ":" + std::to_string(server.port) + ")";
    }
    return text;
  }

 private:
  Connection connection_;
};

}  // namespace

Reply Router::run(std::uint16_t slot, std::initializer_list<std::string_view> args,
                  OnLostNode lost) {
  Reply reply = call(slot, args, lost);
  if (is_error(*reply)) fail(args.size() > 0 ? *args.begin() : "?", text_of(*reply));
  return reply;
}

std::string permission_problem(std::string_view what) {
  if (!what.starts_with("NOPERM")) return std::string(what);
  std::string said(what);
  // "... to run the 'script|load' command": the command as a user types it, SCRIPT LOAD.
  const std::string_view run = "to run the '";
  if (const std::size_t at = what.find(run); at != std::string_view::npos) {
    const std::size_t from = at + run.size();
    const std::size_t to = what.find('\'', from);
    std::string command(what.substr(from, to == std::string_view::npos ? 0 : to - from));
    for (char& c : command) c = c == '|' ? ' ' : static_cast<char>(std::toupper(c));
    if (!command.empty()) {
      return "the Redis user may not run " + command + " (" + said +
             "); ask the server's administrator to allow it for this user (ACL +" +
             std::string(what.substr(from, to - from)) + "), or connect as a user who may";
    }
  }
  if (what.find("keys") != std::string_view::npos) {
    return "the Redis user may not use a key of this filter (" + said +
           "); a filter NAME uses the key NAME and keys that start with 'NAME:', so the "
           "user's key patterns must allow both (e.g. ~NAME ~NAME:*), or choose a name they "
           "allow";
  }
  return "the Redis user may not do this (" + said + ")";
}

bool refuses_read_only_scripts(const redisReply& reply) {
  if (!is_error(reply)) return false;
  std::string text(text_of(reply));
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const bool about_them =
      text.find("eval_ro") != std::string::npos || text.find("evalsha_ro") != std::string::npos;
  return about_them && (text.starts_with("err unknown command") || text.starts_with("noperm"));
}

void Router::fail(std::string_view operation, std::string_view what) const {
  throw StorageError(message(operation, permission_problem(what)));
}

void Router::expect(const redisReply& reply, int type, std::string_view operation) const {
  if (is_error(reply)) fail(operation, text_of(reply));
  if (reply.type != type) fail(operation, "unexpected reply type " + std::to_string(reply.type));
}

std::uint16_t slot_of(std::string_view key) {
  return static_cast<std::uint16_t>(sharding::cluster_slot(key));
}

void for_each_master(const Router& router, const std::function<void(std::uint16_t)>& visit) {
  std::vector<bool> visited(router.masters(), false);
  for (std::uint32_t slot = 0; slot < sharding::kClusterSlots; ++slot) {
    const std::size_t master = router.master_of(static_cast<std::uint16_t>(slot));
    if (master >= visited.size() || visited[master]) continue;
    visited[master] = true;
    visit(static_cast<std::uint16_t>(slot));
  }
}

namespace {

long long version_of(const redisReply* reply) {
  // A server without the module answers "unknown command".
  return reply && reply->type == REDIS_REPLY_INTEGER && reply->integer > 0 ? reply->integer : 0;
}

}  // namespace

void Router::remember_module_version(const redisReply& reply) noexcept {
  module_version_ = version_of(&reply);
}

long long module_version(Router& router) {
  if (const auto known = router.remembered_module_version()) return *known;
  long long lowest = -1;
  for_each_master(router, [&](std::uint16_t slot) {
    if (lowest == 0) return;
    const Reply reply = router.call(slot, {std::string_view{"RB.VERSION"}}, OnLostNode::retry);
    const long long version = version_of(reply.get());
    lowest = lowest < 0 ? version : std::min(lowest, version);
  });
  return std::max(lowest, 0LL);
}

bool claim_hash(Router& router, std::string_view key,
                std::initializer_list<std::string_view> fields) {
  static constexpr std::string_view kClaim =
      "if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end "
      "redis.call('HSET', KEYS[1], unpack(ARGV)) return 1";
  std::vector<std::string_view> args{"EVAL", kClaim, "1", key};
  args.insert(args.end(), fields.begin(), fields.end());
  Reply reply = router.call(slot_of(key), args);
  router.expect(*reply, REDIS_REPLY_INTEGER, "EVAL (claiming the name)");
  return reply->integer == 1;
}

std::int64_t clock_offset_ms(const Router& router, const redisReply& time) {
  router.expect(time, REDIS_REPLY_ARRAY, "TIME");
  if (time.elements != 2) router.fail("TIME", "not a time");
  const std::int64_t server = std::stoll(std::string(text_of(*time.element[0]))) * 1000 +
                              std::stoll(std::string(text_of(*time.element[1]))) / 1000;
  return server - static_cast<std::int64_t>(system_now_ns() / 1'000'000);
}

std::unique_ptr<Router> make_router(const RedisEndpoint& endpoint) {
  if (endpoint.is_cluster()) return make_cluster_router(endpoint);
  return std::make_unique<SingleRouter>(endpoint);
}

}  // namespace redbloom::redis
