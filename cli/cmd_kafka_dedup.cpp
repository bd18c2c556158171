// dedup --from kafka://HOST:PORT[,...]/TOPIC --group G --to kafka://HOST:PORT[,...]/TOPIC: the
// first record of each item, from one Kafka topic to another (redbloom/kafka_dedup.hpp has the
// order of its steps and what a crash can do). Runs until a stop signal, which ends it after the
// round in hand, with status 0.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "diagnostics.hpp"
#include "exit_codes.hpp"
#include "filter_options.hpp"
#include "kafka_metrics.hpp"
#include "metrics_endpoint.hpp"
#include "records.hpp"
#include "redbloom/decision_log.hpp"
#include "redbloom/error.hpp"
#include "redbloom/exact_set.hpp"
#include "redbloom/kafka_dedup.hpp"
#include "redbloom/location.hpp"
#include "redbloom/stream.hpp"
#include "stop_signals.hpp"
#include "summary.hpp"

namespace redbloom::cli {
namespace {

struct KafkaDedupCommand {
  FilterLocation location;
  SizingOptions sizing;
  RecordOptions records;
  std::string from;
  std::string to;
  std::string group;
  std::string key = "value";
  std::string to_partition = "same";
  std::vector<std::string> properties;
  std::size_t batch = 10000;
  std::string timeout = "30s";
  std::string transactional_id;
  std::string progress;
  std::string metrics;
  bool quiet = false;
  bool json = false;
  bool verbose = false;
};

// A Kafka topic named on the command line; a Redis stream is the Redis Streams stage's.
StagePlace kafka_place(const std::string& text, const char* option) {
  StagePlace place = StagePlace::parse(text, option);
  if (place.kind != StagePlace::Kind::kafka_topic) {
    throw InvalidArgument(std::string(option) + " '" + text +
                          "': the stage reads a Kafka topic and writes a Kafka topic: give both "
                          "as kafka://HOST:PORT[,HOST:PORT...]/TOPIC");
  }
  return place;
}

void print_progress(const KafkaDedup& stage, double seconds, std::uint64_t read_before,
                    double interval) {
  const KafkaDedupCounts& c = stage.counts();
  std::string lags;
  for (const KafkaPartitionLag& p : stage.lag()) {
    lags += " p" + std::to_string(p.partition) + "=" + (p.lag < 0 ? "?" : std::to_string(p.lag));
  }
  std::fprintf(stderr,
               "redbloom dedup: %.1f s, read %llu (%s records/s), first seen %llu, duplicates "
               "%llu, lag%s\n",
               seconds, static_cast<unsigned long long>(c.read),
               format_rate(static_cast<double>(c.read - read_before) / interval).c_str(),
               static_cast<unsigned long long>(c.first_seen),
               static_cast<unsigned long long>(c.duplicates), lags.empty() ? " -" : lags.c_str());
}

std::string stage_topic(const KafkaDedupCommand& cmd) {
  return kafka_place(cmd.from, "--from").topic;
}

KafkaDedupOptions stage_options(const KafkaDedupCommand& cmd, const Filter& filter) {
  const StagePlace from = kafka_place(cmd.from, "--from");
  const StagePlace to = kafka_place(cmd.to, "--to");
  if (from.brokers == to.brokers && from.topic == to.topic) {
    throw InvalidArgument("--from and --to name one topic: the output must be another topic");
  }
  KafkaDedupOptions options;
  options.input_brokers = from.brokers;
  options.input_topic = from.topic;
  options.output_brokers = to.brokers;
  options.output_topic = to.topic;
  options.group = cmd.group;
  options.batch = cmd.batch;
  options.kafka_key = cmd.key == "kafka-key";
  options.output_partition =
      cmd.to_partition == "key" ? KafkaOutputPartition::by_key : KafkaOutputPartition::same;
  options.on_missing = cmd.records.on_bad == OnBadRecord::skip   ? OnMissingKey::skip
                       : cmd.records.on_bad == OnBadRecord::pass ? OnMissingKey::pass
                                                                 : OnMissingKey::error;
  options.on_warning = [](const std::string& text) { report_warning(text); };
  options.on_log = [](const std::string& text) { report_note(text); };
  options.verbose = cmd.verbose;
  options.timeout = std::chrono::milliseconds(parse_duration_ns(cmd.timeout) / 1000000);
  options.transactional_id = cmd.transactional_id;
  if (cmd.records.active()) {
    if (options.kafka_key) {
      throw InvalidArgument(
          "--key kafka-key takes the record's Kafka key as the item: leave out --key-field and "
          "--json-key, which take it from the value");
    }
    options.record_key =
        cmd.records.json_key.empty()
            ? (cmd.records.csv ? RecordKeySpec::csv_field(
                                     cmd.records.key_field,
                                     cmd.records.delimiter.empty() ? ',' : cmd.records.delimiter[0])
                               : RecordKeySpec::field_of(
                                     cmd.records.key_field,
                                     cmd.records.delimiter.empty() || cmd.records.delimiter == "\\t"
                                         ? '\t'
                                         : cmd.records.delimiter[0]))
            : RecordKeySpec::json(cmd.records.json_key);
  }
  for (const std::string& property : cmd.properties) {
    const std::size_t eq = property.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw InvalidArgument("-X '" + property + "': a librdkafka property is NAME=VALUE");
    }
    options.properties.emplace_back(property.substr(0, eq), property.substr(eq + 1));
  }
  // A windowed filter forgets items after its window: its decision records need not outlive it.
  if (filter.shape().windowed()) {
    options.decision_ttl = std::chrono::milliseconds(filter.shape().stream->window_ns / 1000000);
  }
  return options;
}

void print_summary(const KafkaDedup& stage, const KafkaDedupCommand& cmd, double seconds,
                   int status) {
  const KafkaDedupCounts& c = stage.counts();
  Summary summary("dedup");
  summary.count("read", "read", c.read)
      .count("first seen", "unique", c.first_seen)
      .count("duplicates", "duplicates", c.duplicates)
      .count_if_any("replayed from decision records", "replayed", c.replayed)
      .count_if_any("duplicates added meanwhile by another stage", "taken_by_others",
                    c.taken_by_others)
      .count_if_any("items added for a stage that died mid-round", "rolled_forward",
                    c.rolled_forward)
      .count_if_any("without key skipped", "bad_records_skipped", c.skipped)
      .count_if_any("without key passed", "bad_records_passed", c.passed)
      .count_if_any("transactions aborted", "transactions_aborted", c.aborted)
      .number("", "seconds", seconds, "%.2f", "s");
  if (const int signal = stop_signal(); signal != 0 && status == kExitOk) {
    summary.text("stopped by", "stopped_by", signal_name(signal));
  }
  summary.print(cmd.json, cmd.quiet);
}

int run_kafka_dedup(const KafkaDedupCommand& cmd) {
  const StopSignals stop_signals;
  InputOptions unused_input;
  check_record_options(cmd.records, unused_input);
  // Refused first: a place without room for decision records creates no filter either.
  const std::unique_ptr<DecisionLog> decisions = DecisionLog::beside(cmd.location.resolve());
  auto [filter, created] = open_for_writing(cmd.location, cmd.sizing, /*create_if_missing=*/true);
  (void)created;
  const std::unique_ptr<ExactSet> exact =
      exact_set_for_writing(cmd.location.resolve(), filter, /*create=*/false);
  KafkaDedupOptions options = stage_options(cmd, filter);
  options.exact_set = exact.get();
  KafkaDedup stage(filter, *decisions, std::move(options));

  std::optional<MetricsEndpoint> metrics;
  FilterEstimate estimate;
  auto estimated = std::chrono::steady_clock::now();
  if (!cmd.metrics.empty()) {
    metrics.emplace(cmd.metrics);
    estimate = estimate_filter(filter);
    metrics->publish(kafka_metrics_page(stage, stage_topic(cmd), estimate));
    if (!cmd.quiet) {
      report_note("metrics on http://" + cmd.metrics.substr(0, cmd.metrics.rfind(':')) + ":" +
                  std::to_string(metrics->port()) + "/metrics");
    }
  }
  const double interval =
      cmd.progress.empty() ? 0 : static_cast<double>(parse_duration_ns(cmd.progress)) / 1e9;
  const auto started = std::chrono::steady_clock::now();
  auto shown = started;
  std::uint64_t read_at_shown = 0;
  std::string failure;
  int status = kExitOk;
  try {
    // Stops are seen between rounds: a round read is always produced and committed first.
    while (stop_signal() == 0) {
      stage.round(std::chrono::milliseconds(500));
      const auto now = std::chrono::steady_clock::now();
      if (metrics) {
        // The estimate reads a sample of the filter's bits: at most every 10 s, and once the
        // first items are in.
        if (now - estimated >= std::chrono::seconds(10) ||
            (estimate.items == 0 && stage.counts().first_seen != 0)) {
          estimate = estimate_filter(filter);
          estimated = now;
        }
        metrics->publish(kafka_metrics_page(stage, stage_topic(cmd), estimate));
      }
      if (interval > 0 && std::chrono::duration<double>(now - shown).count() >= interval) {
        print_progress(stage, std::chrono::duration<double>(now - started).count(), read_at_shown,
                       std::chrono::duration<double>(now - shown).count());
        shown = now;
        read_at_shown = stage.counts().read;
      }
    }
    stage.close();
  } catch (const Error& e) {
    failure = e.what();
    if (stage.stopped_at_missing_item() && dynamic_cast<const InvalidArgument*>(&e) != nullptr) {
      failure += "; run again with --on-bad-record skip (drop it) or pass (produce it unfiltered)";
    }
    status = dynamic_cast<const InvalidArgument*>(&e) != nullptr ? kExitUsage : kExitStorage;
  }
  if (!failure.empty()) report_error(failure);
  print_summary(stage, cmd,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
                status);
  return status;
}

}  // namespace

void register_kafka_dedup(CLI::App& app, int& exit_code) {
  auto cmd = std::make_shared<KafkaDedupCommand>();
  CLI::App* sub = app.add_subcommand(
      kKafkaDedupCommand,
      "redbloom dedup --from kafka://HOST:PORT/TOPIC --group G --to kafka://HOST:PORT/OUT "
      "(-f FILE | --redis URI#NAME): produce the first record of each item of a Kafka topic to "
      "another topic, then commit the input offsets; no first-seen record is lost at any crash; "
      "runs until SIGINT, SIGTERM or SIGHUP, which end it after the batch in hand (exit 0)");
  sub->group("");  // reached as `dedup --from kafka://...` (main.cpp)
  add_location_options(*sub, cmd->location);
  add_creator_wait_option(*sub, cmd->location);
  add_sizing_options(*sub, cmd->sizing);
  add_record_options(*sub, cmd->records);
  sub->add_option("--from", cmd->from, "Input topic: kafka://HOST:PORT[,HOST:PORT...]/TOPIC")
      ->required();
  sub->add_option("--to", cmd->to, "Output topic: kafka://HOST:PORT[,HOST:PORT...]/TOPIC")
      ->required();
  sub->add_option("--group", cmd->group,
                  "Consumer group that reads the input; stages of one group share its "
                  "partitions")
      ->required();
  sub->add_option("--key", cmd->key,
                  "The item: the record's value (default; --key-field, --csv or --json-key "
                  "take a part of it) or its Kafka key (kafka-key)")
      ->check(CLI::IsMember({"value", "kafka-key"}));
  sub->add_option("--to-partition", cmd->to_partition,
                  "The output partition of a record: the number it had in the input (same, "
                  "the default; the output needs as many partitions) or the producer's choice "
                  "by its Kafka key (key)")
      ->check(CLI::IsMember({"same", "key"}));
  sub->add_option("-X", cmd->properties,
                  "A librdkafka property for both topics' clients, NAME=VALUE (e.g. "
                  "security.protocol=SASL_SSL); may be repeated")
      ->allow_extra_args(false);
  sub->add_option("--batch", cmd->batch, "Records per round, at most (default 10000)")
      ->check(CLI::Range(1, 1000000));
  sub->add_option("--timeout", cmd->timeout,
                  "How long to wait to reach the brokers and for them to acknowledge a round "
                  "(default 30s)")
      ->capture_default_str();
  sub->add_option("--transactional-id", cmd->transactional_id,
                  "Produce each round's records and commit its offsets in one Kafka "
                  "transaction with this id (one id per stage, the same after a restart): "
                  "read_committed consumers see each item once");
  sub->add_option("--progress", cmd->progress,
                  "Every INTERVAL (e.g. 10s), a line on stderr: records read and per second, "
                  "first seen, duplicates, lag per partition");
  sub->add_option("--metrics", cmd->metrics,
                  "Serve Prometheus metrics on HOST:PORT (records in and out, duplicates, lag "
                  "per partition, the filter's estimated fill and false-positive rate, errors)");
  sub->add_flag("-q,--quiet", cmd->quiet,
                "No notes or summary on stderr (but for a note when a missing filter is created)");
  sub->add_flag("--json", cmd->json, "Summary and notes as JSON objects on stderr");
  sub->add_flag("-v,--verbose", cmd->verbose, "librdkafka's log lines and errors on stderr");
  sub->callback([cmd, &exit_code] { exit_code = run_kafka_dedup(*cmd); });
}

}  // namespace redbloom::cli
