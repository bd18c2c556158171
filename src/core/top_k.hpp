// RedisBloom 2.x's Top-K (its `TopK-TYPE`): HeavyKeeper, `depth` rows of `width` buckets of a
// fingerprint and a counter, and a min-heap of the k heaviest items seen. Every rule is
// RedisBloom's (MurmurHash2 with the row as seed for the bucket, seed 1919 for the fingerprint,
// decay^count as the chance that a colliding add takes one off a bucket, the heap's sift-down
// and ties, the list sorted by qsort), so a data set moves between the two modules unchanged and
// answers alike.
//
// One difference, by design: RedisBloom draws the decay chances from the server's rand(), seeded
// from the clock at start-up, so no two servers (a primary and its replica, a server replaying
// its AOF) agree once a decay happens. Here each value draws from its own generator, whose
// state travels with the value, so replicas and reloads converge.
//
// Pure: no I/O; the buckets' memory comes from the caller's allocator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/redisbloom_chain.hpp"

namespace redbloom::topk {

inline constexpr std::uint32_t kDefaultWidth = 8;
inline constexpr std::uint32_t kDefaultDepth = 7;
inline constexpr double kDefaultDecay = 0.9;
// TOPK.INCRBY's largest increment, as RedisBloom.
inline constexpr long long kMaxIncrement = 100000;
// RedisBloom's saved sizes: a bucket (fingerprint, count) and a heap entry (fingerprint, item
// length, item pointer, count and padding, as a 64-bit C compiler lays them out).
inline constexpr std::size_t kBucketBytes = 8;
inline constexpr std::size_t kHeapEntryBytes = 24;

// The bytes a Top-K of these figures holds (buckets and heap), as RedisBloom's MEMORY USAGE
// counts them; nullopt when they overflow.
[[nodiscard]] std::optional<std::uint64_t> bytes_for(std::uint64_t k, std::uint64_t width,
                                                     std::uint64_t depth) noexcept;

// One entry of the heap, or of TOPK.LIST.
struct Entry {
  std::string item;
  std::uint32_t fingerprint = 0;
  std::uint32_t count = 0;
  // RedisBloom's item pointer is null: the slot never held an item (or held the empty item
  // before a reload). An add that replaces it expels nothing.
  bool held = false;
};

// Everything an RDB value holds, field for field (the buckets and heap as RedisBloom's raw
// arrays, the heap's items apart).
struct Saved {
  std::uint64_t k = 0, width = 0, depth = 0;
  double decay = 0;
  std::string buckets;             // width × depth × kBucketBytes
  std::string heap;                // k × kHeapEntryBytes
  std::vector<std::string> items;  // k strings, each ending with a NUL (just "\0": no item)
};

class TopK {
 public:
  // RedisBloom's TopK_Create (the caller checked the figures and their size); bad_alloc when
  // the buckets cannot be allocated.
  TopK(std::uint32_t k, std::uint32_t width, std::uint32_t depth, double decay,
       ChainAllocator allocator);

  // TOPK.ADD / TOPK.INCRBY of one item: the item the heap expelled for it, if any.
  std::optional<std::string> add(std::string_view item, std::uint32_t increment);
  // TOPK.QUERY: whether the item is in the heap.
  [[nodiscard]] bool query(std::string_view item) const noexcept;
  // TOPK.COUNT: RedisBloom's estimate (the largest count of a bucket with the item's
  // fingerprint, ignoring buckets below the heap's minimum when the item is listed).
  [[nodiscard]] std::uint32_t count(std::string_view item) const noexcept;
  // TOPK.LIST: the heap by count, largest first, up to the first entry of count 0.
  [[nodiscard]] std::vector<Entry> list() const;

  [[nodiscard]] std::uint32_t k() const noexcept { return k_; }
  [[nodiscard]] std::uint32_t width() const noexcept { return width_; }
  [[nodiscard]] std::uint32_t depth() const noexcept { return depth_; }
  [[nodiscard]] double decay() const noexcept { return decay_; }
  [[nodiscard]] std::uint64_t memory_bytes() const noexcept;

  // Offers the buckets' block to `move` (active defragmentation; one piece, so `first` is 0 and
  // `stop` is not asked); returns 1, the pieces done.
  std::size_t relocate(std::size_t first, void* (*move)(void* context, void* block), void* context,
                       bool (*stop)(void*), std::uint64_t* moved) noexcept;

  // The RDB fields, with the generator's state where RedisBloom keeps a pointer RedisBloom
  // never reads back.
  [[nodiscard]] Saved saved() const;
  // What is wrong with saved fields (the sizes against the figures); empty when sound.
  [[nodiscard]] static std::string problem(const Saved& saved);
  // A Top-K from sound saved fields; bad_alloc when its buckets cannot be allocated.
  static TopK restore(const Saved& saved, ChainAllocator allocator);

 private:
  struct Bucket {
    std::uint32_t fingerprint;
    std::uint32_t count;
  };
  static_assert(sizeof(Bucket) == kBucketBytes);

  [[nodiscard]] Bucket* buckets() noexcept;
  [[nodiscard]] const Bucket* buckets() const noexcept;
  [[nodiscard]] int heap_index(std::string_view item, std::uint32_t fingerprint) const noexcept;
  [[nodiscard]] double decay_chance(std::uint32_t count) const noexcept;
  [[nodiscard]] double draw() noexcept;
  void sift_down(std::size_t start) noexcept;

  std::uint32_t k_, width_, depth_;
  double decay_;
  redisbloom::Bits bucket_bytes_;
  std::vector<Entry> heap_;
  // heap_[i].fingerprint, packed: the heap is searched on every query and add.
  std::vector<std::uint32_t> heap_fingerprints_;
  std::vector<double> decay_table_;
  std::uint64_t generator_;
  // The item-pointer words of entries 1.. of the last loaded payload, written back unchanged so
  // that an untouched value saves byte for byte as it loaded (RedisBloom saves live pointers).
  std::vector<std::uint64_t> loaded_words_;
};

}  // namespace redbloom::topk
