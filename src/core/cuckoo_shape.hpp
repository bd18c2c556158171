// The pure part of a cuckoo filter (redbloom/cuckoo.hpp): each link's table, the error budget
// over the links, and which partition an item belongs to. Every store follows it, so a filter's
// tables are the same wherever it lives.
//
// Error budget: a lookup tests every link, so the filter's rate is at most the sum of the
// links'. A filter that grows gives link i the rate p / 2^(i+1) (one fingerprint bit more per
// link, the series staying below p); one that does not grow has its one link at p.
#pragma once

#include <cstdint>
#include <string>

#include "core/cuckoo_table.hpp"
#include "redbloom/cuckoo.hpp"
#include "redbloom/hash.hpp"

namespace redbloom {

class CuckooShape {
 public:
  // Checks the options (InvalidArgument naming the bad one).
  explicit CuckooShape(const CuckooOptions& options);

  [[nodiscard]] const CuckooOptions& options() const noexcept { return options_; }
  [[nodiscard]] std::uint32_t partitions() const noexcept { return options_.partitions; }
  // Links one partition may hold: 1 without growth, else what max_bytes allows (at most
  // kMaxCuckooLinks).
  [[nodiscard]] std::uint32_t max_links() const noexcept { return max_links_; }
  [[nodiscard]] double link_error_rate(std::uint32_t link) const noexcept;
  // Items link `link` holds over all partitions.
  [[nodiscard]] std::uint64_t link_capacity(std::uint32_t link) const noexcept;
  // One partition's table of link `link` (link < max_links()).
  [[nodiscard]] const cuckoo_table::Shape& link(std::uint32_t link) const noexcept {
    return links_[link];
  }
  // Bytes of one partition's links 0 .. links - 1.
  [[nodiscard]] std::uint64_t partition_bytes(std::uint32_t links) const noexcept;
  [[nodiscard]] std::uint32_t partition_of(const ItemHash& h) const noexcept;
  // The rate expected with `items` stored in link `link` of every partition together.
  [[nodiscard]] double link_rate_now(std::uint32_t link, std::uint64_t items) const noexcept;
  [[nodiscard]] std::string describe() const { return redbloom::describe(options_); }

 private:
  CuckooOptions options_;
  std::uint32_t max_links_ = 1;
  cuckoo_table::Shape links_[kMaxCuckooLinks];
  std::uint64_t capacities_[kMaxCuckooLinks] = {};
};

}  // namespace redbloom
