// same_redis_filter (transfer.hpp): the check `redbloom copy` makes before it may drop the
// target, so that a copy onto the source itself under another address is refused.
#include <gtest/gtest.h>

#include "redbloom/location.hpp"
#include "redbloom/transfer.hpp"
#include "redis_server.hpp"

namespace redbloom {
namespace {

Location at(const std::string& host, int port, int db, const std::string& name) {
  RedisEndpoint endpoint;
  endpoint.host = host;
  endpoint.port = port;
  endpoint.db = db;
  return Location::redis({endpoint}, name);
}

TEST(SameRedisFilter, OneServerUnderTwoAddressesIsOneFilter) {
  test::RedisServer server;
  EXPECT_TRUE(same_redis_filter(at("127.0.0.1", server.port(), 0, "f"),
                                at("localhost", server.port(), 0, "f")));
  EXPECT_FALSE(same_redis_filter(at("127.0.0.1", server.port(), 0, "f"),
                                 at("localhost", server.port(), 0, "g")));
  EXPECT_FALSE(same_redis_filter(at("127.0.0.1", server.port(), 0, "f"),
                                 at("localhost", server.port(), 1, "f")));
}

TEST(SameRedisFilter, ShardedLocationsSharingOneServerAreOneFilter) {
  test::RedisServer a;
  test::RedisServer b;
  test::RedisServer c;
  const Location ab = Location::redis(
      {at("127.0.0.1", a.port(), 0, "f").servers[0], at("127.0.0.1", b.port(), 0, "f").servers[0]},
      "f");
  EXPECT_TRUE(same_redis_filter(ab, at("localhost", b.port(), 0, "f")));
  EXPECT_FALSE(same_redis_filter(ab, at("localhost", c.port(), 0, "f")));
}

TEST(SameRedisFilter, AFileIsNeverTheSameAsARedisFilter) {
  test::RedisServer server;
  EXPECT_FALSE(same_redis_filter(Location::file("f"), at("127.0.0.1", server.port(), 0, "f")));
  EXPECT_FALSE(same_redis_filter(at("127.0.0.1", server.port(), 0, "f"), Location::file("f")));
}

}  // namespace
}  // namespace redbloom
