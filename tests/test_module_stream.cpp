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
#include "core/module_protocol.hpp"
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
  // Each server ran its own path: the module's with the items' hashes (RB.STREAMH's equality
  // with RB.STREAM, which an older module takes, is TheHashedFormIsTheItemsForm's).
  EXPECT_GT(calls_of(with_module, "rb.streamh"), 0);
  EXPECT_EQ(calls_of(with_module, "rb.stream"), 0);
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

// A command's arguments, back from the RESP text an encoder wrote.
std::vector<std::string> args_of(const std::string& resp) {
  std::vector<std::string> args;
  std::size_t at = resp.find("\r\n") + 2;
  while (at < resp.size()) {
    const std::size_t end = resp.find("\r\n", at);
    const std::size_t length = std::stoull(resp.substr(at + 1, end - at - 1));
    args.push_back(resp.substr(end + 2, length));
    at = end + 2 + length + 2;
  }
  return args;
}

// A reply as text, to compare two replies whole.
std::string describe(const RedisReply& reply) {
  std::string out = std::to_string(static_cast<int>(reply.kind)) + ":" + reply.text + ":" +
                    std::to_string(reply.integer) + "[";
  for (const RedisReply& element : reply.elements) out += describe(element) + ",";
  return out + "]";
}

// RB.STREAMH (module version 6: the items' 16-byte hashes) against RB.STREAM (the items, which
// a client sends to an older module): the same units, windowed, through slices that come and
// retire and links made until the last is full, give the same replies and leave the same bytes
// and expiries. And a client picks the script, RB.STREAM or RB.STREAMH by RB.VERSION.
TEST(ModuleStream, TheHashedFormIsTheItemsForm) {
  EXPECT_EQ(redis::stream::engine_for(0), redis::stream::Engine::script);
  EXPECT_EQ(redis::stream::engine_for(module_protocol::kGuardedStream - 1),
            redis::stream::Engine::script);
  for (long long v = module_protocol::kGuardedStream; v < module_protocol::kHashedStream; ++v) {
    EXPECT_EQ(redis::stream::engine_for(v), redis::stream::Engine::module_items) << v;
  }
  EXPECT_EQ(redis::stream::engine_for(module_protocol::kHashedStream),
            redis::stream::Engine::module_hashes);
  EXPECT_EQ(redis::stream::engine_for(module_protocol::kVersion),
            redis::stream::Engine::module_hashes);

  RedisServer server(kWithModule);
  const StreamShape shape(options_for(true));
  const std::uint64_t partitions = shape.partitions();
  std::vector<redis::stream::LinkArgs> links;
  std::vector<FilterParams> params;
  for (std::uint32_t l = 0; l < 3; ++l) {
    params.push_back(shape.link_params(l));
    links.push_back({params.back().partition_bytes(), 150u << l, params.back().hashes});
  }
  const std::int64_t slice_ms = static_cast<std::int64_t>(shape.slice_ns() / kMsNs);
  const std::int64_t older = shape.slices();
  std::int64_t now = (static_cast<std::int64_t>(system_now_ns() / kMsNs) / slice_ms + 2) * slice_ms;
  const auto unit = [&](const std::string& prefix, bool hashed, redis::stream::Mode mode,
                        const std::vector<std::string>& items) {
    const std::int64_t center = now / slice_ms;
    std::vector<std::string> keys{prefix + ":r"};
    for (std::int64_t g = center - older - 1; g <= center + 2; ++g) {
      keys.push_back(prefix + ":s" + std::to_string(g));
    }
    std::string packed;
    for (const std::string& item : items) {
      if (hashed) {
        packed::append_hash(packed, hash_item(item));
      } else {
        packed::append(packed, item);
      }
    }
    redis::stream::Call call;
    call.mode = mode;
    call.now_ms = now;
    call.slice_ms = static_cast<std::uint64_t>(slice_ms);
    call.older = static_cast<std::uint32_t>(older);
    call.first = center - older - 1;
    call.keys = keys;
    call.links = links;
    call.link_params = params;
    call.partitions = partitions;
    call.partition = 0;
    call.packed = packed;
    call.hashed = hashed;
    redis::CommandBuffer buffer;
    EXPECT_EQ(redis::stream::encode_module(buffer, call), 1u);
    const std::vector<std::string> args = args_of(std::string(buffer.text()));
    const bool add = mode == redis::stream::Mode::add;
    EXPECT_EQ(args.at(0), std::string(hashed ? "RB.STREAMH" : "RB.STREAM") + (add ? "" : "_RO"));
    EXPECT_EQ(args.back(), packed);
    return describe(server.command(args));
  };
  // Items "t<step>-..." of partition 0. The tag is built by appending: GCC 12 at -O3 warns
  // falsely (-Wrestrict) on "t" + std::to_string(step).
  const auto mine = [&](int step, std::size_t count) {
    std::string tag = "t";
    tag += std::to_string(step);
    tag += '-';
    return of_partition(make_items(count, tag), 0, partitions);
  };
  std::size_t full = 0;
  for (int step = 0; step < 14; ++step) {
    auto items = mine(step, step == 5 ? 40000 : 4000);
    const auto again = mine(std::max(0, step - 2), 1000);
    items.insert(items.end(), again.begin(), again.end());
    items.insert(items.end(), items.begin(), items.begin() + 20);  // twins in one unit
    const std::string by_items = unit("p", false, redis::stream::Mode::add, items);
    EXPECT_EQ(by_items, unit("h", true, redis::stream::Mode::add, items)) << "step " << step;
    full += by_items.find("full") != std::string::npos ? 1 : 0;
    const auto probes = mine(std::max(0, step - 4), 3000);
    EXPECT_EQ(unit("p", false, redis::stream::Mode::lookup, probes),
              unit("h", true, redis::stream::Mode::lookup, probes));
    EXPECT_EQ(unit("p", false, redis::stream::Mode::info, {}),
              unit("h", true, redis::stream::Mode::info, {}));
    now += slice_ms / 2 + (step % 3) * slice_ms / 3;
  }
  EXPECT_GT(full, 0u);  // the last link filled up
  const auto by_items = keys_of(server, "p");
  const auto by_hashes = keys_of(server, "h");
  EXPECT_GE(by_items.size(), 3u);
  ASSERT_EQ(by_items.size(), by_hashes.size());
  for (const auto& [key, value] : by_items) {
    std::string hashed_key = "h";
    hashed_key += key.substr(1);
    const auto other = by_hashes.find(hashed_key);
    ASSERT_NE(other, by_hashes.end()) << key;
    EXPECT_TRUE(value == other->second) << key << " differs";
  }
  // A hashed unit that ends inside a hash is refused.
  const RedisReply torn =
      server.command({"RB.STREAMH", "2", "r", "k", "a", "-1", "0", "0", "0",
                      std::to_string(redis::stream::kHeaderBytes), "1", "0", "1", "0", "blocked",
                      "7", "4096", "10", std::string(15, 'x')});
  EXPECT_EQ(torn.kind, RedisReply::Kind::error);
  EXPECT_TRUE(contains_text(torn.text, "16 bytes each")) << torn.text;
  EXPECT_EQ(server.integer({"EXISTS", "r", "k"}), 0);
}

}  // namespace
}  // namespace redbloom
