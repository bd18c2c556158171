// drop: delete a filter, only after checking that the file or Redis key is one, then the
// decision records a Kafka stage kept beside it (stale ones would replay old decisions into a
// new filter of the same name).
#include <cstdio>

#include "commands.hpp"
#include "exact_options.hpp"
#include "exit_codes.hpp"
#include "filter_options.hpp"
#include "redbloom/decision_log.hpp"
#include "summary.hpp"

namespace redbloom::cli {

void register_drop(CLI::App& app, int& exit_code) {
  struct DropCommand {
    FilterLocation location;
    bool json = false;
  };
  auto cmd = std::make_shared<DropCommand>();
  CLI::App* sub = app.add_subcommand(
      "drop",
      "Delete a filter (a file, or every key in Redis) and the decision records a Kafka stage "
      "kept beside it");
  add_location_options(*sub, cmd->location);
  sub->add_flag("--json", cmd->json, "What was dropped as one JSON object on stdout");
  sub->callback([cmd, &exit_code] {
    const Location where = cmd->location.resolve();
    const bool had_exact = exact_set_exists(where);
    Filter::drop(where);
    std::size_t decisions = 0;
    if (where.kind != Location::Kind::memory) decisions = DecisionLog::beside(where)->remove_all();
    if (cmd->json) {
      std::printf("{\"dropped\": %s, \"exact\": %s, \"decision_records\": %zu}\n",
                  json_string(cmd->location.describe()).c_str(), had_exact ? "true" : "false",
                  decisions);
    }
    exit_code = kExitOk;
  });
}

}  // namespace redbloom::cli
