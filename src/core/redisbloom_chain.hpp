// RedisBloom 2.x's scalable Bloom filter (its `MBbloom--` type), reproduced so that a server
// started with redbloom.so on RedisBloom's data answers every BF.* command as RedisBloom did:
// the same hashes (MurmurHash2 32-bit or MurmurHash64A, as the filter's options say), the same
// bit positions, the same sizing of each new sub-filter, the same SCANDUMP header and chunks.
// Pure: no I/O; the module moves the bytes.
//
// SCANDUMP header, little-endian, packed:
//   u64 items | u32 links | u32 options | u32 expansion
//   per link: u64 bytes | u64 bits | u64 items | f64 error | f64 bits per entry | u32 hashes |
//             u64 capacity | u8 log2 of the bits (0: not a power of two)
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/filter_chain.hpp"

namespace redbloom::redisbloom {

// The chain's options, as RedisBloom stores them.
inline constexpr std::uint32_t kNoRound = 1;     // links sized exactly, not to a power of two
inline constexpr std::uint32_t kEntsIsBits = 2;  // a capacity that is the log2 of the bits
inline constexpr std::uint32_t kForce64 = 4;     // MurmurHash64A (else 32-bit MurmurHash2)
inline constexpr std::uint32_t kNoScaling = 8;
inline constexpr std::uint32_t kKnownOptions = kNoRound | kEntsIsBits | kForce64 | kNoScaling;

// What BF.RESERVE and the adding commands give a new filter.
inline constexpr std::uint32_t kNewFilterOptions = kForce64 | kNoRound;
// A scaling chain's first link is sized for error x this, and each next link for its
// predecessor's error x this.
inline constexpr double kTightening = 0.5;

// SCANDUMP and AOF rewrites move a link's bits in pieces of at most this many bytes.
inline constexpr std::uint64_t kMaxChunkBytes = std::uint64_t{16} << 20;

// More probes than this per item is refused on load: RedisBloom computes under a thousand for
// any rate a double can hold; a damaged header must not make every lookup loop for minutes.
inline constexpr std::uint32_t kMaxHashes = 4096;

struct HashPair {
  std::uint64_t a;
  std::uint64_t b;
};

[[nodiscard]] std::uint32_t murmur2_32(std::string_view data, std::uint32_t seed) noexcept;
[[nodiscard]] std::uint64_t murmur64a(std::string_view data, std::uint64_t seed) noexcept;
// The pair an item is placed by: probe i sets bit (a + i·b) mod the link's bit count.
[[nodiscard]] HashPair item_hash(std::string_view item, std::uint32_t options) noexcept;

// A sub-filter's bits, from a ChainAllocator (the module's count in the server's memory, as
// RedisBloom's), in one block that active defragmentation may move.
class Bits {
 public:
  Bits() noexcept : allocator_(default_chain_allocator()) {}
  // `size` zeroed bytes, or a copy of `from`; throw bad_alloc when they cannot be allocated.
  Bits(std::size_t size, ChainAllocator allocator);
  Bits(const std::uint8_t* from, std::size_t size, ChainAllocator allocator);
  Bits(const Bits& other) : Bits(other.data_, other.size_, other.allocator_) {}
  Bits(Bits&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)),
        allocator_(other.allocator_) {}
  Bits& operator=(Bits other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(allocator_, other.allocator_);
    return *this;
  }
  ~Bits() {
    if (data_ != nullptr) allocator_.release(data_);
  }
  [[nodiscard]] std::uint8_t* data() noexcept { return data_; }
  [[nodiscard]] const std::uint8_t* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  std::uint8_t& operator[](std::size_t i) noexcept { return data_[i]; }
  const std::uint8_t& operator[](std::size_t i) const noexcept { return data_[i]; }
  // Offers the block to `move`, which returns the block the bytes now live in (the old one
  // then belongs to it) or nullptr to leave them. True when they moved.
  bool relocate(void* (*move)(void* context, void* block), void* context) noexcept {
    if (data_ == nullptr) return false;
    void* moved = move(context, data_);
    if (moved == nullptr) return false;
    data_ = static_cast<std::uint8_t*>(moved);
    return true;
  }

 private:
  std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
  ChainAllocator allocator_;
};

struct Link;

// A sub-filter's bit count as a divisor: remainders by multiplications, for batches.
struct Modulus {
  explicit Modulus(const Link& link) noexcept;
  [[nodiscard]] std::uint64_t of(std::uint64_t x) const noexcept;
  std::uint64_t bits;
  unsigned __int128 inverse;  // ceil(2^128 / bits)
  std::uint64_t wrap;         // 2^64 mod bits
  bool power_of_two;
};

struct Link {
  std::uint64_t capacity = 0;  // RedisBloom's "entries"
  double error = 0;
  std::uint32_t hashes = 0;
  double bits_per_entry = 0;
  std::uint64_t bits = 0;
  std::uint8_t n2 = 0;  // bits == 1 << n2 when non-zero
  std::uint64_t items = 0;
  Bits data;

  [[nodiscard]] bool contains(HashPair hash) const noexcept;
  [[nodiscard]] bool contains(HashPair hash, const Modulus& modulus) const noexcept;
  // Sets the item's bits; true when one of them was unset.
  bool set(HashPair hash) noexcept;
  // The item's bit positions, probe by probe, into `out` (room for `hashes` of them).
  void positions(HashPair hash, std::uint64_t* out) const noexcept;
  void positions(HashPair hash, const Modulus& modulus, std::uint64_t* out) const noexcept;
  // contains / set on positions from `positions`.
  [[nodiscard]] bool all_set(const std::uint64_t* positions) const noexcept;
  bool set_at(const std::uint64_t* positions) noexcept;
};

// Defined here so that the batch loops inline it.
// x mod bits by multiplications (Lemire, Kaser and Kurz, "Faster remainder by direct
// computation", 2019: exact for every 64-bit x with a 128-bit inverse).
inline std::uint64_t Modulus::of(std::uint64_t x) const noexcept {
  if (power_of_two) return x & (bits - 1);
  const unsigned __int128 low = inverse * x;
  const auto low_lo = static_cast<std::uint64_t>(low);
  const auto low_hi = static_cast<std::uint64_t>(low >> 64);
  const unsigned __int128 high = static_cast<unsigned __int128>(low_hi) * bits +
                                 ((static_cast<unsigned __int128>(low_lo) * bits) >> 64);
  return static_cast<std::uint64_t>(high >> 64);
}

// A link as RedisBloom's bloom_init makes it for `capacity` items at `error`; false when
// RedisBloom refuses those figures, or (`over_limit` set) when its bits would be over
// `max_bytes` (0: no limit). The bits are allocated (zeroed) from `allocator`.
[[nodiscard]] bool size_link(std::uint64_t capacity, double error, std::uint32_t options,
                             ChainAllocator allocator, Link& link, std::uint64_t max_bytes = 0,
                             bool* over_limit = nullptr);
// What RedisBloom checks of a link it loads; empty when sound, else what is wrong.
[[nodiscard]] std::string link_problem(const Link& link);

class Chain {
 public:
  enum class AddResult : std::uint8_t { present, added, full, too_large, refused };

  // BF.RESERVE's filter; throws InvalidArgument for figures RedisBloom refuses, and for a
  // first sub-filter whose bits are over `max_bytes` (0: no limit), before allocating them.
  static Chain make(std::uint64_t capacity, double error, std::uint32_t options,
                    std::uint32_t expansion, ChainAllocator allocator, std::uint64_t max_bytes = 0);

  [[nodiscard]] bool contains(std::string_view item) const noexcept;
  // contains for each item into present[i] (1 or 0); the cache lines of the items ahead are
  // fetched while one is tested.
  void contains_many(std::span<const std::string_view> items, std::uint8_t* present) const noexcept;
  // As RedisBloom adds: present when a link has the item; else set in the newest link, after
  // stacking a new one (capacity × expansion, half the error) when the newest is full.
  // A new link that would take the chain past `max_bytes` (0: no limit) is refused. Throws
  // bad_alloc when its bits cannot be allocated (nothing changed).
  AddResult add(std::string_view item, std::uint64_t max_bytes);
  // add for each item in order into results[i], up to and including the first that is
  // neither added nor present; returns how many were handled.
  std::size_t add_many(std::span<const std::string_view> items, AddResult* results,
                       std::uint64_t max_bytes);

  [[nodiscard]] std::uint64_t items() const noexcept { return items_; }
  [[nodiscard]] std::uint32_t options() const noexcept { return options_; }
  [[nodiscard]] std::uint32_t expansion() const noexcept { return expansion_; }
  [[nodiscard]] bool scaling() const noexcept { return (options_ & kNoScaling) == 0; }
  [[nodiscard]] const std::vector<Link>& links() const noexcept { return links_; }
  [[nodiscard]] std::uint64_t capacity() const noexcept;
  [[nodiscard]] std::uint64_t bytes() const noexcept;
  // BF.INFO's Size and MEMORY USAGE: what RedisBloom counts (its structs and the bits).
  [[nodiscard]] std::uint64_t memory_usage() const noexcept;

  [[nodiscard]] std::string encode_header() const;
  // An empty-bitted chain of the header's shape. Throws FormatError for a damaged header,
  // InvalidArgument when its bits are over `max_bytes` (0: no limit).
  static Chain decode_header(std::string_view header, std::uint64_t max_bytes,
                             ChainAllocator allocator);

  // SCANDUMP after the header: the chunk at `iterator` (1 is the first byte of the first link)
  // and the iterator after it; an empty span and 0 past the end.
  [[nodiscard]] std::span<const std::uint8_t> chunk(long long iterator,
                                                    long long* next) const noexcept;
  // LOADCHUNK: the chunk that ends before `iterator`. Nullptr when loaded, else RedisBloom's
  // error text.
  const char* load_chunk(long long iterator, std::string_view data) noexcept;

  // For the RDB loader: a chain built link by link, then checked by `problem`; its new links
  // come from `allocator`.
  Chain(std::uint64_t items, std::uint32_t options, std::uint32_t expansion,
        std::vector<Link> links, ChainAllocator allocator) noexcept
      : items_(items),
        options_(options),
        expansion_(expansion),
        links_(std::move(links)),
        allocator_(allocator) {}
  // Empty when the chain is sound, else what is wrong.
  [[nodiscard]] std::string problem() const;

  // Active defragmentation: offers each sub-filter's bits from `first` on to `move`
  // (Bits::relocate) until `stop` says so (nullptr: never). Returns the index to resume at
  // (the sub-filter count when done) and adds the moved blocks to `moved`.
  std::size_t relocate(std::size_t first, void* (*move)(void* context, void* block), void* context,
                       bool (*stop)(void* context), std::uint64_t* moved) noexcept;

 private:
  struct Prepared;
  void prepare(std::string_view item, const Modulus* modulus, std::uint32_t prefetch,
               Prepared& p) const noexcept;
  [[nodiscard]] bool contains(const Prepared& p) const noexcept;
  AddResult add(const Prepared& p, std::uint64_t max_bytes);
  Link* link_at(long long iterator, std::uint64_t* offset) noexcept;

  std::uint64_t items_ = 0;
  std::uint32_t options_ = 0;
  std::uint32_t expansion_ = 2;
  std::vector<Link> links_;
  ChainAllocator allocator_;
};

}  // namespace redbloom::redisbloom
