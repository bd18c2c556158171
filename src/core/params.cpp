#include "redbloom/params.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "redbloom/error.hpp"
#include "redbloom/hash.hpp"
#include "redbloom/sizing.hpp"

namespace redbloom {
namespace {

constexpr std::uint64_t kMaxPartitions = std::uint64_t{1} << 32;

std::uint64_t round_up(std::uint64_t value, std::uint64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

FilterParams split_into_partitions(std::uint64_t bits, std::uint64_t max_partition_bytes) {
  if (max_partition_bytes < kBlockBits / 8 || max_partition_bytes % (kBlockBits / 8) != 0) {
    throw InvalidArgument("partition size must be a positive multiple of 64 bytes (got " +
                          std::to_string(max_partition_bytes) + ")");
  }
  if (max_partition_bytes * 8 > kRedisMaxStringBits) {
    throw InvalidArgument("partition size " + format_bytes(double(max_partition_bytes)) +
                          " exceeds Redis's 512 MiB string limit");
  }
  const std::uint64_t max_bits = max_partition_bytes * 8;
  FilterParams params;
  params.partitions = (std::max<std::uint64_t>(bits, 1) + max_bits - 1) / max_bits;
  if (params.partitions > kMaxPartitions) {
    throw InvalidArgument(std::to_string(bits) + " bits in partitions of at most " +
                          format_bytes(double(max_partition_bytes)) + " need " +
                          std::to_string(params.partitions) +
                          " partitions, more than the 2^32 a filter can have; use a larger "
                          "partition size (up to 512 MiB)");
  }
  params.partition_bits = round_up((bits + params.partitions - 1) / params.partitions, kBlockBits);
  return params;
}

}  // namespace

std::string_view to_string(Layout layout) noexcept {
  switch (layout) {
    case Layout::classic:
      return "classic";
    case Layout::blocked:
      return "blocked";
  }
  return "unknown";
}

std::optional<Layout> parse_layout(std::string_view name) noexcept {
  // Any case: "Blocked" and Redis-style "BLOCKED" name the same layout.
  const auto is = [name](std::string_view word) {
    return std::equal(name.begin(), name.end(), word.begin(), word.end(), [](char a, char b) {
      return std::tolower(static_cast<unsigned char>(a)) == b;
    });
  };
  if (is("classic")) return Layout::classic;
  if (is("blocked")) return Layout::blocked;
  return std::nullopt;
}

double expected_false_positive_rate(const FilterParams& params, double items) {
  const double m = static_cast<double>(params.total_bits());
  return params.layout == Layout::blocked ? blocked_false_positive_rate(m, params.hashes, items)
                                          : classic_false_positive_rate(m, params.hashes, items);
}

FilterParams size_filter(double capacity, double error_rate, Layout layout,
                         std::uint64_t max_partition_bytes) {
  std::uint64_t bits = 0;
  std::uint32_t hashes = 0;
  if (layout == Layout::blocked) {
    const BitsAndHashes sized = blocked_bits_for(capacity, error_rate);
    bits = sized.bits;
    hashes = sized.hashes;
  } else {
    bits = classic_bits_for(capacity, error_rate);
    hashes = classic_hashes_for(static_cast<double>(bits) / capacity);
  }
  FilterParams params = split_into_partitions(bits, max_partition_bytes);
  params.layout = layout;
  params.hashes = hashes;
  params.capacity = static_cast<std::uint64_t>(std::ceil(capacity));
  params.hash_scheme = kCurrentHashScheme;
  // Rounding m up to whole blocks only lowers the rate; record the rate actually expected.
  params.error_rate = expected_false_positive_rate(params, static_cast<double>(params.capacity));
  validate(params);
  return params;
}

FilterParams explicit_filter(std::uint64_t bits, std::uint32_t hashes, Layout layout,
                             std::uint64_t capacity, std::uint64_t max_partition_bytes) {
  if (bits == 0) throw InvalidArgument("bit count must be positive");
  if (hashes < 1 || hashes > kMaxHashes) {
    throw InvalidArgument("hash count must be between 1 and 64 (got " + std::to_string(hashes) +
                          ")");
  }
  FilterParams params = split_into_partitions(bits, max_partition_bytes);
  params.layout = layout;
  params.hashes = hashes;
  params.capacity = capacity;
  params.hash_scheme = kCurrentHashScheme;
  params.error_rate =
      capacity > 0 ? expected_false_positive_rate(params, static_cast<double>(capacity)) : 0.0;
  if (!(params.error_rate < 1.0)) {
    throw InvalidArgument(describe(params) +
                          ": that many items fill the filter (expected rate 1 at capacity: "
                          "every item would look present); give more bits or a smaller capacity");
  }
  validate(params);
  return params;
}

void validate(const FilterParams& params, bool from_storage) {
  auto fail = [from_storage](const std::string& what) {
    if (from_storage) throw FormatError("stored filter has invalid parameters: " + what);
    throw InvalidArgument(what);
  };
  if (params.layout != Layout::classic && params.layout != Layout::blocked) {
    fail("unknown layout id " + std::to_string(static_cast<std::uint32_t>(params.layout)));
  }
  if (params.hashes < 1 || params.hashes > kMaxHashes) {
    fail("hash count " + std::to_string(params.hashes) + " is not between 1 and 64");
  }
  if (params.partitions < 1 || params.partitions > kMaxPartitions) {
    fail("partition count " + std::to_string(params.partitions) + " is not between 1 and 2^32");
  }
  if (params.partition_bits < kBlockBits || params.partition_bits % kBlockBits != 0 ||
      params.partition_bits > kRedisMaxStringBits) {
    fail("partition size " + std::to_string(params.partition_bits) +
         " bits is not a multiple of 512 between 512 and 2^32");
  }
  if (params.partitions > UINT64_MAX / params.partition_bits) fail("total size overflows");
  if (!is_known_hash_scheme(params.hash_scheme)) {
    fail("hash scheme " + std::to_string(params.hash_scheme) +
         " is unknown to this redbloom (it knows scheme " + std::to_string(kCurrentHashScheme) +
         "); the filter was made by a newer or foreign version");
  }
  if (!(params.error_rate >= 0.0 && params.error_rate < 1.0)) {
    char rate[32];
    std::snprintf(rate, sizeof rate, "%g", params.error_rate);
    fail(std::string("error rate ") + rate + " is not in [0, 1)");
  }
}

std::string format_bytes(double bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int unit = 0;
  while (bytes >= 1024.0 && unit < 5) {
    bytes /= 1024.0;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, unit == 0 ? "%.0f %s" : "%.2f %s", bytes, kUnits[unit]);
  return buf;
}

std::string describe(const FilterParams& params) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s, m=%llu bits (%s) in %llu partition%s, k=%u",
                std::string(to_string(params.layout)).c_str(),
                static_cast<unsigned long long>(params.total_bits()),
                format_bytes(double(params.total_bytes())).c_str(),
                static_cast<unsigned long long>(params.partitions),
                params.partitions == 1 ? "" : "s", params.hashes);
  std::string out = buf;
  if (params.capacity > 0) {
    std::snprintf(buf, sizeof buf, ", capacity %llu, p=%.3g",
                  static_cast<unsigned long long>(params.capacity), params.error_rate);
    out += buf;
  }
  return out;
}

}  // namespace redbloom
