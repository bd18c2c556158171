// Checks that a filter in Redis (one server, sharded, or a cluster) holds the bits of a local
// filter fed the same items, and answers lookups as it does on every path.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "redbloom/filter.hpp"
#include "redis/redis_store.hpp"
#include "test_items.hpp"

namespace redbloom::testing {

// Every partition of `remote` holds the bytes of `local`.
inline void expect_same_bits(Filter& remote, Filter& local) {
  const FilterParams& params = local.params();
  std::vector<std::uint8_t> theirs(params.partition_bytes());
  std::vector<std::uint8_t> mine(params.partition_bytes());
  for (std::uint64_t p = 0; p < params.partitions; ++p) {
    remote.store().read_bytes(p, 0, theirs);
    local.store().read_bytes(p, 0, mine);
    ASSERT_EQ(theirs, mine) << "partition " << p;
  }
}

// 50,000 absent items and the first 50,000 `members` (all inserted): the per-item and the bulk
// lookups of `remote` (whose store is `store`) answer as `local`, with no false negative.
template <class RemoteStore>
void expect_same_lookups(Filter& remote, RemoteStore& store, Filter& local,
                         std::span<const std::string_view> members) {
  const auto absent = make_items(50000, "absent-");
  std::vector<std::string_view> queries = views_of(absent);
  queries.insert(queries.end(), members.begin(), members.begin() + 50000);
  std::vector<std::uint8_t> answers(queries.size());
  std::vector<std::uint8_t> expected(queries.size());
  local.contains_many(queries, expected);
  for (const auto mode : {RedisStore::BulkMode::per_item, RedisStore::BulkMode::bulk}) {
    store.set_bulk_mode(mode);
    remote.contains_many(queries, answers);
    EXPECT_EQ(answers, expected);
    EXPECT_EQ(std::count(answers.begin() + 50000, answers.end(), 1), 50000) << "false negatives";
  }
}

}  // namespace redbloom::testing
