// The exactly-once stream stage's library part (include/redbloom/redis_stream_dedup.hpp) against a
// private redis-server: a batch taken over by another consumer is done once, and a batch the server
// refuses leaves nothing behind (its entries stay pending, no bit set, nothing copied).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "redbloom/error.hpp"
#include "redbloom/filter.hpp"
#include "redbloom/redis_stream_dedup.hpp"
#include "redbloom/sizing.hpp"
#include "redis_server.hpp"

namespace redbloom {
namespace {

RedisStreamDedupOptions options_for(const std::string& consumer, OnMissingKey on_missing) {
  // Built whole (not assigned member by member): GCC 12 at -O3 warns falsely (-Wrestrict) on
  // a std::string assigned from a literal.
  return RedisStreamDedupOptions{.input = std::string("in"),
                                 .group = std::string("g"),
                                 .consumer = consumer,
                                 .output = std::string("out"),
                                 .key_field = std::string("id"),
                                 .on_missing = on_missing,
                                 .maxlen = 0,
                                 .min_idle = std::chrono::milliseconds(0)};
}

long long pending(const test::RedisServer& server) {
  return server.command({"XPENDING", "in", "g"}).elements.at(0).integer;
}

TEST(RedisStreamDedup, ABatchTakenOverIsDoneOnce) {
  test::RedisServer server;
  const Filter filter =
      Filter::create_redis(server.endpoint(), "f", size_filter(1000, 1e-6, Layout::classic));
  for (const char* id : {"a", "b"}) (void)server.command({"XADD", "in", "*", "id", id});
  (void)server.command({"XADD", "in", "*", "other", "x"});  // no key: passed unfiltered

  RedisStreamDedup slow(filter, server.endpoint(), options_for("slow", OnMissingKey::pass));
  ASSERT_TRUE(slow.create_group(true));
  // "slow" reads the batch and stalls; "fast" takes its entries over and finishes them.
  ASSERT_EQ(slow.read(10, std::chrono::milliseconds(10)), 3u);
  RedisStreamDedup fast(filter, server.endpoint(), options_for("fast", OnMissingKey::pass));
  ASSERT_EQ(fast.read(10, std::chrono::milliseconds(10)), 3u);  // slow's, claimed
  const RedisStreamDedupBatch done = fast.commit();
  EXPECT_EQ(done.unique, 2u);
  EXPECT_EQ(done.passed, 1u);
  EXPECT_EQ(done.recovered, 3u);
  EXPECT_EQ(server.integer({"XLEN", "out"}), 3);

  // The stalled consumer's batch then finds its entries done: nothing copied again, not even
  // the one passed unfiltered (which no filter would have stopped).
  const RedisStreamDedupBatch late = slow.commit();
  EXPECT_EQ(late.entries, 3u);
  EXPECT_EQ(late.done_before, 3u);
  EXPECT_EQ(late.unique + late.duplicates + late.passed, 0u);
  EXPECT_EQ(server.integer({"XLEN", "out"}), 3);
  EXPECT_EQ(pending(server), 0);
}

// Read ahead: the next new entries are read while a batch commits; finish() does them, and a
// stage that ends without it leaves them pending for another consumer to take over.
TEST(RedisStreamDedup, EntriesReadAheadAreFinishedOrLeftPending) {
  test::RedisServer server;
  const Filter filter =
      Filter::create_redis(server.endpoint(), "f", size_filter(1000, 1e-6, Layout::classic));
  for (const char* id : {"a", "b", "a", "c"}) (void)server.command({"XADD", "in", "*", "id", id});
  RedisStreamDedupOptions options = options_for("c1", OnMissingKey::error);
  options.read_ahead = true;
  {
    RedisStreamDedup stage(filter, server.endpoint(), options);
    ASSERT_TRUE(stage.create_group(false));
    ASSERT_EQ(stage.read(2, std::chrono::milliseconds(10)), 2u);
    EXPECT_EQ(stage.commit().unique, 2u);
    const RedisStreamDedupBatch ahead = stage.finish();
    EXPECT_EQ(ahead.entries, 2u);
    EXPECT_EQ(ahead.unique, 1u);
    EXPECT_EQ(ahead.duplicates, 1u);
    EXPECT_EQ(stage.finish().entries, 0u);  // nothing more was read
  }
  EXPECT_EQ(pending(server), 0);
  EXPECT_EQ(server.integer({"XLEN", "out"}), 3);

  for (const char* id : {"d", "e", "d", "f"}) (void)server.command({"XADD", "in", "*", "id", id});
  options.consumer = "c2";
  {
    RedisStreamDedup stage(filter, server.endpoint(), options);
    ASSERT_EQ(stage.read(2, std::chrono::milliseconds(10)), 2u);
    EXPECT_EQ(stage.commit().unique, 2u);
  }  // gone without finish(), as a killed stage: what it read ahead stays pending
  EXPECT_EQ(pending(server), 2);
  RedisStreamDedup next(filter, server.endpoint(), options_for("c3", OnMissingKey::error));
  ASSERT_EQ(next.read(10, std::chrono::milliseconds(10)), 2u);
  const RedisStreamDedupBatch taken = next.commit();
  EXPECT_EQ(taken.recovered, 2u);
  EXPECT_EQ(taken.unique, 1u);
  EXPECT_EQ(taken.duplicates, 1u);
  EXPECT_EQ(pending(server), 0);
  EXPECT_EQ(server.integer({"XLEN", "out"}), 6);  // a, b, c, then d, e, f
}

TEST(RedisStreamDedup, ARefusedBatchLeavesNothingBehind) {
  test::RedisServer server;
  const Filter filter =
      Filter::create_redis(server.endpoint(), "f", size_filter(1000, 1e-6, Layout::blocked));
  for (const char* id : {"a", "b", "a"}) (void)server.command({"XADD", "in", "*", "id", id});
  (void)server.command({"SET", "out", "not a stream"});

  RedisStreamDedup stage(filter, server.endpoint(), options_for("c", OnMissingKey::error));
  ASSERT_TRUE(stage.create_group(false));
  ASSERT_EQ(stage.read(10, std::chrono::milliseconds(10)), 3u);
  try {
    (void)stage.commit();
    FAIL() << "an output that is not a stream was written to";
  } catch (const StorageError& e) {
    EXPECT_NE(std::string(e.what()).find("output key 'out' holds a string"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("stay pending"), std::string::npos) << e.what();
  }
  EXPECT_EQ(pending(server), 3);
  EXPECT_EQ(server.integer({"BITCOUNT", "f:bits:{f:0}"}), 0);

  // A partition that vanished is refused the same way, before any write.
  (void)server.command({"DEL", "out"});
  (void)server.command({"DEL", "f:bits:{f:0}"});
  EXPECT_THROW((void)stage.commit(), FormatError);
  EXPECT_EQ(pending(server), 3);
  EXPECT_EQ(server.integer({"EXISTS", "out"}), 0);
  EXPECT_EQ(server.integer({"EXISTS", "f:bits:{f:0}"}), 0);
}

TEST(RedisStreamDedup, ALostConnectionSaysTheBatchRanWholeOrNotAtAll) {
  test::RedisServer server;
  const Filter filter =
      Filter::create_redis(server.endpoint(), "f", size_filter(1000, 1e-6, Layout::classic));
  for (const char* id : {"a", "b", "a"}) (void)server.command({"XADD", "in", "*", "id", id});
  RedisStreamDedup stage(filter, server.endpoint(), options_for("c", OnMissingKey::error));
  ASSERT_TRUE(stage.create_group(false));
  ASSERT_EQ(stage.read(10, std::chrono::milliseconds(10)), 3u);
  (void)server.command({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
  try {
    (void)stage.commit();
    FAIL() << "a batch sent on a closed connection was reported done";
  } catch (const StorageError& e) {
    EXPECT_NE(std::string(e.what()).find("ran whole or not at all"), std::string::npos) << e.what();
  }
  EXPECT_EQ(pending(server), 3);
  // The next attempt (a new connection) does the batch once.
  const RedisStreamDedupBatch done = stage.commit();
  EXPECT_EQ(done.unique, 2u);
  EXPECT_EQ(done.duplicates, 1u);
  EXPECT_EQ(server.integer({"XLEN", "out"}), 2);
  EXPECT_EQ(pending(server), 0);
}

// The refusals that must come before the batch's first write, on a stock server and (when
// the module is built) on one whose script calls RB.PARTADD.
class RedisStreamDedupRefusal : public ::testing::TestWithParam<bool> {
 protected:
  static std::vector<std::string> server_args() {
#ifdef REDBLOOM_MODULE_PATH
    if (GetParam()) return {"--loadmodule", REDBLOOM_MODULE_PATH};
#endif
    return {};
  }
  // Three entries read and about to be committed: keys a, b and a again.
  static void add_entries(const test::RedisServer& server) {
    for (const char* id : {"a", "b", "a"}) (void)server.command({"XADD", "in", "*", "id", id});
  }
  // The batch refused, nothing of it done: pending, no bit set, nothing copied.
  static void expect_untouched(const test::RedisServer& server, long long output_length) {
    EXPECT_EQ(pending(server), 3);
    EXPECT_EQ(server.integer({"BITCOUNT", "f:bits:{f:0}"}), 0);
    EXPECT_EQ(server.integer({"XLEN", "out"}), output_length);
  }
};

TEST_P(RedisStreamDedupRefusal, AnOutputAtTheLastPossibleIdIsRefusedBeforeAnyWrite) {
  test::RedisServer server(server_args());
  const Filter filter =
      Filter::create_redis(server.endpoint(), "f", size_filter(1000, 1e-6, Layout::classic));
  add_entries(server);
  // Any client can do this; XADD * then raises "The stream has exhausted the last possible ID".
  (void)server.command({"XADD", "out", "18446744073709551615-18446744073709551615", "id", "last"});
  RedisStreamDedup stage(filter, server.endpoint(), options_for("c", OnMissingKey::error));
  ASSERT_TRUE(stage.create_group(false));
  ASSERT_EQ(stage.read(10, std::chrono::milliseconds(10)), 3u);
  try {
    (void)stage.commit();
    FAIL() << "a batch was committed to an output that cannot take it";
  } catch (const StorageError& e) {
    EXPECT_NE(std::string(e.what()).find("last possible entry id"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("stay pending"), std::string::npos) << e.what();
  }
  expect_untouched(server, 1);

  // A last id a little below the end leaves too little room for the batch: refused too.
  (void)server.command({"DEL", "out"});
  (void)server.command({"XADD", "out", "18446744073709551615-18446744073709551614", "id", "last"});
  EXPECT_THROW((void)stage.commit(), StorageError);
  expect_untouched(server, 1);

  // With the output made usable again, the same batch is done whole, once.
  (void)server.command({"DEL", "out"});
  const RedisStreamDedupBatch done = stage.commit();
  EXPECT_EQ(done.unique, 2u);
  EXPECT_EQ(done.duplicates, 1u);
  EXPECT_EQ(server.integer({"XLEN", "out"}), 2);
  EXPECT_EQ(pending(server), 0);
}

TEST_P(RedisStreamDedupRefusal, AUserWhoMayNotWriteTheOutputIsRefusedBeforeAnyWrite) {
  test::RedisServer server(server_args());
  (void)server.command({"ACL", "SETUSER", "stage", "on", ">secret", "~*", "&*", "+@all", "-xadd"});
  RedisEndpoint as_stage = server.endpoint();
  as_stage.user = "stage";
  as_stage.password = "secret";
  const Filter filter =
      Filter::create_redis(as_stage, "f", size_filter(1000, 1e-6, Layout::blocked));
  add_entries(server);
  RedisStreamDedup stage(filter, as_stage, options_for("c", OnMissingKey::error));
  ASSERT_TRUE(stage.create_group(false));
  ASSERT_EQ(stage.read(10, std::chrono::milliseconds(10)), 3u);
  try {
    (void)stage.commit();
    FAIL() << "a batch was committed by a user who cannot copy it";
  } catch (const StorageError& e) {
    EXPECT_NE(std::string(e.what()).find("may not run XADD out"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("stay pending"), std::string::npos) << e.what();
  }
  expect_untouched(server, 0);

  (void)server.command({"ACL", "SETUSER", "stage", "+xadd"});
  const RedisStreamDedupBatch done = stage.commit();
  EXPECT_EQ(done.unique, 2u);
  EXPECT_EQ(server.integer({"XLEN", "out"}), 2);
}

#ifdef REDBLOOM_MODULE_PATH
INSTANTIATE_TEST_SUITE_P(Engines, RedisStreamDedupRefusal, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "module" : "stock"; });
#else
INSTANTIATE_TEST_SUITE_P(Engines, RedisStreamDedupRefusal, ::testing::Values(false),
                         [](const auto&) { return "stock"; });
#endif

}  // namespace
}  // namespace redbloom
