// What every kind of filter over several servers needs of them alike: a router each, no server
// listed twice, a shard named the same way in every message, and its metadata told apart from
// another kind's at the same name.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "object.hpp"
#include "redbloom/redis_endpoint.hpp"
#include "router.hpp"

namespace redbloom::redis {

// A router for each server of filter `name` (checked as a filter name); InvalidArgument for no
// server.
[[nodiscard]] std::vector<std::unique_ptr<Router>> routers_for(
    const std::vector<RedisEndpoint>& servers, const std::string& name);

// Each shard of a sharded filter needs its own server (or database): InvalidArgument naming
// the server listed twice (or under two addresses, as `keyspace_ids` tell).
void check_distinct_servers(const std::vector<RedisEndpoint>& servers,
                            const std::vector<std::string>& keyspace_ids);
void check_distinct_servers(const std::vector<std::unique_ptr<Router>>& routers);

// "an unsharded filter" or "shard 2 of 3" (index from 0).
[[nodiscard]] std::string shard_text(std::uint32_t index, std::uint32_t count);

// A shard as its metadata records it, or as it is opened.
struct ShardPlace {
  std::uint32_t index = 0;
  std::uint32_t count = 1;
  std::string set;  // the id the shards created together share; opened with "": any
};

// The server described by `where` holds the shard it is opened as: FormatError naming both
// otherwise (another shard, or one server of a sharded filter alone, would answer wrongly for
// the partitions it does not hold).
void check_shard(const std::string& where, const ShardPlace& held, const ShardPlace& opened_as);

// FormatError: a server after the first lacks the filter the first one holds.
[[noreturn]] void throw_missing_shard(const std::string& where);

// The metadata at `name` if it is of `format` (ready or not, its version checked against
// `version`); nullopt for anything else (no key, another kind of filter, a key that is not a
// hash), which the other kinds' paths name.
[[nodiscard]] std::optional<Fields> metadata_of_kind(Router& router, const std::string& name,
                                                     std::string_view format, std::string_view noun,
                                                     std::uint32_t version);

}  // namespace redbloom::redis
