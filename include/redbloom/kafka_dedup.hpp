// Dedup of a Kafka topic into another (`redbloom dedup --from kafka://... --to kafka://...`):
// reads the topic with a consumer group, produces the first record of each item to the other
// topic, then commits the input offsets. librdkafka (Debian's librdkafka-dev) does the Kafka
// work; link redbloom::kafka.
//
// Per round, holding the filter's round lock (DecisionLog::RoundLock: stages sharing the
// filter decide in turns), for each partition's batch: the records not covered by the
// partition's decision record are tested against the filter (without setting bits); the items
// tested new (the round intent: added for this stage by the next lock holder if it dies before
// adding them) and the new decision record (which offsets are first seen, replayed ones
// included) are stored durably; the items are added (the filter's atomic test-and-set): one
// that a writer outside the lock added meanwhile is a duplicate after all, and the record is
// stored again without it. Then the lock is released and the first-seen records are produced.
// When every record of the round is acknowledged by the brokers (the next round's records are
// read meanwhile, not decided), the offsets are committed. A crash anywhere leaves either nothing
// decided (the records are tested again: their bits were not set) or a decision record, from
// which a restarted stage, or the group member that takes the partition over, produces the
// batch again without testing it. So no first-seen record is lost; a crash repeats at most the
// records produced and not yet committed (and, if it falls between a batch's add and its
// record's second store, the items a writer outside the lock had added meanwhile). With a
// transactional id, each round's records and its offsets go in one Kafka transaction instead
// (produce, send the offsets, commit), so a read_committed consumer sees each round's records once.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "redbloom/decision_log.hpp"
#include "redbloom/filter.hpp"
#include "redbloom/record_key.hpp"

namespace redbloom {

class ExactSet;

// Where a first-seen record goes in the output topic: the partition number it had in the
// input (which the output must have), or the one the producer's partitioner picks from its
// Kafka key (librdkafka's default, consistent_random: a record without a key anywhere).
enum class KafkaOutputPartition { same, by_key };

struct KafkaDedupOptions {
  std::string input_brokers;  // "host:port,host:port"
  std::string input_topic;
  std::string output_brokers;
  std::string output_topic;
  std::string group;
  std::vector<std::pair<std::string, std::string>> properties;  // librdkafka's, for both sides
  std::size_t batch = 10000;                                    // records per round, at most
  KafkaOutputPartition output_partition = KafkaOutputPartition::same;
  bool kafka_key = false;                         // the item is the record's key
  std::optional<RecordKeySpec> record_key;        // else the item is the whole value
  OnMissingKey on_missing = OnMissingKey::error;  // a record without the item
  std::chrono::milliseconds decision_ttl{0};      // 0: decision records do not expire
  std::chrono::milliseconds timeout{30000};       // to reach the brokers, to deliver a round
  std::string transactional_id;                   // empty: idempotent producer, offsets committed
  // The filter's exact set, if it has one (exact_set_for_writing): every item the stage adds
  // goes to it first, so the filter never holds an item the set lacks. Not a cuckoo filter's.
  ExactSet* exact_set = nullptr;
  // Warnings (a broker error retried, a rebalance that refused a commit), and with `verbose`
  // librdkafka's own log lines. Empty: not reported.
  std::function<void(const std::string&)> on_warning;
  std::function<void(const std::string&)> on_log;
  bool verbose = false;
};

struct KafkaDedupCounts {
  std::uint64_t read = 0;
  std::uint64_t first_seen = 0;  // produced
  std::uint64_t duplicates = 0;
  std::uint64_t replayed = 0;  // decided by a decision record (produced again if first seen)
  // Tested new, then found added by another writer (a stage holding another partition with
  // the item) when their bits were set: duplicates, produced by that writer.
  std::uint64_t taken_by_others = 0;
  // Items a stage that died mid-round had decided first seen and not yet added, added for it
  // before this stage tested anything (that stage's replay produces them).
  std::uint64_t rolled_forward = 0;
  std::uint64_t skipped = 0;  // no key, --on-bad-record skip
  std::uint64_t passed = 0;   // no key, --on-bad-record pass: produced unfiltered
  std::uint64_t rounds = 0;
  std::uint64_t errors = 0;   // broker errors librdkafka reported (and retried)
  std::uint64_t aborted = 0;  // transactions aborted, their rounds read again
};

struct KafkaPartitionLag {
  int partition = 0;
  std::int64_t lag = -1;  // -1: not known yet
};

class KafkaDedup {
 public:
  // Connects and joins the group. Throws StorageError when the brokers cannot be reached in
  // `timeout`, InvalidArgument for a property librdkafka refuses or an input topic that does
  // not exist.
  KafkaDedup(Filter& filter, DecisionLog& decisions, KafkaDedupOptions options);
  ~KafkaDedup();
  KafkaDedup(const KafkaDedup&) = delete;
  KafkaDedup& operator=(const KafkaDedup&) = delete;

  // One round: waits up to `wait` for records, then decides, produces and commits them.
  // Returns the number of records read. Throws StorageError when the brokers refuse or do not
  // acknowledge the output (nothing of the round is committed), InvalidArgument for a record
  // without an item under OnMissingKey::error (after committing the records before it).
  std::size_t round(std::chrono::milliseconds wait);
  // Leaves the group, so that the others take its partitions over at once.
  void close();

  // round() threw because a record has no item (OnMissingKey::error).
  [[nodiscard]] bool stopped_at_missing_item() const noexcept;
  [[nodiscard]] const KafkaDedupCounts& counts() const noexcept;
  // Per assigned partition: the high watermark minus the next offset to decide.
  [[nodiscard]] std::vector<KafkaPartitionLag> lag() const;

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace redbloom
