// create: a new, empty filter. Refuses an existing one (as BF.RESERVE answers "item exists")
// unless --force.
#include <cstdio>

#include "commands.hpp"
#include "exact_options.hpp"
#include "exit_codes.hpp"
#include "filter_options.hpp"
#include "summary.hpp"

namespace redbloom::cli {

void register_create(CLI::App& app, int& exit_code) {
  struct CreateCommand {
    FilterLocation location;
    SizingOptions sizing;
    bool force = false;
    bool quiet = false;
    bool json = false;
    bool exact = false;
  };
  auto cmd = std::make_shared<CreateCommand>();
  CLI::App* sub = app.add_subcommand("create", "Create an empty filter");
  add_location_options(*sub, cmd->location);
  add_sizing_options(*sub, cmd->sizing);
  sub->add_flag("--force", cmd->force, "Replace an existing filter (and its exact set)");
  sub->add_flag("--exact", cmd->exact, "Also create the exact set that diff --exact uses");
  sub->add_flag("-q,--quiet", cmd->quiet, "Print nothing");
  sub->add_flag("--json", cmd->json,
                "What was created as one JSON object on stdout (warnings as JSON on stderr)");
  sub->callback([cmd, &exit_code] {
    // create_filter also drops an exact set left from a former filter of that name.
    const std::optional<StreamOptions> stream = requested_stream(cmd->sizing);
    check_exact_for(stream, cmd->exact);
    const Filter filter =
        stream ? create_stream_filter(cmd->location, *stream, cmd->force)
               : create_filter(cmd->location, requested_params(cmd->sizing), cmd->force);
    const std::string made = stream ? describe(*stream) : describe(filter.params());
    if (cmd->exact) (void)exact_set_for_writing(cmd->location.resolve(), filter, /*create=*/true);
    if (cmd->quiet) {
    } else if (cmd->json) {
      std::printf("{\"created\": %s, \"location\": %s, %s, \"stream\": %s, \"exact\": %s}\n",
                  json_string(cmd->location.describe()).c_str(),
                  json_string(filter.backend().location()).c_str(),
                  params_json_members(filter.params()).c_str(),
                  stream ? json_string(made).c_str() : "null", cmd->exact ? "true" : "false");
    } else {
      std::printf("created %s: %s\n", cmd->location.describe().c_str(), made.c_str());
    }
    exit_code = kExitOk;
  });
}

}  // namespace redbloom::cli
