// redbloom: Bloom filters for deduplication and membership tests, from the command line.
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "diagnostics.hpp"
#include "exit_codes.hpp"
#include "redbloom/error.hpp"
#include "redbloom/file_faults.hpp"
#include "redbloom/location.hpp"
#include "redbloom/redis_endpoint.hpp"

namespace {

// Levenshtein distance, for "did you mean" on a mistyped command.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// The command a mistyped name most likely meant, or "" if none is close.
std::string closest(std::string_view typed, const std::vector<std::string>& names) {
  std::string best;
  std::size_t best_distance = 3;  // more than two edits away is no suggestion
  for (const std::string& name : names) {
    const std::size_t d = edit_distance(typed, name);
    if (d < best_distance || (!best.empty() && d == best_distance && name.starts_with(typed))) {
      best = name;
      best_distance = d;
    }
  }
  return best;
}

// "unknown option '--capacty' (did you mean '--capacity'?)" for the first option on the command
// line that `command` does not have, or "" if every option is known (the parse failed otherwise).
std::string unknown_option(const CLI::App& app, const std::string& command, int argc, char** argv) {
  const CLI::App* sub = nullptr;
  for (const CLI::App* candidate : app.get_subcommands({})) {
    if (candidate->get_name() == command) sub = candidate;
  }
  if (sub == nullptr) return "";
  std::vector<std::string> long_names;
  std::vector<std::string> short_names;
  for (const CLI::Option* option : sub->get_options()) {
    for (const std::string& name : option->get_lnames()) long_names.push_back("--" + name);
    for (const std::string& name : option->get_snames()) short_names.push_back("-" + name);
  }
  for (const CLI::Option* option : app.get_options()) {  // --help, --version
    for (const std::string& name : option->get_lnames()) long_names.push_back("--" + name);
  }
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") break;
    if (arg.starts_with("--")) {
      arg = arg.substr(0, arg.find('='));
      if (std::find(long_names.begin(), long_names.end(), arg) != long_names.end()) continue;
      const std::string guess = closest(arg, long_names);
      return "unknown option '" + arg + "'" +
             (guess.empty() ? "" : " (did you mean '" + guess + "'?)");
    }
    // "-x": one letter; "-xVALUE" and "-x3" are a short option and its value.
    if (arg.size() >= 2 && arg[0] == '-' && std::isalpha(static_cast<unsigned char>(arg[1]))) {
      const std::string flag = arg.substr(0, 2);
      if (std::find(short_names.begin(), short_names.end(), flag) != short_names.end()) continue;
      const std::string guess = closest("-" + arg, long_names);
      return "unknown option '" + arg + "'" +
             (guess.empty() ? "" : " (did you mean '" + guess + "'?)");
    }
  }
  return "";
}

// The stream stage is the hidden command dedup-stream, which users type as "dedup --from ...":
// its help says so.
class StreamStageFormatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App* app, std::string name) const override {
    const std::string hidden = redbloom::cli::kRedisStreamDedupCommand;
    if (const std::size_t at = name.find(hidden); at != std::string::npos) {
      name.replace(at, hidden.size(), "dedup --from redis-stream://HOST[:PORT]#STREAM");
    }
    return CLI::Formatter::make_usage(app, name);
  }
};

void register_commands(CLI::App& app, int& exit_code) {
  using namespace redbloom::cli;
  register_plan(app, exit_code);
  register_create(app, exit_code);
  register_add(app, exit_code);
  register_dedup(app, exit_code);
  register_exists(app, exit_code);
  register_remove(app, exit_code);
  register_count(app, exit_code);
  register_info(app, exit_code);
  register_drop(app, exit_code);
  register_load(app, exit_code);
  register_diff(app, exit_code);
  register_transfers(app, exit_code);
  register_redis_stream_dedup(app, exit_code);
  app.get_subcommand(kRedisStreamDedupCommand)->formatter(std::make_shared<StreamStageFormatter>());
  register_kafka_dedup(app, exit_code);
  app.get_subcommand("dedup")->footer(
      "From a Redis stream to another, exactly once per key: redbloom dedup --from "
      "redis-stream://HOST[:PORT]#STREAM --group G --to redis-stream://HOST[:PORT]#OUT "
      "--key-field NAME --redis redis://HOST[:PORT]#FILTER. From a Kafka topic to another: "
      "redbloom dedup --from kafka://HOST:PORT/TOPIC --group G --to kafka://HOST:PORT/OUT -f "
      "FILTER. redbloom dedup --from X --help lists their options");
}

// The command and the flags that shape messages, known before parsing so that even a parse
// error comes out as JSON when --json was given.
struct FirstLook {
  std::string command;
  bool json = false;
  bool quiet = false;
};

FirstLook first_look(int argc, char** argv) {
  FirstLook look;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg == "--json") look.json = true;
    if (arg == "-q" || arg == "--quiet") look.quiet = true;
    if (look.command.empty() && !arg.starts_with("-")) look.command = arg;
  }
  return look;
}

// dedup from a Redis stream or a Kafka topic (--from) has options of its own: its hidden
// command parses them. The command that parses, with `args` pointing at it.
std::string parsed_command_of(const std::string& command, int argc, char** argv,
                              std::vector<char*>& args) {
  using namespace redbloom::cli;
  std::string parsed = command;
  if (command != "dedup") return parsed;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg == "--from" || arg.starts_with("--from=")) parsed = kRedisStreamDedupCommand;
    const std::string_view value = arg.starts_with("--from=")        ? arg.substr(7)
                                   : arg == "--from" && i + 1 < argc ? std::string_view(argv[i + 1])
                                                                     : std::string_view();
    if (redbloom::StagePlace::kind_of(value) == redbloom::StagePlace::Kind::kafka_topic) {
      parsed = kKafkaDedupCommand;
    }
  }
  for (int i = 1; i < argc && parsed != command; ++i) {
    if (std::string_view(argv[i]) == "dedup") {
      args[i] = const_cast<char*>(parsed == kKafkaDedupCommand ? kKafkaDedupCommand
                                                               : kRedisStreamDedupCommand);
      break;
    }
  }
  return parsed;
}

// "unknown command" with a guess and the list, if `command` is not one of them.
bool refuse_unknown_command(const std::string& command, const std::vector<std::string>& commands) {
  using redbloom::cli::report_error;
  if (command.empty() || std::find(commands.begin(), commands.end(), command) != commands.end()) {
    return false;
  }
  std::string list;
  for (const std::string& name : commands) list += (list.empty() ? "" : ", ") + name;
  const std::string guess = closest(command, commands);
  report_error("unknown command '" + command + "'" +
               (guess.empty() ? "" : " (did you mean '" + guess + "'?)") + "; the commands are " +
               list + "; redbloom COMMAND --help describes one");
  return true;
}

// A windowed filter in files keeps a descriptor open for each live link (slices + 1, more after
// bursts): with many slices that passes the usual soft limit of 1024, though the hard limit,
// which a process may raise its own to, is far higher.
void raise_open_files_limit() noexcept {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  const rlim_t most = limit.rlim_max == RLIM_INFINITY ? rlim_t{1} << 20 : limit.rlim_max;
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur >= most) return;
  limit.rlim_cur = most;
  (void)::setrlimit(RLIMIT_NOFILE, &limit);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace redbloom::cli;
  redbloom::report_shrinking_filter_files(kExitStorage);
  raise_open_files_limit();
  // Named, so that help says "Usage: redbloom ..." however the program was started.
  CLI::App app{"redbloom: Bloom filters for deduplication and membership tests", "redbloom"};
  app.require_subcommand(1);
  // The version is CMake's PROJECT_VERSION, the one the man page and Python's __version__ show.
  app.set_version_flag("--version", "redbloom " REDBLOOM_VERSION);
  int exit_code = kExitOk;
  register_commands(app, exit_code);
  std::vector<std::string> commands;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (!sub->get_group().empty()) commands.push_back(sub->get_name());
  }
  const auto [command, json, quiet] = first_look(argc, argv);
  set_diagnostics(command, json, quiet);
  // With --json, stderr carries only JSON objects: the library's TLS warning too.
  if (json)
    redbloom::set_insecure_tls_warning([](std::string_view message) { report_warning(message); });
  std::vector<char*> args(argv, argv + argc);
  const std::string parsed_command = parsed_command_of(command, argc, argv, args);
  if (refuse_unknown_command(command, commands)) return kExitUsage;
  try {
    app.parse(argc, args.data());
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    if (const std::string unknown = unknown_option(app, parsed_command, argc, argv);
        !unknown.empty()) {
      report_error(unknown + "; redbloom " + command +
                   (parsed_command != command ? " --from X" : "") + " --help lists the options");
      return kExitUsage;
    }
    if (json) {
      report_error(std::string(e.what()) + "; redbloom " + command + " --help lists the options");
      return kExitUsage;
    }
    app.exit(e);
    return kExitUsage;
  } catch (const redbloom::InvalidArgument& e) {
    report_error(e.what());
    return kExitUsage;
  } catch (const redbloom::Error& e) {
    report_error(error_with_origin(e.what()));
    return kExitStorage;
  } catch (const std::bad_alloc&) {
    report_error("out of memory");
    return kExitStorage;
  }
  return exit_code;
}
