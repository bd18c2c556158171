// create: a new, empty filter. Refuses an existing one (as BF.RESERVE answers "item exists")
// unless --force.
#include <cstdio>
#include <string>

#include "commands.hpp"
#include "exact_options.hpp"
#include "exit_codes.hpp"
#include "filter_options.hpp"
#include "redbloom/engine_filter.hpp"
#include "redbloom/error.hpp"
#include "redbloom/filter_request.hpp"
#include "summary.hpp"

namespace redbloom::cli {
namespace {

struct CreateCommand {
  FilterLocation location;
  SizingOptions sizing;
  bool force = false;
  bool quiet = false;
  bool json = false;
  bool exact = false;
  std::string engine = "redbloom";
  bool nonscaling = false;
};

// BF.RESERVE on the server, then what was made, as `create` says it for its own filters.
void create_engine(const CreateCommand& cmd, const EngineFilterOptions& options) {
  if (cmd.exact) {
    throw InvalidArgument(
        "--exact cannot apply to a filter of the server's Bloom engine (--engine "
        "bf): an exact set is kept beside redbloom's own filters");
  }
  const Filter filter = create_engine_filter(cmd.location.resolve(), options, cmd.force);
  const auto& server = filter.shape().server_filter;
  const std::string expansion =
      options.nonscaling ? "none"
                         : (server && server->expansion ? std::to_string(*server->expansion)
                                                        : "the engine's default");
  char rate[32];
  std::snprintf(rate, sizeof rate, "%g", options.error_rate);
  if (cmd.quiet) return;
  if (cmd.json) {
    std::printf(
        "{\"created\": %s, \"location\": %s, \"engine\": \"bf\", \"capacity\": %llu, "
        "\"error_rate\": %s, \"expansion\": %s, \"kind\": %s}\n",
        json_string(cmd.location.describe()).c_str(),
        json_string(filter.backend().location()).c_str(),
        static_cast<unsigned long long>(options.capacity), rate,
        server && server->expansion ? std::to_string(*server->expansion).c_str() : "null",
        json_string(server ? server->kind : "").c_str());
    return;
  }
  std::printf("created %s: %s, capacity %llu, p=%s, expansion %s\n",
              cmd.location.describe().c_str(), server ? server->kind.c_str() : "BF filter",
              static_cast<unsigned long long>(options.capacity), rate, expansion.c_str());
}

// A cuckoo filter, with its exact set if asked (what lets `remove` refuse items never added).
void create_cuckoo(const CreateCommand& cmd, const CuckooOptions& options) {
  const Filter filter = create_cuckoo_filter(cmd.location, options, cmd.force);
  if (cmd.exact) (void)exact_set_for_writing(cmd.location.resolve(), filter, /*create=*/true);
  const std::string made = describe(options);
  if (cmd.quiet) return;
  if (cmd.json) {
    char rate[32];
    std::snprintf(rate, sizeof rate, "%g", options.error_rate);
    std::printf(
        "{\"created\": %s, \"location\": %s, \"kind\": \"cuckoo\", \"capacity\": %llu, "
        "\"error_rate\": %s, \"growth\": %u, \"max_bytes\": %llu, \"description\": %s, "
        "\"exact\": %s}\n",
        json_string(cmd.location.describe()).c_str(),
        json_string(filter.backend().location()).c_str(),
        static_cast<unsigned long long>(options.capacity), rate, options.growth,
        static_cast<unsigned long long>(options.max_bytes), json_string(made).c_str(),
        cmd.exact ? "true" : "false");
    return;
  }
  std::printf("created %s: %s%s\n", cmd.location.describe().c_str(), made.c_str(),
              defaulted_size(cmd.sizing).c_str());
}

}  // namespace

void register_create(CLI::App& app, int& exit_code) {
  auto cmd = std::make_shared<CreateCommand>();
  CLI::App* sub = app.add_subcommand("create", "Create an empty filter");
  add_location_options(*sub, cmd->location);
  add_sizing_options(*sub, cmd->sizing);
  sub->add_flag("--force", cmd->force, "Replace an existing filter (and its exact set)");
  sub->add_flag("--exact", cmd->exact, "Also create the exact set that diff --exact uses");
  sub->add_option("--engine", cmd->engine,
                  "redbloom (default): redbloom's own filter; bf: a filter of the Redis server's "
                  "own Bloom engine (BF.RESERVE: RedisBloom, Redis 8, valkey-bloom, redbloom.so), "
                  "from -n, -p and --growth (its EXPANSION)")
      ->check(CLI::IsMember({"redbloom", "bf"}));
  sub->add_flag("--nonscaling", cmd->nonscaling,
                "With --engine bf: a filter that never grows (adds past -n fail)");
  sub->add_flag("-q,--quiet", cmd->quiet, "Print nothing");
  sub->add_flag("--json", cmd->json,
                "What was created as one JSON object on stdout (warnings as JSON on stderr)");
  sub->callback([cmd, &exit_code] {
    FilterRequest asked = cmd->sizing.request();
    asked.engine = cmd->engine;
    asked.nonscaling = cmd->nonscaling;
    if (const SizedRequest sized = size_request(asked); sized.engine) {
      create_engine(*cmd, *sized.engine);
      exit_code = kExitOk;
      return;
    }
    if (const SizedRequest sized = requested_size(cmd->sizing); sized.cuckoo) {
      create_cuckoo(*cmd, *sized.cuckoo);
      exit_code = kExitOk;
      return;
    }
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
      std::printf("created %s: %s%s\n", cmd->location.describe().c_str(), made.c_str(),
                  defaulted_size(cmd->sizing).c_str());
    }
    exit_code = kExitOk;
  });
}

}  // namespace redbloom::cli
