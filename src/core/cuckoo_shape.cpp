#include "core/cuckoo_shape.hpp"

#include <cmath>
#include <sstream>

#include "core/layout.hpp"
#include "redbloom/error.hpp"

namespace redbloom {

CuckooShape::CuckooShape(const CuckooOptions& options) : options_(options) {
  if (options.capacity == 0)
    throw InvalidArgument("a cuckoo filter needs a capacity of at least 1");
  if (!(options.error_rate > 0 && options.error_rate < 1)) {
    throw InvalidArgument("the error rate of a cuckoo filter must be between 0 and 1");
  }
  if (options.partitions == 0 || options.partitions > options.capacity) {
    throw InvalidArgument("a cuckoo filter needs between 1 and `capacity` partitions");
  }
  if (options.growth == 1 || options.growth > 1024) {
    throw InvalidArgument(
        "a cuckoo filter's growth must be between 2 and 1024 (0: it never grows)");
  }
  const std::uint32_t possible = options.growth == 0 ? 1 : kMaxCuckooLinks;
  std::uint64_t bytes = 0;
  max_links_ = 0;
  for (std::uint32_t i = 0; i < possible; ++i) {
    const double items = static_cast<double>(options.capacity) *
                         std::pow(static_cast<double>(std::max(options.growth, 1u)), i) /
                         options.partitions;
    if (items > 1e15) break;
    cuckoo_table::Shape shape;
    try {
      shape =
          cuckoo_table::shape_for(static_cast<std::uint64_t>(std::ceil(items)), link_error_rate(i));
    } catch (const InvalidArgument&) {
      if (i == 0) throw;
      break;  // a later link the fingerprints or bucket numbers cannot reach: the chain ends
    }
    bytes += shape.bytes() * options.partitions;
    if (options.max_bytes != 0 && bytes > options.max_bytes) {
      if (i == 0) {
        throw InvalidArgument("a cuckoo filter of these options takes " + std::to_string(bytes) +
                              " bytes, more than its max_bytes of " +
                              std::to_string(options.max_bytes));
      }
      break;
    }
    links_[i] = shape;
    capacities_[i] = static_cast<std::uint64_t>(std::ceil(items)) * options.partitions;
    max_links_ = i + 1;
  }
}

double CuckooShape::link_error_rate(std::uint32_t link) const noexcept {
  if (options_.growth == 0) return options_.error_rate;
  return std::ldexp(options_.error_rate, -static_cast<int>(link) - 1);
}

std::uint64_t CuckooShape::link_capacity(std::uint32_t link) const noexcept {
  return capacities_[link];
}

std::uint64_t CuckooShape::partition_bytes(std::uint32_t links) const noexcept {
  std::uint64_t bytes = 0;
  for (std::uint32_t i = 0; i < links && i < max_links_; ++i) bytes += links_[i].bytes();
  return bytes;
}

std::uint32_t CuckooShape::partition_of(const ItemHash& h) const noexcept {
  return static_cast<std::uint32_t>(layout::partition_of(h, options_.partitions));
}

double CuckooShape::link_rate_now(std::uint32_t link, std::uint64_t items) const noexcept {
  return links_[link].error_rate(items / options_.partitions);
}

CuckooTableSize cuckoo_table_size(const CuckooOptions& options, std::uint32_t link) {
  const CuckooShape shape(options);
  if (link >= shape.max_links()) {
    throw InvalidArgument("a cuckoo filter of these options has at most " +
                          std::to_string(shape.max_links()) + " links");
  }
  const cuckoo_table::Shape& table = shape.link(link);
  CuckooTableSize size;
  size.fingerprint_bits = table.fingerprint_bits;
  size.slots_per_bucket = cuckoo_table::kSlotsPerBucket;
  size.buckets = table.buckets;
  size.bytes = table.bytes();
  size.capacity = shape.link_capacity(link);
  size.rate_when_full = shape.link_rate_now(link, size.capacity);
  size.max_links = shape.max_links();
  return size;
}

std::string describe(const CuckooOptions& options) {
  const CuckooShape shape(options);
  std::ostringstream out;
  out << "cuckoo, " << options.capacity << " items at p=" << options.error_rate << " ("
      << shape.link(0).fingerprint_bits << "-bit fingerprints";
  if (options.growth != 0) {
    out << ", growth " << options.growth << ", at most " << shape.max_links() << " links";
  }
  out << ")";
  if (options.partitions > 1) out << " in " << options.partitions << " partitions";
  return out.str();
}

}  // namespace redbloom
