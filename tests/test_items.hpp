// Item lists and message checks shared by the Redis test suites.
#pragma once

#include <string>
#include <string_view>
#include <vector>

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

inline bool contains_text(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace redbloom::testing
