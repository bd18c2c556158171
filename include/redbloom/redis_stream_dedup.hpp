// Exactly-once dedup of a Redis stream into another, through a redbloom filter on the same
// server or Cluster (`redbloom dedup --from redis-stream://...`).
//
// Entries are read with a consumer group. Each batch is then one Lua script on the server, so
// it happens whole or not at all, whatever the client does (a SIGKILL, a lost connection):
//   1. checks, before any write, of everything that could refuse a later call: the input is a
//      stream and the group exists, the output a stream or absent with room left in its ids
//      (XADD * raises once its last id is the last possible one), the server's user may run
//      every call (ACL), every partition of the batch has its full length (its bits and seal);
//      an entry no longer pending (a batch retried after its reply was lost, or taken over by
//      another consumer that finished it) is left alone, so no entry is handled twice;
//   2. test-and-set of the keys of the pending entries: the same bits redbloom's own writes
//      set, BITFIELD with positions the client hashed, or RB.PARTADD where every master has
//      redbloom's module (the module hashes);
//   3. XACK of each pending entry;
//   4. XADD to the output of each entry whose key was new (and, with OnMissingKey::pass, of
//      each entry without the key), all its fields, in input order.
// Redis keeps a script's writes when a later call raises, so the checks of 1 are what makes a
// refused batch leave nothing behind. Should a call after the first write refuse all the same,
// commit() says what was done and which entries were not copied.
// A restarted stage first takes its own pending entries (XREADGROUP history), then those idle
// at least `min_idle` in other consumers (XAUTOCLAIM: a stage that died under another consumer
// name), then new ones. So each key reaches the output once, apart from the filter's false
// positives: a key never seen whose bits were all set already is taken for a repeat.
//
// A windowed or growing filter's own add (the script of its adds) does step 2, over every live
// slice and link, inside the same script. When it must first be answered by the client (a
// slice to declare, links to describe) or cannot go on (a full filter), the script
// acknowledges and copies exactly the entries whose keys it set; commit() acts and sends the
// others again, or throws with them still pending.
//
// On a Cluster one script reaches one slot: the input, the output and the filter's partition
// keys must share it (a filter of one partition, streams named with its hash tag); anything
// else is refused before reading, naming the slots.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "redbloom/record_key.hpp"
#include "redbloom/redis_endpoint.hpp"

namespace redbloom {

class ExactSet;
class Filter;

// True when the two endpoints reach one keyspace (one server, or nodes of one Cluster).
[[nodiscard]] bool same_keyspace(const RedisEndpoint& a, const RedisEndpoint& b);

struct RedisStreamDedupOptions {
  std::string input;      // the stream read
  std::string group;      // its consumer group
  std::string consumer;   // this stage's name in the group
  std::string output;     // the stream written
  std::string key_field;  // the field whose value is the key
  OnMissingKey on_missing = OnMissingKey::error;
  std::uint64_t maxlen = 0;                   // XADD MAXLEN ~ maxlen on the output; 0: no trimming
  std::chrono::milliseconds min_idle{30000};  // before another consumer's entry is taken over
  // While a batch's script runs, read the next new entries on a second connection (they are
  // then pending for this consumer, as any entry read; finish() handles them at a stop).
  bool read_ahead = false;
  // The filter's exact set, if it has one (exact_set_for_writing): a batch's keys go to it
  // before the batch's script, so the filter never holds a key the set lacks.
  ExactSet* exact_set = nullptr;
};

// What one batch did (counts of entries).
struct RedisStreamDedupBatch {
  std::uint64_t entries = 0;      // in the batch, handled or not
  std::uint64_t unique = 0;       // key new: copied to the output
  std::uint64_t duplicates = 0;   // key seen before: acked only
  std::uint64_t skipped = 0;      // without the key, acked only (OnMissingKey::skip)
  std::uint64_t passed = 0;       // without the key, copied unfiltered (OnMissingKey::pass)
  std::uint64_t deleted = 0;      // pending but gone from the input stream: acked only
  std::uint64_t done_before = 0;  // no longer pending when the script ran: untouched
  std::uint64_t recovered = 0;    // entries of this batch that had been delivered before
  // OnMissingKey::error: the batch was cut before this entry, which has no key; it stays
  // pending. Empty otherwise.
  std::string stopped_at;
};

// The group's backlog on the input stream, as XINFO GROUPS reports it.
struct RedisStreamBacklog {
  std::uint64_t pending = 0;         // delivered to a consumer of the group, not acknowledged
  std::optional<std::uint64_t> lag;  // entries not yet delivered to the group; none when the
                                     // server cannot tell (entries deleted, Redis before 7)
};

class RedisStreamDedup {
 public:
  // `filter` must be a plain, windowed or growing filter on one server or a Cluster whose
  // keyspace also holds the streams (`endpoint` reaches them). Throws InvalidArgument for
  // another kind of filter (sharded over servers, made by BF.RESERVE) and when the streams and
  // the filter cannot be in one script (another server, other Cluster slots), FormatError for
  // a plain filter whose metadata is not a plain filter's.
  RedisStreamDedup(const Filter& filter, const RedisEndpoint& endpoint,
                   RedisStreamDedupOptions options);
  ~RedisStreamDedup();
  RedisStreamDedup(const RedisStreamDedup&) = delete;
  RedisStreamDedup& operator=(const RedisStreamDedup&) = delete;

  // XGROUP CREATE input group 0 [MKSTREAM]: a new group reads the stream from its start. True
  // if it was made, false if it existed.
  bool create_group(bool make_stream);
  // Reads the next batch of at most `count` entries: own pending ones first, then others' idle
  // ones (at the start and every min_idle), then new ones, waiting up to `block` for those.
  // Returns the number read (0: nothing arrived in `block`).
  std::size_t read(std::size_t count, std::chrono::milliseconds block);
  // Runs the script on the batch read. Throws StorageError when the server refuses it (the
  // batch's entries then stay pending: nothing of it happened), when a call after its first
  // write refused (the message names the entries not copied), or when the connection fails
  // (the batch happened whole or not at all; a restarted stage finds out which).
  RedisStreamDedupBatch commit();
  // With read_ahead: commits the entries read ahead during the last commit(), if any, reading
  // no more; call it at a stop so that nothing read is left pending.
  RedisStreamDedupBatch finish();
  // The group's pending entries and lag (one XINFO GROUPS); nullopt once the group is gone.
  [[nodiscard]] std::optional<RedisStreamBacklog> backlog();
  // "module redbloom (RB.PARTADD)" or "Lua script (BITFIELD)", for the summary.
  [[nodiscard]] std::string engine() const;
  // The slot everything is in (0 on one server), for messages.
  [[nodiscard]] std::uint16_t slot() const noexcept;

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace redbloom
