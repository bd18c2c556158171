// Where a filter lives, named by one string:
//
//   urls.rbf, /data/urls.rbf, file:urls.rbf         a filter file (the embedded default)
//   redis://cache:6379/2#urls                       filter "urls" in one Redis server
//   redis://a:6379,redis://b:6379#urls              one filter sharded over these servers, in
//                                                   this order (docs/redis.md)
//   redis+cluster://n1:7000,n2:7001#urls            filter "urls" in a Redis Cluster
//   memory:                                         this process's memory (not shared)
//
// The Redis filter's name follows '#' or is given apart (parse's `name`); the URIs are those of
// redis_endpoint.hpp. With a name and no URI, $REDIS_URL is used, else redis://127.0.0.1:6379.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "redbloom/redis_endpoint.hpp"

namespace redbloom {

struct Location {
  enum class Kind { file, redis, memory };

  Kind kind = Kind::file;
  std::string path;                    // file
  std::vector<RedisEndpoint> servers;  // redis: one server, several (sharded), or one cluster
  std::string name;                    // redis: the filter's name (its metadata key)

  // Throws InvalidArgument naming what is wrong (and, for a URI taken from $REDIS_URL, that it
  // came from there).
  [[nodiscard]] static Location parse(std::string_view text, std::string_view name = {});
  [[nodiscard]] static Location file(std::string path);
  [[nodiscard]] static Location redis(std::vector<RedisEndpoint> servers, std::string name);
  [[nodiscard]] static Location memory();

  [[nodiscard]] bool in_redis() const noexcept { return kind == Kind::redis; }
  // "urls.rbf", "urls on redis 127.0.0.1:6379", "memory".
  [[nodiscard]] std::string describe() const;
};

// The servers of a comma-separated list of Redis URIs (one redis+cluster:// URI is one
// cluster, whatever its commas).
[[nodiscard]] std::vector<RedisEndpoint> parse_redis_servers(std::string_view list);

}  // namespace redbloom
