// drop: delete a filter (only after checking that the file is one).
#include <cstdio>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "filter_options.hpp"

namespace redbloom::cli {

void register_drop(CLI::App& app, int& exit_code) {
  auto path = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand("drop", "Delete a filter");
  add_filter_path_option(*sub, *path);
  sub->callback([path, &exit_code] {
    FileStore::remove(*path);
    exit_code = kExitOk;
  });
}

}  // namespace redbloom::cli
