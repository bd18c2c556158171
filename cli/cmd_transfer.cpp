// export (Redis -> file), import (file -> Redis) and copy (Redis -> Redis): the same bytes
// moved between stores, then checked by comparing bit counts (transfer.hpp).
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "commands.hpp"
#include "diagnostics.hpp"
#include "exit_codes.hpp"
#include "filter_options.hpp"
#include "line_io.hpp"
#include "progress.hpp"
#include "redbloom/error.hpp"
#include "redbloom/transfer.hpp"
#include "stop_signals.hpp"
#include "summary.hpp"

namespace redbloom::cli {
namespace {

struct TransferCommand {
  FilterLocation from;
  FilterLocation to;  // copy: what --to-redis and --to-name give
  bool force = false;
  bool quiet = false;
  bool json = false;
};

// A stop signal seen between two chunks of a copy.
struct Stopped {
  int signal;
};

int run_transfer(const Location& from, const Location& to, const TransferCommand& cmd,
                 const char* verb) {
  const StopSignals stop_signals;
  InputStats bytes;  // the progress line's ETA comes from bytes done of the total
  Progress progress(verb, bytes, cmd.quiet, "bytes");
  CopyReport copied;
  try {
    copied = copy_filter(from, to, cmd.force, [&](std::uint64_t done, std::uint64_t total) {
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
  summary.text("from", "from", from.describe())
      .text("to", "to", to.describe())
      .count("bytes", "bytes", copied.bytes)
      .number("", "seconds", seconds, "%.2f", "s")
      .number("", "megabytes_per_second",
              static_cast<double>(copied.bytes) / 1e6 / std::max(seconds, 1e-9), "%.0f", "MB/s");
  if (copied.exact) summary.count("exact set entries", "exact_entries", copied.exact_entries);
  summary.print(cmd.json, cmd.quiet);
  return kExitOk;
}

void add_common(CLI::App& sub, TransferCommand& cmd) {
  sub.add_flag("--force", cmd.force, "Replace an existing destination filter");
  sub.add_flag("-q,--quiet", cmd.quiet, "No progress or summary on stderr");
  sub.add_flag("--json", cmd.json, "The summary as one JSON object on stderr");
}

// --redis URI[#NAME] and --name NAME of a Redis filter; `prefix` "" or "to-".
void add_redis_options(CLI::App& sub, FilterLocation& location, const std::string& prefix,
                       const std::string& whose,
                       const std::string& defaults = "$REDIS_URL, else redis://127.0.0.1:6379") {
  location.redis_flag = "--" + prefix + "redis";
  location.name_flag = "--" + prefix + "name";
  sub.add_option(location.redis_flag, location.redis_uri,
                 whose +
                     " Redis URI, the filter's name after '#': redis://HOST[:PORT][/DB][#NAME] "
                     "(default: " +
                     defaults + ")");
  sub.add_option(location.name_flag, location.name,
                 whose + " filter name in Redis, when the URI has no #NAME");
}

// The Redis filter the options name; `command` for the message when none is named.
Location redis_filter(const FilterLocation& location, const std::string& command) {
  if (location.redis_uri.empty() && location.name.empty()) {
    throw InvalidArgument(command + " needs the filter in Redis: " + location.redis_flag +
                          " redis://HOST:PORT#NAME, or " + location.name_flag + " NAME");
  }
  return location.resolve();
}

}  // namespace

void register_transfers(CLI::App& app, int& exit_code) {
  {
    auto cmd = std::make_shared<TransferCommand>();
    CLI::App* sub = app.add_subcommand("export", "Copy a Redis filter into a local file");
    add_redis_options(*sub, cmd->from, "", "Source");
    cmd->to.path_flag = "--to";
    sub->add_option("--to", cmd->to.path, "Filter file to write (or any filter location)")
        ->required();
    add_common(*sub, *cmd);
    sub->callback([cmd, &exit_code] {
      exit_code =
          run_transfer(redis_filter(cmd->from, "export"), cmd->to.resolve(), *cmd, "export");
    });
  }
  {
    auto cmd = std::make_shared<TransferCommand>();
    CLI::App* sub = app.add_subcommand("import", "Copy a local filter file into Redis");
    cmd->from.path_flag = "--from";
    sub->add_option("--from", cmd->from.path, "Filter file to read (or any filter location)")
        ->required();
    add_redis_options(*sub, cmd->to, "", "Destination");
    add_common(*sub, *cmd);
    sub->callback([cmd, &exit_code] {
      exit_code =
          run_transfer(cmd->from.resolve(), redis_filter(cmd->to, "import"), *cmd, "import");
    });
  }
  {
    auto cmd = std::make_shared<TransferCommand>();
    CLI::App* sub = app.add_subcommand("copy", "Copy a Redis filter to another server or name");
    add_redis_options(*sub, cmd->from, "", "Source");
    add_redis_options(*sub, cmd->to, "to-", "Destination",
                      "the source's servers; the name defaults to the source's");
    add_common(*sub, *cmd);
    sub->callback([cmd, &exit_code] {
      const Location from = redis_filter(cmd->from, "copy");
      FilterLocation to = cmd->to;
      if (to.name.empty() && Location::name_in(to.redis_uri).empty()) to.name = from.name;
      const Location dest =
          to.redis_uri.empty() ? Location::redis(from.servers, to.name) : to.resolve();
      // The same keys under two addresses (localhost and 127.0.0.1, an alias): --force would
      // drop the source before copying it. The server's run_id tells.
      if (same_redis_filter(from, dest)) {
        throw InvalidArgument("copy: source and destination are the same filter");
      }
      exit_code = run_transfer(from, dest, *cmd, "copy");
    });
  }
}

}  // namespace redbloom::cli
