#include "shard_servers.hpp"

#include <set>

#include "redbloom/error.hpp"

namespace redbloom::redis {

std::vector<std::unique_ptr<Router>> routers_for(const std::vector<RedisEndpoint>& servers,
                                                 const std::string& name) {
  validate_filter_name(name);
  if (servers.empty()) throw InvalidArgument("no Redis server given");
  std::vector<std::unique_ptr<Router>> routers;
  for (const RedisEndpoint& server : servers) routers.push_back(make_router(server));
  return routers;
}

void check_distinct_servers(const std::vector<RedisEndpoint>& servers,
                            const std::vector<std::string>& keyspace_ids) {
  std::set<std::string> seen;
  for (std::size_t i = 0; i < servers.size(); ++i) {
    if (!seen.insert(keyspace_ids[i]).second) {
      throw InvalidArgument("redis " + servers[i].describe() +
                            " is listed twice (or under two addresses): each shard needs its "
                            "own server or database");
    }
  }
}

void check_distinct_servers(const std::vector<std::unique_ptr<Router>>& routers) {
  std::vector<RedisEndpoint> servers;
  std::vector<std::string> ids;
  for (const auto& router : routers) {
    servers.push_back(router->endpoint());
    ids.push_back(router->keyspace_id());
  }
  check_distinct_servers(servers, ids);
}

std::string shard_text(std::uint32_t index, std::uint32_t count) {
  return count == 1 ? std::string("an unsharded filter")
                    : "shard " + std::to_string(index + 1) + " of " + std::to_string(count);
}

void check_shard(const std::string& where, const ShardPlace& held, const ShardPlace& opened_as) {
  if (held.count == opened_as.count && held.index == opened_as.index &&
      (opened_as.set.empty() || held.set == opened_as.set)) {
    return;
  }
  throw FormatError(where + " holds " + shard_text(held.index, held.count) + " but was opened as " +
                    shard_text(opened_as.index, opened_as.count) +
                    (held.count == opened_as.count && held.index == opened_as.index
                         ? " of another set of servers"
                         : "") +
                    ": give the servers it was created on, in the same order");
}

void throw_missing_shard(const std::string& where) {
  throw FormatError(where +
                    " does not exist, though the first server holds it: give the servers it was "
                    "created on, in the same order");
}

std::optional<Fields> metadata_of_kind(Router& router, const std::string& name,
                                       std::string_view format, std::string_view noun,
                                       std::uint32_t version) {
  std::optional<Fields> fields;
  try {
    fields = read_metadata(router, name, noun);
  } catch (const FormatError&) {
    return std::nullopt;  // not a hash
  }
  if (!fields || !fields->has("format") || fields->text("format") != format) return std::nullopt;
  fields->check_format(format, noun, version);
  return fields;
}

}  // namespace redbloom::redis
