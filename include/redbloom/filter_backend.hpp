// What a Filter calls (filter.hpp): one interface for every kind of filter. A plain filter's
// backend works on one Store (store.hpp: one bitmap, the extension point for custom stores); a
// windowed or growing filter's works on its links, each a bitmap of its own, and also offers
// them link by link (StreamLinks) so that copies move them between stores.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "redbloom/cuckoo.hpp"
#include "redbloom/params.hpp"
#include "redbloom/store.hpp"
#include "redbloom/stream.hpp"

namespace redbloom {

class RedisStreamStore;

// A filter kept by a server's own Bloom engine: a key that BF.RESERVE / BF.ADD made (redbloom's
// module, RedisBloom, Redis 8, valkey-bloom), used through their BF.* commands instead of
// redbloom's bits, as that server answers BF.INFO.
struct ServerFilterInfo {
  std::string type;  // the key's TYPE: "redbloomF", "MBbloom--", "bloomfltr"
  std::string kind;  // for messages: "redbloom.so's BF filter (TYPE redbloomF)"
  std::uint64_t capacity = 0;
  std::uint64_t bytes = 0;                 // BF.INFO's Size
  std::uint64_t filters = 0;               // its sub-filters (it grows by stacking them)
  std::optional<std::uint64_t> items;      // items inserted, as the server counts them
  std::optional<std::uint64_t> expansion;  // nullopt: it does not grow
};

// A filter as its user asked for it (Filter::shape).
struct FilterShape {
  // A plain filter: its bitmap's parameters. Windowed or growing: link 0's, the link every
  // slice starts with (`links` has each one).
  FilterParams params;
  // A windowed or growing filter: the options it was made with (items per window or of the
  // first link, the rate of the whole filter, window, slices, growth, byte limit).
  std::optional<StreamOptions> stream;
  // A windowed or growing filter: every link a slice may hold, in order, each with its own
  // capacity and rate. Empty for a plain filter.
  std::vector<FilterParams> links;
  // A filter of a server's own Bloom engine: what its server said of it when it was opened.
  // Then `params` hold only the capacity and the error rate (0: the server does not say it):
  // the engine lays out its bits in its own way, which no FilterParams describe.
  std::optional<ServerFilterInfo> server_filter;
  // A cuckoo filter (cuckoo.hpp): its options. Then `params` hold only the capacity and the
  // error rate (and the partitions): its tables are no bitmap.
  std::optional<CuckooOptions> cuckoo;

  // redbloom's own bitmap, one for the whole filter (neither windowed, growing, a cuckoo filter
  // nor the engine's).
  [[nodiscard]] bool plain() const noexcept { return !stream && !server_filter && !cuckoo; }
  [[nodiscard]] bool windowed() const noexcept { return stream && stream->window_ns != 0; }
  [[nodiscard]] bool growing() const noexcept { return stream && stream->window_ns == 0; }
  // What the user sized it for: items (per window, or of the first link of a growing filter)
  // and the false-positive rate of the whole filter.
  [[nodiscard]] std::uint64_t capacity() const noexcept {
    return stream ? stream->capacity : cuckoo ? cuckoo->capacity : params.capacity;
  }
  [[nodiscard]] double error_rate() const noexcept {
    return stream ? stream->error_rate : cuckoo ? cuckoo->error_rate : params.error_rate;
  }
  // "windowed 10m in 4 slices ..." or the plain parameters (params.hpp).
  [[nodiscard]] std::string describe() const;
};

// One link of a cuckoo filter now, over its partitions.
struct CuckooLinkInfo {
  std::uint32_t link = 0;
  std::uint32_t fingerprint_bits = 0;
  std::uint64_t items = 0;     // fingerprints stored (counted over the tables)
  std::uint64_t capacity = 0;  // what it was sized for
  std::uint64_t bytes = 0;
  std::uint64_t partitions = 0;  // the partitions that have grown this link
  double error_rate_now = 0;     // its expected rate at `items`
};

struct CuckooInfo {
  CuckooOptions options;
  std::vector<CuckooLinkInfo> links;
  std::uint64_t items = 0;
  std::uint64_t bytes = 0;
  double error_rate_now = 0;  // the sum of the links' (a lookup tests each)
};

// One live slice of a windowed or growing filter, as a copy moves it (transfer.hpp). A slice
// keeps its number, so it retires at the same Unix time wherever it lives.
struct SliceCopy {
  std::int64_t slice = 0;  // Unix time / slice length; 0 without a window
  // Per link of the slice: when it was made (the earliest partition's, in Redis).
  std::vector<std::uint64_t> created_unix_ns;
  // Per partition: the adds that set a bit of each of its links. Partition p holds links
  // 0 .. items[p].size() - 1 of this slice (in Redis each partition grows on its own and may
  // hold none; a local filter's partitions all hold every link, its counts spread over them).
  std::vector<std::vector<std::uint64_t>> items;
};

// A windowed or growing filter link by link, for copies. Bytes are in Redis bit order, as a
// Store's (store.hpp), so links copy between stores verbatim.
class StreamLinks {
 public:
  virtual ~StreamLinks() = default;

  // The live slices now, oldest first.
  [[nodiscard]] virtual std::vector<SliceCopy> live_slices() const = 0;
  // Bytes [offset, offset + out.size()) of partition `partition` of link `link` of slice
  // `slice` (zeros where the partition does not hold that link). StorageError if the slice
  // went away meanwhile, other than by retiring.
  virtual void read_link(std::int64_t slice, std::uint32_t link, std::uint64_t partition,
                         std::uint64_t offset, std::span<std::uint8_t> out) const = 0;
  // A copy's target, empty and of the same options: makes `slices` with zeroed links, their
  // counts and creation times, retiring when their slice does. InvalidArgument if it already
  // holds a slice.
  virtual void restore_slices(std::span<const SliceCopy> slices) = 0;
  // Overwrites bytes of a link that restore_slices made.
  virtual void write_link(std::int64_t slice, std::uint32_t link, std::uint64_t partition,
                          std::uint64_t offset, std::span<const std::uint8_t> bytes) = 0;
};

// A cuckoo filter table by table, for copies. Bytes as the tables hold them (slots in Redis bit
// order), the same in every store, so tables copy between stores verbatim.
class CuckooTables {
 public:
  virtual ~CuckooTables() = default;
  // How many links each partition holds now.
  [[nodiscard]] virtual std::vector<std::uint32_t> link_counts() const = 0;
  // The whole table of link `link` of `partition`, read in one atomic step: kicks move
  // fingerprints inside a table, so a table read in pieces could miss one.
  [[nodiscard]] virtual std::vector<std::uint8_t> read_table(std::uint32_t partition,
                                                             std::uint32_t link) const = 0;
  // A copy's target: overwrites the table, growing the partition to it (with zeroed links)
  // first if it holds fewer links.
  virtual void write_table(std::uint32_t partition, std::uint32_t link,
                           std::span<const std::uint8_t> bytes) = 0;
};

class FilterBackend {
 public:
  virtual ~FilterBackend() = default;
  FilterBackend() = default;
  FilterBackend(const FilterBackend&) = delete;
  FilterBackend& operator=(const FilterBackend&) = delete;

  [[nodiscard]] virtual FilterShape shape() const = 0;

  // As Store::add, load and contains (store.hpp), over the whole filter: an add is atomic
  // across every link and slice; one that stops part-way throws IncompleteWrite (or
  // CapacityExceeded) with the leading items committed.
  virtual void add(std::span<const std::string_view> items,
                   std::span<std::uint8_t> newly_added) = 0;
  virtual void load(std::span<const std::string_view> items) = 0;
  virtual void contains(std::span<const std::string_view> items,
                        std::span<std::uint8_t> present) const = 0;
  // A cuckoo filter: clears one copy of each item's fingerprint, removed[i] = 1 when there was
  // one; atomic per batch as add is. InvalidArgument for a Bloom filter (it cannot forget).
  virtual void remove(std::span<const std::string_view> items, std::span<std::uint8_t> removed);
  // A cuckoo filter: stores one more copy of each item's fingerprint, held already or not (a
  // CF.ADD, where add is a CF.ADDNX), atomic per batch as add is. For the items new to an exact
  // set: items that share a fingerprint then each have a copy, so removing one (after the set
  // said it was added) never takes another's. InvalidArgument for a Bloom filter.
  virtual void insert(std::span<const std::string_view> items);
  // A cuckoo filter, for items an exact set held (each has a copy of its own, from insert):
  // clears an item's copy when one link alone holds its fingerprint; when several links do,
  // one may be another item's copy, so it is left (removed[i] = 0: a stale fingerprint, a
  // false positive, never another item made absent). The default counts first, then removes
  // the items counted once, in two steps; stores override it with one atomic step.
  virtual void remove_known(std::span<const std::string_view> items,
                            std::span<std::uint8_t> removed);
  // A cuckoo filter: the copies of each item's fingerprint (0 for one never added, or a false
  // positive's 1). InvalidArgument for a Bloom filter.
  virtual void count(std::span<const std::string_view> items,
                     std::span<std::uint32_t> counts) const;
  // A cuckoo filter's links now; nullopt for a Bloom filter.
  [[nodiscard]] virtual std::optional<CuckooInfo> cuckoo_info() const { return std::nullopt; }
  // A cuckoo filter's tables; nullptr for a Bloom filter.
  [[nodiscard]] virtual CuckooTables* cuckoo_tables() noexcept { return nullptr; }
  [[nodiscard]] virtual const CuckooTables* cuckoo_tables() const noexcept { return nullptr; }

  // One-item calls (Store::OneItemCall); the defaults go through the batch calls.
  [[nodiscard]] virtual Store::OneItemCall direct_contains_one() const;
  [[nodiscard]] virtual Store::OneItemCall direct_add_one();

  // As the Store's of the same names.
  [[nodiscard]] virtual std::size_t batch_items() const noexcept { return 1024; }
  [[nodiscard]] virtual std::size_t bulk_batch_items() const noexcept { return batch_items(); }
  virtual void use_threads(unsigned threads) { (void)threads; }

  // Over the live links of a windowed or growing filter.
  [[nodiscard]] virtual std::uint64_t count_set_bits() const = 0;
  [[nodiscard]] virtual std::uint64_t created_unix_ns() const { return 0; }
  [[nodiscard]] virtual std::uint64_t storage_bytes() const = 0;
  // A windowed or growing filter's slices and links now; nullopt for a plain filter.
  [[nodiscard]] virtual std::optional<StreamInfo> stream_info() const { return std::nullopt; }
  // A filter of a server's own Bloom engine: what its server says of it now (its item count
  // changes with every add); nullopt for redbloom's filters.
  [[nodiscard]] virtual std::optional<ServerFilterInfo> server_filter_info() const {
    return std::nullopt;
  }
  [[nodiscard]] virtual std::vector<std::string> engines() const { return {}; }
  virtual void flush() = 0;
  [[nodiscard]] virtual std::string location() const = 0;

  // A plain filter's one bitmap; nullptr for a windowed or growing filter, and for a filter of
  // a server's own Bloom engine (which has none of redbloom's).
  [[nodiscard]] virtual Store* bitmap() noexcept { return nullptr; }
  [[nodiscard]] virtual const Store* bitmap() const noexcept { return nullptr; }
  // A windowed or growing filter's links; nullptr for a plain filter.
  [[nodiscard]] virtual StreamLinks* links() noexcept { return nullptr; }
  [[nodiscard]] virtual const StreamLinks* links() const noexcept { return nullptr; }
  // A windowed or growing filter in Redis, for a job whose own server-side script writes its
  // keys (the Redis Streams stage); nullptr for any other filter.
  [[nodiscard]] virtual const RedisStreamStore* redis_stream_store() const noexcept {
    return nullptr;
  }
};

// A plain filter's backend: `store` (one bitmap, a custom store too) behind the interface.
[[nodiscard]] std::unique_ptr<FilterBackend> plain_backend(std::unique_ptr<Store> store);

}  // namespace redbloom
