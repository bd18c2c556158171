// Where a filter lives: Location strings, and Filter::open / create / exists / drop by location
// on files and memory (the Redis stores are driven through the same calls by the CLI suites).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "error_of.hpp"
#include "redbloom/error.hpp"
#include "redbloom/exact_set.hpp"
#include "redbloom/filter.hpp"
#include "redbloom/location.hpp"
#include "temp_dir.hpp"
#include "test_items.hpp"

namespace redbloom {
namespace {

using testing::TempDir;

// Sets an environment variable for one test, restoring it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_.empty()) {
      ::unsetenv(name_);
    } else {
      ::setenv(name_, old_.c_str(), 1);
    }
  }

 private:
  const char* name_;
  std::string old_;
};

TEST(Location, FilePathsAndTheFilePrefix) {
  EXPECT_EQ(Location::parse("urls.rbf").kind, Location::Kind::file);
  EXPECT_EQ(Location::parse("urls.rbf").path, "urls.rbf");
  EXPECT_EQ(Location::parse("file:/data/a://b.rbf").path, "/data/a://b.rbf");
  EXPECT_EQ(Location::parse("urls.rbf").describe(), "urls.rbf");
  EXPECT_EQ(Location::parse("memory:").kind, Location::Kind::memory);
}

TEST(Location, RedisNamesAfterAHashOrApart) {
  const Location one = Location::parse("redis://10.0.0.1:6380/2#urls");
  ASSERT_EQ(one.kind, Location::Kind::redis);
  ASSERT_EQ(one.servers.size(), 1u);
  EXPECT_EQ(one.servers[0].host, "10.0.0.1");
  EXPECT_EQ(one.servers[0].port, 6380);
  EXPECT_EQ(one.servers[0].db, 2);
  EXPECT_EQ(one.name, "urls");
  EXPECT_EQ(one.describe(), "urls on redis 10.0.0.1:6380/2");
  EXPECT_EQ(Location::parse("redis://10.0.0.1:6380", "urls").name, "urls");
  EXPECT_EQ(Location::parse("redis://10.0.0.1:6380#urls", "urls").name, "urls");
  EXPECT_TRUE(
      testing::contains_text(testing::error_of([] { (void)Location::parse("redis://h#a", "b"); }),
                             "two names for one filter"));
  EXPECT_TRUE(testing::contains_text(
      testing::error_of([] { (void)Location::parse("redis://h:1"); }), "no filter name"));
}

TEST(Location, CommandLineWordsNameTheOptions) {
  const LocationWords words{"--redis", "--name", "--redis"};
  EXPECT_EQ(testing::error_of([&] { (void)Location::parse("redis://h:1#a", "b", words); }),
            "two names for one filter: 'a' in --redis redis://h:1#a and 'b' in --name");
  EXPECT_EQ(testing::error_of([&] { (void)Location::parse("redis://h:1", "", words); }),
            "--redis redis://h:1 names no filter: write its name after '#' (redis://h:1#NAME) or "
            "give --name NAME");
  const LocationWords file_words{"--filter", "--name", "--redis"};
  EXPECT_TRUE(testing::contains_text(
      testing::error_of([&] { (void)Location::parse("f.rbf", "x", file_words); }),
      "--filter f.rbf is a file, and a file has no name: --name is for a filter in Redis"));
  EXPECT_EQ(Location::parse("redis://h:1#a", "", words).name, "a");
  EXPECT_EQ(Location::name_in("redis://h:1#a"), "a");
  EXPECT_EQ(Location::name_in("redis://h:1"), "");
  EXPECT_EQ(Location::name_in("dir/a#b.rbf"), "");  // a file's name may hold '#'
}

TEST(StagePlace, RedisStreamsAndKafkaTopics) {
  const StagePlace stream = StagePlace::parse("redis-stream://10.0.0.1:6380/2#clicks", "--from");
  EXPECT_EQ(stream.kind, StagePlace::Kind::redis_stream);
  EXPECT_EQ(stream.server.host, "10.0.0.1");
  EXPECT_EQ(stream.server.port, 6380);
  EXPECT_EQ(stream.server.db, 2);
  EXPECT_EQ(stream.stream, "clicks");
  EXPECT_TRUE(StagePlace::parse("rediss-stream://h:1#s", "--to").server.tls);
  EXPECT_EQ(StagePlace::parse("redis-stream+cluster://a:1,b:2#s", "--to").stream, "s");
  const StagePlace topic = StagePlace::parse("kafka://b1:9092,b2:9092/events", "--from");
  EXPECT_EQ(topic.kind, StagePlace::Kind::kafka_topic);
  EXPECT_EQ(topic.brokers, "b1:9092,b2:9092");
  EXPECT_EQ(topic.topic, "events");
  EXPECT_EQ(StagePlace::kind_of("kafka://b/t"), StagePlace::Kind::kafka_topic);
  EXPECT_EQ(StagePlace::kind_of("rediss-stream+cluster://h:1#s"), StagePlace::Kind::redis_stream);
  EXPECT_FALSE(StagePlace::kind_of("redis://h:1#s").has_value());
}

TEST(StagePlace, BadFormsSayBothForms) {
  for (const char* bad : {"nats://h:1#a", "redis://h:1#a", "h:1"}) {
    const std::string e = testing::error_of([&] { (void)StagePlace::parse(bad, "--from"); });
    EXPECT_TRUE(testing::contains_text(e, "--from '")) << e;
    EXPECT_TRUE(testing::contains_text(e, "a stream is named redis-stream://")) << e;
    EXPECT_TRUE(testing::contains_text(e, "kafka://HOST:PORT/TOPIC")) << e;
  }
  for (const char* bad : {"kafka://h:1", "kafka:///t", "kafka://h:1/", "kafka://h:1/a/b"}) {
    EXPECT_TRUE(
        testing::contains_text(testing::error_of([&] { (void)StagePlace::parse(bad, "--to"); }),
                               "a Kafka topic is named kafka://HOST:PORT[,HOST:PORT...]/TOPIC"))
        << bad;
  }
  EXPECT_TRUE(testing::contains_text(
      testing::error_of([] { (void)StagePlace::parse("redis-stream://h:1", "--from"); }),
      "the stream's name after '#'"));
}

TEST(Location, ShardsAndClusters) {
  const Location sharded = Location::parse("redis://a:1,redis://b:2#clicks");
  ASSERT_EQ(sharded.servers.size(), 2u);
  EXPECT_EQ(sharded.servers[1].host, "b");
  const Location cluster = Location::parse("redis+cluster://n1:7000,n2:7001#clicks");
  ASSERT_EQ(cluster.servers.size(), 1u);
  EXPECT_TRUE(cluster.servers[0].is_cluster());
  EXPECT_EQ(cluster.servers[0].cluster_seeds.size(), 2u);
}

TEST(Location, ANameAloneUsesRedisUrlAndSaysSoWhenItIsBad) {
  {
    const ScopedEnv env("REDIS_URL", "redis://cache:6390");
    const Location location = Location::parse("", "urls");
    EXPECT_EQ(location.servers.at(0).host, "cache");
    EXPECT_EQ(location.servers.at(0).port, 6390);
  }
  {
    const ScopedEnv env("REDIS_URL", nullptr);
    EXPECT_EQ(Location::parse("", "urls").servers.at(0).port, 6379);
  }
  const ScopedEnv env("REDIS_URL", "http://cache");
  EXPECT_TRUE(testing::contains_text(testing::error_of([] { (void)Location::parse("", "urls"); }),
                                     "$REDIS_URL (used because no Redis URI was given)"));
}

TEST(Location, BadStringsSayWhatIsWrong) {
  EXPECT_TRUE(testing::contains_text(testing::error_of([] { (void)Location::parse("http://x#a"); }),
                                     "unknown scheme"));
  EXPECT_TRUE(
      testing::contains_text(testing::error_of([] { (void)Location::parse("a.rbf", "name"); }),
                             "a filter file has no name"));
  EXPECT_TRUE(testing::contains_text(testing::error_of([] { (void)Location::parse(""); }),
                                     "no filter location given"));
}

TEST(Location, TlsLocationsOfEveryKind) {
  const Location one = Location::parse("rediss://u:hunter2@cache:6380?tls_ca=/ca.pem#urls");
  ASSERT_EQ(one.servers.size(), 1u);
  EXPECT_TRUE(one.servers[0].tls);
  EXPECT_EQ(one.servers[0].tls_ca_file, "/ca.pem");
  EXPECT_EQ(one.name, "urls");
  const Location sharded = Location::parse("redis://a:1,rediss://b:2#urls");
  ASSERT_EQ(sharded.servers.size(), 2u);
  EXPECT_FALSE(sharded.servers[0].tls);
  EXPECT_TRUE(sharded.servers[1].tls);
  const Location cluster =
      Location::parse("rediss+cluster://n1:7000,n2:7001?tls_server_name=redis.internal#urls");
  ASSERT_EQ(cluster.servers.size(), 1u);
  EXPECT_TRUE(cluster.servers[0].is_cluster());
  EXPECT_TRUE(cluster.servers[0].tls);
  EXPECT_EQ(cluster.servers[0].tls_server_name, "redis.internal");
  EXPECT_EQ(cluster.servers[0].cluster_seeds.size(), 2u);
  const std::string error =
      testing::error_of([] { (void)Location::parse("rediss://u:hunter2@h?tls_key=/k#urls"); });
  EXPECT_TRUE(testing::contains_text(error, "tls_cert and tls_key go together")) << error;
  EXPECT_FALSE(testing::contains_text(error, "hunter2")) << error;
}

TEST(FilterOpen, CreatesWhenMissingAndOpensAfterwards) {
  TempDir dir;
  const Location where = Location::file(dir.file("f.rbf"));
  const FilterParams params = size_filter(1000, 0.01, Layout::blocked);
  EXPECT_FALSE(Filter::exists(where));
  EXPECT_THROW((void)Filter::open(where), NotFound);
  OpenReport report;
  {
    Filter made = Filter::open(where, OpenOptions::create_missing(params), &report);
    EXPECT_TRUE(report.created);
    EXPECT_TRUE(made.add("a"));
  }
  EXPECT_TRUE(Filter::exists(where));
  OpenReport again;
  Filter opened = Filter::open(where, OpenOptions::create_missing(params), &again);
  EXPECT_FALSE(again.created);
  EXPECT_TRUE(opened.contains("a"));
}

TEST(FilterOpen, OtherParametersAreRefusedOnlyWhenRequired) {
  TempDir dir;
  const Location where = Location::file(dir.file("f.rbf"));
  (void)Filter::create(where, size_filter(1000, 0.01, Layout::classic));
  const FilterParams other = size_filter(5000, 0.01, Layout::classic);
  EXPECT_NO_THROW((void)Filter::open(where, OpenOptions::create_missing(other)));
  EXPECT_TRUE(testing::contains_text(
      testing::error_of([&] {
        (void)Filter::open(where, OpenOptions::create_missing(other, /*require_params=*/true));
      }),
      "was created with other parameters"));
}

TEST(FilterOpen, ReadOnlyRefusesWrites) {
  TempDir dir;
  const Location where = Location::file(dir.file("f.rbf"));
  (void)Filter::create(where, size_filter(1000, 0.01, Layout::classic));
  Filter reader = Filter::open(where, OpenOptions::read_only());
  EXPECT_FALSE(reader.contains("a"));
  EXPECT_THROW((void)reader.add("a"), Error);
}

TEST(FilterOpen, MemoryFiltersNeedParameters) {
  EXPECT_THROW((void)Filter::open(Location::memory()), NotFound);
  Filter filter = Filter::open(Location::memory(),
                               OpenOptions::create_missing(size_filter(10, 0.01, Layout::classic)));
  EXPECT_TRUE(filter.add("x"));
  EXPECT_FALSE(Filter::exists(Location::memory()));
}

TEST(FilterDrop, RemovesTheFilterAndItsExactSet) {
  TempDir dir;
  const Location where = Location::file(dir.file("f.rbf"));
  Filter filter = Filter::create(where, size_filter(1000, 0.01, Layout::classic));
  auto exact = exact_set_for_writing(where, filter, /*create=*/true);
  ASSERT_NE(exact, nullptr);
  EXPECT_TRUE(exact_set_exists(where));
  exact.reset();
  Filter::drop(where);
  EXPECT_FALSE(Filter::exists(where));
  EXPECT_FALSE(exact_set_exists(where));
  EXPECT_THROW(Filter::drop(where), NotFound);
}

TEST(ExactSetForWriting, RefusesANewSetForAFilterThatHoldsItems) {
  TempDir dir;
  const Location where = Location::file(dir.file("f.rbf"));
  Filter filter = Filter::create(where, size_filter(1000, 0.01, Layout::classic));
  EXPECT_EQ(exact_set_for_writing(where, filter, /*create=*/false), nullptr);
  filter.add("held");
  EXPECT_TRUE(testing::contains_text(
      testing::error_of([&] { (void)exact_set_for_writing(where, filter, /*create=*/true); }),
      "already holds items but has no exact set"));
}

}  // namespace
}  // namespace redbloom
