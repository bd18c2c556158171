// RB.STREAM (module/stream_commands.cpp) against the stream script: the same sequence of adds
// and lookups on a stock server and on one with redbloom's module gives the same answers and
// leaves the same keys, byte for byte (slices, rosters, expiries); and the module's errors are
// the script's, with nothing written.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "core/layout.hpp"
#include "core/packed_items.hpp"
#include "core/redis_format.hpp"
#include "core/stream_shape.hpp"
#include "error_of.hpp"
#include "redbloom/error.hpp"
#include "redbloom/hash.hpp"
#include "redis/stream_script.hpp"
#include "redis/stream_store.hpp"
#include "redis_server.hpp"
#include "test_items.hpp"

namespace redbloom {
namespace {

using test::RedisReply;
using test::RedisServer;
using testing::contains_text;
using testing::error_of;
using testing::make_items;
using testing::views_of;

constexpr std::uint64_t kMsNs = 1'000'000;

const std::vector<std::string> kWithModule = {"--loadmodule", REDBLOOM_MODULE_PATH};

// Calls of a command since the server started (INFO commandstats), 0 if never.
long long calls_of(const RedisServer& server, const std::string& command) {
  const std::string info = server.command({"INFO", "commandstats"}).text;
  const std::string tag = "cmdstat_" + command + ":calls=";
  const std::size_t at = info.find(tag);
  if (at == std::string::npos) return 0;
  return std::stoll(info.substr(at + tag.size()));
}

// Every key of filter `name` but its metadata, with its bytes and its expiry.
std::map<std::string, std::pair<std::string, long long>> keys_of(const RedisServer& server,
                                                                 const std::string& name) {
  std::map<std::string, std::pair<std::string, long long>> out;
  std::string cursor = "0";
  do {
    const RedisReply reply =
        server.command({"SCAN", cursor, "MATCH", name + ":*", "COUNT", "1000"});
    cursor = reply.elements.at(0).text;
    for (const RedisReply& key : reply.elements.at(1).elements) {
      out[key.text] = {server.command({"GET", key.text}).text,
                       server.integer({"PEXPIRETIME", key.text})};
    }
  } while (cursor != "0");
  return out;
}

// What a sequence of calls answered: per call its flags, or what it threw and how many items
// it committed.
struct Trace {
  std::vector<std::vector<std::uint8_t>> flags;
  std::vector<std::string> errors;
  std::vector<std::size_t> committed;
};

// Many slices on a driven clock: new items, repeats of items from slices still live and long
// gone, a burst that grows links until the byte limit stops it, and lookups after each step.
Trace run(RedisStreamStore& store, std::uint64_t& now, std::uint64_t slice_ns) {
  Trace trace;
  const auto add = [&](const std::vector<std::string>& items) {
    std::vector<std::uint8_t> fresh(items.size(), 2);
    const auto views = views_of(items);
    try {
      store.add(views, fresh);
      trace.errors.emplace_back();
      trace.committed.push_back(items.size());
    } catch (const CapacityExceeded& e) {
      trace.errors.emplace_back("full");
      trace.committed.push_back(e.committed());
      fresh.resize(e.committed());
    }
    trace.flags.push_back(fresh);
  };
  const auto lookup = [&](const std::vector<std::string>& items) {
    std::vector<std::uint8_t> present(items.size(), 2);
    const auto views = views_of(items);
    store.contains(views, present);
    trace.flags.push_back(present);
  };
  // "s<step>-": built by format, as GCC 12's -O3 reports a bogus -Wrestrict for
  // "literal" + std::to_string(...).
  const auto tag_of = [](int step) {
    char tag[24];
    std::snprintf(tag, sizeof tag, "s%d-", step);
    return std::string(tag);
  };
  for (int step = 0; step < 12; ++step) {
    const std::string tag = tag_of(step);
    auto items = make_items(step == 6 ? 9000 : 1200, tag);
    if (step > 0) {
      const auto again = make_items(400, tag_of(step - 1));
      items.insert(items.end(), again.begin(), again.end());
    }
    if (step > 6) {
      const auto old = make_items(300, "s0-");
      items.insert(items.end(), old.begin(), old.end());
    }
    // Some items twice in a row, so in the same unit: the second is never new.
    constexpr std::size_t kTwins = 50;
    for (std::size_t j = 0; j < kTwins; ++j) {
      const std::string twin = items[2 * j];
      items.insert(items.begin() + static_cast<std::ptrdiff_t>(2 * j + 1), twin);
    }
    add(items);
    for (std::size_t j = 0; j < kTwins && 2 * j + 1 < trace.flags.back().size(); ++j) {
      EXPECT_EQ(trace.flags.back()[2 * j + 1], 0) << "step " << step << " twin " << j;
    }
    auto probes = make_items(1500, tag_of(std::max(0, step - 3)));
    const auto absent = make_items(1500, "never-");
    probes.insert(probes.end(), absent.begin(), absent.end());
    lookup(probes);
    now += slice_ns / 2 + (step % 3) * slice_ns / 3;
  }
  return trace;
}

StreamOptions options_for(bool windowed, Layout layout = Layout::blocked) {
  StreamOptions options;
  options.layout = layout;
  options.capacity = 4000;
  options.error_rate = 0.01;
  options.window_ns = windowed ? 40'000 * kMsNs : 0;
  options.slices = windowed ? 4 : 0;
  options.growth = 2;
  options.max_partition_bytes = 256;
  options.max_bytes = windowed ? 40'000 : 24'000;
  return options;
}

void expect_same(bool windowed, Layout layout = Layout::blocked) {
  RedisServer stock;
  RedisServer with_module(kWithModule);
  const StreamShape shape(options_for(windowed, layout));
  const std::uint64_t slice_ns = windowed ? shape.slice_ns() : 10'000 * kMsNs;
  // A slice boundary in the servers' future, so that every expiry lies ahead of their clocks.
  const std::uint64_t start = (system_now_ns() / slice_ns + 2) * slice_ns;
  std::uint64_t stock_now = start;
  std::uint64_t module_now = start;
  auto a = RedisStreamStore::create(
      {stock.endpoint()}, "f", shape, [&] { return stock_now; }, false);
  auto b = RedisStreamStore::create(
      {with_module.endpoint()}, "f", shape, [&] { return module_now; }, false);
  const Trace lua = run(*a, stock_now, slice_ns);
  const Trace module = run(*b, module_now, slice_ns);
  EXPECT_EQ(lua.errors, module.errors);
  EXPECT_EQ(lua.committed, module.committed);
  ASSERT_EQ(lua.flags.size(), module.flags.size());
  for (std::size_t c = 0; c < lua.flags.size(); ++c) {
    EXPECT_EQ(lua.flags[c], module.flags[c]) << "call " << c;
  }
  // The sequence reached the byte limit and added links: the paths were exercised.
  EXPECT_NE(std::find(lua.errors.begin(), lua.errors.end(), "full"), lua.errors.end());
  const auto stock_keys = keys_of(stock, "f");
  const auto module_keys = keys_of(with_module, "f");
  EXPECT_GE(stock_keys.size(), 2 * shape.partitions());
  EXPECT_EQ(stock_keys.size(), module_keys.size());
  for (const auto& [key, value] : stock_keys) {
    const auto other = module_keys.find(key);
    ASSERT_NE(other, module_keys.end()) << key;
    EXPECT_EQ(value.first.size(), other->second.first.size()) << key;
    EXPECT_TRUE(value.first == other->second.first) << key << " differs";
    EXPECT_EQ(value.second, other->second.second) << key << " expiry";
  }
  std::size_t longer = 0;  // slices with two links or more
  const std::uint64_t one_link =
      redis::stream::kHeaderBytes + shape.link_params(0).partition_bytes();
  for (const auto& [key, value] : stock_keys) longer += value.first.size() > one_link ? 1 : 0;
  EXPECT_GT(longer, 0u);
  // Each server ran its own path.
  EXPECT_GT(calls_of(with_module, "rb.stream"), 0);
  EXPECT_EQ(calls_of(with_module, "evalsha"), 0);
  EXPECT_GT(calls_of(stock, "evalsha"), 0);
}

TEST(ModuleStream, AWindowedFilterAnswersAndWritesAsTheScriptDoes) {
  expect_same(true);
}

TEST(ModuleStream, AGrowingFilterAnswersAndWritesAsTheScriptDoes) {
  expect_same(false);
}

// The classic layout goes through PartitionView, the blocked one through word masks.
TEST(ModuleStream, AClassicWindowedFilterAnswersAndWritesAsTheScriptDoes) {
  expect_same(true, Layout::classic);
}

// The items of partition `p` among `items`.
std::vector<std::string> of_partition(const std::vector<std::string>& items, std::uint64_t p,
                                      std::uint64_t partitions) {
  std::vector<std::string> out;
  for (const std::string& item : items) {
    if (layout::partition_of(hash_item(item), partitions) == p) out.push_back(item);
  }
  return out;
}

// A slice key of another type, of a damaged length, or gone while the roster says it was made
// is an error naming the key, and nothing is written; an item of another partition is refused.
TEST(ModuleStream, ErrorsAreTheScriptsAndWriteNothing) {
  RedisServer server(kWithModule);
  StreamOptions options = options_for(true);
  options.max_bytes = 0;
  const StreamShape shape(options);
  std::uint64_t now = (system_now_ns() / shape.slice_ns() + 2) * shape.slice_ns();
  auto store = RedisStreamStore::create(
      {server.endpoint()}, "e", shape, [&] { return now; }, false);
  const auto items = make_items(6000, "x-");
  std::vector<std::uint8_t> fresh(items.size());
  store->add(views_of(items), fresh);
  const std::int64_t older = shape.slice_at(now);
  now += shape.slice_ns();
  store->add(views_of(items), fresh);
  const auto before = keys_of(server, "e");

  // Partition 0's older slice becomes a list; partition 1's is damaged; partition 2's is gone.
  const std::string listed = store->slice_key(0, older);
  ASSERT_EQ(server.integer({"DEL", listed}), 1);
  ASSERT_EQ(server.integer({"RPUSH", listed, "x"}), 1);
  const std::string damaged = store->slice_key(1, older);
  ASSERT_GT(server.integer({"APPEND", damaged, "x"}), 0);
  const std::string gone = store->slice_key(2, older);
  ASSERT_EQ(server.integer({"DEL", gone}), 1);
  const auto fresh_items = make_items(3000, "y-");
  const auto check = [&](std::uint64_t p, const std::string& key, const char* says) {
    const auto mine = of_partition(fresh_items, p, shape.partitions());
    ASSERT_FALSE(mine.empty());
    std::vector<std::uint8_t> flags(mine.size());
    const std::string added = error_of([&] { store->add(views_of(mine), flags); });
    EXPECT_TRUE(contains_text(added, key) && contains_text(added, says)) << added;
    EXPECT_TRUE(contains_text(added, "RB.STREAM")) << added;
    const std::string looked = error_of([&] { store->contains(views_of(mine), flags); });
    EXPECT_TRUE(contains_text(looked, key) && contains_text(looked, says)) << looked;
  };
  check(0, listed, "holds a list");
  check(1, damaged, "header does not explain");
  check(2, gone, "lost");
  // The current slices of those partitions were not touched by the refused adds.
  auto after = keys_of(server, "e");
  for (const std::string& key : {listed, damaged, gone}) {
    after.erase(key);
  }
  auto expected = before;
  for (const std::string& key : {listed, damaged, gone}) expected.erase(key);
  EXPECT_TRUE(after == expected);

  // A roster of the wrong length.
  const std::string roster = redis::partition_key("e", 3, 0, "slices");
  ASSERT_EQ(server.command({"GET", roster}).text.size(), 8 * (shape.slices() + 1));
  ASSERT_GT(server.integer({"APPEND", roster, "x"}), 0);
  check(3, roster, "not the filter's slice roster");

  // Directly: an item of another partition, and a wrong key count.
  const auto other = of_partition(fresh_items, 1, shape.partitions());
  std::string packed;
  packed::append(packed, other.at(0));
  const FilterParams link = shape.link_params(0);
  const std::vector<std::string> args = {"RB.STREAM",
                                         "2",
                                         "r",
                                         "k",
                                         "a",
                                         "-1",
                                         "0",
                                         "0",
                                         "0",
                                         "520",
                                         "1",
                                         "0",
                                         std::to_string(shape.partitions()),
                                         "0",
                                         "blocked",
                                         std::to_string(link.hashes),
                                         std::to_string(link.partition_bits),
                                         "10",
                                         packed};
  const RedisReply refused = server.command(args);
  EXPECT_EQ(refused.kind, RedisReply::Kind::error);
  EXPECT_TRUE(contains_text(refused.text, "belongs to another partition")) << refused.text;
  EXPECT_EQ(server.integer({"EXISTS", "r", "k"}), 0);
}

}  // namespace
}  // namespace redbloom
