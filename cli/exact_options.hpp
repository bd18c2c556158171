// The exact companion (exact_set.hpp) of the filter a command works on, as the CLI reports it.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "redbloom/exact_set.hpp"
#include "redbloom/stream.hpp"

namespace redbloom::cli {

// exact.add(items) for a command that adds `items` to the companion first, then to the filter:
// a storage error becomes an IncompleteWrite that committed none of `items` (the filter holds
// none of them yet, the companion may hold some), so that the command says what it committed.
void add_to_exact(ExactSet& exact, std::span<const std::string_view> items);

// Refuses --exact with the options of a windowed filter before anything is created (the
// library refuses it too, but only once the filter exists).
void check_exact_for(const std::optional<StreamOptions>& stream, bool exact);

}  // namespace redbloom::cli
