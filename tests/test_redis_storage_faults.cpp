// Storage faults never become wrong answers (Redis): a partition evicted or deleted between its
// check and the command, a bulk load's delta evicted while it is uploaded, a filter still being
// created, sizes the server cannot hold. Each test drives a real redis-server into the fault.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "error_of.hpp"
#include "redbloom/error.hpp"
#include "redbloom/filter.hpp"
#include "redbloom/redis_store.hpp"
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
  EXPECT_TRUE(wrong.empty()) << "wrong answers after an eviction: " << ::testing::PrintToString(wrong);
}

}  // namespace
}  // namespace redbloom
