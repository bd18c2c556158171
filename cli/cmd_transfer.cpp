// export (Redis -> file), import (file -> Redis) and copy (Redis -> Redis): the same bytes
// moved between stores, then checked by comparing bit counts (transfer.hpp).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>

#include "commands.hpp"
#include "diagnostics.hpp"
#include "exit_codes.hpp"
#include "filter_options.hpp"
#include "progress.hpp"
#include "redbloom/error.hpp"
#include "redbloom/transfer.hpp"
#include "redis/redis_store.hpp"
#include "stop_signals.hpp"
#include "stream.hpp"
#include "summary.hpp"

namespace redbloom::cli {
namespace {

struct TransferCommand {
  FilterLocation from;
  FilterLocation to;
  bool force = false;
  bool quiet = false;
  bool json = false;
};

// A stop signal seen between two chunks of a copy.
struct Stopped {
  int signal;
};

int run_transfer(const TransferCommand& cmd, const char* verb) {
  const StopSignals stop_signals;
  const Location to = cmd.to.resolve();
  InputStats bytes;  // the progress line's ETA comes from bytes done of the total
  Progress progress(verb, bytes, cmd.quiet, "bytes");
  CopyReport copied;
  try {
    copied = copy_filter(cmd.from.resolve(), to, cmd.force,
                         [&](std::uint64_t done, std::uint64_t total) {
                           if (const int signal = stop_signal(); signal != 0) throw Stopped{signal};
                           bytes.bytes = done;
                           bytes.total_bytes = total;
                           progress.update(done);
                         });
  } catch (const Stopped& stopped) {
    progress.finish();
    report_error(std::string(verb) + " stopped by " + signal_name(stopped.signal) + "; " +
                 (Filter::exists(to) ? "the incomplete copy could not be dropped: drop " +
                                           to.describe() + " before using it"
                                     : std::string("the incomplete copy was dropped")));
    return exit_status_for_signal(stopped.signal);
  }
  progress.finish();
  for (const std::string& warning : copied.warnings) report_warning(warning);
  const double seconds = progress.elapsed_seconds();
  Summary summary(verb);
  summary.text("from", "from", cmd.from.describe())
      .text("to", "to", cmd.to.describe())
      .count("bytes", "bytes", copied.bytes)
      .number("", "seconds", seconds, "%.2f", "s")
      .number("", "megabytes_per_second",
              static_cast<double>(copied.bytes) / 1e6 / std::max(seconds, 1e-9), "%.0f", "MB/s");
  if (copied.exact) summary.count("exact set entries", "exact_entries", copied.exact_entries);
  summary.print(cmd.json, cmd.quiet);
  return kExitOk;
}

// Whether two Redis locations have a server in common (compared by run_id and db, so that
// localhost and 127.0.0.1 are one server).
bool share_a_server(const FilterLocation& a, const FilterLocation& b) {
  std::set<std::string> seen;
  for (const RedisEndpoint& server : a.resolve().servers) {
    seen.insert(RedisStore::keyspace_id(server));
  }
  for (const RedisEndpoint& server : b.resolve().servers) {
    if (seen.count(RedisStore::keyspace_id(server)) != 0) return true;
  }
  return false;
}

void add_common(CLI::App& sub, TransferCommand& cmd) {
  sub.add_flag("--force", cmd.force, "Replace an existing destination filter");
  sub.add_flag("-q,--quiet", cmd.quiet, "No progress or summary on stderr");
  sub.add_flag("--json", cmd.json, "The summary as one JSON object on stderr");
}

}  // namespace

void register_transfers(CLI::App& app, int& exit_code) {
  {
    auto cmd = std::make_shared<TransferCommand>();
    CLI::App* sub = app.add_subcommand("export", "Copy a Redis filter into a local file");
    sub->add_option("--name", cmd->from.name, "Filter name in Redis")->required();
    sub->add_option("--redis", cmd->from.redis_uri,
                    "Redis URI (default: $REDIS_URL, else redis://127.0.0.1:6379)");
    sub->add_option("--to", cmd->to.path, "Filter file to write")->required();
    add_common(*sub, *cmd);
    sub->callback([cmd, &exit_code] { exit_code = run_transfer(*cmd, "export"); });
  }
  {
    auto cmd = std::make_shared<TransferCommand>();
    CLI::App* sub = app.add_subcommand("import", "Copy a local filter file into Redis");
    sub->add_option("--from", cmd->from.path, "Filter file to read")->required();
    sub->add_option("--name", cmd->to.name, "Filter name to create in Redis")->required();
    sub->add_option("--redis", cmd->to.redis_uri,
                    "Redis URI (default: $REDIS_URL, else redis://127.0.0.1:6379)");
    add_common(*sub, *cmd);
    sub->callback([cmd, &exit_code] { exit_code = run_transfer(*cmd, "import"); });
  }
  {
    auto cmd = std::make_shared<TransferCommand>();
    CLI::App* sub = app.add_subcommand("copy", "Copy a Redis filter to another server or name");
    sub->add_option("--name", cmd->from.name, "Source filter name")->required();
    sub->add_option("--redis", cmd->from.redis_uri, "Source Redis URI (default: $REDIS_URL)");
    sub->add_option("--to-name", cmd->to.name, "Destination name (default: the same)");
    sub->add_option("--to-redis", cmd->to.redis_uri,
                    "Destination Redis URI (default: the source's)");
    add_common(*sub, *cmd);
    sub->callback([cmd, &exit_code] {
      if (cmd->to.name.empty()) cmd->to.name = cmd->from.name;
      if (cmd->to.redis_uri.empty()) cmd->to.redis_uri = cmd->from.redis_uri;
      // The same keys under two addresses (localhost and 127.0.0.1, an alias): --force would
      // drop the source before copying it. The server's run_id tells.
      if (cmd->to.name == cmd->from.name && share_a_server(cmd->from, cmd->to)) {
        throw InvalidArgument("copy: source and destination are the same filter");
      }
      exit_code = run_transfer(*cmd, "copy");
    });
  }
}

}  // namespace redbloom::cli
