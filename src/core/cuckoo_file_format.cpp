#include "core/cuckoo_file_format.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "core/cuckoo_shape.hpp"
#include "redbloom/error.hpp"
#include "redbloom/hash.hpp"

namespace redbloom {
namespace {

constexpr char kMagic[8] = {'R', 'B', 'C', 'U', 'C', 'K', 'O', 'O'};
constexpr std::size_t kChecksumOffset = 64;
// More partitions than this would make the directory alone larger than 64 MiB.
constexpr std::uint32_t kMaxFilePartitions = 1u << 19;

template <class T>
void put(std::uint8_t* out, std::size_t offset, T value) {
  static_assert(std::endian::native == std::endian::little);
  std::memcpy(out + offset, &value, sizeof value);
}

template <class T>
T get(std::span<const std::uint8_t> in, std::size_t offset) {
  T value;
  std::memcpy(&value, in.data() + offset, sizeof value);
  return value;
}

std::uint64_t header_bytes_for(std::uint64_t partitions) {
  const std::uint64_t used = kCuckooDirectoryOffset + partitions * kMaxCuckooLinks * 8;
  return (used + kCuckooFilePage - 1) / kCuckooFilePage * kCuckooFilePage;
}

}  // namespace

std::uint64_t CuckooFileHeader::header_bytes() const noexcept {
  return header_bytes_for(options.partitions);
}

bool has_cuckoo_magic(std::span<const std::uint8_t> prefix) noexcept {
  return prefix.size() >= sizeof kMagic && std::memcmp(prefix.data(), kMagic, sizeof kMagic) == 0;
}

std::uint64_t cuckoo_directory_entry(std::uint32_t partition, std::uint32_t link) {
  return kCuckooDirectoryOffset + (std::uint64_t{partition} * kMaxCuckooLinks + link) * 8;
}

std::vector<std::uint8_t> encode_cuckoo_file_header(const CuckooFileHeader& header) {
  std::vector<std::uint8_t> out(header.header_bytes());
  std::uint8_t* p = out.data();
  const CuckooOptions& o = header.options;
  std::memcpy(p, kMagic, sizeof kMagic);
  put<std::uint32_t>(p, 8, kCuckooFileFormatVersion);
  put<std::uint32_t>(p, 12, static_cast<std::uint32_t>(header.header_bytes()));
  put<std::uint32_t>(p, 16, kCurrentHashScheme);
  put<std::uint32_t>(p, 20, o.partitions);
  put<std::uint32_t>(p, 24, o.growth);
  put<std::uint64_t>(p, 32, o.capacity);
  put<double>(p, 40, o.error_rate);
  put<std::uint64_t>(p, 48, o.max_bytes);
  put<std::uint64_t>(p, 56, header.created_unix_ns);
  put<std::uint64_t>(p, kChecksumOffset, XXH3_64bits(p, kChecksumOffset));
  for (std::uint32_t partition = 0; partition < header.links.size(); ++partition) {
    const auto& links = header.links[partition];
    for (std::uint32_t link = 0; link < links.size(); ++link) {
      put<std::uint64_t>(p, cuckoo_directory_entry(partition, link), links[link]);
    }
  }
  return out;
}

std::uint64_t cuckoo_header_bytes(std::span<const std::uint8_t> prefix) {
  if (!has_cuckoo_magic(prefix)) throw FormatError("not a cuckoo filter file (bad magic)");
  if (prefix.size() < kCuckooDirectoryOffset) throw FormatError("truncated cuckoo filter header");
  if (get<std::uint64_t>(prefix, kChecksumOffset) != XXH3_64bits(prefix.data(), kChecksumOffset)) {
    throw FormatError("cuckoo filter header checksum mismatch (corrupt file)");
  }
  const auto version = get<std::uint32_t>(prefix, 8);
  if (version != kCuckooFileFormatVersion) {
    throw FormatError("cuckoo filter file format version " + std::to_string(version) +
                      " is not supported (this build reads version " +
                      std::to_string(kCuckooFileFormatVersion) + ")");
  }
  const auto partitions = get<std::uint32_t>(prefix, 20);
  if (partitions == 0 || partitions > kMaxFilePartitions) {
    throw FormatError("cuckoo filter header: " + std::to_string(partitions) + " partitions");
  }
  const std::uint64_t bytes = get<std::uint32_t>(prefix, 12);
  if (bytes != header_bytes_for(partitions)) {
    throw FormatError("cuckoo filter header: its size does not match its partitions");
  }
  return bytes;
}

CuckooFileHeader parse_cuckoo_file_header(std::span<const std::uint8_t> in,
                                          std::uint64_t file_size) {
  const std::uint64_t bytes = cuckoo_header_bytes(in);
  if (in.size() < bytes || file_size < bytes) throw FormatError("truncated cuckoo filter header");
  const auto scheme = get<std::uint32_t>(in, 16);
  if (!is_known_hash_scheme(scheme)) {
    throw FormatError("cuckoo filter file uses unknown hash scheme " + std::to_string(scheme));
  }
  CuckooFileHeader header;
  CuckooOptions& o = header.options;
  o.partitions = get<std::uint32_t>(in, 20);
  o.growth = get<std::uint32_t>(in, 24);
  o.capacity = get<std::uint64_t>(in, 32);
  o.error_rate = get<double>(in, 40);
  o.max_bytes = get<std::uint64_t>(in, 48);
  header.created_unix_ns = get<std::uint64_t>(in, 56);
  std::optional<CuckooShape> shape;
  try {
    shape.emplace(o);
  } catch (const InvalidArgument& e) {
    throw FormatError(std::string("cuckoo filter header: ") + e.what());
  }
  // Every table inside the file, on its own pages, none overlapping another.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;
  header.links.resize(o.partitions);
  for (std::uint32_t partition = 0; partition < o.partitions; ++partition) {
    for (std::uint32_t link = 0; link < kMaxCuckooLinks; ++link) {
      const auto offset = get<std::uint64_t>(in, cuckoo_directory_entry(partition, link));
      if (offset == 0) {
        for (std::uint32_t later = link + 1; later < kMaxCuckooLinks; ++later) {
          if (get<std::uint64_t>(in, cuckoo_directory_entry(partition, later)) != 0) {
            throw FormatError("cuckoo filter header: partition " + std::to_string(partition) +
                              " has link " + std::to_string(later) + " without link " +
                              std::to_string(link));
          }
        }
        break;
      }
      if (link >= shape->max_links()) {
        throw FormatError("cuckoo filter header: partition " + std::to_string(partition) +
                          " has more links than its options allow");
      }
      const std::uint64_t size = shape->link(link).bytes();
      if (offset % kCuckooFilePage != 0 || offset < bytes || offset > file_size ||
          size > file_size - offset) {
        throw FormatError("cuckoo filter header: link " + std::to_string(link) + " of partition " +
                          std::to_string(partition) +
                          " lies outside the file (truncated or corrupt)");
      }
      spans.emplace_back(offset, offset + size);
      header.links[partition].push_back(offset);
    }
    if (header.links[partition].empty()) {
      throw FormatError("cuckoo filter header: partition " + std::to_string(partition) +
                        " has no table");
    }
  }
  std::sort(spans.begin(), spans.end());
  for (std::size_t i = 1; i < spans.size(); ++i) {
    if (spans[i].first < spans[i - 1].second) {
      throw FormatError("cuckoo filter header: two tables overlap (corrupt file)");
    }
  }
  return header;
}

}  // namespace redbloom
