// What opening a Redis filter costs: each kind is told apart by one pipeline on one connection
// per server (the key's TYPE, its metadata and, for a key of the server's own Bloom engine, its
// BF.INFO together), never by trying one kind after another. Counted on both sides: the
// server's own INFO stats (connections it accepted) and this process's round trips
// (connection.hpp). Runs on a server with redbloom's module, so a BF key can be made.
//
// The same pipeline reads the length of a plain filter's first partition key (its name follows
// from the filter's on one server), so a filter of one partition needs nothing more; a windowed
// or growing filter calls its script by the SHA1 computed here (no SCRIPT LOAD).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "redbloom/engine_filter.hpp"
#include "redbloom/error.hpp"
#include "redbloom/filter.hpp"
#include "redbloom/location.hpp"
#include "redis/connection.hpp"
#include "redis_server.hpp"

namespace redbloom {
namespace {

using test::RedisServer;

const std::vector<std::string> kWithModule = {"--loadmodule", REDBLOOM_MODULE_PATH};

std::uint64_t info_stat(RedisServer& server, const std::string& field) {
  const std::string text = server.command({"INFO", "stats"}).text;
  const std::size_t at = text.find(field + ":");
  if (at == std::string::npos) throw std::runtime_error("INFO stats has no " + field);
  return std::stoull(text.substr(at + field.size() + 1));
}

struct Cost {
  std::uint64_t connections = 0;  // as the servers counted them
  std::uint64_t round_trips = 0;  // as this process counted them
  std::uint64_t client_connections = 0;
};

// Opens the filter at `location` (and uses nothing of it), counting what the opening took.
Cost cost_of_open(std::vector<RedisServer*> servers, const Location& location) {
  std::vector<std::uint64_t> before;
  for (RedisServer* server : servers) {
    before.push_back(info_stat(*server, "total_connections_received"));
  }
  const std::uint64_t trips = redis::round_trips_made();
  const std::uint64_t made = redis::connections_made();
  {
    const Filter filter = Filter::open(location);
    (void)filter.shape();
  }
  Cost cost;
  cost.round_trips = redis::round_trips_made() - trips;
  cost.client_connections = redis::connections_made() - made;
  for (std::size_t s = 0; s < servers.size(); ++s) {
    // Less the helper's own connection for INFO (command() connects anew each time).
    cost.connections += info_stat(*servers[s], "total_connections_received") - before[s] - 1;
  }
  return cost;
}

FilterParams small_params() {
  return size_filter(10000, 0.01, Layout::blocked, 64 * 1024);
}

StreamOptions windowed_options() {
  StreamOptions options;
  options.capacity = 10000;
  options.error_rate = 0.01;
  options.window_ns = parse_duration_ns("10m");
  return options;
}

StreamOptions growing_options() {
  StreamOptions options;
  options.capacity = 10000;
  options.error_rate = 0.01;
  options.growth = 2;
  return options;
}

TEST(OpenCost, EveryKindOnOneServerIsOneConnectionAndOneKindDecision) {
  RedisServer server(kWithModule);
  const auto at = [&](const std::string& name) {
    return Location::redis({server.endpoint()}, name);
  };
  (void)Filter::create(at("plain"), small_params());
  (void)Filter::create(at("windowed"), windowed_options());
  (void)Filter::create(at("growing"), growing_options());
  EngineFilterOptions engine;
  engine.capacity = 10000;
  engine.error_rate = 0.01;
  (void)create_engine_filter(at("bf"), engine);
  const std::pair<std::string, std::uint64_t> kinds[] = {
      {"plain", 1}, {"windowed", 1}, {"growing", 1}, {"bf", 1}};
  for (const auto& [name, round_trips] : kinds) {
    const Cost cost = cost_of_open({&server}, at(name));
    EXPECT_EQ(cost.connections, 1u) << name;
    EXPECT_EQ(cost.client_connections, 1u) << name;
    EXPECT_EQ(cost.round_trips, round_trips) << name;
  }
}

TEST(OpenCost, ShardedFilterIsOneConnectionPerServer) {
  RedisServer first(kWithModule);
  RedisServer second(kWithModule);
  const Location location = Location::redis({first.endpoint(), second.endpoint()}, "sharded");
  (void)Filter::create(location, small_params());
  const Cost cost = cost_of_open({&first, &second}, location);
  EXPECT_EQ(cost.connections, 2u);
  EXPECT_EQ(cost.client_connections, 2u);
  // The kind decision on the first server and the metadata of the second, each with the
  // lengths of the partition keys that server holds: one round trip per server.
  EXPECT_EQ(small_params().partitions, 1u);
  EXPECT_EQ(cost.round_trips, 2u);
}

TEST(OpenCost, WhatIsNoFilterIsNamedAfterOneRoundTrip) {
  RedisServer server(kWithModule);
  (void)server.command({"SET", "text", "hello"});
  const std::uint64_t trips = redis::round_trips_made();
  try {
    (void)Filter::open(Location::redis({server.endpoint()}, "text"));
    ADD_FAILURE() << "a string opened as a filter";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("string"), std::string::npos) << e.what();
  }
  EXPECT_EQ(redis::round_trips_made() - trips, 1u);
}

}  // namespace
}  // namespace redbloom
