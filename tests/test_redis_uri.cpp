// Redis URIs (src/redis_endpoint.cpp): pure parsing, no server.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "error_of.hpp"
#include "redbloom/error.hpp"
#include "redbloom/redis_endpoint.hpp"
#include "test_items.hpp"

namespace redbloom {
namespace {

using redbloom::testing::contains_text;
using redbloom::testing::error_of;
using namespace std::chrono_literals;

// ---------------------------------------------------------------------------------------------
// URIs (no server needed).

TEST(RedisUri, HostPortAndDb) {
  const RedisEndpoint e = parse_redis_uri("redis://cache.example.com:6380/3");
  EXPECT_EQ(e.host, "cache.example.com");
  EXPECT_EQ(e.port, 6380);
  EXPECT_EQ(e.db, 3);
  EXPECT_TRUE(e.unix_path.empty());
  EXPECT_TRUE(e.user.empty());
  EXPECT_TRUE(e.password.empty());
  EXPECT_EQ(e.describe(), "cache.example.com:6380/3");

  const RedisEndpoint defaults = parse_redis_uri("redis://localhost");
  EXPECT_EQ(defaults.host, "localhost");
  EXPECT_EQ(defaults.port, 6379);
  EXPECT_EQ(defaults.db, 0);
  EXPECT_EQ(defaults.command_timeout, RedisEndpoint{}.command_timeout);
  EXPECT_EQ(defaults.connect_timeout, RedisEndpoint{}.connect_timeout);
  EXPECT_EQ(defaults.describe(), "localhost:6379");
  EXPECT_EQ(parse_redis_uri("redis://localhost:6379/").db, 0);
}

TEST(RedisUri, CredentialsArePercentDecodedAndNeverDescribed) {
  const RedisEndpoint e = parse_redis_uri("redis://alice:p%40ss%3aw0rd%25@db.internal:7000/1");
  EXPECT_EQ(e.user, "alice");
  EXPECT_EQ(e.password, "p@ss:w0rd%");
  EXPECT_EQ(e.host, "db.internal");
  EXPECT_EQ(e.port, 7000);
  EXPECT_EQ(e.db, 1);
  EXPECT_FALSE(contains_text(e.describe(), "p@ss"));

  // Password alone, with or without the empty user name: AUTH <password>.
  for (const char* uri : {"redis://s3cret@h", "redis://:s3cret@h"}) {
    const RedisEndpoint p = parse_redis_uri(uri);
    EXPECT_TRUE(p.user.empty()) << uri;
    EXPECT_EQ(p.password, "s3cret") << uri;
    EXPECT_EQ(p.host, "h") << uri;
  }
  // An unescaped '@' in the password: the last '@' ends the credentials.
  EXPECT_EQ(parse_redis_uri("redis://u:a@b@h").password, "a@b");
}

TEST(RedisUri, Ipv6AndUnixSockets) {
  const RedisEndpoint v6 = parse_redis_uri("redis://[::1]:6380");
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.port, 6380);
  EXPECT_EQ(v6.describe(), "[::1]:6380");
  EXPECT_EQ(parse_redis_uri("redis://[::1]").port, 6379);
  EXPECT_EQ(parse_redis_uri("redis://u:pw@[fe80::1]:1/4").db, 4);

  const RedisEndpoint unix_socket = parse_redis_uri("unix:///tmp/x.sock?db=2");
  EXPECT_EQ(unix_socket.unix_path, "/tmp/x.sock");
  EXPECT_EQ(unix_socket.db, 2);
  EXPECT_EQ(unix_socket.describe(), "unix:/tmp/x.sock/2");
  const RedisEndpoint with_password = parse_redis_uri("unix://:pw%2F1@/run/redis.sock");
  EXPECT_EQ(with_password.unix_path, "/run/redis.sock");
  EXPECT_EQ(with_password.password, "pw/1");
  EXPECT_TRUE(unix_socket.same_server(parse_redis_uri("unix://:other@/tmp/x.sock?db=2")));
  EXPECT_FALSE(unix_socket.same_server(parse_redis_uri("unix:///tmp/x.sock")));
}

TEST(RedisUri, Timeouts) {
  const RedisEndpoint e = parse_redis_uri("redis://h:1?timeout=0.3&connect_timeout=2");
  EXPECT_EQ(e.command_timeout, 300ms);
  EXPECT_EQ(e.connect_timeout, 2000ms);
  EXPECT_EQ(e.port, 1);
  const RedisEndpoint u = parse_redis_uri("unix:///s.sock?timeout=1.5&db=1");
  EXPECT_EQ(u.command_timeout, 1500ms);
  EXPECT_EQ(u.db, 1);
  // Fractions of a millisecond round up: a timeout never becomes 0 (which means "none").
  EXPECT_EQ(parse_redis_uri("redis://h?timeout=0.0001").command_timeout, 1ms);
}

TEST(RedisUri, TlsSchemesAndSettings) {
  const RedisEndpoint plain = parse_redis_uri("redis://h:6379");
  EXPECT_FALSE(plain.tls);
  const RedisEndpoint e = parse_redis_uri(
      "rediss://u:p@cache.example.com:6380/2?tls_ca=/etc/ca%2Cb.pem&tls_cert=/c.pem&tls_key=/k.pem"
      "&tls_server_name=redis.internal&timeout=3");
  EXPECT_TRUE(e.tls);
  EXPECT_EQ(e.host, "cache.example.com");
  EXPECT_EQ(e.port, 6380);
  EXPECT_EQ(e.db, 2);
  EXPECT_EQ(e.password, "p");
  EXPECT_EQ(e.tls_ca_file, "/etc/ca,b.pem");  // percent-decoded, so a path can hold a comma
  EXPECT_EQ(e.tls_cert_file, "/c.pem");
  EXPECT_EQ(e.tls_key_file, "/k.pem");
  EXPECT_EQ(e.tls_server_name, "redis.internal");
  EXPECT_FALSE(e.tls_insecure_skip_verify);
  EXPECT_EQ(e.command_timeout, 3000ms);
  EXPECT_TRUE(parse_redis_uri("rediss://h?tls_insecure_skip_verify=yes").tls_insecure_skip_verify);
  const RedisEndpoint defaults = parse_redis_uri("rediss://h");
  EXPECT_TRUE(defaults.tls);
  EXPECT_TRUE(defaults.tls_ca_file.empty());  // the system's trusted CAs
  EXPECT_EQ(defaults.port, 6379);
  const RedisEndpoint cluster = parse_redis_uri("rediss+cluster://a:7000,b:7001?tls_ca=/ca.pem");
  EXPECT_TRUE(cluster.tls);
  EXPECT_TRUE(cluster.is_cluster());
  EXPECT_EQ(cluster.cluster_seeds.size(), 2u);
  EXPECT_EQ(cluster.tls_ca_file, "/ca.pem");
  EXPECT_TRUE(contains_text(error_of([] { (void)parse_redis_uri("redis://h?tls_ca=/ca.pem"); }),
                            "'tls_ca' is a TLS setting: it needs rediss://"));
}

TEST(RedisUri, BadUrisAreRejectedWithoutShowingThePassword) {
  const std::string secret = "hunter2";
  const std::vector<std::string> bad = {
      "http://u:hunter2@h",
      "rediss://u:hunter2@h?tls_cert=/c.pem",
      "rediss://u:hunter2@h?tls_ca=",
      "rediss://u:hunter2@h?tls_insecure_skip_verify=maybe",
      "redis://u:hunter2@h?tls_ca=/ca.pem",
      "redis://u:hunter2@",
      "redis://u:hunter2@:6379",
      "redis://u:hunter2@h:0",
      "redis://u:hunter2@h:65536",
      "redis://u:hunter2@h:port",
      "redis://u:hunter2@h:",
      "redis://u:hunter2@h/x",
      "redis://u:hunter2@h:6379/1/2",
      "redis://u:hunter2@h:6379/99999999999",
      "redis://u:hunter2@[::1",
      "redis://u:hunter2@[::1]x",
      "redis://u:hunter2@h?timeout=0",
      "redis://u:hunter2@h?timeout=-1",
      "redis://u:hunter2@h?timeout=abc",
      "redis://u:hunter2@h?timeout",
      "redis://u:hunter2@h?bogus=1",
      "redis://u:hunter2%zz@h",
      "redis://u:hunter2%4@h",
      "redis://u:hunter2%@h",
      "unix://",
      "unix://u:hunter2@relative.sock",
      "unix://u:hunter2/tmp/x.sock",
      "unix://u:hunter2@/tmp/x.sock?db=x",
  };
  for (const std::string& uri : bad) {
    try {
      (void)parse_redis_uri(uri);
      ADD_FAILURE() << "accepted " << uri;
    } catch (const InvalidArgument& e) {
      EXPECT_FALSE(contains_text(e.what(), secret)) << uri << " -> " << e.what();
      EXPECT_TRUE(contains_text(e.what(), "bad Redis URI")) << uri << " -> " << e.what();
    }
  }
}

// Sets REDIS_URL for one scope and restores what was there.
class ScopedRedisUrl {
 public:
  explicit ScopedRedisUrl(const char* value) {
    if (const char* old = std::getenv("REDIS_URL")) old_ = old;
    if (value != nullptr) {
      ::setenv("REDIS_URL", value, 1);
    } else {
      ::unsetenv("REDIS_URL");
    }
  }
  ~ScopedRedisUrl() {
    if (old_) {
      ::setenv("REDIS_URL", old_->c_str(), 1);
    } else {
      ::unsetenv("REDIS_URL");
    }
  }

 private:
  std::optional<std::string> old_;
};

TEST(RedisUri, RedisUrlIsTheDefault) {
  {
    ScopedRedisUrl url("redis://envhost:7000/5");
    const RedisEndpoint e = redis_endpoint_or_default("");
    EXPECT_EQ(e.host, "envhost");
    EXPECT_EQ(e.port, 7000);
    EXPECT_EQ(e.db, 5);
    EXPECT_EQ(redis_endpoint_or_default("redis://explicit").host, "explicit");
  }
  {
    ScopedRedisUrl url("not a uri");
    EXPECT_THROW((void)redis_endpoint_or_default(""), InvalidArgument);
  }
  for (const char* unset : {static_cast<const char*>(nullptr), ""}) {
    ScopedRedisUrl url(unset);
    const RedisEndpoint e = redis_endpoint_or_default("");
    EXPECT_EQ(e.host, "127.0.0.1");
    EXPECT_EQ(e.port, 6379);
    EXPECT_EQ(e.db, 0);
  }
}

}  // namespace
}  // namespace redbloom
