// Keys found by pattern rather than by name: for what a filter made as it went (a windowed
// filter's slices, a Kafka stage's decision records), which drop must find to remove.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "router.hpp"

namespace redbloom::redis {

// `text` with the glob characters of SCAN MATCH escaped, so that it matches only itself.
[[nodiscard]] std::string glob_escape(std::string_view text);

// Calls `on_key` with each key matching `pattern` on every master (SCAN: a key created or
// deleted during the walk may be seen or not; every key present throughout is seen).
void scan_keys(Router& router, const std::string& pattern,
               const std::function<void(std::string_view)>& on_key);

// Unlinks `keys`, pipelined (one key a unit on a cluster, so each goes to its slot's node).
void unlink_keys(Router& router, const std::vector<std::string>& keys);

}  // namespace redbloom::redis
