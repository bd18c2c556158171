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

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redbloom/redis_endpoint.hpp"

namespace redbloom {

// How messages name where a location's text came from: the command line's options
// ("--filter", "--redis", "--name"); left empty, the library's own words ("the URI", "apart").
struct LocationWords {
  std::string text_option;   // the option that gave the text
  std::string name_option;   // the option that names a Redis filter apart
  std::string redis_option;  // the option that takes Redis URIs
};

struct Location {
  enum class Kind { file, redis, memory };

  Kind kind = Kind::file;
  std::string path;                    // file
  std::vector<RedisEndpoint> servers;  // redis: one server, several (sharded), or one cluster
  std::string name;                    // redis: the filter's name (its metadata key)

  // Throws InvalidArgument naming what is wrong (and, for a URI taken from $REDIS_URL, that it
  // came from there).
  [[nodiscard]] static Location parse(std::string_view text, std::string_view name = {});
  [[nodiscard]] static Location parse(std::string_view text, std::string_view name,
                                      const LocationWords& words);
  // The filter name a location string carries after '#' ("" when none).
  [[nodiscard]] static std::string name_in(std::string_view text);
  [[nodiscard]] static Location file(std::string path);
  [[nodiscard]] static Location redis(std::vector<RedisEndpoint> servers, std::string name);
  [[nodiscard]] static Location memory();

  [[nodiscard]] bool in_redis() const noexcept { return kind == Kind::redis; }
  // "urls.rbf", "urls on redis 127.0.0.1:6379", "memory".
  [[nodiscard]] std::string describe() const;
};

// Where a stage reads its records from, or writes the first of each to:
//   redis-stream://HOST[:PORT][/DB]#STREAM                a Redis stream (the URIs of filters,
//   redis-stream+cluster://HOST:PORT[,HOST:PORT...]#STREAM  "-stream" after "redis"; rediss-
//                                                          for TLS)
//   kafka://HOST:PORT[,HOST:PORT...]/TOPIC                 a Kafka topic
struct StagePlace {
  enum class Kind { redis_stream, kafka_topic };
  Kind kind = Kind::redis_stream;
  RedisEndpoint server;  // redis_stream: one server or one Cluster
  std::string stream;    // redis_stream: the stream's key
  std::string brokers;   // kafka_topic: "HOST:PORT[,HOST:PORT...]"
  std::string topic;     // kafka_topic

  // InvalidArgument naming `option` ("--from") and both forms.
  [[nodiscard]] static StagePlace parse(std::string_view text, std::string_view option);
  // The kind `text` names by its scheme alone; nullopt for neither.
  [[nodiscard]] static std::optional<Kind> kind_of(std::string_view text) noexcept;
};

// The servers of a comma-separated list of Redis URIs (one redis+cluster:// URI is one
// cluster, whatever its commas).
[[nodiscard]] std::vector<RedisEndpoint> parse_redis_servers(std::string_view list);

}  // namespace redbloom
