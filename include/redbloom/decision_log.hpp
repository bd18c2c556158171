// Decision records: small durable records a dedup stage keeps beside its filter, so that a
// batch whose items were tested is, after a crash, replayed from what was decided instead of
// tested again (a second test would take the batch's own first-seen items for repeats).
//
// Beside a filter file FILE they are files in the directory FILE.decisions/, each replaced
// atomically (written, fsynced, renamed, the directory fsynced) before put() returns. Beside a
// Redis filter NAME they are keys NAME:decisions:KEY on the filter's server (its first server
// when sharded; in a Redis Cluster the node serving the key's slot, the write then waiting
// for a replica when the master has one), written with SET before put() returns, so they
// persist as the server persists. A filter in memory has no place for them (InvalidArgument).
//
// Beside them is the round lock that stages sharing the filter take turns on (RoundLock).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "redbloom/location.hpp"

namespace redbloom {

class DecisionLog {
 public:
  // Held while a stage tests a round's items, stores their decision records and sets their
  // bits: stages sharing the filter take turns, so none adds an item between another's test
  // and set, and each record says exactly what its set found new. Released when destroyed.
  // Beside a file: an flock on FILE.decisions/.lock, which the kernel drops with a killed
  // holder. On Redis: the key NAME:decisions-lock (SET NX with a lifetime), which a killed
  // holder leaves until its lifetime ends.
  class RoundLock {
   public:
    virtual ~RoundLock() = default;
    // Keeps a Redis lock alive in a long round. False when it had expired (the holder
    // stalled for longer than its lifetime): another stage may have added meanwhile.
    [[nodiscard]] virtual bool keep() = 0;
  };

  // The records beside the filter at `filter`.
  [[nodiscard]] static std::unique_ptr<DecisionLog> beside(const Location& filter);

  virtual ~DecisionLog() = default;
  // Stores `record` under `key` (any bytes), replacing what was there, durably before it
  // returns. A positive `ttl` lets Redis expire it; a file record stays until replaced.
  virtual void put(const std::string& key, std::string_view record,
                   std::chrono::milliseconds ttl) = 0;
  // The record under `key`, if any.
  [[nodiscard]] virtual std::optional<std::string> get(const std::string& key) = 0;
  // Removes the record under `key` if it still holds `only_if` (one a later holder of the
  // round lock replaced stays), durably before it returns.
  virtual void erase(const std::string& key, std::string_view only_if) = 0;
  // Waits up to `wait` for the round lock, then throws StorageError. `life`: how long a
  // Redis lock lasts unless kept, so a killed holder delays the others at most that long.
  [[nodiscard]] virtual std::unique_ptr<RoundLock> lock_round(std::chrono::milliseconds wait,
                                                              std::chrono::milliseconds life) = 0;
  // Removes every record (the filter is being dropped); returns how many there were.
  virtual std::size_t remove_all() = 0;
  // Where the records are, for messages: "urls.rbf.decisions/" or "urls:decisions:* on redis
  // 127.0.0.1:6379".
  [[nodiscard]] virtual std::string describe() const = 0;
};

}  // namespace redbloom
