#include "redis/redis_filters.hpp"

#include <optional>
#include <utility>

#include "object.hpp"
#include "redbloom/error.hpp"
#include "redis/cuckoo_redis_store.hpp"
#include "redis/redis_store.hpp"
#include "redis/server_filter_backend.hpp"
#include "redis/sharded_store.hpp"
#include "redis/stream_store.hpp"

namespace redbloom {
namespace {

using redis::is_error;
using redis::text_of;

// What NAME holds on the first server, read by one pipeline on one connection: its TYPE, the
// metadata hash if it is one, and BF.INFO if it is a key of the server's own Bloom engine. Each
// command answers harmlessly for the other kinds (WRONGTYPE, an unknown command), so no kind is
// tried after another. RB.VERSION and TIME come along: what opening any kind would ask next.
struct KeyAtName {
  std::string type;
  std::optional<redis::Fields> fields;     // the metadata of a redbloom filter of either kind
  std::optional<ServerFilterInfo> engine;  // what BF.INFO says of a key of the server's engine
  double engine_error_rate = 0;
  std::optional<std::int64_t> server_offset_ms;  // the server's clock minus this machine's
  // STRLEN of the first partition key of a plain filter of that name (one server only: on a
  // Cluster that key may live in another slot).
  redis::KeyLengths partition_lengths;
};

KeyAtName read_key(redis::Router& router, const std::string& name) {
  KeyAtName key;
  const std::uint16_t slot = redis::slot_of(name);
  const bool one_server = !router.is_cluster();
  const std::string first_partition = redis::partition_key(name, 0);
  router.pipeline(
      1, "TYPE",
      [&](std::size_t unit) {
        return redis::UnitRoute{slot, unit, false, {}};
      },
      [&](std::size_t, redis::CommandBuffer& buffer) {
        buffer.command({"TYPE", name});
        buffer.command({"HGETALL", name});
        buffer.command({"BF.INFO", name});
        buffer.command({"RB.VERSION"});
        buffer.command({"TIME"});
        if (one_server) buffer.command({"STRLEN", first_partition});
        return std::size_t{one_server ? 6u : 5u};
      },
      [&](std::size_t, redis::Replies replies) {
        if (is_error(*replies[0])) router.fail("TYPE", text_of(*replies[0]));
        key.type = text_of(*replies[0]);
        const redisReply& hash = *replies[1];
        // Another client may change the key between the commands: the hash read decides.
        if (hash.type == REDIS_REPLY_ARRAY && hash.elements > 0) {
          std::vector<std::pair<std::string, std::string>> pairs;
          for (std::size_t i = 0; i + 1 < hash.elements; i += 2) {
            pairs.emplace_back(text_of(*hash.element[i]), text_of(*hash.element[i + 1]));
          }
          key.fields.emplace(std::move(pairs), redis::describe_key(router, name));
          key.type = "hash";
        } else if (key.type == "hash") {
          key.type = "none";  // deleted meanwhile
        }
        if (ServerFilterBackend::kind_of_type(key.type)) {
          key.engine = ServerFilterBackend::info_of(key.type, *replies[2], &key.engine_error_rate);
        }
        router.remember_module_version(*replies[3]);
        // Refused (an ACL without TIME): asked again only by a kind that needs it.
        if (replies[4]->type == REDIS_REPLY_ARRAY) {
          key.server_offset_ms = redis::clock_offset_ms(router, *replies[4]);
        }
        if (one_server && replies[5]->type == REDIS_REPLY_INTEGER && replies[5]->integer > 0) {
          key.partition_lengths[first_partition] = static_cast<std::uint64_t>(replies[5]->integer);
        }
      },
      redis::OnLostNode::retry);
  return key;
}

bool is_cuckoo(const redis::Fields& fields) {
  return fields.has("format") && fields.text("format") == redis::kCuckooFormat;
}

}  // namespace

std::unique_ptr<FilterBackend> open_redis_filter(const std::vector<RedisEndpoint>& servers,
                                                 const std::string& name, Clock clock,
                                                 std::chrono::milliseconds wait_for_creator) {
  if (servers.empty()) throw InvalidArgument("no Redis server given");
  redis::validate_filter_name(name);
  auto router = redis::make_router(servers.front());
  const KeyAtName key = read_key(*router, name);
  if (key.fields) {
    if (key.fields->has("format") && key.fields->text("format") == redis::kStreamFormat) {
      const std::int64_t offset =
          key.server_offset_ms
              ? *key.server_offset_ms
              : redis::clock_offset_ms(*router, *router->run(redis::slot_of(name), {"TIME"},
                                                             redis::OnLostNode::retry));
      return RedisStreamStore::open(std::move(router), *key.fields, offset, servers, name,
                                    std::move(clock), wait_for_creator);
    }
    if (is_cuckoo(*key.fields)) {
      return RedisCuckooStore::open(std::move(router), *key.fields, servers, name,
                                    wait_for_creator);
    }
    if (servers.size() == 1) {
      return plain_backend(RedisStore::open(std::move(router), name, &*key.fields, {},
                                            wait_for_creator, key.partition_lengths));
    }
    return plain_backend(ShardedRedisStore::open(std::move(router), &*key.fields, servers, name,
                                                 wait_for_creator, key.partition_lengths));
  }
  if (key.type == "none") {
    throw NotFound("no filter '" + name + "' on redis " + router->endpoint().describe());
  }
  if (!key.engine) {
    throw FormatError(redis::describe_key(*router, name) + " holds a " + key.type +
                      ", not a redbloom filter");
  }
  if (servers.size() != 1) {
    // A BF key is one key of one server: refused by name rather than as a foreign key.
    throw InvalidArgument(
        "redis " + router->endpoint().describe() + " filter " + name + " (" + key.engine->kind +
        ") is one key of one server, not a filter sharded over " + std::to_string(servers.size()) +
        " servers: open it with that server alone");
  }
  return ServerFilterBackend::open(std::move(router), name, *key.engine, key.engine_error_rate);
}

std::unique_ptr<FilterBackend> create_redis_filter(const std::vector<RedisEndpoint>& servers,
                                                   const std::string& name,
                                                   const FilterParams& params, bool overwrite) {
  // A windowed, growing or cuckoo filter of that name goes whole, its links and slices too.
  if (overwrite) {
    (void)RedisStreamStore::drop_if_stream(servers, name);
    (void)RedisCuckooStore::drop_if_cuckoo(servers, name);
  }
  if (servers.size() == 1) {
    return plain_backend(RedisStore::create(servers.front(), name, params, overwrite));
  }
  return plain_backend(ShardedRedisStore::create(servers, name, params, overwrite));
}

std::unique_ptr<FilterBackend> create_redis_filter(const std::vector<RedisEndpoint>& servers,
                                                   const std::string& name,
                                                   const StreamShape& shape, Clock clock,
                                                   bool overwrite) {
  if (overwrite) (void)RedisCuckooStore::drop_if_cuckoo(servers, name);
  return RedisStreamStore::create(servers, name, shape, std::move(clock), overwrite);
}

std::unique_ptr<FilterBackend> create_redis_filter(const std::vector<RedisEndpoint>& servers,
                                                   const std::string& name,
                                                   const CuckooOptions& options, bool overwrite) {
  if (servers.empty()) throw InvalidArgument("no Redis server given");
  if (overwrite) {
    if (!RedisCuckooStore::drop_if_cuckoo(servers, name) &&
        !RedisStreamStore::drop_if_stream(servers, name)) {
      for (const RedisEndpoint& server : servers) {
        if (RedisStore::exists(server, name)) RedisStore::drop(server, name);
      }
    }
  }
  return RedisCuckooStore::create(servers, name, options, overwrite);
}

CuckooOptions redis_cuckoo_options(const CuckooOptions& options, std::size_t servers) {
  return RedisCuckooStore::with_redis_partitions(options, servers);
}

bool drop_redis_filter(const std::vector<RedisEndpoint>& servers, const std::string& name) {
  if (servers.empty()) throw InvalidArgument("no Redis server given");
  redis::validate_filter_name(name);
  // The kind is decided as for an open, by one pipeline; each kind then drops its own keys.
  const KeyAtName key = read_key(*redis::make_router(servers.front()), name);
  const bool windowed =
      key.fields && key.fields->has("format") && key.fields->text("format") == redis::kStreamFormat;
  if (windowed) return RedisStreamStore::drop_if_stream(servers, name);
  if (key.fields && is_cuckoo(*key.fields)) return RedisCuckooStore::drop_if_cuckoo(servers, name);
  if (key.engine && servers.size() == 1) {
    (void)ServerFilterBackend::drop_if_server_filter(servers.front(), name);
    return false;  // a key of the server's own Bloom engine has no exact set beside it
  }
  // A plain filter; or nothing on the first server, where a windowed filter whose creation
  // stopped part way may still hold keys on the others; or a key that is no filter, which
  // the plain drop refuses, saying what it holds.
  if (!key.fields && servers.size() > 1 &&
      (RedisStreamStore::drop_if_stream(servers, name) ||
       RedisCuckooStore::drop_if_cuckoo(servers, name))) {
    return true;
  }
  if (servers.size() == 1) {
    RedisStore::drop(servers.front(), name);
  } else {
    ShardedRedisStore::drop(servers, name);
  }
  return true;
}

}  // namespace redbloom
