// redbloom::kafka from an installed tree: the stage's options reach librdkafka, and brokers
// that cannot be reached are a StorageError that names them.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <redbloom/decision_log.hpp>
#include <redbloom/kafka_dedup.hpp>
#include <redbloom/redbloom.hpp>
#include <string>

int main() {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("kafka_consumer." + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const redbloom::Location where = redbloom::Location::parse((dir / "seen.rbf").string());
  redbloom::Filter filter =
      redbloom::Filter::open(where, redbloom::OpenOptions::create_missing(redbloom::size_filter(
                                        1000, 0.01, redbloom::Layout::blocked)));
  const auto decisions = redbloom::DecisionLog::beside(where);
  redbloom::KafkaDedupOptions options;
  options.input_brokers = options.output_brokers = "127.0.0.1:1";
  options.input_topic = "in";
  options.output_topic = "out";
  options.group = "g";
  options.timeout = std::chrono::milliseconds(1000);
  int status = 1;
  try {
    redbloom::KafkaDedup stage(filter, *decisions, options);
    std::puts("kafka consumer: reached a broker on 127.0.0.1:1?");
  } catch (const redbloom::StorageError& e) {
    const std::string what = e.what();
    status = what.find("cannot reach the Kafka brokers 127.0.0.1:1") != std::string::npos ? 0 : 1;
    std::printf("kafka consumer: %s (%s)\n", status == 0 ? "ok" : "wrong message", e.what());
  }
  std::filesystem::remove_all(dir);
  return status;
}
