// Sends a store's commands to the server that holds their keys: one server (SingleRouter), or
// the node of a Redis Cluster that serves each key's slot (ClusterRouter, cluster_router.cpp).
// RedisStore speaks only to a Router, so every filter operation works the same on both.
//
// Work is a pipeline of units (a few commands each, see redis::pipeline). Each unit names the
// slot of the key it works on, the group it belongs to and whether it writes:
//  - slot: a cluster sends the unit to the slot's master, the units of every master in their
//    own pipeline, the masters at the same time; one server ignores it.
//  - group: consecutive units that must run on one node in order (a bulk OR: temp key,
//    SETRANGEs, BITOP, UNLINK). When a slot moves (MOVED / ASK) or is busy (TRYAGAIN,
//    CLUSTERDOWN), a cluster runs the whole group again at the new place, so every group must
//    be safe to run again from its start. A redirected command did not run, so a lone
//    test-and-set unit is re-sent with its answers still exact.
//  - anchor: see UnitRoute.
//  - writes: on a master with replicas a cluster follows the unit with WAIT, so a reply the
//    caller sees means the write reached a replica too and survives a failover.
// on_unit(unit, replies) sees a unit's replies together; it is never called concurrently, but
// units of different nodes arrive in any order, and a unit of a group that ran again is seen
// again.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "connection.hpp"
#include "redbloom/redis_endpoint.hpp"
#include "redis/redis_store.hpp"

namespace redbloom::redis {

using RedirectCounts = redbloom::RedisRedirectCounts;

struct UnitRoute {
  std::uint16_t slot = 0;
  std::size_t group = 0;  // the group's first unit; units of a group are consecutive
  bool writes = false;
  // A key the unit needs where it runs. An ASK may come from another key of the group (a new
  // temp key in a slot being migrated) while this one has not moved yet: then the group waits
  // (TRYAGAIN-like) instead of running where this key is missing.
  std::string_view anchor;
};

// What to do when a node's connection is lost in the middle of a pipeline.
enum class OnLostNode {
  fail,   // throw: the units in flight may or may not have run (test-and-set: answers unknown)
  retry,  // wait for a failover and run the unfinished groups again (idempotent work only)
};

class Router {
 public:
  using Route = std::function<UnitRoute(std::size_t)>;
  using Make = std::function<std::size_t(std::size_t, CommandBuffer&)>;
  using OnUnit = std::function<void(std::size_t, Replies)>;

  virtual ~Router() = default;
  Router() = default;
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  virtual void pipeline(std::size_t units, std::string_view operation, const Route& route,
                        const Make& make, const OnUnit& on_unit,
                        OnLostNode lost = OnLostNode::fail) = 0;
  // One command on the node serving `slot`, following redirections; error replies are
  // returned, not thrown. With OnLostNode::retry (idempotent commands only) a lost node is
  // waited out like a busy one.
  virtual Reply call(std::uint16_t slot, std::span<const std::string_view> args,
                     OnLostNode lost = OnLostNode::fail) = 0;
  Reply call(std::uint16_t slot, std::initializer_list<std::string_view> args,
             OnLostNode lost = OnLostNode::fail) {
    return call(slot, std::span<const std::string_view>(args.begin(), args.size()), lost);
  }
  // call(), and an error reply throws StorageError.
  Reply run(std::uint16_t slot, std::initializer_list<std::string_view> args,
            OnLostNode lost = OnLostNode::fail);

  // Masters serving slots (1 for one server) and which of them serves `slot` now: a filter
  // being created picks partition hash tags that spread its partitions evenly over them.
  [[nodiscard]] virtual std::size_t masters() const = 0;
  [[nodiscard]] virtual std::size_t master_of(std::uint16_t slot) const = 0;
  // Equal for two routers that reach the same keys (RedisStore::keyspace_id).
  [[nodiscard]] virtual std::string keyspace_id() = 0;
  [[nodiscard]] virtual bool is_cluster() const noexcept = 0;
  // Redirections and waits met so far (all 0 on one server).
  [[nodiscard]] virtual RedirectCounts redirections() const noexcept { return {}; }

  [[nodiscard]] virtual const RedisEndpoint& endpoint() const noexcept = 0;
  // "redis <where>: <operation>: <what>", naming the node whose reply is being handled.
  [[nodiscard]] virtual std::string message(std::string_view operation,
                                            std::string_view what) const = 0;
  [[noreturn]] void fail(std::string_view operation, std::string_view what) const;
  // Throws StorageError if the reply is an error reply or not of `type`.
  void expect(const redisReply& reply, int type, std::string_view operation) const;

  // RB.VERSION's reply as one server gave it in a pipeline with other commands (the kind
  // decision at open), so that module_version() need not ask again. Ignored on a cluster,
  // whose masters may differ.
  void remember_module_version(const redisReply& reply) noexcept;
  [[nodiscard]] std::optional<long long> remembered_module_version() const noexcept {
    return is_cluster() ? std::nullopt : module_version_;
  }

 private:
  std::optional<long long> module_version_;
};

// An error reply as said to the user: a refused permission (NOPERM, from a server's ACL) says
// what the user may not do and what would allow it; anything else as it is.
[[nodiscard]] std::string permission_problem(std::string_view what);
// Whether `reply` refuses EVAL_RO / EVALSHA_RO: a server before Redis 7.0, or a user not allowed
// them. Lookups then run their script by EVAL / EVALSHA.
[[nodiscard]] bool refuses_read_only_scripts(const redisReply& reply);

// The cluster slot of a key: the CRC16 of its hash tag, or of the whole key if it has none.
[[nodiscard]] std::uint16_t slot_of(std::string_view key);

// Creates hash `key` with `fields` (field, value, field, value, ...) if and only if no key of
// that name exists, in one script: of two concurrent creators exactly one gets the name (on a
// cluster too: one command on the key's node). HSETNX on one field would not do: it adds that
// field to a foreign hash that lacks it. The hash is written whole, so a creator that dies
// after the claim leaves a complete record for drop() to find. False if the name is taken.
[[nodiscard]] bool claim_hash(Router& router, std::string_view key,
                              std::initializer_list<std::string_view> fields);

// Calls visit(slot) once for each master (one call on one server), with a slot it serves:
// commands run at that slot (Router::call) reach that master.
void for_each_master(const Router& router, const std::function<void(std::uint16_t)>& visit);

// The lowest version of redbloom's module commands among the router's masters (RB.VERSION,
// core/module_protocol.hpp); 0 when one of them lacks the module. Asked at open, which waits
// out a failover like the rest of opening.
[[nodiscard]] long long module_version(Router& router);

// The server's clock minus this machine's, in ms, from TIME's reply (StorageError if it is
// none): a windowed filter's client guesses the current slice by it.
[[nodiscard]] std::int64_t clock_offset_ms(const Router& router, const redisReply& time);

// A cluster router for a redis+cluster endpoint, else one server.
[[nodiscard]] std::unique_ptr<Router> make_router(const RedisEndpoint& endpoint);

}  // namespace redbloom::redis
