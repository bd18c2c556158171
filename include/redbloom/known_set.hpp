// Orphan detection: a set of known items (S3 URLs, say) as a Bloom filter, optionally with
// an exact companion, and the question "which of these items are not known?" (orphans).
//
//   auto known = redbloom::KnownSet::create_redis(endpoint, "s3-urls",
//       redbloom::size_filter(10e6, 0.01, redbloom::Layout::classic), /*exact=*/true);
//   known.add(s3_listing, [](std::uint64_t done) { log("cached", done); });
//   std::vector<std::string> orphans = known.find_missing(vector_db_urls);  // exact
//
// Over a cuckoo filter (created with CuckooOptions) with its exact set, items can be removed
// safely: remove() forgets only items the set holds, so an item never added cannot take the
// fingerprint of one that was (the false negative a bare cuckoo remove risks).
//
// Bloom-only answers never call a known item missing, but miss each orphan with probability
// ~p (the filter's current rate); exact answers verify every item the filter calls present
// against the companion, so only a fingerprint collision (stats().false_match_probability per
// query, ~1e-13 at 1e7 items) can hide an orphan. Not thread-safe; one per thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <ranges>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "redbloom/exact_set.hpp"
#include "redbloom/filter.hpp"

namespace redbloom {

// Adds items to `filter` and its companion `exact` in the order that keeps answers right and
// removes safe, for any writer that keeps both (KnownSet, add --exact, a journal's replay).
// A Bloom filter: the companion first (the filter never holds an item it lacks), then the
// filter; newly_added gets the filter's answers. A cuckoo filter: the items new to the
// companion get a copy each (FilterBackend::insert; two items sharing a fingerprint then hold a
// copy each, so removing one never takes the other's), the filter first (a crash leaves a
// stale copy, never an entry without one); newly_added gets the companion's answers. Returns
// the number newly added (0 for a Bloom filter without newly_added: loaded without answers,
// cheaper on remote stores). A cuckoo filter's IncompleteWrite leaves the leading new items,
// [0, committed()) of them, in both.
std::size_t add_with_exact_set(Filter& filter, ExactSet& exact,
                               std::span<const std::string_view> items,
                               std::span<std::uint8_t> newly_added = {});

class KnownSet {
 public:
  enum class Mode { bloom_only, exact };
  // Called after each batch with the number of items processed so far.
  using Progress = std::function<void(std::uint64_t done)>;

  struct Stats {
    FilterInfo filter;
    std::uint64_t added = 0;            // items passed to add() by this object
    std::uint64_t checked = 0;          // items passed to find_missing()
    std::uint64_t missing = 0;          // of those, reported missing
    std::uint64_t verified = 0;         // checked against the companion (exact mode)
    std::uint64_t false_positives = 0;  // filter said present, companion said absent
    std::uint64_t removed = 0;          // items remove() forgot
    std::uint64_t refused = 0;          // items remove() refused: the companion lacked them
    std::uint64_t left_in_filter = 0;   // of the removed, copies left (RemoveResult)
    bool has_exact = false;
    std::uint64_t exact_entries = 0;
    std::uint64_t exact_bytes = 0;
    double false_match_probability = 0;  // per exact query
  };

  // `exact` may be null (Bloom-only).
  KnownSet(Filter filter, std::unique_ptr<ExactSet> exact);

  // The filter (and with `exact` its companion) at any location (location.hpp): a file, one
  // Redis server, several, or a cluster.
  static KnownSet create(const Location& location, const FilterParams& params, bool exact,
                         bool overwrite = false);
  // The same with a cuckoo filter (cuckoo.hpp), whose items remove() can forget.
  static KnownSet create(const Location& location, const CuckooOptions& cuckoo, bool exact,
                         bool overwrite = false);
  static KnownSet open(const Location& location, bool exact);
  static KnownSet create_file(const std::string& path, const FilterParams& params, bool exact,
                              bool overwrite = false);
  static KnownSet open_file(const std::string& path, bool exact);
  static KnownSet create_redis(const RedisEndpoint& endpoint, const std::string& name,
                               const FilterParams& params, bool exact, bool overwrite = false);
  static KnownSet open_redis(const RedisEndpoint& endpoint, const std::string& name, bool exact);

  // Adds a batch: to the companion first (so the filter never holds an item the companion
  // lacks), then to the filter in bulk; over a cuckoo filter as add_with_exact_set adds.
  void add_batch(std::span<const std::string_view> items);

  struct RemoveResult {
    std::uint64_t removed = 0;  // held by the companion: gone from it and from the filter
    std::uint64_t refused = 0;  // not held (never added, removed before, repeated in the batch)
    // Of the removed, those whose copy stayed in a growing filter because several of its links
    // hold their fingerprint (FilterBackend::remove_known): stale, a false positive each.
    std::uint64_t left_in_filter = 0;
  };
  // Forgets the items the companion holds, from it and then from the filter (a copy that
  // could be another item's stays: left_in_filter); refuses (and counts) the others, which the
  // filter never sees. removed, if not empty (size >=
  // items.size()), gets 1 for each item forgotten. Needs a cuckoo filter with its companion
  // (InvalidArgument otherwise, before anything changes; a Bloom filter refuses as
  // Filter::remove does).
  RemoveResult remove(std::span<const std::string_view> items,
                      std::span<std::uint8_t> removed = {});
  // missing[i] = 1 iff item i is not known (by `mode`). Returns the number missing. Exact mode
  // needs a companion (InvalidArgument otherwise).
  std::size_t missing_batch(std::span<const std::string_view> items,
                            std::span<std::uint8_t> missing, Mode mode);

  // Adds every item of any input range of strings or string views, in batches.
  template <std::ranges::input_range Items>
  void add(Items&& items, const Progress& progress = {}) {
    for_each_batch(items, progress,
                   [&](std::span<const std::string_view> batch) { add_batch(batch); });
  }
  // The items not known, in input order.
  template <std::ranges::input_range Items>
  std::vector<std::string> find_missing(Items&& items, Mode mode, const Progress& progress = {}) {
    std::vector<std::string> out;
    std::vector<std::uint8_t> missing;
    for_each_batch(items, progress, [&](std::span<const std::string_view> batch) {
      missing.resize(batch.size());
      missing_batch(batch, missing, mode);
      for (std::size_t i = 0; i < batch.size(); ++i) {
        if (missing[i]) out.emplace_back(batch[i]);
      }
    });
    return out;
  }
  std::vector<std::string> find_missing(std::span<const std::string_view> items) {
    return find_missing(items, exact_ ? Mode::exact : Mode::bloom_only);
  }

  // `measure_storage` = false skips the exact set's storage_bytes() (one MEMORY USAGE per
  // bucket key in Redis: seconds for a large set) and leaves exact_bytes at 0.
  [[nodiscard]] Stats stats(bool measure_storage = true) const;
  // Empties the filter and the companion (the same parameters stay).
  void clear();
  void flush();

  [[nodiscard]] Filter& filter() noexcept { return filter_; }
  [[nodiscard]] bool has_exact() const noexcept { return exact_ != nullptr; }

 private:
  // Large enough that a Redis companion is read and appended to once per bucket per batch.
  static constexpr std::size_t kBatch = std::size_t{1} << 18;

  template <class Items, class Apply>
  void for_each_batch(Items&& items, const Progress& progress, Apply&& apply) {
    // Copies when the range yields temporaries, or is input-only (istream_view hands out a
    // reference to one cached string that the next item overwrites); reserved so that views
    // into it stay valid. The elements of a forward range outlive the loop.
    constexpr bool by_reference = std::ranges::forward_range<Items> &&
                                  std::is_lvalue_reference_v<std::ranges::range_reference_t<Items>>;
    std::vector<std::string> owned;
    if constexpr (!by_reference) owned.reserve(kBatch);
    std::vector<std::string_view> batch;
    std::uint64_t done = 0;
    auto run = [&] {
      apply(std::span<const std::string_view>(batch));
      done += batch.size();
      batch.clear();
      owned.clear();
      if (progress) progress(done);
    };
    for (auto&& item : items) {
      if constexpr (by_reference) {
        batch.emplace_back(item);
      } else {
        batch.emplace_back(owned.emplace_back(item));
      }
      if (batch.size() >= kBatch) run();
    }
    if (!batch.empty()) run();
  }

  Filter filter_;
  std::unique_ptr<ExactSet> exact_;
  std::uint64_t added_ = 0;
  std::uint64_t checked_ = 0;
  std::uint64_t missing_ = 0;
  std::uint64_t verified_ = 0;
  std::uint64_t false_positives_ = 0;
  std::uint64_t removed_ = 0;
  std::uint64_t refused_ = 0;
  std::uint64_t left_in_filter_ = 0;
};

}  // namespace redbloom
