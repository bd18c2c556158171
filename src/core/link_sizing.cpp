#include "core/link_sizing.hpp"

#include <algorithm>
#include <cmath>

#include "redbloom/error.hpp"
#include "redbloom/sizing.hpp"

namespace redbloom {

FilterParams size_link(double capacity, double error_rate, Layout layout,
                       std::uint64_t max_partition_bytes) {
  const double items = std::floor(capacity);
  const double rate = std::min(error_rate, kMaxErrorRate);
  if (layout == Layout::blocked) {
    try {
      return size_filter(items, rate, Layout::blocked, max_partition_bytes);
    } catch (const InvalidArgument&) {
      // Out of a block's reach: sized classic below.
    }
  }
  return size_filter(items, rate, Layout::classic, max_partition_bytes);
}

}  // namespace redbloom
