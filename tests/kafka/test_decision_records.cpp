// Decision records (src/jobs/kafka_decision_record.hpp) and where they are kept (decision_log.hpp):
// what is put is what is read back, beside a filter file and in the filter's Redis server.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "jobs/kafka_decision_record.hpp"
#include "jobs/kafka_round_intent.hpp"
#include "redbloom/decision_log.hpp"
#include "redbloom/error.hpp"
#include "redbloom/filter.hpp"
#include "redbloom/params.hpp"
#include "redis_server.hpp"
#include "temp_dir.hpp"

namespace redbloom {
namespace {

using std::chrono::milliseconds;

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

TEST(DecisionRecord, KeepsItsRoundAndReadsVersion1) {
  DecisionRecord record(7, 9);
  record.set_round(0xfedcba9876543210u);
  record.mark_first_seen(8);
  const DecisionRecord back = DecisionRecord::decode(record.encode());
  EXPECT_EQ(back.round(), 0xfedcba9876543210u);
  EXPECT_TRUE(back.first_seen(8));
  // A record an older stage left: round 0, its offsets as they were.
  const std::string version1 = std::string("redbloom-kafka-decisions 1 7 9\n") + '\x02';
  const DecisionRecord old = DecisionRecord::decode(version1);
  EXPECT_EQ(old.round(), 0u);
  EXPECT_EQ(old.last(), 9);
  EXPECT_TRUE(old.first_seen(8));
  EXPECT_FALSE(old.first_seen(7));
}

TEST(RoundIntent, EncodesItsItemsWhateverTheirBytes) {
  RoundIntent intent;
  intent.round = 42;
  intent.record_key = "kafka/g/clicks/3";
  intent.items = {"plain", std::string("a\0b\n12:x", 8), "", std::string(300, 'z')};
  const std::string text = intent.encode();
  const RoundIntent back = RoundIntent::decode(text);
  EXPECT_EQ(back.round, 42u);
  EXPECT_EQ(back.record_key, intent.record_key);
  EXPECT_EQ(back.items, intent.items);
  // Cut anywhere, or with a byte more, it is refused rather than misread.
  for (std::size_t cut = 0; cut < text.size(); ++cut) {
    EXPECT_THROW((void)RoundIntent::decode(text.substr(0, cut)), FormatError) << cut;
  }
  EXPECT_THROW((void)RoundIntent::decode(text + "x"), FormatError);
  EXPECT_THROW((void)RoundIntent::decode("redbloom-kafka-intent 1 1 99999999999 0\n"), FormatError);
}

// A stage that died between storing a batch's decision record and adding its items: the next
// lock holder adds them before it tests anything, and only if that record is the one the
// intent went with.
void died_mid_round(const Location& where) {
  Filter filter = where.kind == Location::Kind::file
                      ? Filter::create_file(where.path, size_filter(1000, 0.001, Layout::blocked))
                      : Filter::create_redis(where.servers.front(), where.name,
                                             size_filter(1000, 0.001, Layout::blocked));
  const auto log = DecisionLog::beside(where);
  const auto lock = log->lock_round(milliseconds(1000), milliseconds(60000));
  EXPECT_EQ(roll_forward(filter, *log, nullptr), 0u);  // none left

  DecisionRecord record(100, 102);
  record.set_round(7);
  record.mark_first_seen(100);
  record.mark_first_seen(102);
  const RoundIntent intent{7, "kafka/g/clicks/0", {"first", "third"}};
  log->put(std::string(RoundIntent::kKey), intent.encode(), milliseconds(0));
  log->put("kafka/g/clicks/0", record.encode(), milliseconds(0));
  EXPECT_EQ(roll_forward(filter, *log, nullptr), 2u);
  const std::vector<std::string_view> items{"first", "third", "never"};
  std::vector<std::uint8_t> present(3);
  filter.contains_many(items, present);
  EXPECT_EQ(present, (std::vector<std::uint8_t>{1, 1, 0}));
  EXPECT_FALSE(log->get(std::string(RoundIntent::kKey)).has_value());  // carried out once

  // Died before storing the record: the record is an older round's, nothing was decided, and
  // the items are tested again, so they must not be added.
  const RoundIntent early{8, "kafka/g/clicks/0", {"undecided"}};
  log->put(std::string(RoundIntent::kKey), early.encode(), milliseconds(0));
  EXPECT_EQ(roll_forward(filter, *log, nullptr), 0u);
  std::vector<std::uint8_t> undecided(1);
  filter.contains_many(std::vector<std::string_view>{"undecided"}, undecided);
  EXPECT_EQ(undecided[0], 0);
  EXPECT_FALSE(log->get(std::string(RoundIntent::kKey)).has_value());
}

TEST(RoundIntent, ADeadStagesItemsAreAddedByTheNextLockHolderBesideAFile) {
  const testing::TempDir dir;
  died_mid_round(Location::file(dir.file("seen.rbf")));
}

TEST(RoundIntent, ADeadStagesItemsAreAddedByTheNextLockHolderOnRedis) {
  const test::RedisServer server;
  died_mid_round(Location::redis({server.endpoint()}, "seen"));
}

TEST(DecisionLog, ErasesOnlyWhatItWasToldIsThere) {
  const testing::TempDir dir;
  const test::RedisServer server;
  for (const Location& where :
       {Location::file(dir.file("seen.rbf")), Location::redis({server.endpoint()}, "seen")}) {
    const auto log = DecisionLog::beside(where);
    log->put("k", "mine", milliseconds(0));
    log->erase("k", "someone else's");
    EXPECT_EQ(log->get("k"), "mine");
    log->erase("k", "mine");
    EXPECT_FALSE(log->get("k").has_value());
    log->erase("k", "mine");  // gone already: nothing to do
  }
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

// A child process takes the round lock and dies holding it (no destructor runs).
void die_holding_the_lock(const Location& where) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const auto lock =
        DecisionLog::beside(where)->lock_round(milliseconds(2000), milliseconds(60000));
    ::_exit(lock->keep() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

// Stages take turns: a second holder waits for the first (and gives up after its wait, saying
// so); once the first lets go, the second takes it.
void takes_turns(const Location& where) {
  const auto first_log = DecisionLog::beside(where);
  const auto second_log = DecisionLog::beside(where);
  auto held = first_log->lock_round(milliseconds(1000), milliseconds(60000));
  try {
    (void)second_log->lock_round(milliseconds(150), milliseconds(60000));
    ADD_FAILURE() << "a second holder took the lock";
  } catch (const StorageError& e) {
    EXPECT_NE(std::string(e.what()).find("held by another stage"), std::string::npos) << e.what();
  }
  std::thread release([&] {
    std::this_thread::sleep_for(milliseconds(100));
    held.reset();
  });
  const auto start = std::chrono::steady_clock::now();
  const auto second = second_log->lock_round(milliseconds(5000), milliseconds(60000));
  release.join();
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(90));  // it waited its turn
  EXPECT_TRUE(second->keep());
}

TEST(DecisionLogRoundLock, StagesTakeTurnsBesideAFile) {
  const testing::TempDir dir;
  takes_turns(Location::file(dir.file("seen.rbf")));
  // The lock is no record: remove_all counts only records.
  DecisionLog::beside(Location::file(dir.file("seen.rbf")))
      ->put("kafka/g/clicks/0", "r", milliseconds(0));
  EXPECT_EQ(DecisionLog::beside(Location::file(dir.file("seen.rbf")))->remove_all(), 1u);
}

TEST(DecisionLogRoundLock, StagesTakeTurnsOnRedis) {
  const test::RedisServer server;
  takes_turns(Location::redis({server.endpoint()}, "seen"));
  // Released, not left to expire.
  EXPECT_EQ(server.integer({"EXISTS", "seen:decisions-lock"}), 0);
}

TEST(DecisionLogRoundLock, AKilledHoldersLockIsTakenAtOnce) {
  const testing::TempDir dir;
  const test::RedisServer server;
  for (const Location& where :
       {Location::file(dir.file("seen.rbf")), Location::redis({server.endpoint()}, "seen")}) {
    die_holding_the_lock(where);
    if (where.kind == Location::Kind::redis) {
      EXPECT_GT(server.integer({"PTTL", "seen:decisions-lock"}), 50000);  // still held
    }
    // A Redis lock lives 60 s; the holder's death here is seen, so it is not waited out.
    const auto start = std::chrono::steady_clock::now();
    const auto lock =
        DecisionLog::beside(where)->lock_round(milliseconds(5000), milliseconds(60000));
    EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(3000));
  }
}

TEST(DecisionLogRoundLock, ARedisLockHeldElsewhereIsWaitedOutAndKept) {
  const test::RedisServer server;
  // A holder on another machine: its lock ends only with its lifetime. Lifetimes of seconds
  // and pauses of a fraction of them, so that a loaded machine's stalls do not decide.
  (void)server.command({"SET", "seen:decisions-lock", "elsewhere/pid:[1] 1 0123", "PX", "2000"});
  const auto log = DecisionLog::beside(Location::redis({server.endpoint()}, "seen"));
  EXPECT_THROW((void)log->lock_round(milliseconds(50), milliseconds(3000)), StorageError);
  auto lock = log->lock_round(milliseconds(10000), milliseconds(3000));
  EXPECT_NE(server.command({"GET", "seen:decisions-lock"}).text, "elsewhere/pid:[1] 1 0123");
  // Kept past its lifetime while its holder works on.
  for (int i = 0; i < 4; ++i) {
    std::this_thread::sleep_for(milliseconds(1100));
    EXPECT_TRUE(lock->keep());
  }
  EXPECT_GT(server.integer({"PTTL", "seen:decisions-lock"}), 0);
  // Expired (a holder that stalled for longer): keep() says so, and it is not taken back.
  (void)server.command({"SET", "seen:decisions-lock", "another holder"});
  std::this_thread::sleep_for(milliseconds(1100));
  EXPECT_FALSE(lock->keep());
  lock.reset();  // releases only its own
  EXPECT_EQ(server.command({"GET", "seen:decisions-lock"}).text, "another holder");
}

TEST(DecisionLog, RefusesPlacesWithoutOne) {
  EXPECT_THROW((void)DecisionLog::beside(Location::memory()), InvalidArgument);
}

}  // namespace
}  // namespace redbloom
