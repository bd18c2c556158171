// Storage faults never become wrong answers (Redis): a partition evicted or deleted between its
// check and the command, a bulk load's delta evicted while it is uploaded, a filter still being
// created, sizes the server cannot hold. Each test drives a real redis-server into the fault.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/redis_format.hpp"
#include "error_of.hpp"
#include "local/memory_store.hpp"
#include "redbloom/error.hpp"
#include "redbloom/filter.hpp"
#include "redis/connection.hpp"
#include "redis/partition_ops.hpp"
#include "redis/redis_store.hpp"
#include "redis_server.hpp"
#include "test_items.hpp"

namespace redbloom {
namespace {

using redbloom::testing::contains_text;
using redbloom::testing::error_of;
using redbloom::testing::make_items;
using redbloom::testing::views_of;
using test::RedisServer;
using namespace std::chrono_literals;

long long info_field(const RedisServer& server, const std::string& section,
                     const std::string& field) {
  const std::string text = server.command({"INFO", section}).text;
  const std::size_t at = text.find(field + ":");
  if (at == std::string::npos) throw std::runtime_error("no " + field + " in INFO " + section);
  return std::stoll(text.substr(at + field.size() + 1));
}

RedisStore& redis_store(Filter& filter) {
  return dynamic_cast<RedisStore&>(filter.store());
}

// What one trial saw: a wrong answer (silently), an error, or right answers.
enum class Outcome { wrong, error, right };

// A filter of one partition holding `items`, then a limit just above the memory in use, with
// allkeys-lru: the query buffer of the next large command is itself what pushes the server
// over the limit, so the partition is evicted between the command's check and the command.
struct EvictionTrial {
  RedisServer& server;
  std::vector<std::string> items = make_items(1000, "item-");
  std::size_t evictions = 0;

  // `capacity`: a larger partition frees more when it is evicted, so that the command whose
  // query buffer caused the eviction then fits and runs (writes are refused with OOM else).
  Filter setup(long long margin, Layout layout, double capacity) {
    (void)server.command({"CONFIG", "SET", "maxmemory", "0"});
    (void)server.command({"FLUSHALL"});
    Filter filter =
        Filter::create_redis(server.endpoint(), "f", size_filter(capacity, 0.01, layout));
    redis_store(filter).set_bulk_mode(RedisStore::BulkMode::per_item);
    filter.add_many(views_of(items));
    const long long used = info_field(server, "memory", "used_memory");
    (void)server.command({"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"});
    (void)server.command({"CONFIG", "SET", "maxmemory", std::to_string(used + margin)});
    return filter;
  }
  template <class Operation>
  Outcome run(long long margin, Layout layout, double capacity, Operation&& operation) {
    Filter filter = setup(margin, layout, capacity);
    const long long before = info_field(server, "stats", "evicted_keys");
    Outcome outcome = Outcome::right;
    try {
      outcome = operation(filter) ? Outcome::right : Outcome::wrong;
    } catch (const StorageError&) {
      outcome = Outcome::error;
    }
    evictions += static_cast<std::size_t>(info_field(server, "stats", "evicted_keys") - before);
    return outcome;
  }
};

TEST(RedisStorageFaults, APartitionEvictedUnderACommandIsAnErrorNeverAnAnswer) {
  RedisServer server;
  EvictionTrial trial{server};
  const auto views = views_of(trial.items);
  std::vector<std::string> wrong;
  for (const Layout layout : {Layout::classic, Layout::blocked}) {
    for (long long margin = 16 << 10; margin <= (320 << 10); margin += 16 << 10) {
      const std::string name = std::string(to_string(layout)) + " margin " + std::to_string(margin);
      // A lookup must not call the added items absent...
      if (trial.run(margin, layout, 1000, [&](Filter& f) {
            std::vector<std::uint8_t> present(views.size());
            return f.contains_many(views, present) == views.size();
          }) == Outcome::wrong) {
        wrong.push_back("lookup, " + name);
      }
      // ... and an add must not call them new.
      if (trial.run(margin, layout, 100'000, [&](Filter& f) {
            std::vector<std::uint8_t> newly(views.size());
            return f.add_many(views, newly) == 0;
          }) == Outcome::wrong) {
        wrong.push_back("add, " + name);
      }
    }
  }
  EXPECT_GT(trial.evictions, 0u) << "no trial evicted the partition: the test proves nothing";
  EXPECT_TRUE(wrong.empty()) << "wrong answers after an eviction: "
                             << ::testing::PrintToString(wrong);
}

// A bulk load's delta lives in a temp key with a TTL: under a volatile-* policy it is the one
// key the server may evict. Evicted part way, the rest of the upload recreated it with only
// the later chunks, and the OR merged that partial delta: items loaded and absent. Here the
// eviction is a DEL between two chunks, on the commands a load sends.
TEST(RedisStorageFaults, ADeltaLostPartWayIsNeverMerged) {
  RedisServer server;
  FilterParams params = size_filter(2'000'000, 0.01, Layout::classic);  // one 2.3 MiB partition
  (void)Filter::create_redis(server.endpoint(), "b", params);
  const std::string key = redis::partition_key("b", 0);
  const redis::PartitionKey partition{key, params.partition_bytes() + 1};
  MemoryStore delta(params);
  const auto items = make_items(100'000, "bulk-");
  delta.load(views_of(items));
  const auto bits = delta.bytes();
  const std::size_t half = (bits.size() / 2) & ~std::size_t{4095};
  redis::Connection connection(server.endpoint());
  const auto send = [&](auto&& encode) {
    redis::CommandBuffer buffer;
    const std::size_t commands = encode(buffer);
    connection.append(buffer);
    std::vector<redis::Reply> owned;
    std::vector<const redisReply*> replies;
    for (std::size_t i = 0; i < commands; ++i) {
      owned.push_back(connection.read("test"));
      replies.push_back(owned.back().get());
    }
    return std::pair(std::move(owned), replies);
  };
  const std::string temp = redis::temp_key("b", 0);
  auto [start_owned, start] = send([&](redis::CommandBuffer& b) {
    return redis::encode_delta_start(b, partition, temp, std::chrono::minutes(10));
  });
  redis::decode_delta_start(start, partition);
  (void)send([&](redis::CommandBuffer& b) {
    return redis::encode_delta_chunk(b, temp, 0, bits.subspan(0, half));
  });
  ASSERT_EQ(server.integer({"DEL", temp}), 1);  // evicted
  (void)send([&](redis::CommandBuffer& b) {
    return redis::encode_delta_chunk(b, temp, half, bits.subspan(half));
  });
  auto [merge_owned, merge] =
      send([&](redis::CommandBuffer& b) { return redis::encode_delta_merge(b, partition, temp); });
  try {
    redis::decode_delta_merge(merge, partition, temp);
    FAIL() << "a partial delta was merged";
  } catch (const redis::ReplyProblem& problem) {
    EXPECT_TRUE(contains_text(problem.what(), "was lost part way")) << problem.what();
  }
  EXPECT_EQ(server.integer({"BITCOUNT", key}), 0) << "the partition changed";
  // Through the store: a load whose delta is lost fails, saying so; loading again is whole.
  Filter filter = Filter::open_redis(server.endpoint(), "b");
  std::vector<std::uint8_t> present(items.size());
  EXPECT_EQ(filter.contains_many(views_of(items), present), 0u);
  filter.load_many(views_of(items));
  EXPECT_EQ(filter.contains_many(views_of(items), present), items.size());
}

// A second worker meets a filter still being created by a live creator (paused here between
// its claim and its partitions): it waits for it, on the open path and on the create path,
// and never gets "incomplete, drop it".
TEST(RedisStorageFaults, AFilterBeingCreatedIsWaitedForOnEveryPath) {
  RedisServer server;
  const FilterParams params = size_filter(10'000, 0.01, Layout::classic);
  (void)Filter::create_redis(server.endpoint(), "model", params);
  // The creator's claim, as a creation writes it, then (after 1.5 s) its partition and "ready".
  redis::FilterMetadata metadata;
  metadata.params = params;
  metadata.claimed_unix_ns = 1;
  std::vector<std::string> claim{"HSET", "f"};
  for (const auto& [field, value] : redis::filter_claim_fields(metadata)) {
    claim.push_back(field);
    claim.push_back(value);
  }
  for (const auto& [mode, name] :
       {std::pair{"open", "opened"}, std::pair{"create", "created-or-opened"}}) {
    SCOPED_TRACE(mode);
    (void)server.command({"DEL", "f", redis::partition_key("f", 0)});
    ASSERT_GT(server.integer(claim), 0);
    std::thread creator([&] {
      std::this_thread::sleep_for(1500ms);
      (void)server.command({"SETRANGE", redis::partition_key("f", 0),
                            std::to_string(params.partition_bytes()), std::string(1, '\0')});
      metadata.ready = true;
      std::vector<std::string> ready{"HSET", "f"};
      for (const auto& [field, value] : redis::encode_filter_metadata(metadata)) {
        ready.push_back(field);
        ready.push_back(value);
      }
      (void)server.command(ready);
    });
    const Location where = Location::redis({server.endpoint()}, "f");
    std::string outcome;
    try {
      Filter filter = std::string(mode) == "open"
                          ? Filter::open(where)
                          : Filter::open(where, OpenOptions::create_missing(params));
      outcome = name;
      EXPECT_TRUE(filter.add("x"));
    } catch (const Error& e) {
      outcome = e.what();
    }
    creator.join();
    EXPECT_EQ(outcome, name);
  }
}

// Sizes a server cannot hold are refused before anything is written; a filter whose partitions
// the server evicts as soon as they are made (its allocator takes more than the bytes asked
// for) is an error, never "created", and nothing of it stays.
TEST(RedisStorageFaults, ImpossibleSizesAreRefusedAndEvictedCreationsUndone) {
  RedisServer server({"--maxmemory", "16mb", "--maxmemory-policy", "allkeys-lru"});
  const auto started = std::chrono::steady_clock::now();
  const std::string huge = error_of([&] {
    (void)Filter::create_redis(server.endpoint(), "huge", size_filter(1e15, 0.01, Layout::classic));
  });
  EXPECT_LT(std::chrono::steady_clock::now() - started, 10s) << "not refused promptly";
  EXPECT_TRUE(contains_text(huge, "nothing was created")) << huge;
  EXPECT_EQ(server.integer({"DBSIZE"}), 0);
  // Tiny partitions: each key costs the server far more than its 65 bytes, so a filter that
  // fits by its bytes does not fit in memory, and the server evicts its partitions.
  std::size_t refused = 0;
  for (const double items : {3e6, 5e6, 7e6}) {
    (void)server.command({"FLUSHALL"});
    const FilterParams params = size_filter(items, 0.01, Layout::classic, 64);
    try {
      Filter filter = Filter::create_redis(server.endpoint(), "f", params);
      // Created: then it is whole.
      EXPECT_NO_THROW((void)Filter::open_redis(server.endpoint(), "f")) << items;
    } catch (const StorageError& e) {
      ++refused;
      EXPECT_TRUE(contains_text(e.what(), "evicted as soon as it was made")) << e.what();
      EXPECT_TRUE(contains_text(e.what(), "the filter was dropped again")) << e.what();
      EXPECT_EQ(server.integer({"EXISTS", "f"}), 0) << items;
    } catch (const InvalidArgument& e) {
      ++refused;
      EXPECT_TRUE(contains_text(e.what(), "nothing was created")) << e.what();
    }
  }
  EXPECT_GT(refused, 0u) << "every filter fitted: the test proves nothing";
}

}  // namespace
}  // namespace redbloom
