// The on-disk format of a cuckoo filter file (pure encoding and parsing; no I/O).
//
//   offset  size  field (all little-endian)
//        0     8  magic "RBCUCKOO"
//        8     4  format version (1)
//       12     4  header size in bytes (a multiple of 4096)
//       16     4  hash scheme id (hash.hpp)
//       20     4  partitions
//       24     4  growth (0: one link)
//       28     4  reserved, 0
//       32     8  capacity of the first link, over all partitions
//       40     8  error rate of the whole filter (IEEE-754 double)
//       48     8  max_bytes (0: no limit)
//       56     8  creation time, nanoseconds since the Unix epoch
//       64     8  XXH3-64 of bytes 0..63
//       72    56  zero
//      128     -  the directory: per partition, kMaxCuckooLinks byte offsets of its links'
//                 tables (0: not grown yet). Written when a link is added, after its table.
//   header  -     the tables (cuckoo_table.hpp), each at a multiple of 4096, in the order they
//                 were grown; a table's shape follows from the options (cuckoo_shape.hpp).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "redbloom/cuckoo.hpp"

namespace redbloom {

inline constexpr std::uint32_t kCuckooFileFormatVersion = 1;
inline constexpr std::uint64_t kCuckooFilePage = 4096;
inline constexpr std::uint64_t kCuckooDirectoryOffset = 128;

struct CuckooFileHeader {
  CuckooOptions options;
  std::uint64_t created_unix_ns = 0;
  // Per partition, the byte offsets of its links' tables, oldest first.
  std::vector<std::vector<std::uint64_t>> links;

  [[nodiscard]] std::uint64_t header_bytes() const noexcept;
};

// True when `prefix` starts with a cuckoo filter file's magic.
[[nodiscard]] bool has_cuckoo_magic(std::span<const std::uint8_t> prefix) noexcept;

// The whole header (header_bytes() of them).
[[nodiscard]] std::vector<std::uint8_t> encode_cuckoo_file_header(const CuckooFileHeader& header);
// Where the directory entry of link `link` of partition `partition` is, to write it alone.
[[nodiscard]] std::uint64_t cuckoo_directory_entry(std::uint32_t partition, std::uint32_t link);

// The header size the fixed part of `prefix` states (FormatError if it is no cuckoo header).
[[nodiscard]] std::uint64_t cuckoo_header_bytes(std::span<const std::uint8_t> prefix);
// Parses and checks the header (every table inside the file, aligned, apart from the others,
// links grown in order). FormatError naming the problem; never reads past `header`.
[[nodiscard]] CuckooFileHeader parse_cuckoo_file_header(std::span<const std::uint8_t> header,
                                                        std::uint64_t file_size);

}  // namespace redbloom
