// Filters over TLS (rediss://) against redis-servers that take TLS only, with certificates the
// test makes (tests/support/make-tls-certs.sh): one server, mutual TLS, sharded servers and a
// TLS cluster; and every way a connection can fail, each with a message saying what failed,
// within a bounded time.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "error_of.hpp"
#include "redbloom/error.hpp"
#include "redbloom/filter.hpp"
#include "redbloom/location.hpp"
#include "redis_cluster.hpp"
#include "redis_server.hpp"
#include "test_items.hpp"

namespace redbloom {
namespace {

using namespace std::chrono_literals;
using redbloom::test::RedisCluster;
using redbloom::test::RedisServer;
using redbloom::test::TestCertificates;
using redbloom::test::TlsMode;
using redbloom::testing::contains_text;
using redbloom::testing::error_of;
using redbloom::testing::make_items;
using redbloom::testing::views_of;

// Far above a handshake's time on a busy machine, far below "hangs".
constexpr auto kBound = 60s;

FilterParams small_params() {
  return size_filter(20000, 0.01, Layout::blocked);
}

// Adds items through `endpoint` and checks they are found by a second, fresh connection.
void expect_filter_works(const RedisEndpoint& endpoint, const std::string& name) {
  Filter filter = Filter::create_redis(endpoint, name, small_params());
  const auto items = make_items(3000, name + "-");
  const auto views = views_of(items);
  std::vector<std::uint8_t> added(views.size());
  EXPECT_EQ(filter.add_many(views, added), views.size());
  Filter again = Filter::open_redis(endpoint, name);
  std::vector<std::uint8_t> present(views.size());
  EXPECT_EQ(again.contains_many(views, present), views.size());
  EXPECT_FALSE(again.contains("not-added"));
}

// The message of the error that opening a filter through `endpoint` raises, and the time it
// took to raise it.
std::string failure_of(const RedisEndpoint& endpoint, std::chrono::seconds& took) {
  const auto start = std::chrono::steady_clock::now();
  std::string error = error_of([&] { (void)Filter::create_redis(endpoint, "f", small_params()); });
  took = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start);
  return error;
}

class RedisTlsTest : public ::testing::Test {
 protected:
  TestCertificates certs_;
};

TEST_F(RedisTlsTest, OneServerVerifiedAgainstTheGivenCa) {
  RedisServer server({}, TlsMode{&certs_, false});
  ASSERT_EQ(server.endpoint().tls_ca_file, certs_.path("ca.crt"));
  expect_filter_works(server.endpoint(), "f");
  EXPECT_GT(server.integer({"EXISTS", "f"}) + server.integer({"DBSIZE"}), 0);
  // By host name (the certificate's DNS entry, sent as SNI) as well as by address.
  RedisEndpoint by_name = server.endpoint();
  by_name.host = "localhost";
  expect_filter_works(by_name, "g");
  // Through a location URI, as the CLI, Python and Scrapy give it.
  const Location where = Location::parse("rediss://127.0.0.1:" + std::to_string(server.port()) +
                                         "?tls_ca=" + certs_.path("ca.crt") + "#h");
  Filter filter = Filter::create(where, small_params());
  EXPECT_TRUE(filter.add("x"));
  EXPECT_TRUE(Filter::open(where).contains("x"));
}

TEST_F(RedisTlsTest, SystemTrustStoreFollowsSslCertFile) {
  RedisServer server({}, TlsMode{&certs_, false});
  RedisEndpoint endpoint = server.endpoint();
  endpoint.tls_ca_file.clear();
  std::chrono::seconds took{};
  // The system store does not know the test CA...
  const std::string error = failure_of(endpoint, took);
  EXPECT_TRUE(contains_text(error, "did not verify")) << error;
  EXPECT_TRUE(contains_text(error, "tls_ca=PATH")) << error;
  // ...and SSL_CERT_FILE replaces it, as for any OpenSSL program.
  ASSERT_EQ(::setenv("SSL_CERT_FILE", certs_.path("ca.crt").c_str(), 1), 0);
  try {
    expect_filter_works(endpoint, "f");
  } catch (...) {
    ::unsetenv("SSL_CERT_FILE");
    throw;
  }
  ::unsetenv("SSL_CERT_FILE");
}

TEST_F(RedisTlsTest, MutualTls) {
  RedisServer server({}, TlsMode{&certs_, true});
  ASSERT_FALSE(server.endpoint().tls_cert_file.empty());
  expect_filter_works(server.endpoint(), "f");

  std::chrono::seconds took{};
  RedisEndpoint without = server.endpoint();
  without.tls_cert_file.clear();
  without.tls_key_file.clear();
  std::string error = failure_of(without, took);
  EXPECT_TRUE(contains_text(error, "give tls_cert= and tls_key=")) << error;
  EXPECT_LT(took, kBound);

  for (const char* refused : {"other-client", "expired-client"}) {
    RedisEndpoint wrong = server.endpoint();
    wrong.tls_cert_file = certs_.path(std::string(refused) + ".crt");
    wrong.tls_key_file = certs_.path(std::string(refused) + ".key");
    error = failure_of(wrong, took);
    EXPECT_TRUE(contains_text(error, "the server refused the client certificate")) << error;
    EXPECT_LT(took, kBound) << refused;
  }
  // A key that is not the certificate's is found before anything is sent.
  RedisEndpoint mismatched = server.endpoint();
  mismatched.tls_key_file = certs_.path("other-client.key");
  error = failure_of(mismatched, took);
  EXPECT_TRUE(contains_text(error, "does not belong to the certificate")) << error;
}

TEST_F(RedisTlsTest, UnknownCaAndNameMismatchAreRefused) {
  RedisServer server({}, TlsMode{&certs_, false});
  std::chrono::seconds took{};
  RedisEndpoint other_ca = server.endpoint();
  other_ca.tls_ca_file = certs_.path("other-ca.crt");
  std::string error = failure_of(other_ca, took);
  EXPECT_TRUE(contains_text(error, "the server's certificate did not verify: ")) << error;
  EXPECT_TRUE(contains_text(error, "its CA is not the one in tls_ca=")) << error;
  EXPECT_TRUE(contains_text(error, std::to_string(server.port()))) << error;
  EXPECT_LT(took, kBound);

  RedisEndpoint wrong_name = server.endpoint();
  wrong_name.tls_server_name = "redis.example.com";
  error = failure_of(wrong_name, took);
  EXPECT_TRUE(contains_text(error, "hostname mismatch")) << error;
  EXPECT_TRUE(contains_text(error, "not issued for redis.example.com")) << error;

  // The certificate has no entry for this address: checked as an address, not a name.
  RedisEndpoint wrong_address = server.endpoint();
  wrong_address.tls_server_name = "127.0.0.2";
  error = failure_of(wrong_address, took);
  EXPECT_TRUE(contains_text(error, "IP address mismatch")) << error;

  RedisEndpoint missing_ca = server.endpoint();
  missing_ca.tls_ca_file = certs_.dir() + "/no-such-ca.crt";
  error = failure_of(missing_ca, took);
  EXPECT_TRUE(contains_text(error, "cannot read the CA certificates in tls_ca=")) << error;

  // Refusing to verify is explicit, and then any certificate is taken.
  RedisEndpoint insecure = other_ca;
  insecure.tls_insecure_skip_verify = true;
  expect_filter_works(insecure, "f");
}

TEST_F(RedisTlsTest, PlainClientOnATlsPort) {
  RedisServer server({}, TlsMode{&certs_, false});
  RedisEndpoint plain = server.endpoint();
  plain.tls = false;
  plain.tls_ca_file.clear();
  std::chrono::seconds took{};
  const std::string error = failure_of(plain, took);
  EXPECT_TRUE(contains_text(error, "if the server takes TLS connections only, use rediss://"))
      << error;
  EXPECT_LT(took, kBound);
}

TEST_F(RedisTlsTest, TlsClientOnAPlainPort) {
  RedisServer server;
  RedisEndpoint tls = server.endpoint();
  tls.tls = true;
  tls.tls_ca_file = certs_.path("ca.crt");
  tls.connect_timeout = 2s;
  std::chrono::seconds took{};
  const std::string error = failure_of(tls, took);
  // Redis answers the handshake's bytes with an error line, or waits for more: either way the
  // handshake ends in a message, never a hang.
  EXPECT_TRUE(contains_text(error, "a plain Redis port takes redis://")) << error;
  EXPECT_LT(took, kBound);
}

TEST_F(RedisTlsTest, ShardedServers) {
  RedisServer a({}, TlsMode{&certs_, false});
  RedisServer b({}, TlsMode{&certs_, true});
  const Location where = Location::parse(
      "rediss://127.0.0.1:" + std::to_string(a.port()) + "?tls_ca=" + certs_.path("ca.crt") +
      ",rediss://localhost:" + std::to_string(b.port()) + "?tls_ca=" + certs_.path("ca.crt") +
      "&tls_cert=" + certs_.path("client.crt") + "&tls_key=" + certs_.path("client.key") + "#s");
  ASSERT_EQ(where.servers.size(), 2u);
  Filter filter = Filter::create(where, small_params());
  const auto items = make_items(3000, "s-");
  const auto views = views_of(items);
  std::vector<std::uint8_t> added(views.size());
  EXPECT_EQ(filter.add_many(views, added), views.size());
  std::vector<std::uint8_t> present(views.size());
  EXPECT_EQ(Filter::open(where).contains_many(views, present), views.size());
  EXPECT_GT(a.integer({"DBSIZE"}), 0);
  EXPECT_GT(b.integer({"DBSIZE"}), 0);
}

TEST_F(RedisTlsTest, ClusterWithTlsBetweenItsNodesToo) {
  RedisCluster cluster(3, 0, {}, TlsMode{&certs_, false});
  const RedisEndpoint endpoint = cluster.endpoint();
  ASSERT_TRUE(endpoint.tls);
  // Seeded by one node only: the others are reached through CLUSTER SLOTS, over TLS too.
  RedisEndpoint one_seed = endpoint;
  one_seed.cluster_seeds.resize(1);
  FilterParams params = size_filter(150000, 0.01, Layout::blocked, 16 << 10);
  ASSERT_GE(params.partitions, 3u);
  Filter filter = Filter::create_redis(one_seed, "f", params);
  const auto items = make_items(20000, "c-");
  const auto views = views_of(items);
  std::vector<std::uint8_t> added(views.size());
  EXPECT_EQ(filter.add_many(views, added), views.size());
  std::vector<std::uint8_t> present(views.size());
  EXPECT_EQ(Filter::open_redis(endpoint, "f").contains_many(views, present), views.size());
  for (std::size_t m = 0; m < 3; ++m) EXPECT_GT(cluster.node(m).integer({"DBSIZE"}), 0) << m;
}

}  // namespace
}  // namespace redbloom
