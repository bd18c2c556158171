#include "redbloom/kafka_dedup.hpp"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <map>
#include <random>
#include <span>
#include <unordered_set>
#include <utility>

#include "jobs/kafka_decision_record.hpp"
#include "jobs/kafka_round_intent.hpp"
#include "redbloom/error.hpp"
#include "redbloom/exact_set.hpp"

namespace redbloom {
namespace {

struct HandleDeleter {
  void operator()(rd_kafka_t* handle) const noexcept { rd_kafka_destroy(handle); }
};
struct MessageDeleter {
  void operator()(rd_kafka_message_t* message) const noexcept { rd_kafka_message_destroy(message); }
};
struct ListDeleter {
  void operator()(rd_kafka_topic_partition_list_t* list) const noexcept {
    rd_kafka_topic_partition_list_destroy(list);
  }
};
using Handle = std::unique_ptr<rd_kafka_t, HandleDeleter>;
using Message = std::unique_ptr<rd_kafka_message_t, MessageDeleter>;
using PartitionList = std::unique_ptr<rd_kafka_topic_partition_list_t, ListDeleter>;

void set(rd_kafka_conf_t* conf, const std::string& name, const std::string& value) {
  char error[512];
  if (rd_kafka_conf_set(conf, name.c_str(), value.c_str(), error, sizeof error) !=
      RD_KAFKA_CONF_OK) {
    rd_kafka_conf_destroy(conf);
    throw InvalidArgument("librdkafka property " + name + "=" + value + ": " + error);
  }
}

// A topic of `handle` exists on the brokers; returns its number of partitions. Waits up to
// `timeout` to reach them. Asks for every topic's metadata: a request naming the topic may
// make a broker create it.
int check_topic(rd_kafka_t* handle, const std::string& brokers, const std::string& topic,
                const char* option, std::chrono::milliseconds timeout) {
  const rd_kafka_metadata_t* metadata = nullptr;
  const rd_kafka_resp_err_t err =
      rd_kafka_metadata(handle, 1, nullptr, &metadata, static_cast<int>(timeout.count()));
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    throw StorageError(std::string(option) + ": cannot reach the Kafka brokers " + brokers +
                       " in " + std::to_string(timeout.count() / 1000) +
                       " s: " + rd_kafka_err2str(err));
  }
  rd_kafka_resp_err_t topic_err = RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
  int partitions = 0;
  for (int i = 0; i < metadata->topic_cnt; ++i) {
    if (topic == metadata->topics[i].topic) {
      topic_err = metadata->topics[i].err;
      partitions = metadata->topics[i].partition_cnt;
    }
  }
  rd_kafka_metadata_destroy(metadata);
  if (topic_err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    throw InvalidArgument(std::string(option) + ": topic '" + topic + "' on " + brokers + ": " +
                          rd_kafka_err2str(topic_err));
  }
  return partitions;
}

// Errors of a consumed record that end the stage: the topic is gone or not ours to read.
bool ends_the_stage(rd_kafka_resp_err_t err) {
  return err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
         err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED ||
         err == RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED || err == RD_KAFKA_RESP_ERR__FATAL;
}

// Commit errors that mean the partitions changed owner: the next owner replays the batch.
bool lost_partitions(rd_kafka_resp_err_t err) {
  return err == RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS ||
         err == RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION ||
         err == RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID || err == RD_KAFKA_RESP_ERR__STATE;
}

// How long a Redis round lock lasts unless kept: how long a stage killed on another machine
// holds up the others (one killed here is noticed at once).
constexpr std::chrono::milliseconds kRoundLockLife{10000};

}  // namespace

struct KafkaDedup::State {
  struct Partition {
    bool loaded = false;  // the decision record was read since the partition was assigned
    std::optional<DecisionRecord> record;
    // The next offset to read, once known (from a decided batch or the committed offset):
    // the consumer's position stays unknown until a record of the partition arrives.
    std::int64_t next = -1;
  };

  Filter& filter;
  DecisionLog& decisions;
  KafkaDedupOptions options;
  std::optional<RecordKeyExtractor> extractor;
  Handle consumer;
  Handle producer;
  std::map<int, Partition> partitions;       // assigned ones
  std::map<int, std::vector<Message>> held;  // read, not yet decided
  std::size_t held_count = 0;
  KafkaDedupCounts counts;
  std::uint64_t delivery_errors = 0;
  std::string delivery_error;
  std::string stop_error;  // a record without a key stopped the stage
  bool closed = false;
  std::mt19937_64 round_ids{std::random_device{}()};

  State(Filter& f, DecisionLog& d, KafkaDedupOptions o)
      : filter(f), decisions(d), options(std::move(o)) {}

  void warn(const std::string& text) const {
    if (options.on_warning) options.on_warning(text);
  }
  void log(const std::string& text) const {
    if (options.on_log) options.on_log(text);
  }

  [[nodiscard]] std::string decision_key(int partition) const {
    return "kafka/" + options.group + "/" + options.input_topic + "/" + std::to_string(partition);
  }

  static void on_rebalance(rd_kafka_t* handle, rd_kafka_resp_err_t err,
                           rd_kafka_topic_partition_list_t* list, void* opaque) {
    auto& state = *static_cast<State*>(opaque);
    const bool cooperative = std::strcmp(rd_kafka_rebalance_protocol(handle), "COOPERATIVE") == 0;
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
      for (int i = 0; i < list->cnt; ++i) state.partitions[list->elems[i].partition] = {};
      if (cooperative) {
        if (rd_kafka_error_t* e = rd_kafka_incremental_assign(handle, list)) {
          rd_kafka_error_destroy(e);
        }
      } else {
        rd_kafka_assign(handle, list);
      }
      return;
    }
    // Revoked (or lost): records read and not decided are dropped, uncommitted, for the next
    // owner; a batch is never half done here, since rounds decide between polls.
    for (int i = 0; i < list->cnt; ++i) {
      const int partition = list->elems[i].partition;
      if (auto found = state.held.find(partition); found != state.held.end()) {
        state.held_count -= found->second.size();
        state.held.erase(found);
      }
      state.partitions.erase(partition);
    }
    if (cooperative) {
      if (rd_kafka_error_t* e = rd_kafka_incremental_unassign(handle, list)) {
        rd_kafka_error_destroy(e);
      }
    } else {
      rd_kafka_assign(handle, nullptr);
    }
  }

  // librdkafka's own log lines (connection attempts, retries) only with --verbose: what ends
  // the stage is reported by the stage itself.
  static void on_log(const rd_kafka_t* handle, int level, const char* facility, const char* text) {
    const auto& state = *static_cast<const State*>(rd_kafka_opaque(handle));
    if (state.options.verbose && level <= 5) {
      state.log(std::string("kafka ") + rd_kafka_name(handle) + " " + facility + ": " + text);
    }
  }
  static void on_error(rd_kafka_t* handle, int, const char* reason, void*) {
    auto& state = *static_cast<State*>(rd_kafka_opaque(handle));
    ++state.counts.errors;
    if (state.options.verbose)
      state.log(std::string("kafka ") + rd_kafka_name(handle) + ": " + reason);
  }

  static void on_delivery(rd_kafka_t*, const rd_kafka_message_t* message, void* opaque) {
    if (message->err == RD_KAFKA_RESP_ERR_NO_ERROR) return;
    auto& state = *static_cast<State*>(opaque);
    if (state.delivery_errors++ == 0) state.delivery_error = rd_kafka_err2str(message->err);
  }

  // `defaults` are set before the user's -X properties, which may change them.
  rd_kafka_conf_t* config(const std::string& brokers,
                          std::initializer_list<std::pair<const char*, const char*>> defaults) {
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    set(conf, "bootstrap.servers", brokers);
    set(conf, "log_level", "3");
    for (const auto& [name, value] : defaults) set(conf, name, value);
    for (const auto& [name, value] : options.properties) set(conf, name, value);
    rd_kafka_conf_set_opaque(conf, this);
    rd_kafka_conf_set_log_cb(conf, &State::on_log);
    rd_kafka_conf_set_error_cb(conf, &State::on_error);
    return conf;
  }

  void connect() {
    char error[512];
    // librdkafka's default (100000) lets the fetch queue run dry while the stage holds a
    // round and reads the next one ahead, so the consumer sat idle between fetches; the
    // queue stays bounded by queued.max.messages.kbytes (64 MiB by default).
    rd_kafka_conf_t* conf = config(options.input_brokers, {{"queued.min.messages", "1000000"}});
    set(conf, "group.id", options.group);
    set(conf, "enable.auto.commit", "false");
    set(conf, "enable.auto.offset.store", "false");
    set(conf, "auto.offset.reset", "earliest");
    rd_kafka_conf_set_rebalance_cb(conf, &State::on_rebalance);
    consumer.reset(rd_kafka_new(RD_KAFKA_CONSUMER, conf, error, sizeof error));
    if (!consumer) {
      rd_kafka_conf_destroy(conf);
      throw InvalidArgument(std::string("input: ") + error);
    }
    rd_kafka_poll_set_consumer(consumer.get());

    conf = config(options.output_brokers, {});
    // Retries never duplicate or reorder a record within a partition.
    set(conf, "enable.idempotence", "true");
    if (!options.transactional_id.empty()) {
      set(conf, "transactional.id", options.transactional_id);
    }
    rd_kafka_conf_set_dr_msg_cb(conf, &State::on_delivery);
    producer.reset(rd_kafka_new(RD_KAFKA_PRODUCER, conf, error, sizeof error));
    if (!producer) {
      rd_kafka_conf_destroy(conf);
      throw InvalidArgument(std::string("output: ") + error);
    }

    const int in = check_topic(consumer.get(), options.input_brokers, options.input_topic, "input",
                               options.timeout);
    const int out = check_topic(producer.get(), options.output_brokers, options.output_topic,
                                "output", options.timeout);
    // A record of input partition p goes to output partition p: every round would fail on a
    // partition the output does not have.
    if (options.output_partition == KafkaOutputPartition::same && out < in) {
      throw InvalidArgument("output: topic '" + options.output_topic + "' has " +
                            std::to_string(out) + " partitions, fewer than the input's " +
                            std::to_string(in) +
                            ", so a record cannot keep its partition number: let the producer "
                            "pick one by the record's key instead (--to-partition key)");
    }
    if (!options.transactional_id.empty()) {
      // Fences an earlier producer of this id (a killed stage) and aborts its open transaction.
      if (rd_kafka_error_t* e = rd_kafka_init_transactions(
              producer.get(), static_cast<int>(options.timeout.count()))) {
        const std::string what = rd_kafka_error_string(e);
        rd_kafka_error_destroy(e);
        throw StorageError("transactional id " + options.transactional_id +
                           ": cannot start transactions on " + options.output_brokers + ": " +
                           what);
      }
    }
    const PartitionList topics(rd_kafka_topic_partition_list_new(1));
    rd_kafka_topic_partition_list_add(topics.get(), options.input_topic.c_str(),
                                      RD_KAFKA_PARTITION_UA);
    if (const rd_kafka_resp_err_t err = rd_kafka_subscribe(consumer.get(), topics.get())) {
      throw StorageError("input: cannot subscribe to '" + options.input_topic +
                         "': " + rd_kafka_err2str(err));
    }
  }

  void throw_if_fatal(rd_kafka_t* handle, const char* side) {
    char error[512];
    if (rd_kafka_fatal_error(handle, error, sizeof error) != RD_KAFKA_RESP_ERR_NO_ERROR) {
      throw StorageError(std::string(side) + ": " + error);
    }
  }

  // Reads up to the batch size: waits `wait` for the first record, then takes what has come.
  void gather(std::chrono::milliseconds wait) {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (held_count < options.batch) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      const int timeout = held_count != 0 ? 0 : static_cast<int>(std::max<long>(left.count(), 0));
      Message message(rd_kafka_consumer_poll(consumer.get(), timeout));
      if (!message) {
        if (held_count != 0 || left.count() <= 0) return;
        continue;
      }
      if (message->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) continue;
      if (message->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        const std::string what = rd_kafka_message_errstr(message.get());
        if (ends_the_stage(message->err)) {
          throw StorageError("input: topic '" + options.input_topic + "': " + what);
        }
        warn("input: " + what + " (retrying)");
        continue;
      }
      // Records of a partition this stage no longer holds are not its to decide.
      if (!partitions.contains(message->partition)) continue;
      held[message->partition].push_back(std::move(message));
      ++held_count;
    }
  }

  // The item of each record (a view into it or into the extractor), and whether it has one.
  void items_of(const std::vector<Message>& batch, std::vector<std::string_view>& items,
                std::vector<std::uint8_t>& has_item) {
    items.clear();
    has_item.assign(batch.size(), 1);
    for (const Message& m : batch) {
      if (options.kafka_key) {
        items.emplace_back(static_cast<const char*>(m->key), m->key_len);
        if (m->key == nullptr) has_item[items.size() - 1] = 0;
      } else {
        items.emplace_back(static_cast<const char*>(m->payload), m->len);
      }
    }
    if (!extractor) return;
    std::vector<std::string_view> keys;
    std::vector<RecordKeyStatus> statuses;
    extractor->extract_all(items, keys, statuses);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      has_item[i] = statuses[i] == RecordKeyStatus::ok ? 1 : 0;
    }
    items = std::move(keys);
  }

  // With OnMissingKey::error, the records before the first one without a key that no
  // decision record covers (stop_error then names it); else all of them.
  std::size_t cut_at_bad_record(int partition, const std::vector<Message>& batch,
                                const std::vector<std::uint8_t>& has_item,
                                const DecisionRecord* old) {
    if (options.on_missing != OnMissingKey::error) return batch.size();
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (has_item[i] != 0 || (old != nullptr && old->covers(batch[i]->offset))) continue;
      stop_error = "record " + std::to_string(batch[i]->offset) + " of partition " +
                   std::to_string(partition) + " of topic '" + options.input_topic + "' has " +
                   (options.kafka_key ? "no Kafka key"
                    : extractor       ? "no key in its value"
                                      : "no value") +
                   "; the records before it are done and committed";
      return i;
    }
    return batch.size();
  }

  // The partition's decision record, read once after each assignment.
  void load_record(Partition& place, const std::string& key) {
    if (place.loaded) return;
    if (const std::optional<std::string> text = decisions.get(key)) {
      place.record = DecisionRecord::decode(*text);
    }
    place.loaded = true;
  }

  // Adds the items tested new. Other stages wait for the round lock, but a writer that takes
  // no lock (another program adding to the filter) may have added one since the test. The
  // filter's test-and-set is atomic, so exactly one finds it new; the others take it for a
  // duplicate and record that, so a replay does not produce it either. Unless this stage's
  // lock expired and the next holder added this round's items for it (its `intent` is gone):
  // then an item found added may be its own, and it keeps them all.
  void add_claimed(const std::string& key, const std::vector<Message>& batch,
                   std::span<const std::string_view> claimed,
                   std::span<const std::size_t> claimed_at, std::vector<std::uint8_t>& first_seen,
                   DecisionRecord& record, const std::string& intent) {
    std::vector<std::uint8_t> newly(claimed.size(), 0);
    filter.add_many(claimed, newly);
    const auto lost = static_cast<std::size_t>(std::count(newly.begin(), newly.end(), 0));
    if (lost == 0) return;
    if (decisions.get(std::string(RoundIntent::kKey)) != intent) {
      warn("this stage's round lock expired and another stage added its items for it: " +
           std::to_string(lost) +
           " items found added are produced, though another writer may have added some");
      return;
    }
    for (std::size_t j = 0; j < claimed.size(); ++j) {
      if (newly[j] != 0) continue;
      first_seen[claimed_at[j]] = 0;
      record.clear_first_seen(batch[claimed_at[j]]->offset);
    }
    counts.taken_by_others += lost;
    decisions.put(key, record.encode(), options.decision_ttl);
  }

  // A batch's decision made durable and its items added, in the order that makes it
  // replayable: the intent (what is to be added), the record, then the adds (`replayed`: items
  // a record decided before; `claimed`: those tested new), the exact set before the filter.
  void store_and_add(const std::string& key, bool store_record, const std::vector<Message>& batch,
                     std::span<const std::string_view> replayed,
                     std::span<const std::string_view> claimed,
                     std::span<const std::size_t> claimed_at, std::vector<std::uint8_t>& first_seen,
                     DecisionRecord& record) {
    // What is to be added, before the record: from here, if this stage dies before its add,
    // the next holder of the round lock adds the items for it (roll_forward) before it tests.
    std::string intent;
    if (!claimed.empty()) {
      intent = RoundIntent{record.round(), key, {claimed.begin(), claimed.end()}}.encode();
      decisions.put(std::string(RoundIntent::kKey), intent, std::chrono::milliseconds(0));
    }
    // The decision is durable before any bit is set: from here a crash replays it.
    if (store_record) {
      decisions.put(key, record.encode(), options.decision_ttl);
    }
    if (options.exact_set != nullptr) {
      // The exact set first, as every add to a filter with one: the filter never holds more.
      (void)options.exact_set->add(replayed);
      (void)options.exact_set->add(claimed);
    }
    if (!replayed.empty()) filter.load_many(replayed);
    if (!claimed.empty()) {
      add_claimed(key, batch, claimed, claimed_at, first_seen, record, intent);
      decisions.erase(std::string(RoundIntent::kKey), intent);
    }
  }

  // Decides one partition's batch, in the order that makes it replayable: test, store the
  // decision record, test-and-set. Appends the records to produce to `out` and returns the
  // offset to commit (one past the last record decided; -1: none).
  std::int64_t decide(int partition, std::vector<Message>& batch,
                      std::vector<const rd_kafka_message_t*>& out) {
    Partition& place = partitions[partition];
    const std::string key = decision_key(partition);
    load_record(place, key);
    std::vector<std::string_view> items;
    std::vector<std::uint8_t> has_item;
    items_of(batch, items, has_item);

    const std::int64_t first = batch.front()->offset;
    const DecisionRecord* old =
        place.record && place.record->last() >= first ? &*place.record : nullptr;
    const std::size_t count = cut_at_bad_record(partition, batch, has_item, old);
    if (count == 0) return -1;
    const std::int64_t last = batch[count - 1]->offset;

    // Tested: the records with a key that no decision record covers.
    std::vector<std::string_view> tested;
    for (std::size_t i = 0; i < count; ++i) {
      if (has_item[i] != 0 && !(old != nullptr && old->covers(batch[i]->offset))) {
        tested.push_back(items[i]);
      }
    }
    std::vector<std::uint8_t> present(tested.size(), 0);
    if (!tested.empty()) filter.contains_many(tested, present);

    DecisionRecord record(first, old != nullptr ? std::max(last, old->last()) : last);
    record.set_round(round_ids());
    std::vector<std::uint8_t> first_seen(count, 0);
    std::unordered_set<std::string_view> seen;
    std::vector<std::string_view> replayed;  // first seen by the record: their bits set again
    std::vector<std::string_view> claimed;   // first seen by the test: set, and answered
    std::vector<std::size_t> claimed_at;
    std::size_t next_tested = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const std::int64_t offset = batch[i]->offset;
      if (old != nullptr && old->covers(offset)) {
        first_seen[i] = old->first_seen(offset) ? 1 : 0;
        ++counts.replayed;
        if (first_seen[i] != 0 && has_item[i] != 0 && seen.insert(items[i]).second) {
          replayed.push_back(items[i]);
        }
      } else if (has_item[i] == 0) {
        first_seen[i] = options.on_missing == OnMissingKey::pass ? 1 : 0;
        ++(first_seen[i] != 0 ? counts.passed : counts.skipped);
      } else if (present[next_tested++] == 0 && seen.insert(items[i]).second) {
        first_seen[i] = 1;
        claimed.push_back(items[i]);
        claimed_at.push_back(i);
      }
      if (first_seen[i] != 0) record.mark_first_seen(offset);
    }
    // What a decision record decided past this batch stays decided.
    if (old != nullptr) {
      for (std::int64_t offset = last + 1; offset <= old->last(); ++offset) {
        if (old->first_seen(offset)) record.mark_first_seen(offset);
      }
    }
    const bool store_record = !tested.empty() || count < batch.size() || old == nullptr;
    store_and_add(key, store_record, batch, replayed, claimed, claimed_at, first_seen, record);
    for (std::size_t i = 0; i < count; ++i) {
      if (first_seen[i] != 0) {
        out.push_back(batch[i].get());
        ++counts.first_seen;
      } else if (has_item[i] != 0) {
        ++counts.duplicates;
      }
    }
    counts.read += count;
    place.record = std::move(record);
    place.next = last + 1;
    return last + 1;
  }

  void produce(const rd_kafka_message_t* m) {
    rd_kafka_headers_t* headers = nullptr;
    if (rd_kafka_headers_t* in = nullptr; rd_kafka_message_headers(m, &in) == 0 && in != nullptr) {
      headers = rd_kafka_headers_copy(in);
    }
    rd_kafka_vu_t values[6];
    std::size_t n = 0;
    values[n].vtype = RD_KAFKA_VTYPE_TOPIC;
    values[n++].u.cstr = options.output_topic.c_str();
    values[n].vtype = RD_KAFKA_VTYPE_PARTITION;
    values[n++].u.i32 = options.output_partition == KafkaOutputPartition::same
                            ? m->partition
                            : RD_KAFKA_PARTITION_UA;  // the producer's partitioner, by key
    values[n].vtype = RD_KAFKA_VTYPE_VALUE;
    values[n].u.mem.ptr = m->payload;
    values[n++].u.mem.size = m->len;
    values[n].vtype = RD_KAFKA_VTYPE_KEY;
    values[n].u.mem.ptr = m->key;
    values[n++].u.mem.size = m->key_len;
    values[n].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
    values[n++].u.i32 = RD_KAFKA_MSG_F_COPY;
    if (headers != nullptr) {
      values[n].vtype = RD_KAFKA_VTYPE_HEADERS;
      values[n++].u.headers = headers;
    }
    for (;;) {
      rd_kafka_error_t* error = rd_kafka_produceva(producer.get(), values, n);
      if (error == nullptr) return;
      const rd_kafka_resp_err_t code = rd_kafka_error_code(error);
      const std::string what = rd_kafka_error_string(error);
      rd_kafka_error_destroy(error);
      if (code == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        rd_kafka_poll(producer.get(), 50);
        continue;
      }
      if (headers != nullptr) rd_kafka_headers_destroy(headers);
      throw StorageError("output: cannot produce to '" + options.output_topic + "' partition " +
                         std::to_string(m->partition) + ": " + what +
                         "; nothing of this round is committed");
    }
  }

  // Waits for the brokers to acknowledge the round, reading the next round's records
  // meanwhile; those are decided only once this round is committed.
  void deliver(std::size_t produced) {
    const auto deadline = std::chrono::steady_clock::now() + options.timeout;
    while (rd_kafka_outq_len(producer.get()) > 0 && std::chrono::steady_clock::now() < deadline) {
      rd_kafka_poll(producer.get(), 1);
      if (held_count < options.batch) gather(std::chrono::milliseconds(0));
    }
    const rd_kafka_resp_err_t err = rd_kafka_outq_len(producer.get()) > 0
                                        ? RD_KAFKA_RESP_ERR__TIMED_OUT
                                        : RD_KAFKA_RESP_ERR_NO_ERROR;
    throw_if_fatal(producer.get(), "output");
    if (delivery_errors != 0 || err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      const std::string why = delivery_errors != 0 ? delivery_error : rd_kafka_err2str(err);
      throw StorageError("output: the brokers did not acknowledge " +
                         std::to_string(delivery_errors != 0 ? delivery_errors : produced) +
                         " of the " + std::to_string(produced) + " records produced to '" +
                         options.output_topic + "': " + why +
                         "; their input offsets are not committed");
    }
  }

  [[nodiscard]] PartitionList offset_list(
      const std::vector<std::pair<int, std::int64_t>>& offsets) const {
    PartitionList list(rd_kafka_topic_partition_list_new(static_cast<int>(offsets.size())));
    for (const auto& [partition, offset] : offsets) {
      rd_kafka_topic_partition_list_add(list.get(), options.input_topic.c_str(), partition)
          ->offset = offset;
    }
    return list;
  }

  void begin_transaction() {
    if (rd_kafka_error_t* e = rd_kafka_begin_transaction(producer.get())) {
      const std::string what = rd_kafka_error_string(e);
      rd_kafka_error_destroy(e);
      throw StorageError("output: cannot begin a transaction: " + what);
    }
  }

  // Sends the round's offsets to its transaction and commits it: the records and the offsets
  // become visible together. A transaction the brokers make us abort (a rebalance fenced the
  // offsets, a record not delivered) is aborted and its partitions are read again from the
  // round's first offsets, which their decision records cover. Fatal errors (another
  // producer took the transactional id) end the stage with nothing of the round committed.
  void commit_transaction(const std::vector<std::pair<int, std::int64_t>>& offsets,
                          const std::vector<std::pair<int, std::int64_t>>& starts) {
    const int timeout = static_cast<int>(options.timeout.count());
    rd_kafka_error_t* e = nullptr;
    if (!offsets.empty()) {
      const PartitionList list = offset_list(offsets);
      rd_kafka_consumer_group_metadata_t* group = rd_kafka_consumer_group_metadata(consumer.get());
      e = rd_kafka_send_offsets_to_transaction(producer.get(), list.get(), group, timeout);
      rd_kafka_consumer_group_metadata_destroy(group);
    }
    for (int attempt = 0; e == nullptr; ++attempt) {
      e = rd_kafka_commit_transaction(producer.get(), timeout);
      if (e == nullptr) return;
      if (rd_kafka_error_is_retriable(e) != 0 && attempt < 3) {
        rd_kafka_error_destroy(e);
        e = nullptr;
      }
    }
    const std::string what = rd_kafka_error_string(e);
    const bool abortable = rd_kafka_error_txn_requires_abort(e) != 0;
    rd_kafka_error_destroy(e);
    if (!abortable) {
      throw StorageError("output: cannot commit the round's transaction: " + what +
                         "; nothing of the round is committed (a restart replays it)");
    }
    if (rd_kafka_error_t* a = rd_kafka_abort_transaction(producer.get(), timeout)) {
      const std::string why = rd_kafka_error_string(a);
      rd_kafka_error_destroy(a);
      throw StorageError("output: cannot abort the round's transaction (" + what + "): " + why +
                         "; nothing of the round is committed (a restart replays it)");
    }
    ++counts.aborted;
    warn("output: the round's transaction was aborted (" + what + "); its records are read again");
    // Reading on past the aborted round would commit offsets beyond records never committed:
    // when the rewind fails, the stage ends instead, and its restart replays the round.
    const PartitionList rewind = offset_list(starts);
    std::string failed;
    if (rd_kafka_error_t* s = rd_kafka_seek_partitions(consumer.get(), rewind.get(), timeout)) {
      failed = rd_kafka_error_string(s);
      rd_kafka_error_destroy(s);
    }
    for (int i = 0; i < rewind->cnt && failed.empty(); ++i) {
      if (rewind->elems[i].err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        failed = rd_kafka_err2str(rewind->elems[i].err);
      }
    }
    if (!failed.empty()) {
      throw StorageError("input: cannot read the aborted round again: " + failed +
                         "; nothing of it is committed (a restart replays it)");
    }
    delivery_errors = 0;
  }

  void commit(const std::vector<std::pair<int, std::int64_t>>& offsets) {
    if (offsets.empty()) return;
    const PartitionList list = offset_list(offsets);
    const rd_kafka_resp_err_t err = rd_kafka_commit(consumer.get(), list.get(), 0);
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return;
    if (lost_partitions(err)) {
      warn(std::string("the group rebalanced before the offsets were committed (") +
           rd_kafka_err2str(err) +
           "): the partitions' next owner produces the round's records again");
      return;
    }
    throw StorageError("input: cannot commit the offsets of group '" + options.group +
                       "': " + rd_kafka_err2str(err) +
                       " (the round's records were produced; a restart produces them again)");
  }
};

KafkaDedup::KafkaDedup(Filter& filter, DecisionLog& decisions, KafkaDedupOptions options)
    : state_(std::make_unique<State>(filter, decisions, std::move(options))) {
  if (state_->options.exact_set != nullptr && filter.shape().cuckoo) {
    // Two writers of one item would both find it new to the set (add_with_exact_set's rule).
    throw InvalidArgument(
        "the filter is a cuckoo filter with an exact set: a stage cannot produce each item "
        "once over it; use a Bloom filter, or a cuckoo filter without an exact set");
  }
  if (state_->options.record_key) state_->extractor.emplace(*state_->options.record_key);
  state_->connect();
}

KafkaDedup::~KafkaDedup() {
  try {
    close();
  } catch (...) {  // NOLINT: a destructor cannot report; close() is called explicitly first
  }
}

std::size_t KafkaDedup::round(std::chrono::milliseconds wait) {
  State& s = *state_;
  s.throw_if_fatal(s.consumer.get(), "input");
  s.gather(wait);
  if (s.held_count == 0) return 0;
  // The round's records; `held` gathers the next round's while this one is delivered.
  std::map<int, std::vector<Message>> batches = std::move(s.held);
  s.held.clear();
  s.held_count = 0;
  std::vector<const rd_kafka_message_t*> out;
  std::vector<std::pair<int, std::int64_t>> offsets;
  std::vector<std::pair<int, std::int64_t>> starts;
  const std::uint64_t read_before = s.counts.read;
  // Stages sharing the filter decide in turns (DecisionLog::RoundLock), so no other stage adds
  // between a batch's test and its test-and-set: the record stored between them is exact.
  const std::chrono::milliseconds lock_wait = std::max(s.options.timeout, 3 * kRoundLockLife);
  std::unique_ptr<DecisionLog::RoundLock> lock = s.decisions.lock_round(lock_wait, kRoundLockLife);
  s.counts.rolled_forward += roll_forward(s.filter, s.decisions, s.options.exact_set);
  for (auto& [partition, batch] : batches) {
    if (!lock->keep()) {
      s.warn("the filter's round lock expired while this stage held it (it stalled for over " +
             std::to_string(kRoundLockLife.count() / 1000) +
             " s); another stage may have added meanwhile: the test-and-set still decides");
      lock.reset();
      lock = s.decisions.lock_round(lock_wait, kRoundLockLife);
      s.counts.rolled_forward += roll_forward(s.filter, s.decisions, s.options.exact_set);
    }
    const std::int64_t next = s.decide(partition, batch, out);
    if (next >= 0) {
      offsets.emplace_back(partition, next);
      starts.emplace_back(partition, batch.front()->offset);
    }
    if (!s.stop_error.empty()) break;
  }
  lock.reset();
  const bool transactional = !s.options.transactional_id.empty();
  if (transactional) s.begin_transaction();
  for (const rd_kafka_message_t* m : out) s.produce(m);
  if (transactional) {
    s.commit_transaction(offsets, starts);
  } else {
    s.deliver(out.size());
    s.commit(offsets);
  }
  ++s.counts.rounds;
  if (!s.stop_error.empty()) throw InvalidArgument(s.stop_error);
  return static_cast<std::size_t>(s.counts.read - read_before);
}

void KafkaDedup::close() {
  State& s = *state_;
  if (s.closed) return;
  s.closed = true;
  s.held.clear();
  s.held_count = 0;
  rd_kafka_consumer_close(s.consumer.get());
  rd_kafka_flush(s.producer.get(), static_cast<int>(s.options.timeout.count()));
}

bool KafkaDedup::stopped_at_missing_item() const noexcept {
  return !state_->stop_error.empty();
}

const KafkaDedupCounts& KafkaDedup::counts() const noexcept {
  return state_->counts;
}

std::vector<KafkaPartitionLag> KafkaDedup::lag() const {
  std::vector<KafkaPartitionLag> lags;
  rd_kafka_topic_partition_list_t* assigned = nullptr;
  if (rd_kafka_assignment(state_->consumer.get(), &assigned) != 0 || assigned == nullptr) {
    return lags;
  }
  const PartitionList list(assigned);
  rd_kafka_position(state_->consumer.get(), list.get());
  // Partitions with nothing read yet: their committed offsets, asked once.
  const PartitionList unknown(rd_kafka_topic_partition_list_new(list->cnt));
  for (int i = 0; i < list->cnt; ++i) {
    const rd_kafka_topic_partition_t& p = list->elems[i];
    const auto place = state_->partitions.find(p.partition);
    if (p.offset < 0 && place != state_->partitions.end() && place->second.next < 0) {
      rd_kafka_topic_partition_list_add(unknown.get(), p.topic, p.partition);
    }
  }
  if (unknown->cnt != 0 && rd_kafka_committed(state_->consumer.get(), unknown.get(), 1000) ==
                               RD_KAFKA_RESP_ERR_NO_ERROR) {
    for (int i = 0; i < unknown->cnt; ++i) {
      const rd_kafka_topic_partition_t& p = unknown->elems[i];
      std::int64_t low = 0;
      std::int64_t high = 0;
      std::int64_t next = p.offset;
      // No committed offset: the stage starts at the earliest record (auto.offset.reset).
      if (next < 0 && rd_kafka_get_watermark_offsets(state_->consumer.get(), p.topic, p.partition,
                                                     &low, &high) == 0) {
        next = low;
      }
      if (const auto place = state_->partitions.find(p.partition);
          place != state_->partitions.end() && p.err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        place->second.next = next;
      }
    }
  }
  for (int i = 0; i < list->cnt; ++i) {
    const rd_kafka_topic_partition_t& p = list->elems[i];
    std::int64_t next = p.offset;
    if (const auto place = state_->partitions.find(p.partition);
        next < 0 && place != state_->partitions.end()) {
      next = place->second.next;
    }
    // Records read ahead for the next round are not decided yet: the lag counts them.
    if (const auto held = state_->held.find(p.partition);
        held != state_->held.end() && !held->second.empty()) {
      next = held->second.front()->offset;
    }
    std::int64_t low = 0;
    std::int64_t high = 0;
    KafkaPartitionLag lag{p.partition, -1};
    if (rd_kafka_get_watermark_offsets(state_->consumer.get(), p.topic, p.partition, &low, &high) ==
            0 &&
        high >= 0 && next >= 0) {
      lag.lag = std::max<std::int64_t>(high - next, 0);
    }
    lags.push_back(lag);
  }
  return lags;
}

}  // namespace redbloom
