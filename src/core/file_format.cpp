#include "core/file_format.hpp"

#include <bit>
#include <cstring>
#include <string>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "redbloom/error.hpp"

namespace redbloom {
namespace {

constexpr char kMagic[8] = {'R', 'E', 'D', 'B', 'L', 'O', 'O', 'M'};
constexpr std::size_t kChecksumOffset = 96;

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

std::string num(std::uint64_t v) {
  return std::to_string(v);
}

}  // namespace

FileHeader make_file_header(const FilterParams& params, std::uint64_t created_unix_ns) {
  FileHeader header;
  header.params = params;
  header.created_unix_ns = created_unix_ns;
  header.bitmap_bytes = params.total_bytes();
  return header;
}

std::array<std::uint8_t, kFileHeaderBytes> encode_file_header(const FileHeader& header) {
  std::array<std::uint8_t, kFileHeaderBytes> out{};
  std::uint8_t* p = out.data();
  const FilterParams& params = header.params;
  std::memcpy(p, kMagic, sizeof kMagic);
  put<std::uint32_t>(p, 8, kFileFormatVersion);
  put<std::uint32_t>(p, 12, static_cast<std::uint32_t>(kFileHeaderBytes));
  put<std::uint32_t>(p, 16, static_cast<std::uint32_t>(params.layout));
  put<std::uint32_t>(p, 20, params.hashes);
  put<std::uint32_t>(p, 24, params.hash_scheme);
  put<std::uint32_t>(p, 28, 0);
  put<std::uint64_t>(p, 32, params.partitions);
  put<std::uint64_t>(p, 40, params.partition_bits);
  put<std::uint64_t>(p, 48, params.total_bits());
  put<std::uint64_t>(p, 56, params.capacity);
  put<double>(p, 64, params.error_rate);
  put<std::uint64_t>(p, 72, header.created_unix_ns);
  put<std::uint64_t>(p, 80, header.bitmap_offset);
  put<std::uint64_t>(p, 88, header.bitmap_bytes);
  put<std::uint64_t>(p, kChecksumOffset, XXH3_64bits(p, kChecksumOffset));
  return out;
}

FileHeader parse_file_header(std::span<const std::uint8_t> prefix, std::uint64_t file_size) {
  if (prefix.size() < sizeof kMagic || std::memcmp(prefix.data(), kMagic, sizeof kMagic) != 0) {
    throw FormatError("not a redbloom filter file (no REDBLOOM signature at its start)");
  }
  if (prefix.size() < kFileHeaderUsedBytes) {
    throw FormatError("truncated redbloom filter: the file has " + num(file_size) +
                      " bytes, its header alone needs " + num(kFileHeaderUsedBytes));
  }
  const auto version = get<std::uint32_t>(prefix, 8);
  if (version != kFileFormatVersion) {
    throw FormatError("redbloom file format version " + num(version) +
                      " is not supported (this redbloom reads version " + num(kFileFormatVersion) +
                      ")");
  }
  if (get<std::uint64_t>(prefix, kChecksumOffset) != XXH3_64bits(prefix.data(), kChecksumOffset)) {
    throw FormatError("corrupt redbloom filter: header checksum mismatch");
  }
  FileHeader header;
  FilterParams& params = header.params;
  const auto header_bytes = get<std::uint32_t>(prefix, 12);
  params.layout = static_cast<Layout>(get<std::uint32_t>(prefix, 16));
  params.hashes = get<std::uint32_t>(prefix, 20);
  params.hash_scheme = get<std::uint32_t>(prefix, 24);
  params.partitions = get<std::uint64_t>(prefix, 32);
  params.partition_bits = get<std::uint64_t>(prefix, 40);
  const auto total_bits = get<std::uint64_t>(prefix, 48);
  params.capacity = get<std::uint64_t>(prefix, 56);
  params.error_rate = get<double>(prefix, 64);
  header.created_unix_ns = get<std::uint64_t>(prefix, 72);
  header.bitmap_offset = get<std::uint64_t>(prefix, 80);
  header.bitmap_bytes = get<std::uint64_t>(prefix, 88);

  validate(params, /*from_storage=*/true);
  if (header_bytes != kFileHeaderBytes || header.bitmap_offset != kFileHeaderBytes) {
    throw FormatError("corrupt redbloom filter: header size " + num(header_bytes) +
                      " / bitmap offset " + num(header.bitmap_offset) + ", expected " +
                      num(kFileHeaderBytes));
  }
  if (total_bits != params.total_bits() || header.bitmap_bytes != params.total_bytes()) {
    throw FormatError("corrupt redbloom filter: sizes disagree (m=" + num(total_bits) + ", " +
                      num(params.partitions) + " x " + num(params.partition_bits) + " bits, " +
                      num(header.bitmap_bytes) + " bitmap bytes)");
  }
  const std::uint64_t expected = header.bitmap_offset + header.bitmap_bytes;
  if (file_size != expected) {
    throw FormatError(std::string(file_size < expected ? "truncated" : "corrupt") +
                      " redbloom filter: the file has " + num(file_size) +
                      " bytes, its header says " + num(expected));
  }
  return header;
}

}  // namespace redbloom
