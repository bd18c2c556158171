// The exact companion (exact_set.hpp) of the filter a command works on.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "filter_options.hpp"
#include "redbloom/exact_set.hpp"

namespace redbloom::cli {

[[nodiscard]] bool exact_exists(const FilterLocation& location);
// Throws NotFound when the filter has none. `writable` = false for lookups only.
[[nodiscard]] std::unique_ptr<ExactSet> open_exact(const FilterLocation& location,
                                                   bool writable = true);
// What info shows of the filter's companion; nullopt if it has none.
[[nodiscard]] std::optional<ExactSetSummary> exact_summary(const FilterLocation& location);
// The companion a writer must keep up to date: the existing one whether or not --exact was
// given (skipping it would leave it missing items, and exact answers wrong), or with `create`
// a new one. A new one is refused for a filter that already holds items: they could never be
// verified.
[[nodiscard]] std::unique_ptr<ExactSet> exact_for_writing(const FilterLocation& location,
                                                          const Filter& filter, bool create);
// exact.add(items) for a command that adds `items` to the companion first, then to the filter:
// a storage error becomes an IncompleteWrite that committed none of `items` (the filter holds
// none of them yet, the companion may hold some), so that the command says what it committed.
void add_to_exact(ExactSet& exact, std::span<const std::string_view> items);
// Removes the companion if there is one (with the filter, or when the filter is replaced).
void drop_exact_if_any(const FilterLocation& location);

}  // namespace redbloom::cli
