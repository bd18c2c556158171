// The parameters that define a filter's bits. Two filters with equal parameters place every
// item on the same bits, whatever store holds them.
//
// The bitmap is `partitions` equal partitions of `partition_bits` bits each, laid end to end.
// All k bits of an item lie in one partition (chosen from its hash), so a partition can be one
// Redis string and an item's test-and-set one atomic command. Partition sizes are multiples of
// 512 bits (one cache line, one blocked-layout block) and at most 2^32 bits, Redis's 512 MiB
// string limit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace redbloom {

enum class Layout : std::uint32_t {
  classic = 1,  // k probes anywhere in the partition
  blocked = 2,  // k probes in one 512-bit block of the partition
};

[[nodiscard]] std::string_view to_string(Layout layout) noexcept;
// Parses "classic" or "blocked", in any case; nullopt otherwise.
[[nodiscard]] std::optional<Layout> parse_layout(std::string_view name) noexcept;

inline constexpr std::uint64_t kDefaultPartitionBytes = std::uint64_t{64} << 20;

struct FilterParams {
  Layout layout = Layout::classic;
  std::uint32_t hashes = 0;  // k
  std::uint64_t partitions = 0;
  std::uint64_t partition_bits = 0;
  std::uint64_t capacity = 0;  // n the filter was sized for
  double error_rate = 0;       // the rate expected at `capacity` items (by the layout's formula)
  std::uint32_t hash_scheme = 0;

  [[nodiscard]] std::uint64_t total_bits() const noexcept { return partitions * partition_bits; }
  [[nodiscard]] std::uint64_t total_bytes() const noexcept { return total_bits() / 8; }
  [[nodiscard]] std::uint64_t partition_bytes() const noexcept { return partition_bits / 8; }
  friend bool operator==(const FilterParams&, const FilterParams&) = default;
};

// The false-positive rate a filter with these parameters has after `items` insertions.
[[nodiscard]] double expected_false_positive_rate(const FilterParams& params, double items);

// Sizes a filter for `capacity` items at `error_rate`, split into partitions of at most
// `max_partition_bytes`. Throws InvalidArgument on bad values.
[[nodiscard]] FilterParams size_filter(double capacity, double error_rate, Layout layout,
                                       std::uint64_t max_partition_bytes = kDefaultPartitionBytes);

// A filter of (at least) `bits` bits and exactly `hashes` probes, as capacity tables set m and k by
// hand. `capacity` (0 = unknown) only feeds the recorded expected error rate.
[[nodiscard]] FilterParams explicit_filter(
    std::uint64_t bits, std::uint32_t hashes, Layout layout, std::uint64_t capacity = 0,
    std::uint64_t max_partition_bytes = kDefaultPartitionBytes);

// Throws FormatError (from_storage) or InvalidArgument unless the parameters are usable.
void validate(const FilterParams& params, bool from_storage = false);

// "classic, m=9585064 bits (1.14 MiB) in 1 partition, k=7, capacity 1000000, p=0.01".
[[nodiscard]] std::string describe(const FilterParams& params);

// Human-readable byte count: "1.14 MiB".
[[nodiscard]] std::string format_bytes(double bytes);

}  // namespace redbloom
