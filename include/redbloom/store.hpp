// One bitmap and where its bits live (memory, a mapped file, Redis): a plain filter's whole
// filter, or one link of a windowed or growing filter (filter_backend.hpp composes those). The
// extension point for custom stores: Filter(std::make_unique<MyStore>(...)). A store works on
// batches of items, hashes them with hash_item() and places their bits as its parameters say
// (docs/design.md, "The bits"). Taking the items rather than their hashes lets a local store hash
// item i+D while item i's cache line is still on its way.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "redbloom/hash.hpp"
#include "redbloom/params.hpp"
#include "redbloom/redis_endpoint.hpp"

namespace redbloom {

// Where one Redis server or Cluster holds all of a filter's bits, under the filter's name.
struct RedisKeys {
  RedisEndpoint endpoint;
  std::string name;
};

class Store {
 public:
  virtual ~Store() = default;
  Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  [[nodiscard]] virtual const FilterParams& params() const noexcept = 0;

  // Sets the bits of every item, in order. newly_added[i] = 1 iff some bit of item i was 0
  // before (so the second of two equal items in one batch is not new). Each item's
  // test-and-set is atomic with respect to every other writer of the same filter: of several
  // concurrent writers adding one item, exactly one sees it as new.
  virtual void add(std::span<const std::string_view> items,
                   std::span<std::uint8_t> newly_added) = 0;

  // Sets the bits of every item; no per-item answers (the bulk path).
  virtual void load(std::span<const std::string_view> items) = 0;

  // present[i] = 1 iff all bits of item i are set.
  virtual void contains(std::span<const std::string_view> items,
                        std::span<std::uint8_t> present) const = 0;

  // One item (Filter::add / Filter::contains). The defaults use the batch calls; local stores
  // override them with a path that has no batch to set up.
  virtual bool add_one(std::string_view item) {
    std::uint8_t newly = 0;
    add({&item, 1}, {&newly, 1});
    return newly != 0;
  }
  [[nodiscard]] virtual bool contains_one(std::string_view item) const {
    std::uint8_t present = 0;
    contains({&item, 1}, {&present, 1});
    return present != 0;
  }

  // A plain function for one-item calls, which Filter::add / contains call inline. Stores whose
  // one-item path needs no per-call set-up (no lock, no I/O) offer their kernel itself; the
  // defaults lead to the virtual functions above. Why it matters: out of cache, one-item calls
  // overlap their misses only as far as the CPU's reorder window holds consecutive calls, so
  // the cost of a lookup grows with its instruction count, and a virtual call plus three
  // forwarding frames were a quarter of them.
  struct OneItemCall {
    bool (*function)(const void* context, std::string_view item);
    const void* context;
    bool operator()(std::string_view item) const { return function(context, item); }
  };
  // Same answers as contains_one / add_one.
  [[nodiscard]] virtual OneItemCall direct_contains_one() const;
  [[nodiscard]] virtual OneItemCall direct_add_one();

  // Number of 1 bits in the whole filter.
  [[nodiscard]] virtual std::uint64_t count_set_bits() const = 0;

  // Raw bits: bytes [offset, offset + size) of partition `partition`, in Redis bit order (the
  // same bytes in every store, so filters copy between stores verbatim). Out-of-range requests
  // throw InvalidArgument. write_bytes overwrites; it is for copying whole filters.
  virtual void read_bytes(std::uint64_t partition, std::uint64_t offset,
                          std::span<std::uint8_t> out) const = 0;
  virtual void write_bytes(std::uint64_t partition, std::uint64_t offset,
                           std::span<const std::uint8_t> bytes) = 0;

  // When the filter was created (ns since the Unix epoch; 0 if not recorded) and the bytes it
  // occupies where it lives (file size, Redis MEMORY USAGE of its keys).
  [[nodiscard]] virtual std::uint64_t created_unix_ns() const { return 0; }
  [[nodiscard]] virtual std::uint64_t storage_bytes() const = 0;

  // Items per call the store works best with (Filter splits larger batches): enough to
  // amortise a lock or a network round trip, few enough to bound a lock hold or a request.
  [[nodiscard]] virtual std::size_t batch_items() const noexcept { return 1024; }
  // The same for the calls with no per-item write answers, set() and test(): a remote store
  // takes the largest batches it is given, to choose the cheapest way to move them.
  [[nodiscard]] virtual std::size_t bulk_batch_items() const noexcept { return batch_items(); }

  // Lets batch calls use up to `threads` threads (1, the default: the calling thread only).
  // Local stores split large batches over them; remote stores already
  // pipeline their batches and ignore it.
  virtual void use_threads(unsigned threads) { (void)threads; }

  // For a stage that writes the filter's bits in its own server-side script
  // (redis_stream_dedup.hpp): where they are, when they are redbloom's bits and one Redis server or
  // Cluster holds them all; nullopt for every other store (local, sharded over servers).
  [[nodiscard]] virtual std::optional<RedisKeys> redis_keys() const { return std::nullopt; }

  // What does the per-item work, one line per server ("redis 127.0.0.1:6379: module redbloom
  // (RB.VERSION 2): RB.PARTADD / RB.PARTEXISTS"); empty for stores in this process.
  [[nodiscard]] virtual std::vector<std::string> engines() const { return {}; }

  // Makes every completed write durable (msync for a file).
  virtual void flush() = 0;

  // Where the filter lives, for messages: "file /tmp/a.rbf", "memory",
  // "redis 127.0.0.1:6379 filter urls".
  [[nodiscard]] virtual std::string location() const = 0;
};

// Throws InvalidArgument unless bytes [offset, offset + size) lie inside partition `partition`.
void check_byte_range(const FilterParams& params, std::uint64_t partition, std::uint64_t offset,
                      std::size_t size);

}  // namespace redbloom
