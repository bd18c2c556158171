#include "core/count_min_sketch.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <new>

#include "core/murmur2_inline.hpp"
#include "redbloom/error.hpp"

namespace redbloom::cms {

namespace {

// A double as an unsigned 64-bit count; nullopt when it does not fit (RedisBloom's conversion
// is undefined there, and what it gives on x86-64 its range check then refuses).
std::optional<std::uint64_t> whole(double value) {
  if (!(value >= 0) || value >= 9223372036854775808.0) return std::nullopt;
  return static_cast<std::uint64_t>(value);
}

std::size_t cell_count(std::uint64_t width, std::uint64_t depth) {
  return static_cast<std::size_t>(width * depth);
}

std::uint64_t fastmod_inverse(std::uint64_t width) {
  return width != 0 && width <= UINT32_MAX ? UINT64_MAX / width + 1 : 0;
}

// Items whose positions are computed ahead; sketches deeper than kMaxBatchedDepth take one item
// at a time.
constexpr std::size_t kBatch = 8;
constexpr std::uint64_t kMaxBatchedDepth = 16;

}  // namespace

std::optional<Dimensions> dimensions_for(double error, double probability) noexcept {
  if (!(error > 0 && error < 1 && probability > 0 && probability < 1)) return std::nullopt;
  const auto width = whole(std::ceil(2 / error));
  // In single precision as RedisBloom computes it: a probability near 1 rounds to 1.0f and
  // gives no rows, one under the smallest float gives infinitely many; both are refused.
  const float rows = ::log10f(static_cast<float>(probability)) / ::log10f(0.5f);
  const auto depth = whole(std::ceil(static_cast<double>(rows)));
  if (!width || !depth || *width < 1 || *depth < 1 ||
      *width > static_cast<std::uint64_t>(LLONG_MAX) / *depth) {
    return std::nullopt;
  }
  return Dimensions{*width, *depth};
}

std::optional<std::size_t> counter_bytes(std::uint64_t width, std::uint64_t depth) noexcept {
  if (width == 0 || depth == 0 || width > SIZE_MAX / depth ||
      width * depth > SIZE_MAX / sizeof(std::uint32_t)) {
    return std::nullopt;
  }
  return static_cast<std::size_t>(width * depth) * sizeof(std::uint32_t);
}

Sketch::Sketch(std::uint64_t width, std::uint64_t depth, ChainAllocator allocator)
    : allocator_(allocator), width_(width), depth_(depth), inverse_(fastmod_inverse(width)) {
  const auto bytes = counter_bytes(width, depth);
  if (!bytes) throw InvalidArgument("count-min sketch: width and depth must be positive and fit");
  counters_ = static_cast<std::uint32_t*>(allocator_.allocate(*bytes));
  if (counters_ == nullptr) throw std::bad_alloc();
  std::memset(counters_, 0, *bytes);
}

Sketch::Sketch(std::uint64_t width, std::uint64_t depth, std::uint64_t count, void* counters,
               ChainAllocator allocator) noexcept
    : allocator_(allocator),
      width_(width),
      depth_(depth),
      inverse_(fastmod_inverse(width)),
      count_(count),
      counters_(static_cast<std::uint32_t*>(counters)) {}

Sketch::Sketch(const Sketch& other)
    : allocator_(other.allocator_),
      width_(other.width_),
      depth_(other.depth_),
      inverse_(other.inverse_) {
  const std::size_t bytes = cell_count(width_, depth_) * sizeof(std::uint32_t);
  counters_ = static_cast<std::uint32_t*>(allocator_.allocate(bytes));
  if (counters_ == nullptr) throw std::bad_alloc();
  std::memcpy(counters_, other.counters_, bytes);
  count_ = other.count_;
}

Sketch::~Sketch() {
  if (counters_ != nullptr) allocator_.release(counters_);
}

std::size_t Sketch::column(std::string_view item, std::uint64_t row) const noexcept {
  const std::uint32_t hash = detail::murmur2_32_inline(item, static_cast<std::uint32_t>(row));
  if (width_ > UINT32_MAX) return hash;
  const std::uint64_t low = inverse_ * hash;
  return static_cast<std::size_t>((static_cast<unsigned __int128>(low) * width_) >> 64);
}

std::uint32_t Sketch::increment(std::string_view item, std::uint64_t by) noexcept {
  std::uint32_t smallest = kSaturated;
  std::uint32_t* row = counters_;
  for (std::uint64_t i = 0; i < depth_; ++i, row += width_) {
    std::uint32_t& counter = row[column(item, i)];
    // RedisBloom adds in 32 bits and saturates when the sum wrapped (or `by` alone passes 2^32).
    const std::uint64_t sum = static_cast<std::uint64_t>(counter) + by;
    counter = sum >= kSaturated ? kSaturated : static_cast<std::uint32_t>(sum);
    smallest = std::min(smallest, counter);
  }
  count_ += by;
  return smallest;
}

std::uint32_t Sketch::query(std::string_view item) const noexcept {
  std::uint32_t smallest = kSaturated;
  const std::uint32_t* row = counters_;
  for (std::uint64_t i = 0; i < depth_; ++i, row += width_) {
    smallest = std::min(smallest, row[column(item, i)]);
  }
  return smallest;
}

template <class Apply>
void Sketch::in_batches(std::span<const std::string_view> items, Apply apply) const noexcept {
  std::size_t positions[kBatch * kMaxBatchedDepth];
  const std::size_t depth = static_cast<std::size_t>(depth_);
  for (std::size_t first = 0; first < items.size(); first += kBatch) {
    const std::size_t n = std::min(kBatch, items.size() - first);
    for (std::size_t j = 0; j < n; ++j) {
      for (std::size_t r = 0; r < depth; ++r) {
        const std::size_t at = r * width_ + column(items[first + j], r);
        positions[j * depth + r] = at;
        __builtin_prefetch(counters_ + at);
      }
    }
    for (std::size_t j = 0; j < n; ++j) apply(first + j, positions + j * depth);
  }
}

void Sketch::increment_all(std::span<const std::string_view> items,
                           std::span<const std::uint64_t> by,
                           std::span<std::uint32_t> out) noexcept {
  if (depth_ > kMaxBatchedDepth) {
    for (std::size_t i = 0; i < items.size(); ++i) out[i] = increment(items[i], by[i]);
    return;
  }
  in_batches(items, [&](std::size_t i, const std::size_t* positions) {
    std::uint32_t smallest = kSaturated;
    for (std::uint64_t r = 0; r < depth_; ++r) {
      std::uint32_t& counter = counters_[positions[r]];
      const std::uint64_t sum = static_cast<std::uint64_t>(counter) + by[i];
      counter = sum >= kSaturated ? kSaturated : static_cast<std::uint32_t>(sum);
      smallest = std::min(smallest, counter);
    }
    count_ += by[i];
    out[i] = smallest;
  });
}

void Sketch::query_all(std::span<const std::string_view> items,
                       std::span<std::uint32_t> out) const noexcept {
  if (depth_ > kMaxBatchedDepth) {
    for (std::size_t i = 0; i < items.size(); ++i) out[i] = query(items[i]);
    return;
  }
  in_batches(items, [&](std::size_t i, const std::size_t* positions) {
    std::uint32_t smallest = kSaturated;
    for (std::uint64_t r = 0; r < depth_; ++r)
      smallest = std::min(smallest, counters_[positions[r]]);
    out[i] = smallest;
  });
}

bool Sketch::merge(std::span<const Sketch* const> sources,
                   std::span<const long long> weights) noexcept {
  const std::size_t cells = cell_count(width_, depth_);
  // Every cell and the total checked first, so that a refused merge changes nothing.
  for (std::size_t cell = 0; cell < cells; ++cell) {
    std::int64_t sum = 0;
    for (std::size_t k = 0; k < sources.size(); ++k) {
      std::int64_t product = 0;
      if (__builtin_mul_overflow(sources[k]->counters_[cell], weights[k], &product) ||
          __builtin_add_overflow(sum, product, &sum)) {
        return false;
      }
    }
    if (sum < 0 || sum > static_cast<std::int64_t>(kSaturated)) return false;
  }
  std::int64_t total = 0;
  for (std::size_t k = 0; k < sources.size(); ++k) {
    std::int64_t product = 0;
    if (__builtin_mul_overflow(sources[k]->count_, weights[k], &product) ||
        __builtin_add_overflow(total, product, &total)) {
      return false;
    }
  }
  if (total < 0) return false;
  // Cell by cell: each sum reads the sources' same cell before this one's is written, so this
  // sketch may be a source.
  for (std::size_t cell = 0; cell < cells; ++cell) {
    std::int64_t sum = 0;
    for (std::size_t k = 0; k < sources.size(); ++k) {
      sum += static_cast<std::int64_t>(sources[k]->counters_[cell]) * weights[k];
    }
    counters_[cell] = static_cast<std::uint32_t>(sum);
  }
  count_ = static_cast<std::uint64_t>(total);
  return true;
}

bool Sketch::relocate(void* (*move)(void* context, void* block), void* context) noexcept {
  void* moved = move(context, counters_);
  if (moved == nullptr) return false;
  counters_ = static_cast<std::uint32_t*>(moved);
  return true;
}

}  // namespace redbloom::cms
