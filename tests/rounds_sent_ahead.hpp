// One check that every Redis store runs on its own server: a batch's rounds are sent ahead of
// the replies of the earlier ones, so when a later round fails, the rounds before it are still
// reported committed, exactly, and hold their items.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "redbloom/error.hpp"
#include "redbloom/filter.hpp"
#include "redbloom/params.hpp"
#include "redis_server.hpp"
#include "test_items.hpp"

namespace redbloom::testing {

// The first 6,144 items (three rounds of 2,048) go to partition 0, the rest to partition 1,
// whose key is gone, so the fourth round fails while the first ones' replies are unread.
inline void expect_rounds_before_a_failed_one_committed(test::RedisServer& server, Layout layout) {
  const FilterParams params = size_filter(100000, 0.01, layout, 64 * 1024);  // 2+ partitions
  ASSERT_GE(params.partitions, 2u);
  constexpr std::size_t kBefore = 3 * 2048;
  const std::vector<std::string> owned = items_of_two_partitions(params.partitions, kBefore, 5000);
  const std::vector<std::string_view> items(owned.begin(), owned.end());
  Filter filter = Filter::create_redis(server.endpoint(), "ahead", params);
  (void)server.command({"DEL", partition_key("ahead", 1)});
  std::vector<std::uint8_t> flags(items.size(), 7);
  try {
    filter.add_many(items, flags);
    ADD_FAILURE() << "add_many succeeded without its partition key";
  } catch (const IncompleteWrite& e) {
    EXPECT_EQ(e.committed(), kBefore) << e.what();
    EXPECT_TRUE(contains_text(e.what(), "vanished")) << e.what();
  }
  // The committed rounds' answers were given, and their items are in the filter.
  for (std::size_t i = 0; i < kBefore; ++i) ASSERT_EQ(flags[i], 1) << "item " << i;
  std::vector<std::uint8_t> present(kBefore);
  EXPECT_EQ(filter.contains_many(std::span(items).first(kBefore), present), kBefore);
}

}  // namespace redbloom::testing
