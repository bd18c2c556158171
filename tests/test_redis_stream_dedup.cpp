// The exactly-once stream stage's library part (include/redbloom/redis_stream_dedup.hpp) against a
// private redis-server: a batch taken over by another consumer is done once, and a batch the server
// refuses leaves nothing behind (its entries stay pending, no bit set, nothing copied).
#include <gtest/gtest.h>

#include <atomic>
#include <initializer_list>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "redbloom/error.hpp"
#include "redbloom/filter.hpp"
#include "redbloom/location.hpp"
#include "redbloom/redis_stream_dedup.hpp"
#include "redbloom/sizing.hpp"
#include "redbloom/stream.hpp"
#include "redis_server.hpp"

namespace redbloom {
namespace {

// "k<n>", built by appending: GCC 12 at -O3 warns falsely (-Wrestrict) on "k" + std::to_string.
std::string key_of(int n) {
  std::string key = "k";
  key += std::to_string(n);
  return key;
}

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

// The batch is refused with a StorageError whose message says each of `says`.
void expect_refused(RedisStreamDedup& stage, std::initializer_list<std::string_view> says,
                    std::string_view what_went_wrong) {
  try {
    (void)stage.commit();
    ADD_FAILURE() << what_went_wrong;
  } catch (const StorageError& e) {
    for (const std::string_view phrase : says) {
      EXPECT_NE(std::string(e.what()).find(phrase), std::string::npos) << e.what();
    }
  }
}

// The server as user "stage" (password "secret"), made with `rules` (ACL SETUSER's).
RedisEndpoint as_stage_user(const test::RedisServer& server,
                            std::initializer_list<std::string> rules) {
  std::vector<std::string> command{"ACL", "SETUSER", "stage", "on", ">secret"};
  command.insert(command.end(), rules);
  (void)server.command(command);
  RedisEndpoint endpoint = server.endpoint();
  endpoint.user = "stage";
  endpoint.password = "secret";
  return endpoint;
}

// A test run on a stock server and (when the module is built) on one with redbloom.so.
class OnEachEngine : public ::testing::TestWithParam<bool> {
 protected:
  static std::vector<std::string> server_args() {
#ifdef REDBLOOM_MODULE_PATH
    if (GetParam()) return {"--loadmodule", REDBLOOM_MODULE_PATH};
#endif
    return {};
  }
};

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
  expect_refused(stage, {"output key 'out' holds a string", "stay pending"},
                 "an output that is not a stream was written to");
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
  expect_refused(stage, {"ran whole or not at all"},
                 "a batch sent on a closed connection was reported done");
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
class RedisStreamDedupRefusal : public OnEachEngine {
 protected:
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
  expect_refused(stage, {"last possible entry id", "stay pending"},
                 "a batch was committed to an output that cannot take it");
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
  const RedisEndpoint as_stage = as_stage_user(server, {"~*", "&*", "+@all", "-xadd"});
  const Filter filter =
      Filter::create_redis(as_stage, "f", size_filter(1000, 1e-6, Layout::blocked));
  add_entries(server);
  RedisStreamDedup stage(filter, as_stage, options_for("c", OnMissingKey::error));
  ASSERT_TRUE(stage.create_group(false));
  ASSERT_EQ(stage.read(10, std::chrono::milliseconds(10)), 3u);
  expect_refused(stage, {"may not run XADD out", "stay pending"},
                 "a batch was committed by a user who cannot copy it");
  expect_untouched(server, 0);

  (void)server.command({"ACL", "SETUSER", "stage", "+xadd"});
  const RedisStreamDedupBatch done = stage.commit();
  EXPECT_EQ(done.unique, 2u);
  EXPECT_EQ(server.integer({"XLEN", "out"}), 2);
}

// Windowed and growing filters: the filter's own add runs inside the batch's script (a Lua
// function on a stock server, RB.STREAM with the module).
class RedisStreamDedupWindow : public OnEachEngine {
 protected:
  static void add(const test::RedisServer& server, const std::vector<std::string>& keys) {
    for (const std::string& key : keys) (void)server.command({"XADD", "in", "*", "id", key});
  }
  // The output's keys, in order.
  static std::vector<std::string> output(const test::RedisServer& server) {
    std::vector<std::string> keys;
    for (const auto& entry : server.command({"XRANGE", "out", "-", "+"}).elements) {
      keys.push_back(entry.elements.at(1).elements.at(1).text);
    }
    return keys;
  }
  // Reads and commits until nothing is left; the batches' counts summed.
  static RedisStreamDedupBatch drain(RedisStreamDedup& stage, std::size_t batch) {
    RedisStreamDedupBatch total;
    while (stage.read(batch, std::chrono::milliseconds(10)) != 0) {
      const RedisStreamDedupBatch b = stage.commit();
      total.entries += b.entries;
      total.unique += b.unique;
      total.duplicates += b.duplicates;
    }
    return total;
  }
  static constexpr std::uint64_t kSlice = 1'000'000'000;
  // A filter "w" of a 2-slice window of 1 s slices, for 2000 keys, whose time is *now: from a
  // slice boundary a little after the real now, so that every expiry lies in the server's future.
  static Filter window_filter(const test::RedisServer& server,
                              const std::shared_ptr<std::atomic<std::uint64_t>>& now,
                              std::uint64_t max_partition_bytes = 0) {
    now->store((system_now_ns() / kSlice + 2) * kSlice);
    StreamOptions window{
        .capacity = 2000, .error_rate = 1e-6, .window_ns = 2 * kSlice, .slices = 2};
    if (max_partition_bytes != 0) window.max_partition_bytes = max_partition_bytes;
    return Filter::create(Location::redis({server.endpoint()}, "w"), window, false, nullptr,
                          [now] { return now->load(); });
  }
};

// A key comes out once within the window and again once its slices have retired; a filter of
// several partitions (so that a batch calls several adds), its time driven by the test.
TEST_P(RedisStreamDedupWindow, AKeyComesOutOncePerWindow) {
  test::RedisServer server(server_args());
  const auto now = std::make_shared<std::atomic<std::uint64_t>>(0);
  const Filter filter = window_filter(server, now, 1024);
  ASSERT_GT(filter.params().partitions, 2u);
  RedisStreamDedup stage(filter, server.endpoint(), options_for("c", OnMissingKey::error));
  ASSERT_TRUE(stage.create_group(true));

  std::vector<std::string> keys;
  for (int i = 0; i < 600; ++i) keys.push_back(key_of(i % 200));
  add(server, keys);
  RedisStreamDedupBatch done = drain(stage, 250);
  EXPECT_EQ(done.entries, 600u);
  EXPECT_EQ(done.unique, 200u);
  EXPECT_EQ(done.duplicates, 400u);
  // A slice later every key is still within the window. After a first batch in the new slice,
  // a stock server's stage looks keys up in its copy of the older slice.
  *now += kSlice;
  std::vector<std::string> fresh;
  for (int i = 0; i < 60; ++i) fresh.push_back("fresh-" + std::to_string(i));
  add(server, fresh);  // into every partition
  done = drain(stage, 250);
  EXPECT_EQ(done.unique, 60u);
  add(server, {"k1", "k2", "new"});
  done = drain(stage, 250);
  EXPECT_EQ(done.unique, 1u);
  EXPECT_EQ(done.duplicates, 2u);
  // Once the window has passed, its keys are new again, once.
  *now += 4 * kSlice;
  add(server, {"k1", "k1", "new"});
  done = drain(stage, 250);
  EXPECT_EQ(done.unique, 2u);
  EXPECT_EQ(done.duplicates, 1u);
  const std::vector<std::string> out = output(server);
  ASSERT_EQ(out.size(), 263u);
  EXPECT_EQ(std::set<std::string>(out.begin(), out.begin() + 261).size(), 261u);
  EXPECT_EQ(out[261], "k1");
  EXPECT_EQ(out[262], "new");
  EXPECT_EQ(pending(server), 0);
}

// An entry of a batch that another consumer finished meanwhile is left alone; the batch's other
// keys are still looked up in the stage's copy of the older slice, each by its own answer there.
TEST_P(RedisStreamDedupWindow, AnEntryDoneBeforeLeavesTheOthersTheirOwnLookups) {
  test::RedisServer server(server_args());
  const auto now = std::make_shared<std::atomic<std::uint64_t>>(0);
  const Filter filter = window_filter(server, now);
  RedisStreamDedup stage(filter, server.endpoint(), options_for("c", OnMissingKey::error));
  ASSERT_TRUE(stage.create_group(true));
  std::vector<std::string> old;
  for (int i = 0; i < 100; ++i) old.push_back("old-" + std::to_string(i));
  add(server, old);
  EXPECT_EQ(drain(stage, 250).unique, 100u);
  // A slice later, a first batch there makes a stock server's stage copy the older slice.
  *now += kSlice;
  std::vector<std::string> fresh;
  for (int i = 0; i < 60; ++i) fresh.push_back("fresh-" + std::to_string(i));
  add(server, fresh);
  EXPECT_EQ(drain(stage, 250).unique, 60u);
  add(server, {"new", "old-1", "old-2", "old-3"});
  ASSERT_EQ(stage.read(10, std::chrono::milliseconds(10)), 4u);
  const auto last = server.command({"XREVRANGE", "in", "+", "-", "COUNT", "4"}).elements;
  ASSERT_EQ(last.size(), 4u);
  EXPECT_EQ(server.integer({"XACK", "in", "g", last.at(3).elements.at(0).text}), 1);
  const RedisStreamDedupBatch done = stage.commit();
  EXPECT_EQ(done.done_before, 1u);
  EXPECT_EQ(done.duplicates, 3u);
  EXPECT_EQ(done.unique, 0u);
  EXPECT_EQ(pending(server), 0);
}

// A growing filter grows during a batch: the entries after the growth go in a second round of
// the batch's script, each key still copied once, in its first entry.
TEST_P(RedisStreamDedupWindow, AGrowingFilterGrowsDuringABatch) {
  test::RedisServer server(server_args());
  StreamOptions growing{.capacity = 50, .error_rate = 1e-6, .growth = 2};
  const Filter filter = Filter::create(Location::redis({server.endpoint()}, "g"), growing);
  RedisStreamDedup stage(filter, server.endpoint(), options_for("c", OnMissingKey::error));
  ASSERT_TRUE(stage.create_group(true));
  std::vector<std::string> keys;
  for (int i = 0; i < 1500; ++i) keys.push_back(key_of((i * 7) % 500));
  add(server, keys);
  ASSERT_EQ(stage.read(1500, std::chrono::milliseconds(10)), 1500u);
  const RedisStreamDedupBatch done = stage.commit();
  EXPECT_EQ(done.unique, 500u);
  EXPECT_EQ(done.duplicates, 1000u);
  const std::vector<std::string> out = output(server);
  EXPECT_EQ(out, std::vector<std::string>(keys.begin(), keys.begin() + 500));
  EXPECT_EQ(pending(server), 0);
  EXPECT_GT(filter.backend().stream_info()->segments.size(), 3u);
}

// A filter that cannot grow further: the entries its add reached are done, the rest stay
// pending (nothing lost, nothing done twice), and the stage says so.
TEST_P(RedisStreamDedupWindow, AFullFilterLeavesTheRestPending) {
  test::RedisServer server(server_args());
  StreamOptions growing{.capacity = 50, .error_rate = 1e-6, .growth = 2, .max_bytes = 600};
  const Filter filter = Filter::create(Location::redis({server.endpoint()}, "g"), growing);
  RedisStreamDedup stage(filter, server.endpoint(), options_for("c", OnMissingKey::error));
  ASSERT_TRUE(stage.create_group(true));
  std::vector<std::string> keys;
  for (int i = 0; i < 1000; ++i) keys.push_back(key_of(i));
  add(server, keys);
  ASSERT_EQ(stage.read(1000, std::chrono::milliseconds(10)), 1000u);
  expect_refused(stage, {"is full", "stay pending"}, "a full filter took every key");
  const std::vector<std::string> out = output(server);
  ASSERT_GT(out.size(), 0u);
  ASSERT_LT(out.size(), 1000u);
  EXPECT_EQ(out, std::vector<std::string>(keys.begin(), keys.begin() + out.size()));
  EXPECT_EQ(pending(server), static_cast<long long>(1000 - out.size()));
}

// The batch's checks come before the filter's add: a user who may not copy to the output has
// nothing written, not even a slice of the filter.
TEST_P(RedisStreamDedupWindow, AUserWhoMayNotWriteTheOutputIsRefusedBeforeAnyWrite) {
  test::RedisServer server(server_args());
  const RedisEndpoint as_stage =
      as_stage_user(server, {"~w*", "~in", "~out", "&*", "+@all", "-xadd"});
  const StreamOptions window{.capacity = 1000, .error_rate = 1e-6, .window_ns = 600'000'000'000};
  const Filter filter = Filter::create(Location::redis({as_stage}, "w"), window);
  add(server, {"a", "b", "a"});
  RedisStreamDedup stage(filter, as_stage, options_for("c", OnMissingKey::error));
  ASSERT_TRUE(stage.create_group(false));
  ASSERT_EQ(stage.read(10, std::chrono::milliseconds(10)), 3u);
  expect_refused(stage, {"may not run XADD out"},
                 "a batch was committed by a user who cannot copy it");
  EXPECT_EQ(pending(server), 3);
  EXPECT_EQ(server.command({"KEYS", "w:s[0-9]*"}).elements.size(), 0u);
  (void)server.command({"ACL", "SETUSER", "stage", "+xadd"});
  if (!GetParam()) {
    // Without the module a blocked item's line is read whole: GETRANGE is asked for too.
    (void)server.command({"ACL", "SETUSER", "stage", "-getrange"});
    expect_refused(stage, {"may not run GETRANGE w:"},
                   "a batch was committed by a user who cannot read the filter's lines");
    EXPECT_EQ(pending(server), 3);
    EXPECT_EQ(server.command({"KEYS", "w:s[0-9]*"}).elements.size(), 0u);
    (void)server.command({"ACL", "SETUSER", "stage", "+getrange"});
  }
  const RedisStreamDedupBatch done = stage.commit();
  EXPECT_EQ(done.unique, 2u);
  EXPECT_EQ(done.duplicates, 1u);
  EXPECT_EQ(output(server), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(pending(server), 0);
  EXPECT_EQ(server.command({"KEYS", "w:s[0-9]*"}).elements.size(), 1u);  // the slice, now made
}

// The stage's test-and-set is a plain add's: the same answers, in order, and the same bits as
// the library's add_many of the same keys, in both layouts (on a stock server a classic item's
// bits go as BITFIELD operations, a blocked item's line is read and written whole). Keys repeat
// across batches and inside one; at p = 1% some new keys are taken for repeats, alike on both.
class RedisStreamDedupBits : public RedisStreamDedupWindow {};

TEST_P(RedisStreamDedupBits, TheStagesAnswersAndBitsAreAPlainAdds) {
  test::RedisServer server(server_args());
  std::mt19937_64 random(7);
  std::vector<std::string> keys;
  for (int i = 0; i < 3000; ++i) {
    keys.push_back(key_of(random() % 4 == 0 ? static_cast<int>(random() % (i + 1)) : i));
  }
  const std::vector<std::string_view> views(keys.begin(), keys.end());
  for (const Layout layout : {Layout::classic, Layout::blocked}) {
    SCOPED_TRACE(to_string(layout));
    (void)server.command({"FLUSHALL"});
    const FilterParams params = size_filter(2000, 0.01, layout);
    ASSERT_EQ(params.partitions, 1u);
    const Filter staged = Filter::create_redis(server.endpoint(), "f", params);
    Filter library = Filter::create_redis(server.endpoint(), "g", params);
    add(server, keys);
    RedisStreamDedup stage(staged, server.endpoint(), options_for("c", OnMissingKey::error));
    ASSERT_TRUE(stage.create_group(false));
    const RedisStreamDedupBatch total = drain(stage, 500);
    EXPECT_EQ(total.entries, keys.size());

    std::vector<std::uint8_t> fresh(keys.size());
    const std::size_t unique = library.add_many(views, fresh);
    std::vector<std::string> expected;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (fresh[i] != 0) expected.push_back(keys[i]);
    }
    EXPECT_EQ(total.unique, unique);
    EXPECT_LT(unique, 2400u);  // the repeats were taken for repeats
    EXPECT_EQ(output(server), expected);
    const std::string bits = server.command({"GET", "f:bits:{f:0}"}).text;
    const std::string same = server.command({"GET", "g:bits:{g:0}"}).text;
    ASSERT_GE(bits.size(), params.partition_bytes());
    ASSERT_GE(same.size(), params.partition_bytes());
    EXPECT_EQ(bits.substr(0, params.partition_bytes()), same.substr(0, params.partition_bytes()));
  }
}

#ifdef REDBLOOM_MODULE_PATH
const auto kEngines = ::testing::Values(false, true);
#else
const auto kEngines = ::testing::Values(false);
#endif
std::string engine_name(const ::testing::TestParamInfo<bool>& info) {
  return info.param ? "module" : "stock";
}
INSTANTIATE_TEST_SUITE_P(Engines, RedisStreamDedupWindow, kEngines, engine_name);
INSTANTIATE_TEST_SUITE_P(Engines, RedisStreamDedupRefusal, kEngines, engine_name);
INSTANTIATE_TEST_SUITE_P(Engines, RedisStreamDedupBits, kEngines, engine_name);

}  // namespace
}  // namespace redbloom
