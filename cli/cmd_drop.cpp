// drop: delete a filter, only after checking that the file or Redis key is one.
#include <cstdio>

#include "commands.hpp"
#include "exact_options.hpp"
#include "exit_codes.hpp"
#include "filter_options.hpp"

namespace redbloom::cli {

void register_drop(CLI::App& app, int& exit_code) {
  auto location = std::make_shared<FilterLocation>();
  CLI::App* sub = app.add_subcommand("drop", "Delete a filter (a file, or every key in Redis)");
  add_location_options(*sub, *location);
  sub->callback([location, &exit_code] {
    // The filter first: drop_filter refuses anything that is not a filter, and then its exact
    // set is left alone too. (A set left behind is dropped when a filter is created anew.)
    drop_filter(*location);
    drop_exact_if_any(*location);
    exit_code = kExitOk;
  });
}

}  // namespace redbloom::cli
