// Every access goes through std::atomic_ref with relaxed order. That compiles to plain loads
// and stores on x86-64, but keeps the compiler from tearing or inventing accesses: other
// processes read a shared mapping while we write it. Writers that need exclusion (several
// processes adding to one file) are serialised by the store, not here: a locked RMW per
// probe would cost ~20 cycles each and stall the misses we want in flight.
//
// Batching: an out-of-cache filter costs one memory miss per line touched (~100+ ns here),
// so each batch first computes every line it will touch and prefetches it, then does the
// work while ~20-30 misses are in flight (the measured sweet spot on these machines).
#include "bitmap_kernels.hpp"

#include <algorithm>
#include <atomic>
#include <bit>

#include "redbloom/bit_order.hpp"
#include "redbloom/layout.hpp"

namespace redbloom::kernels {
namespace {

constexpr std::size_t kBlockedBatch = 32;  // one line per item
constexpr std::size_t kClassicBatch = 8;   // k lines per item
constexpr std::uint64_t kWordsPerBlock = kBlockBits / 64;

inline std::uint64_t load(std::uint64_t& word) noexcept {
  return std::atomic_ref<std::uint64_t>(word).load(std::memory_order_relaxed);
}
inline void store(std::uint64_t& word, std::uint64_t value) noexcept {
  std::atomic_ref<std::uint64_t>(word).store(value, std::memory_order_relaxed);
}

enum class Op { test_and_set, set, test };

// Applies one probe; returns false when `op` can stop early (a test found a 0 bit).
template <Op op>
inline bool probe(std::uint64_t& word, std::uint64_t mask, bool& all_set) noexcept {
  const std::uint64_t old = load(word);
  if ((old & mask) != 0) return true;
  all_set = false;
  if constexpr (op == Op::test) {
    return false;
  } else {
    store(word, old | mask);
    return true;
  }
}

template <Op op>
void blocked(const Bitmap& bitmap, std::span<const ItemHash> items, std::uint8_t* out) {
  const FilterParams& p = bitmap.params;
  const std::uint32_t k = p.hashes;
  std::uint64_t* lines[kBlockedBatch];
  for (std::size_t start = 0; start < items.size(); start += kBlockedBatch) {
    const std::size_t count = std::min(kBlockedBatch, items.size() - start);
    for (std::size_t j = 0; j < count; ++j) {
      const ItemHash& h = items[start + j];
      const std::uint64_t block =
          layout::partition_of(h, p.partitions) * (p.partition_bits / kBlockBits) +
          layout::blocked_block_of(h, p.partition_bits);
      lines[j] = bitmap.words + block * kWordsPerBlock;
      __builtin_prefetch(lines[j], op == Op::test ? 0 : 1, 3);
    }
    for (std::size_t j = 0; j < count; ++j) {
      std::uint64_t* line = lines[j];
      bool all_set = true;
      std::uint64_t x = items[start + j].hi;
      for (std::uint32_t i = 0; i < k; ++i) {
        x *= layout::kGoldenMultiplier;
        const std::uint64_t bit = x >> 55;
        if (!probe<op>(line[bit >> 6], word_mask(bit), all_set)) break;
      }
      if constexpr (op == Op::test) {
        out[start + j] = all_set;
      } else if constexpr (op == Op::test_and_set) {
        out[start + j] = !all_set;
      }
    }
  }
}

template <Op op>
void classic(const Bitmap& bitmap, std::span<const ItemHash> items, std::uint8_t* out) {
  const FilterParams& p = bitmap.params;
  const std::uint32_t k = p.hashes;
  std::uint64_t bits[kClassicBatch * kMaxHashes];
  for (std::size_t start = 0; start < items.size(); start += kClassicBatch) {
    const std::size_t count = std::min(kClassicBatch, items.size() - start);
    std::uint64_t* next = bits;
    for (std::size_t j = 0; j < count; ++j) {
      const ItemHash& h = items[start + j];
      const std::uint64_t base = layout::partition_of(h, p.partitions) * p.partition_bits;
      layout::classic_probes(h, p.partition_bits, k, [&](std::uint64_t offset) {
        const std::uint64_t bit = base + offset;
        __builtin_prefetch(bitmap.words + word_index(bit), op == Op::test ? 0 : 1, 3);
        *next++ = bit;
      });
    }
    for (std::size_t j = 0; j < count; ++j) {
      const std::uint64_t* item_bits = bits + j * k;
      bool all_set = true;
      for (std::uint32_t i = 0; i < k; ++i) {
        const std::uint64_t bit = item_bits[i];
        if (!probe<op>(bitmap.words[word_index(bit)], word_mask(bit), all_set)) break;
      }
      if constexpr (op == Op::test) {
        out[start + j] = all_set;
      } else if constexpr (op == Op::test_and_set) {
        out[start + j] = !all_set;
      }
    }
  }
}

template <Op op>
void run(const Bitmap& bitmap, std::span<const ItemHash> items, std::uint8_t* out) {
  if (bitmap.params.layout == Layout::blocked) {
    blocked<op>(bitmap, items, out);
  } else {
    classic<op>(bitmap, items, out);
  }
}

}  // namespace

void test_and_set(const Bitmap& bitmap, std::span<const ItemHash> items,
                  std::uint8_t* newly_added) {
  run<Op::test_and_set>(bitmap, items, newly_added);
}

void set(const Bitmap& bitmap, std::span<const ItemHash> items) {
  run<Op::set>(bitmap, items, nullptr);
}

void test(const Bitmap& bitmap, std::span<const ItemHash> items, std::uint8_t* present) {
  run<Op::test>(bitmap, items, present);
}

__attribute__((target_clones("popcnt", "default"))) std::uint64_t popcount(std::uint64_t* words,
                                                                           std::uint64_t count) {
  std::uint64_t ones = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    ones += static_cast<std::uint64_t>(__builtin_popcountll(load(words[i])));
  }
  return ones;
}

}  // namespace redbloom::kernels
