// The on-disk format of a file filter (pure encoding and parsing; no I/O).
//
//   offset  size  field (all little-endian)
//        0     8  magic "REDBLOOM"
//        8     4  format version (1)
//       12     4  header size in bytes (4096)
//       16     4  layout (1 classic, 2 blocked)
//       20     4  k, hashes per item
//       24     4  hash scheme id (see hash.hpp)
//       28     4  reserved, 0
//       32     8  partition count
//       40     8  bits per partition (multiple of 512, at most 2^32)
//       48     8  total bits m (= partitions * bits per partition)
//       56     8  capacity n the filter was sized for (0 if created from explicit m, k)
//       64     8  expected error rate at capacity (IEEE-754 double)
//       72     8  creation time, nanoseconds since the Unix epoch
//       80     8  bitmap offset (= header size: the bitmap starts on a page boundary)
//       88     8  bitmap size in bytes (= m / 8)
//       96     8  XXH3-64 of bytes 0..95
//      104  3992  zero
//     4096     m/8  the bitmap: partitions end to end, each in Redis bit order, so a
//                   partition's bytes can be written into a Redis string unchanged.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "redbloom/params.hpp"

namespace redbloom {

inline constexpr std::uint32_t kFileFormatVersion = 1;
inline constexpr std::uint64_t kFileHeaderBytes = 4096;
inline constexpr std::uint64_t kFileHeaderUsedBytes = 104;

struct FileHeader {
  FilterParams params;
  std::uint64_t created_unix_ns = 0;
  std::uint64_t bitmap_offset = kFileHeaderBytes;
  std::uint64_t bitmap_bytes = 0;
};

// A header for `params` created now.
[[nodiscard]] FileHeader make_file_header(const FilterParams& params,
                                          std::uint64_t created_unix_ns);

[[nodiscard]] std::array<std::uint8_t, kFileHeaderBytes> encode_file_header(
    const FileHeader& header);

// Parses and checks a header. `prefix` is the start of the file (up to kFileHeaderBytes) and
// `file_size` its full size. Throws FormatError with a message that names the problem
// (not a filter, truncated, corrupt, unknown version or hash scheme); never reads past `prefix`.
[[nodiscard]] FileHeader parse_file_header(std::span<const std::uint8_t> prefix,
                                           std::uint64_t file_size);

}  // namespace redbloom
