#include "redbloom/location.hpp"

#include <cstdlib>

#include "redbloom/error.hpp"

namespace redbloom {
namespace {

// Anything with a scheme is taken for a URI (an unknown scheme is then an error that lists
// the known ones), so "http://..." is never mistaken for a file name. A file whose name holds
// "://" can be given as file:NAME or ./NAME.
bool is_redis_uri(std::string_view text) {
  return !text.starts_with("file:") && text.find("://") != std::string_view::npos;
}

}  // namespace

std::vector<RedisEndpoint> parse_redis_servers(std::string_view list) {
  if (list.starts_with("redis+cluster://") || list.starts_with("rediss+cluster://")) {
    return {parse_redis_uri(list)};
  }
  std::vector<RedisEndpoint> servers;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = list.find(',', start);
    const std::string_view uri = list.substr(start, comma - start);
    if (uri.empty()) throw InvalidArgument("empty URI in the list of Redis servers");
    servers.push_back(parse_redis_uri(uri));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return servers;
}

Location Location::parse(std::string_view text, std::string_view name) {
  if (text == "memory:") {
    if (!name.empty()) throw InvalidArgument("a memory filter has no name");
    return memory();
  }
  if (text.empty() && name.empty()) {
    throw InvalidArgument("no filter location given: a file path, or a Redis filter name");
  }
  if (!text.empty() && !is_redis_uri(text)) {
    if (!name.empty()) {
      throw InvalidArgument("a filter file has no name ('" + std::string(name) +
                            "'): for a Redis filter give a redis:// URI");
    }
    if (text.starts_with("file:")) text.remove_prefix(5);
    if (text.empty()) throw InvalidArgument("empty file path");
    return file(std::string(text));
  }
  std::string_view servers = text;
  std::string_view named = name;
  if (const std::size_t hash = text.rfind('#'); hash != std::string_view::npos) {
    servers = text.substr(0, hash);
    const std::string_view fragment = text.substr(hash + 1);
    if (!named.empty() && named != fragment) {
      throw InvalidArgument("two names for one filter: '" + std::string(fragment) + "' in " +
                            "the URI and '" + std::string(named) + "' apart");
    }
    named = fragment;
  }
  if (named.empty()) {
    throw InvalidArgument("no filter name: write it after '#' (" + std::string(text) +
                          "#NAME), or give the name on its own (--name NAME on the command "
                          "line, name=\"NAME\" in Python)");
  }
  if (!servers.empty()) return redis(parse_redis_servers(servers), std::string(named));
  const char* env = std::getenv("REDIS_URL");
  if (env == nullptr || *env == '\0') {
    return redis({redis_endpoint_or_default("")}, std::string(named));
  }
  try {
    return redis(parse_redis_servers(env), std::string(named));
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(std::string("$REDIS_URL (used because no Redis URI was given): ") +
                          e.what() + "; fix or unset REDIS_URL, or give the URI");
  }
}

Location Location::file(std::string path) {
  Location location;
  location.kind = Kind::file;
  location.path = std::move(path);
  return location;
}

Location Location::redis(std::vector<RedisEndpoint> servers, std::string name) {
  if (servers.empty()) throw InvalidArgument("a Redis filter needs at least one server");
  if (name.empty()) throw InvalidArgument("a Redis filter needs a name");
  Location location;
  location.kind = Kind::redis;
  location.servers = std::move(servers);
  location.name = std::move(name);
  return location;
}

Location Location::memory() {
  Location location;
  location.kind = Kind::memory;
  return location;
}

std::string Location::describe() const {
  switch (kind) {
    case Kind::file:
      return path;
    case Kind::memory:
      return "memory";
    case Kind::redis:
      break;
  }
  std::string where;
  for (const RedisEndpoint& server : servers) {
    where += (where.empty() ? "" : ", ") + server.describe();
  }
  return name + " on redis " + where;
}

}  // namespace redbloom
