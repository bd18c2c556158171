// A growing filter: a stack of links, each a whole filter (kernels::Bitmap) sized for its own
// capacity, as RedisBloom's scalable filters and issue-20 growth stack them. An item is "new"
// when it is absent from every link; it is then set in the newest link. When the newest link
// holds its capacity and a new item arrives, a link of capacity x expansion is added with
// half the error rate, so the rates form a geometric series and the compound false-positive
// rate (at most the sum, by the union bound) stays below the target:
//     p_0 = p / 2, p_{i+1} = p_i / 2   =>   sum p_i < p.
// A non-scaling chain has one link at p and refuses new items once it holds its capacity.
//
// Pure: memory comes from the caller's allocator (a Redis module passes RedisModule_Alloc so
// that the server accounts for it), there is no I/O, and one thread uses a chain at a time
// (calls keep their scratch per thread, not per chain).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/bitmap_kernels.hpp"
#include "redbloom/params.hpp"

namespace redbloom {

struct ChainAllocator {
  void* (*allocate)(std::size_t bytes);  // may return null: the chain reports it
  void (*release)(void* pointer);
};
[[nodiscard]] ChainAllocator default_chain_allocator() noexcept;

// What fixes a chain's shape; every link follows from it and the link count.
struct ChainOptions {
  std::uint64_t capacity = 100;  // of the first link
  double error_rate = 0.01;      // target for the whole chain
  std::uint32_t expansion = 2;   // link i+1 holds expansion x link i's capacity
  bool scaling = true;
  Layout layout = Layout::classic;  // of every link, but for rates a blocked link cannot reach
  std::uint64_t max_bytes = 0;      // the bits of all links together; 0: no limit
};

// The ratio by which each next link's error rate shrinks.
inline constexpr double kTighteningRatio = 0.5;
// A chain stops growing at this many links (the last at p / 2^64 of the target): a bound on
// what a saved chain may hold, so that whatever commands build can be loaded again.
inline constexpr std::uint32_t kMaxLinks = 64;
inline constexpr std::uint32_t kMaxExpansion = 1u << 15;

class FilterChain {
 public:
  struct Link {
    FilterParams params;             // params.capacity and params.error_rate are the link's own
    double target_error = 0;         // the rate it was sized for (p_i above)
    std::uint64_t items = 0;         // new items added to this link
    std::uint64_t* words = nullptr;  // 64-byte aligned
    void* allocation = nullptr;
    std::size_t allocated_bytes = 0;  // the allocation's size: the bits, maybe 63 more
  };

  // Checks the options (InvalidArgument naming the bad one) and makes the first link, zeroed.
  // Throws InvalidArgument when it would exceed max_bytes, StorageError when out of memory.
  FilterChain(const ChainOptions& options, ChainAllocator allocator);
  // An empty chain to fill with add_link_with_params (loading a saved chain).
  FilterChain(const ChainOptions& options, ChainAllocator allocator, std::nullptr_t);
  FilterChain(const FilterChain&) = delete;
  FilterChain& operator=(const FilterChain&) = delete;
  ~FilterChain();
  // A deep copy, with the same allocator.
  [[nodiscard]] std::unique_ptr<FilterChain> clone() const;
  // Active defragmentation: offers each link's block from link `first` on to `move`, which
  // returns the block its bytes now live in (the old one then belongs to it) or nullptr to
  // leave them, until `stop` says so (nullptr: never). Returns the link to resume at (the link
  // count when done) and adds the moved blocks to `moved`.
  std::size_t relocate(std::size_t first, void* (*move)(void* context, void* block), void* context,
                       bool (*stop)(void* context), std::uint64_t* moved) noexcept;

  // over_limit: the chain cannot grow (its memory limit, or kMaxLinks links).
  enum class AddResult : std::uint8_t { present = 0, added = 1, full = 2, over_limit = 3 };
  // Test-and-set in order: results[i] for items[i] (the second of two equal items is present).
  // Stops at the first item that cannot be added (full / over_limit) and returns how many items
  // were handled before it; results past that are not written.
  std::size_t add(std::span<const std::string_view> items, AddResult* results);
  // present[i] = 1 iff items[i] is (probably) in some link.
  void contains(std::span<const std::string_view> items, std::uint8_t* present) const;

  [[nodiscard]] const ChainOptions& options() const noexcept { return options_; }
  // The limit on all links' bits for the adds to come (0: none): a Redis module narrows it to
  // the memory its server has left. Not saved with the chain.
  void set_max_bytes(std::uint64_t max_bytes) noexcept { options_.max_bytes = max_bytes; }
  [[nodiscard]] std::span<const Link> links() const noexcept { return links_; }
  [[nodiscard]] std::uint64_t items() const noexcept;
  [[nodiscard]] std::uint64_t capacity() const noexcept;  // sum over links
  [[nodiscard]] std::uint64_t bytes() const noexcept;     // bits of all links, in bytes
  // The next link's parameters (for callers that check limits before growing).
  [[nodiscard]] FilterParams next_link_params(double* target_error) const;
  // Appends a link with these parameters and count (a loader's; validated), zeroed bits.
  Link& add_link_with_params(const FilterParams& params, double target_error, std::uint64_t items);
  // The bits of link i, in Redis bit order: what dumps and RDB save.
  [[nodiscard]] std::span<std::uint8_t> link_bytes(std::size_t i) noexcept;
  [[nodiscard]] std::span<const std::uint8_t> link_bytes(std::size_t i) const noexcept;
  // The links' bits end to end, as dumps move them: up to `max` bytes from `offset`, never
  // across the end of a link (empty at or past the end).
  [[nodiscard]] std::span<const std::uint8_t> bytes_at(std::uint64_t offset,
                                                       std::uint64_t max) const noexcept;
  // Writes `bytes` at `offset` of the same sequence; false (nothing written) unless they fall
  // inside one link.
  bool write_bytes_at(std::uint64_t offset, std::span<const std::uint8_t> bytes) noexcept;

 private:
  FilterParams link_params(std::size_t index, double* target_error) const;
  void grow();
  void release() noexcept;

  ChainOptions options_;
  ChainAllocator allocator_;
  // A link holds no kernels::Bitmap (its per-k tables are most of a small filter's size): one
  // is made for each call, which costs less than hashing one item.
  std::vector<Link> links_;
};

}  // namespace redbloom
