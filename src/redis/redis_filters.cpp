#include "redis/redis_filters.hpp"

#include "redbloom/error.hpp"
#include "redis/redis_store.hpp"
#include "redis/server_filter_store.hpp"
#include "redis/sharded_store.hpp"
#include "redis/stream_store.hpp"

namespace redbloom {

std::unique_ptr<FilterBackend> open_redis_filter(const std::vector<RedisEndpoint>& servers,
                                                 const std::string& name, Clock clock,
                                                 std::chrono::milliseconds wait_for_creator) {
  if (auto stream =
          RedisStreamStore::open_if_stream(servers, name, std::move(clock), wait_for_creator)) {
    return stream;
  }
  if (servers.size() == 1) {
    try {
      return plain_backend(RedisStore::open(servers.front(), name, {}, wait_for_creator));
    } catch (const FormatError&) {
      // Not a hash: a filter of the server's own Bloom engine (BF.RESERVE / BF.ADD made it)?
      if (auto server = ServerFilterStore::open_if_server_filter(servers.front(), name)) {
        return plain_backend(std::move(server));
      }
      throw;
    }
  }
  try {
    return plain_backend(ShardedRedisStore::open(servers, name, wait_for_creator));
  } catch (const FormatError&) {
    // A BF key is one key of one server: refused by name rather than as a foreign key.
    for (const RedisEndpoint& server : servers) {
      if (auto bf = ServerFilterStore::open_if_server_filter(server, name)) {
        throw InvalidArgument(
            bf->location() + " is one key of one server, not a filter sharded over " +
            std::to_string(servers.size()) + " servers: open it with that server alone");
      }
    }
    throw;
  }
}

std::unique_ptr<FilterBackend> create_redis_filter(const std::vector<RedisEndpoint>& servers,
                                                   const std::string& name,
                                                   const FilterParams& params, bool overwrite) {
  // A windowed or growing filter of that name goes whole, its links and slices too.
  if (overwrite) (void)RedisStreamStore::drop_if_stream(servers, name);
  if (servers.size() == 1) {
    return plain_backend(RedisStore::create(servers.front(), name, params, overwrite));
  }
  return plain_backend(ShardedRedisStore::create(servers, name, params, overwrite));
}

std::unique_ptr<FilterBackend> create_redis_filter(const std::vector<RedisEndpoint>& servers,
                                                   const std::string& name,
                                                   const StreamShape& shape, Clock clock,
                                                   bool overwrite) {
  return RedisStreamStore::create(servers, name, shape, std::move(clock), overwrite);
}

bool drop_redis_filter(const std::vector<RedisEndpoint>& servers, const std::string& name) {
  if (RedisStreamStore::drop_if_stream(servers, name)) return true;
  if (servers.size() == 1) {
    if (ServerFilterStore::drop_if_server_filter(servers.front(), name)) return false;
    RedisStore::drop(servers.front(), name);
  } else {
    ShardedRedisStore::drop(servers, name);
  }
  return true;
}

}  // namespace redbloom
