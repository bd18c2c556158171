// The exact companion of a filter: a compact set of fingerprints of the items added, used to
// verify the items a Bloom filter calls present (the "exact Redis SET" of orphan finders, at a
// fraction of its memory). Only items the filter calls present touch it, so it is consulted for the
// known items and the filter's false positives, never for the bulk of absent ones.
//
// A fingerprint is XXH3-64 of the item with its own seed, independent of the 128-bit hash that
// places the filter's bits (so the filter's false positives are not more likely to also match
// here). A query falsely matches with probability (fingerprints it is compared with) / 2^b:
//   file:  all n fingerprints, b = 64 bits      -> n / 2^64      (1e7 items: 5.4e-13)
//   Redis: one bucket of ~n / buckets, b = 48   -> (n / B) / 2^48 (1e7 items, B = 2^18: 1.4e-13)
// Storage: 8 bytes per item in the file (and 16 per item removed); in Redis 6 bytes per item in
// bucket strings plus the strings' allocation slack and per-key overhead (measured in the README).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "redbloom/location.hpp"
#include "redbloom/redis_endpoint.hpp"

namespace redbloom {

class Filter;

class ExactSet {
 public:
  virtual ~ExactSet() = default;
  ExactSet() = default;
  ExactSet(const ExactSet&) = delete;
  ExactSet& operator=(const ExactSet&) = delete;

  // Adds the items that are not in the set yet (each at most once, even if repeated in the
  // batch). Returns how many were added. If it throws, some of the items may be stored (in
  // Redis, the buckets whose script ran); adding them again is safe and does not count them
  // twice.
  virtual std::size_t add(std::span<const std::string_view> items) = 0;
  // present[i] = 1 iff item i was added (up to the false-match probability).
  virtual void contains(std::span<const std::string_view> items,
                        std::span<std::uint8_t> present) = 0;

  // Forgets the items the set holds: removed[i] = 1 (if `removed` is not empty; its size must
  // then be >= items.size()) iff item i was held and is no longer (an item repeated in the batch
  // is removed once). Returns how many were removed. Atomic per batch in a file, per bucket in
  // Redis: if it throws, the items of the buckets whose script ran are removed.
  virtual std::size_t remove(std::span<const std::string_view> items,
                             std::span<std::uint8_t> removed = {}) = 0;
  // Removes every fingerprint.
  virtual void clear() = 0;
  // Makes the added fingerprints durable (fsync for the file; nothing for Redis).
  virtual void flush() {}

  // Fingerprints stored.
  [[nodiscard]] virtual std::uint64_t entries() const = 0;
  // Bytes the set occupies where it lives (file size; Redis MEMORY USAGE of its keys).
  [[nodiscard]] virtual std::uint64_t storage_bytes() const = 0;
  // The probability that one query for an absent item matches, at the current size.
  [[nodiscard]] virtual double false_match_probability() const = 0;
  [[nodiscard]] virtual std::string location() const = 0;
  // The creation time (ns) of the filter this set was made for: a set whose filter was
  // replaced since describes other items (0: not recorded, as by sets made without a filter).
  [[nodiscard]] virtual std::uint64_t filter_id() const { return 0; }

  // For copying a set between stores: the fingerprints as stored, in batches, and the bits of
  // them that are kept (a file keeps all 64; Redis the top bucket bits and the low 48).
  [[nodiscard]] virtual std::uint64_t fingerprint_mask() const = 0;
  virtual void for_each_fingerprint(
      const std::function<void(std::span<const std::uint64_t>)>& batch) const = 0;
  // Adds fingerprints (each masked to this set's mask); returns how many were new.
  virtual std::size_t add_fingerprints(std::span<const std::uint64_t> fingerprints) = 0;
  // remove() for fingerprints (each masked to this set's mask).
  virtual std::size_t remove_fingerprints(std::span<const std::uint64_t> fingerprints,
                                          std::span<std::uint8_t> removed = {}) = 0;
};

// What `redbloom info` shows of a companion.
struct ExactSetSummary {
  std::string location;
  std::uint64_t entries = 0;
  std::uint64_t storage_bytes = 0;
  double false_match_probability = 0;
};
[[nodiscard]] inline ExactSetSummary summarize(const ExactSet& set) {
  return {set.location(), set.entries(), set.storage_bytes(), set.false_match_probability()};
}

// How a filter without an exact set gets one, worded once for every message. A filter that
// already holds items cannot take one (the items before it could never be verified): a new
// filter is built from the same source. `in_redis` and `name_or_path` name the filter as
// `redbloom load` does (--name NAME or -f PATH); `contents` unknown gives both ways.
enum class FilterContents { empty, holds_items, unknown };
[[nodiscard]] std::string how_to_get_exact_set(FilterContents contents, bool in_redis,
                                               const std::string& name_or_path);

// The companion of the filter file `filter_path`: `filter_path + ".exact"`. create() refuses an
// existing one unless `overwrite`; open() reads every fingerprint into memory (8 bytes each).
// Writers append under an exclusive lock; every object catches up with what others appended
// (or rereads the file after their clear) before it adds or answers.
// A new set is bound to the filter file at `filter_path` (its creation time), if there is one.
// Every record is checked against the header's checksum when read: damage is a FormatError.
// `mask`: the fingerprint bits it keeps (all, unless it receives a Redis set's).
[[nodiscard]] std::unique_ptr<ExactSet> create_file_exact_set(
    const std::string& filter_path, bool overwrite = false, std::uint64_t mask = ~std::uint64_t{0});
// `writable` = false opens it read-only (add() and clear() then fail): enough for lookups, and
// what a read-only file allows.
[[nodiscard]] std::unique_ptr<ExactSet> open_file_exact_set(const std::string& filter_path,
                                                            bool writable = true);
[[nodiscard]] bool file_exact_set_exists(const std::string& filter_path);
// summarize() of the file companion from its header and size alone (open() reads every
// fingerprint, 8 bytes each, into memory).
[[nodiscard]] ExactSetSummary summarize_file_exact_set(const std::string& filter_path);
void remove_file_exact_set(const std::string& filter_path);
// Removes the companion if it does not belong to the filter now at `filter_path` (a leftover of
// a filter that was deleted or replaced), checked under the companion's lock, so a companion
// another process just made for the current filter is never removed. True if one was removed.
bool remove_stale_file_exact_set(const std::string& filter_path);

// The companion of Redis filter NAME: metadata hash `NAME:exact` and bucket strings
// `NAME:exact:{NAME:x<b>}`. `expected_items` sizes the bucket count (a power of two, about 64
// fingerprints per bucket at that size).
// `filter_id`: the filter's creation time, recorded so that a set left from a replaced filter
// is known as such.
[[nodiscard]] std::unique_ptr<ExactSet> create_redis_exact_set(const RedisEndpoint& endpoint,
                                                               const std::string& name,
                                                               std::uint64_t expected_items,
                                                               bool overwrite = false,
                                                               std::uint64_t filter_id = 0);
// A set still being created by another process is waited for, up to `wait_for_creator`
// (IncompleteFilter after that).
[[nodiscard]] std::unique_ptr<ExactSet> open_redis_exact_set(
    const RedisEndpoint& endpoint, const std::string& name,
    std::chrono::milliseconds wait_for_creator = std::chrono::seconds(30));
[[nodiscard]] bool redis_exact_set_exists(const RedisEndpoint& endpoint, const std::string& name);
void drop_redis_exact_set(const RedisEndpoint& endpoint, const std::string& name);

// The companion of `filter` at `location` (location.hpp), wherever it lives: beside a filter
// file, or in Redis (for a sharded filter, on its first server). Memory filters have none. A
// set made for another filter (one since deleted or replaced) is a FormatError when opened.
[[nodiscard]] bool exact_set_exists(const Location& location);
[[nodiscard]] std::unique_ptr<ExactSet> open_exact_set(const Location& location,
                                                       const Filter& filter, bool writable = true);
// Sized for the filter's capacity and bound to it.
[[nodiscard]] std::unique_ptr<ExactSet> create_exact_set(const Location& location,
                                                         const Filter& filter,
                                                         bool overwrite = false);
void drop_exact_set(const Location& location);
// Removes a set left at `location` by another filter than `filter` (see
// remove_stale_file_exact_set); a set made for `filter` stays.
void drop_stale_exact_set(const Location& location, const Filter& filter);
// The companion a writer of the filter at `location` must keep up to date: the existing one,
// whether or not the writer asked for one (skipping it would leave it missing items, and exact
// answers wrong), else with `create` a new one sized for the filter's capacity. A new one is
// refused for a filter that already holds items: they could never be verified.
[[nodiscard]] std::unique_ptr<ExactSet> exact_set_for_writing(const Location& location,
                                                              const Filter& filter, bool create);
// What `redbloom info` shows of it; nullopt if there is none.
[[nodiscard]] std::optional<ExactSetSummary> exact_set_summary(const Location& location);

}  // namespace redbloom
