// dedup --from redis-stream://HOST[:PORT]#STREAM: copies each entry of a Redis stream whose key
// field is new to another stream, exactly once per key (include/redbloom/redis_stream_dedup.hpp has
// the protocol). Runs until a stop signal, which ends it after the batch in hand, with status 0.
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "commands.hpp"
#include "diagnostics.hpp"
#include "exit_codes.hpp"
#include "filter_options.hpp"
#include "redbloom/error.hpp"
#include "redbloom/exact_set.hpp"
#include "redbloom/location.hpp"
#include "redbloom/redis_stream_dedup.hpp"
#include "redbloom/stream.hpp"
#include "stage_metrics_pages.hpp"
#include "stop_signals.hpp"
#include "summary.hpp"

namespace redbloom::cli {
namespace {

struct RedisStreamDedupCommand {
  FilterLocation location;
  SizingOptions sizing;
  std::string from;
  std::string to;
  std::string group;
  std::string consumer;
  std::string key_field;
  std::string on_bad = "error";
  std::string min_idle = "30s";
  std::string metrics;
  std::uint64_t maxlen = 0;
  std::size_t batch = 1000;
  bool create_group = false;
  bool quiet = false;
  bool json = false;
  bool verbose = false;
};

// A Redis stream named on the command line; a Kafka topic is the Kafka stage's.
StagePlace redis_stream_place(const std::string& text, const char* option) {
  StagePlace place = StagePlace::parse(text, option);
  if (place.kind != StagePlace::Kind::redis_stream) {
    throw InvalidArgument(std::string(option) + " '" + text +
                          "': the stage reads a Redis stream and a Kafka topic, not one into the "
                          "other: give both as redis-stream:// or both as kafka://");
  }
  return place;
}

std::string default_consumer() {
  char host[HOST_NAME_MAX + 1] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return std::string(host[0] != '\0' ? host : "redbloom") + "-" + std::to_string(::getpid());
}

// The stage's options from the command line, checked against each other.
RedisStreamDedupOptions stage_options(const RedisStreamDedupCommand& cmd, const StagePlace& from,
                                      const StagePlace& to) {
  if (!same_keyspace(from.server, to.server)) {
    throw InvalidArgument("--from (" + from.server.describe() + ") and --to (" +
                          to.server.describe() +
                          ") must be on one server or one Cluster: one script on the server "
                          "handles each batch");
  }
  RedisStreamDedupOptions options;
  options.input = from.stream;
  options.output = to.stream;
  options.group = cmd.group;
  options.consumer = cmd.consumer.empty() ? default_consumer() : cmd.consumer;
  options.key_field = cmd.key_field;
  options.maxlen = cmd.maxlen;
  options.on_missing = cmd.on_bad == "skip"   ? OnMissingKey::skip
                       : cmd.on_bad == "pass" ? OnMissingKey::pass
                                              : OnMissingKey::error;
  // 0: take over any entry another consumer holds (when no other stage runs).
  options.read_ahead = true;
  options.min_idle = std::chrono::milliseconds(
      cmd.min_idle == "0" ? 0 : parse_duration_ns(cmd.min_idle) / 1000000);
  if (options.input == options.output) {
    throw InvalidArgument("--from and --to name one stream: the output must be another stream");
  }
  if (!cmd.location.in_redis()) {
    throw InvalidArgument(
        "--from needs the filter in Redis, on the streams' server or Cluster: "
        "--redis URI#NAME");
  }
  return options;
}

// What a batch stopped at an entry without the key says, and how to go on.
std::string missing_key_message(const RedisStreamDedupCommand& cmd, const std::string& stream,
                                const std::string& entry) {
  return "entry " + entry + " of stream '" + stream + "' has no field '" + cmd.key_field +
         "'; the entries before it are done; it stays pending in group '" + cmd.group +
         "', with any read after it: remove it (XACK " + stream + " " + cmd.group + " " + entry +
         ") or run again with --on-bad-record skip (acknowledge it, copy nothing) or pass (copy "
         "it unfiltered)";
}

void accumulate(RedisStreamDedupBatch& total, const RedisStreamDedupBatch& b) {
  total.entries += b.entries;
  total.unique += b.unique;
  total.duplicates += b.duplicates;
  total.skipped += b.skipped;
  total.passed += b.passed;
  total.deleted += b.deleted;
  total.done_before += b.done_before;
  total.recovered += b.recovered;
}

// The summary line (or JSON object) of a stage that ran `seconds` and ends with `status`.
void print_summary(const RedisStreamDedupCommand& cmd, const RedisStreamDedup& dedup,
                   const RedisStreamDedupBatch& total, double seconds, int status) {
  Summary summary("dedup");
  summary.count("read", "read", total.entries)
      .count("unique", "unique", total.unique)
      .count("duplicates", "duplicates", total.duplicates)
      .count_if_any("taken over from stopped consumers", "recovered", total.recovered)
      .count_if_any("done before", "done_before", total.done_before)
      .count_if_any("without key skipped", "bad_records_skipped", total.skipped)
      .count_if_any("without key passed", "bad_records_passed", total.passed)
      .count_if_any("deleted before handled", "deleted", total.deleted)
      .number("", "seconds", seconds, "%.2f", "s")
      .rate("items_per_second",
            total.entries > 1 && seconds > 0 ? static_cast<double>(total.entries) / seconds
                                             : std::nan(""),
            "items/s");
  if (cmd.verbose) summary.text("engine", "engine", dedup.engine());
  if (const int signal = stop_signal(); signal != 0 && status == kExitOk) {
    summary.text("stopped by", "stopped_by", signal_name(signal));
  }
  summary.print(cmd.json, cmd.quiet);
}

int run_redis_stream_dedup(const RedisStreamDedupCommand& cmd) {
  const StopSignals stop_signals;
  const StagePlace from = redis_stream_place(cmd.from, "--from");
  const StagePlace to = redis_stream_place(cmd.to, "--to");
  RedisStreamDedupOptions options = stage_options(cmd, from, to);
  StageMetrics metrics(cmd.metrics, cmd.quiet);
  auto [filter, created] = open_for_writing(cmd.location, cmd.sizing, /*create_if_missing=*/true);
  (void)created;
  const std::unique_ptr<ExactSet> exact =
      exact_set_for_writing(cmd.location.resolve(), filter, /*create=*/false);
  options.exact_set = exact.get();
  RedisStreamDedup dedup(filter, from.server, options);
  if (cmd.create_group && dedup.create_group(/*make_stream=*/true)) {
    report_note("created consumer group '" + cmd.group + "' on stream '" + from.stream +
                "', reading it from its first entry");
  }

  RedisStreamDedupBatch total;
  // The group's backlog costs a round trip: asked at most once a second.
  std::optional<RedisStreamBacklog> backlog;
  auto asked = std::chrono::steady_clock::time_point{};
  metrics.show(filter, [&](const FilterEstimate& estimate) {
    return redis_stream_metrics_page(total, backlog, from.stream, cmd.group, estimate);
  });
  const auto started = std::chrono::steady_clock::now();
  std::string failure;
  int status = kExitOk;
  try {
    // Stops are seen between batches: a batch read is always committed first.
    while (stop_signal() == 0) {
      if (metrics.enabled() &&
          std::chrono::steady_clock::now() - asked >= std::chrono::seconds(1)) {
        backlog = dedup.backlog();
        asked = std::chrono::steady_clock::now();
        metrics.update(total.unique);
      }
      if (dedup.read(cmd.batch, std::chrono::milliseconds(500)) == 0) continue;
      const RedisStreamDedupBatch b = dedup.commit();
      accumulate(total, b);
      metrics.update(total.unique);
      if (!b.stopped_at.empty()) {
        failure = missing_key_message(cmd, from.stream, b.stopped_at);
        status = kExitUsage;
        break;
      }
    }
    // The entries read ahead while the last batch committed: done too, not left pending.
    const RedisStreamDedupBatch b = dedup.finish();
    accumulate(total, b);
    if (!b.stopped_at.empty()) {
      failure = missing_key_message(cmd, from.stream, b.stopped_at);
      status = kExitUsage;
    }
  } catch (const Error& e) {
    failure = e.what();
    status = dynamic_cast<const InvalidArgument*>(&e) != nullptr ? kExitUsage : kExitStorage;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!failure.empty()) report_error(failure);
  print_summary(cmd, dedup, total, seconds, status);
  return status;
}

}  // namespace

void register_redis_stream_dedup(CLI::App& app, int& exit_code) {
  auto cmd = std::make_shared<RedisStreamDedupCommand>();
  CLI::App* sub = app.add_subcommand(
      kRedisStreamDedupCommand,
      "redbloom dedup --from redis-stream://HOST[:PORT]#STREAM --group G --to "
      "redis-stream://HOST[:PORT]#OUT --key-field NAME --redis redis://HOST[:PORT]#FILTER: copy "
      "each entry of a Redis stream whose key is new to another stream, exactly once per key; "
      "runs until SIGINT, SIGTERM or SIGHUP, which end it after the batch in hand (exit 0)");
  sub->group("");  // reached as `dedup --from ...` (main.cpp)
  add_location_options(*sub, cmd->location);
  add_creator_wait_option(*sub, cmd->location);
  add_sizing_options(*sub, cmd->sizing);
  sub->add_option("--from", cmd->from,
                  "Input stream: redis-stream://HOST[:PORT][/DB]#STREAM, or "
                  "redis-stream+cluster://HOST:PORT[,...]#STREAM")
      ->required();
  sub->add_option("--to", cmd->to,
                  "Output stream, on the same server or Cluster: "
                  "redis-stream://HOST[:PORT][/DB]#STREAM")
      ->required();
  sub->add_option("--group", cmd->group, "Consumer group that reads the input")->required();
  sub->add_option("--consumer", cmd->consumer,
                  "This stage's name in the group (default HOSTNAME-PID)");
  sub->add_flag("--create-group", cmd->create_group,
                "Create the group (and the stream) if missing, reading from the first entry");
  sub->add_option("--key-field", cmd->key_field, "The entry's field whose value is the key")
      ->required();
  sub->add_option("--on-bad-record", cmd->on_bad,
                  "An entry without the key field: error (stop before it, default), skip "
                  "(acknowledge it, copy nothing) or pass (copy it unfiltered)")
      ->check(CLI::IsMember({"error", "skip", "pass"}));
  sub->add_option("--min-idle", cmd->min_idle,
                  "How long another consumer's entry stays unacknowledged before this stage "
                  "takes it over, e.g. 30s (default), 500ms, or 0")
      ->capture_default_str();
  sub->add_option("--maxlen", cmd->maxlen,
                  "Trim the output stream to about this many entries (XADD MAXLEN ~; default: "
                  "no trimming)");
  sub->add_option("--metrics", cmd->metrics,
                  "Serve Prometheus metrics on HOST:PORT (entries in and out, duplicates, the "
                  "group's pending entries and lag, the filter's estimated fill and "
                  "false-positive rate); PORT 0 picks a free one, noted on stderr");
  sub->add_option("--batch", cmd->batch, "Entries per batch (one script each; default 1000)")
      ->check(CLI::Range(1, 100000));
  sub->add_flag("-q,--quiet", cmd->quiet,
                "No notes or summary on stderr (but for a note when a missing filter is created)");
  sub->add_flag("--json", cmd->json, "Summary and notes as JSON objects on stderr");
  sub->add_flag("-v,--verbose", cmd->verbose, "The summary names what does the work");
  sub->callback([cmd, &exit_code] { exit_code = run_redis_stream_dedup(*cmd); });
}

}  // namespace redbloom::cli
