// Decision records (src/jobs/kafka_decision_record.hpp) and where they are kept (decision_log.hpp):
// what is put is what is read back, beside a filter file and in the filter's Redis server.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "jobs/kafka_decision_record.hpp"
#include "redbloom/decision_log.hpp"
#include "redbloom/error.hpp"
#include "redis_server.hpp"
#include "temp_dir.hpp"

namespace redbloom {
namespace {

TEST(DecisionRecord, EncodesWhichOffsetsWereFirstSeen) {
  DecisionRecord record(1000, 1012);
  record.mark_first_seen(1000);
  record.mark_first_seen(1007);
  record.mark_first_seen(1012);
  record.mark_first_seen(1003);
  record.clear_first_seen(1003);  // taken by another writer after the test
  const DecisionRecord back = DecisionRecord::decode(record.encode());
  EXPECT_EQ(back.first(), 1000);
  EXPECT_EQ(back.last(), 1012);
  for (std::int64_t offset = 990; offset <= 1020; ++offset) {
    EXPECT_EQ(back.first_seen(offset), offset == 1000 || offset == 1007 || offset == 1012)
        << offset;
  }
  EXPECT_FALSE(back.covers(999));
  EXPECT_TRUE(back.covers(1012));
  EXPECT_FALSE(back.covers(1013));
}

TEST(DecisionRecord, RefusesWhatIsNotARecord) {
  DecisionRecord record(5, 20);
  std::string text = record.encode();
  EXPECT_THROW((void)DecisionRecord::decode(text.substr(0, text.size() - 1)), FormatError);
  EXPECT_THROW((void)DecisionRecord::decode("redbloom-kafka-decisions 1 9 3\n"), FormatError);
  EXPECT_THROW((void)DecisionRecord::decode("something else"), FormatError);
  EXPECT_THROW(record.mark_first_seen(21), InvalidArgument);
  EXPECT_THROW(record.clear_first_seen(4), InvalidArgument);
}

void put_and_get(DecisionLog& log) {
  EXPECT_FALSE(log.get("kafka/g/clicks/0").has_value());
  const std::string bytes("a\0b\nc", 5);
  log.put("kafka/g/clicks/0", bytes, std::chrono::milliseconds(0));
  log.put("kafka/g/clicks/1", "other", std::chrono::milliseconds(0));
  EXPECT_EQ(log.get("kafka/g/clicks/0"), bytes);
  log.put("kafka/g/clicks/0", "replaced", std::chrono::milliseconds(0));
  EXPECT_EQ(log.get("kafka/g/clicks/0"), "replaced");
  EXPECT_EQ(log.get("kafka/g/clicks/1"), "other");
}

TEST(DecisionLog, BesideAFilterFile) {
  const testing::TempDir dir;
  const auto log = DecisionLog::beside(Location::file(dir.file("seen.rbf")));
  put_and_get(*log);
  EXPECT_EQ(log->describe(), dir.file("seen.rbf") + ".decisions/");
  // A second handle (a restarted stage) reads what the first wrote.
  EXPECT_EQ(DecisionLog::beside(Location::file(dir.file("seen.rbf")))->get("kafka/g/clicks/0"),
            "replaced");
}

TEST(DecisionLog, RemovesWhatAKilledWriterLeft) {
  const testing::TempDir dir;
  const std::string records = dir.file("seen.rbf") + ".decisions";
  ASSERT_EQ(::mkdir(records.c_str(), 0755), 0);
  // A writer that is gone (pid 2^22 + 1 is above the kernel's largest) and a live one (us).
  const std::string orphan = records + "/kafka%2Fg%2Fin%2F0.tmp4194305";
  const std::string live = records + "/kafka%2Fg%2Fin%2F1.tmp" + std::to_string(::getpid());
  for (const std::string& path : {orphan, live}) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fclose(f);
  }
  DecisionLog::beside(Location::file(dir.file("seen.rbf")))
      ->put("kafka/g/in/0", "x", std::chrono::milliseconds(0));
  EXPECT_NE(::access(orphan.c_str(), F_OK), 0);
  EXPECT_EQ(::access(live.c_str(), F_OK), 0);
}

TEST(DecisionLog, InTheFiltersRedisServer) {
  const test::RedisServer server;
  const auto log = DecisionLog::beside(Location::redis({server.endpoint()}, "seen"));
  put_and_get(*log);
  EXPECT_EQ(server.command({"GET", "seen:decisions:kafka/g/clicks/1"}).text, "other");
  log->put("kafka/g/clicks/2", "expires", std::chrono::milliseconds(60000));
  const long long ttl = server.integer({"PTTL", "seen:decisions:kafka/g/clicks/2"});
  EXPECT_GT(ttl, 0);
  EXPECT_LE(ttl, 60000);
  EXPECT_EQ(server.integer({"PTTL", "seen:decisions:kafka/g/clicks/1"}), -1);
}

TEST(DecisionLog, RemoveAllBesideAFile) {
  const testing::TempDir dir;
  const auto log = DecisionLog::beside(Location::file(dir.file("seen.rbf")));
  EXPECT_EQ(log->remove_all(), 0u);  // none made yet
  put_and_get(*log);
  EXPECT_EQ(log->remove_all(), 2u);
  EXPECT_NE(::access((dir.file("seen.rbf") + ".decisions").c_str(), F_OK), 0);
  EXPECT_FALSE(log->get("kafka/g/clicks/0").has_value());
  // The same handle makes its directory again for the next record.
  log->put("kafka/g/clicks/0", "again", std::chrono::milliseconds(0));
  EXPECT_EQ(log->get("kafka/g/clicks/0"), "again");
}

TEST(DecisionLog, RemoveAllOnRedisTakesOnlyTheFiltersRecords) {
  const test::RedisServer server;
  const auto log = DecisionLog::beside(Location::redis({server.endpoint()}, "seen*"));
  put_and_get(*log);
  // Another filter's records, and one whose name the glob would match unescaped.
  DecisionLog::beside(Location::redis({server.endpoint()}, "seenx"))
      ->put("kafka/g/clicks/0", "kept", std::chrono::milliseconds(0));
  EXPECT_EQ(log->remove_all(), 2u);
  EXPECT_FALSE(log->get("kafka/g/clicks/1").has_value());
  EXPECT_EQ(server.command({"GET", "seenx:decisions:kafka/g/clicks/0"}).text, "kept");
}

TEST(DecisionLog, RefusesPlacesWithoutOne) {
  EXPECT_THROW((void)DecisionLog::beside(Location::memory()), InvalidArgument);
}

}  // namespace
}  // namespace redbloom
