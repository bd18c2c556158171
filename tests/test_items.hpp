// Item lists and message checks shared by the Redis test suites.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/layout.hpp"
#include "redbloom/hash.hpp"

namespace redbloom::testing {

// prefix + i. Built by appending: GCC 12 at -O3 warns falsely (-Wrestrict) on
// "literal" + std::to_string(i).
inline std::string numbered(std::string_view prefix, std::size_t i) {
  return std::string(prefix).append(std::to_string(i));
}

// prefix + i for i in [first, first + count).
inline std::vector<std::string> make_items(std::size_t count, const std::string& prefix,
                                           std::size_t first = 0) {
  std::vector<std::string> items;
  items.reserve(count);
  for (std::size_t i = first; i < first + count; ++i) items.push_back(numbered(prefix, i));
  return items;
}

inline std::vector<std::string_view> views_of(const std::vector<std::string>& items) {
  return {items.begin(), items.end()};
}

// `in_first` items of partition 0 (of `partitions`), then `in_second` of partition 1: a batch
// whose rounds reach partition 1 only after its first `in_first` items.
inline std::vector<std::string> items_of_two_partitions(std::uint64_t partitions,
                                                        std::size_t in_first,
                                                        std::size_t in_second) {
  std::vector<std::string> first;
  std::vector<std::string> second;
  for (std::uint64_t i = 0; first.size() < in_first || second.size() < in_second; ++i) {
    std::string item = numbered("ahead-", i);
    const std::uint64_t p = layout::partition_of(hash_item(item), partitions);
    if (p == 0 && first.size() < in_first) first.push_back(std::move(item));
    if (p == 1 && second.size() < in_second) second.push_back(std::move(item));
  }
  first.insert(first.end(), second.begin(), second.end());
  return first;
}

// Partition `partition` of the plain Redis filter `name`: the key layout of
// src/core/redis_format.hpp, spelled out here on purpose, so that a change to the layout shows
// up as a failing test, not followed silently.
inline std::string partition_key(const std::string& name, std::uint64_t partition) {
  return name + ":bits:{" + name + ":" + std::to_string(partition) + "}";
}

inline bool contains_text(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace redbloom::testing
