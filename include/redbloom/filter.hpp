// A Bloom filter: hashes items once, hands batches of hashes to its store. Start here.
//
//   auto filter = redbloom::Filter::open(redbloom::Location::parse("urls.rbf"),
//       redbloom::OpenOptions::create_missing(
//           redbloom::size_filter(1e6, 0.01, redbloom::Layout::blocked)));
//   bool is_new = filter.add("s3://bucket/a.pdf");       // test-and-set
//   bool maybe  = filter.contains("s3://bucket/b.pdf");  // false => certainly absent
//
// The same call takes "redis://cache:6379#urls", several servers or a redis+cluster:// URI
// (location.hpp). A Filter is not thread-safe; give each thread its own (several may open one
// filter, in one process or many).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "redbloom/cuckoo.hpp"
#include "redbloom/file_access.hpp"
#include "redbloom/filter_backend.hpp"
#include "redbloom/location.hpp"
#include "redbloom/params.hpp"
#include "redbloom/redis_endpoint.hpp"
#include "redbloom/store.hpp"
#include "redbloom/stream.hpp"

namespace redbloom {

class FileStore;

// How Filter::open treats a filter that is missing, still being created, or made differently.
struct OpenOptions {
  // read_only for lookups; exclusive_write for the sole writer of a file (file_access.hpp).
  FileAccess access = FileAccess::read_write;
  // Create a missing filter with `params` (else a missing filter is NotFound).
  bool create_if_missing = false;
  std::optional<FilterParams> params;
  // An existing filter must have exactly `params` (FilterExists otherwise, naming both).
  bool require_params = false;
  // How long to wait for another process that is still creating the filter (a Redis filter is
  // visible while its partitions are being allocated) before IncompleteFilter.
  std::chrono::milliseconds wait_for_creator{30000};
  // A windowed or growing filter to create when missing (stream.hpp), instead of `params`;
  // with require_params an existing one must have these options.
  std::optional<StreamOptions> stream;
  // The time windows follow (stream.hpp); empty: the real clock.
  Clock clock;
  // A cuckoo filter to create when missing (cuckoo.hpp), instead of `params`; with
  // require_params an existing one must have these options.
  std::optional<CuckooOptions> cuckoo;

  // Lookups only.
  [[nodiscard]] static OpenOptions read_only() {
    OpenOptions options;
    options.access = FileAccess::read_only;
    return options;
  }
  // Creates the filter with `params` if it is missing; with `require_params`, an existing one
  // must have them too.
  [[nodiscard]] static OpenOptions create_missing(const FilterParams& params,
                                                  bool require_params = false) {
    OpenOptions options;
    options.create_if_missing = true;
    options.params = params;
    options.require_params = require_params;
    return options;
  }
  [[nodiscard]] static OpenOptions create_cuckoo(const CuckooOptions& cuckoo,
                                                 bool require_params = false) {
    OpenOptions options;
    options.create_if_missing = true;
    options.cuckoo = cuckoo;
    options.require_params = require_params;
    return options;
  }
  [[nodiscard]] static OpenOptions create_stream(const StreamOptions& stream,
                                                 bool require_params = false) {
    OpenOptions options;
    options.create_if_missing = true;
    options.stream = stream;
    options.require_params = require_params;
    return options;
  }
};

// What open or create did besides returning the filter.
struct OpenReport {
  bool created = false;
  // Things a user should know, e.g. a Redis server that may evict the filter's keys.
  std::vector<std::string> warnings;
};

struct FilterInfo {
  // What the filter was sized for (Filter::params).
  FilterParams params;
  // What the user asked for: plain parameters, or the stream options and each link's.
  FilterShape shape;
  std::string location;
  std::uint64_t set_bits = 0;
  double fill_ratio = 0;              // set_bits / m
  double estimated_items = 0;         // from the fill, by the layout's formula (sizing.hpp)
  double estimated_error_rate = 0;    // the rate expected at estimated_items
  std::uint64_t created_unix_ns = 0;  // 0 if the store does not record it
  std::uint64_t storage_bytes = 0;    // what the filter occupies where it lives
  // A windowed or growing filter: its live slices and links. Then set_bits and fill_ratio
  // cover the live links, estimated_items is their counted adds and estimated_error_rate the
  // compound rate now.
  std::optional<StreamInfo> stream;
  // A filter of a server's own Bloom engine (filter_backend.hpp), as its server answers now:
  // then params hold only the capacity and error rate, set_bits and fill_ratio are 0 and
  // estimated_items is the server's count of items inserted.
  std::optional<ServerFilterInfo> server_filter;
  // A cuckoo filter: its links now. Then set_bits and fill_ratio are 0, estimated_items is the
  // fingerprints stored and estimated_error_rate the links' sum at their fill.
  std::optional<CuckooInfo> cuckoo;
  // What does the per-item work on each server (Store::engines); empty for local filters.
  std::vector<std::string> engines;
};

class Filter {
 public:
  // A plain filter over one store (a custom one too).
  explicit Filter(std::unique_ptr<Store> store);
  // Any kind of filter over its backend (filter_backend.hpp).
  explicit Filter(std::unique_ptr<FilterBackend> backend);

  // Where a filter lives, in one call (location.hpp): opens it, creates it if asked, waits for
  // a concurrent creator, refuses other parameters if asked.
  [[nodiscard]] static Filter open(const Location& location, const OpenOptions& options = {},
                                   OpenReport* report = nullptr);
  // Creates a new, empty filter; FilterExists if there is one (unless `overwrite`).
  [[nodiscard]] static Filter create(const Location& location, const FilterParams& params,
                                     bool overwrite = false, OpenReport* report = nullptr);
  // The same for a windowed or growing filter (stream.hpp), whose windows follow `clock`.
  [[nodiscard]] static Filter create(const Location& location, const StreamOptions& stream,
                                     bool overwrite = false, OpenReport* report = nullptr,
                                     Clock clock = {});
  // The same for a cuckoo filter (cuckoo.hpp).
  [[nodiscard]] static Filter create(const Location& location, const CuckooOptions& cuckoo,
                                     bool overwrite = false, OpenReport* report = nullptr);
  [[nodiscard]] static bool exists(const Location& location);
  // Removes the filter, only after checking that what is there is one, and then its exact set.
  static void drop(const Location& location);

  [[nodiscard]] static Filter in_memory(const FilterParams& params);
  [[nodiscard]] static Filter create_file(const std::string& path, const FilterParams& params,
                                          bool overwrite = false);
  [[nodiscard]] static Filter open_file(const std::string& path,
                                        FileAccess access = FileAccess::read_write);

  // A filter in Redis (docs/redis.md): created empty, or opened after checking it.
  [[nodiscard]] static Filter create_redis(const RedisEndpoint& endpoint, const std::string& name,
                                           const FilterParams& params, bool overwrite = false);
  [[nodiscard]] static Filter open_redis(const RedisEndpoint& endpoint, const std::string& name);
  // The same over several servers (docs/redis.md); one server gives a plain Redis filter.
  [[nodiscard]] static Filter create_redis(const std::vector<RedisEndpoint>& servers,
                                           const std::string& name, const FilterParams& params,
                                           bool overwrite = false);
  [[nodiscard]] static Filter open_redis(const std::vector<RedisEndpoint>& servers,
                                         const std::string& name);

  // Adds the item; true iff it was not (by the filter's answer) present before.
  bool add(std::string_view item) { return add_one_(item); }
  // Adds every item in order; newly_added, if not empty, receives one flag per item (its size
  // must then be >= items.size()). Returns the number of items newly added.
  std::size_t add_many(std::span<const std::string_view> items,
                       std::span<std::uint8_t> newly_added = {});
  // Adds every item without per-item answers (cheaper on remote stores).
  void load_many(std::span<const std::string_view> items);

  // False means certainly absent; true means present with false-positive probability ~ p.
  [[nodiscard]] bool contains(std::string_view item) const { return contains_one_(item); }
  // Batched, with prefetching; returns the number of items reported present.
  std::size_t contains_many(std::span<const std::string_view> items,
                            std::span<std::uint8_t> present = {}) const;

  // A cuckoo filter forgets the item (one copy of its fingerprint); true if it held one.
  // InvalidArgument for a Bloom filter. Removing an item never added (or, in a filter that has
  // grown, rarely one that was) can make another item absent: KnownSet::remove, with the exact
  // set, never does (known_set.hpp).
  bool remove(std::string_view item);
  // Each item in order; removed, if not empty, receives one flag per item. Returns how many
  // were removed.
  std::size_t remove_many(std::span<const std::string_view> items,
                          std::span<std::uint8_t> removed = {});
  // A cuckoo filter: how many copies of the item's fingerprint it holds (0: never added).
  [[nodiscard]] std::uint32_t count(std::string_view item) const;
  void count_many(std::span<const std::string_view> items, std::span<std::uint32_t> counts) const;

  // Lets add_many / load_many / contains_many use up to `threads` threads (default 1). Helps
  // large local batches out of cache (each core keeps its own misses in flight); blocked adds
  // stay on one thread. No effect on Redis filters.
  void use_threads(unsigned threads) { backend_->use_threads(threads); }

  [[nodiscard]] FilterInfo info() const;
  // The estimated item count from the fill of at most `sample_bytes` of the bits, spread over
  // the partitions (all of them when the filter is that small): a cheap check against the
  // capacity where info() would read every bit. Items spread uniformly over partitions and
  // blocks, so a 1 MiB sample is within about 0.1% of the whole filter's fill.
  [[nodiscard]] double estimate_items(std::uint64_t sample_bytes = std::uint64_t{1} << 20) const;
  void flush() { backend_->flush(); }

  // What the user asked for: a plain filter's parameters, or a windowed or growing filter's
  // options with each of its links' parameters.
  [[nodiscard]] const FilterShape& shape() const noexcept { return shape_; }
  // What the filter was sized for, one meaning for every kind: capacity and error_rate are the
  // user's (a plain filter's; a windowed or growing filter's items per window, or of its first
  // link, and the rate of the whole filter), layout, bits, hashes and partitions those of the
  // bitmap an item is first set in (a plain filter's; link 0, which every slice starts with).
  [[nodiscard]] const FilterParams& params() const noexcept { return params_; }
  // Everything about the filter as a whole: its kind, fill, where it lives, its links.
  [[nodiscard]] FilterBackend& backend() noexcept { return *backend_; }
  [[nodiscard]] const FilterBackend& backend() const noexcept { return *backend_; }
  // A plain filter's one bitmap; InvalidArgument for a windowed or growing filter, which has
  // one per link (backend().links()).
  [[nodiscard]] Store& store();
  [[nodiscard]] const Store& store() const;
  // How long opening the filter's exact set waits for another process still creating it: the
  // open options' wait_for_creator when Filter::open made this filter, else their default.
  [[nodiscard]] std::chrono::milliseconds wait_for_creator() const noexcept {
    return wait_for_creator_;
  }

 private:
  std::unique_ptr<FilterBackend> backend_;
  std::chrono::milliseconds wait_for_creator_ = OpenOptions{}.wait_for_creator;
  FilterShape shape_;
  FilterParams params_;
  // The store's one-item paths (store.hpp), called inline by add and contains.
  Store::OneItemCall contains_one_;
  Store::OneItemCall add_one_;
};

}  // namespace redbloom
