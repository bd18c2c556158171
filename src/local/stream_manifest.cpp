#include "local/stream_manifest.hpp"

#include <charconv>
#include <cstring>
#include <map>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "local/posix_file.hpp"
#include "redbloom/error.hpp"

namespace redbloom::stream_manifest {
namespace {

constexpr char kMagic[8] = {'R', 'B', 'S', 'T', 'R', 'E', 'A', 'M'};
constexpr std::uint32_t kVersion = 1;
// Header: magic, version u32, options length u32, creation time u64, options; checksum last.
constexpr std::size_t kOptionsOffset = 24;
constexpr std::size_t kHeaderChecksumOffset = kHeaderBytes - 8;
constexpr std::size_t kEntryBytes = 32;
constexpr std::size_t kSlotHeadBytes = 16;

template <class T>
void put(std::uint8_t* at, T value) {
  std::memcpy(at, &value, sizeof value);
}
template <class T>
T get(const std::uint8_t* at) {
  T value;
  std::memcpy(&value, at, sizeof value);
  return value;
}

std::uint64_t slot_offset(std::uint64_t sequence) {
  return kSlotOffset + (sequence % 2) * kSlotBytes;
}

}  // namespace

bool has_magic(std::span<const std::uint8_t> first_bytes) {
  return first_bytes.size() >= sizeof kMagic &&
         std::memcmp(first_bytes.data(), kMagic, sizeof kMagic) == 0;
}

bool has_magic(int fd, const std::string& path) {
  char magic[8];
  return posix::read_at(fd, magic, sizeof magic, 0, path) == sizeof magic &&
         std::memcmp(magic, kMagic, sizeof magic) == 0;
}

void write_new(int fd, const std::string& path, const StreamShape& shape,
               std::uint64_t created_unix_ns) {
  std::string options;
  for (const auto& [key, value] : shape.encode()) options += key + "=" + value + "\n";
  std::vector<std::uint8_t> header(kHeaderBytes, 0);
  if (kOptionsOffset + options.size() > kHeaderChecksumOffset) {
    throw InvalidArgument("stream options too long for the control file");
  }
  std::memcpy(header.data(), kMagic, sizeof kMagic);
  put<std::uint32_t>(header.data() + 8, kVersion);
  put<std::uint32_t>(header.data() + 12, static_cast<std::uint32_t>(options.size()));
  put<std::uint64_t>(header.data() + 16, created_unix_ns);
  std::memcpy(header.data() + kOptionsOffset, options.data(), options.size());
  put<std::uint64_t>(header.data() + kHeaderChecksumOffset,
                     XXH3_64bits(header.data(), kHeaderChecksumOffset));
  posix::write_at(fd, header.data(), header.size(), 0, path);
  Manifest empty;
  empty.sequence = 0;
  std::vector<std::uint8_t> slot(kSlotHeadBytes + 8, 0);
  put<std::uint64_t>(slot.data() + kSlotHeadBytes, XXH3_64bits(slot.data(), kSlotHeadBytes));
  posix::write_at(fd, slot.data(), slot.size(), kSlotOffset, path);
  const std::uint64_t sequence = 0;
  posix::write_at(fd, &sequence, sizeof sequence, kSequenceOffset, path);
  // The whole size, so that a short file is recognised as damaged; allocated, so that
  // publishing a manifest on a full disk never needs a block it cannot get.
  posix::reserve_space(fd, kFileBytes, path);
}

Header read_header(int fd, const std::string& path) {
  std::vector<std::uint8_t> header(kHeaderBytes);
  if (posix::read_at(fd, header.data(), header.size(), 0, path) != header.size() ||
      posix::file_size(fd, path) != kFileBytes) {
    throw FormatError(path + ": stream control file is truncated or has trailing bytes");
  }
  if (std::memcmp(header.data(), kMagic, sizeof kMagic) != 0) {
    throw FormatError(path + " is not a redbloom stream filter");
  }
  if (get<std::uint64_t>(header.data() + kHeaderChecksumOffset) !=
      XXH3_64bits(header.data(), kHeaderChecksumOffset)) {
    throw FormatError(path + ": stream control file header is damaged (bad checksum)");
  }
  const auto version = get<std::uint32_t>(header.data() + 8);
  if (version != kVersion) {
    throw FormatError(path + ": stream format version " + std::to_string(version) +
                      " is not one this version reads (1)");
  }
  const auto length = get<std::uint32_t>(header.data() + 12);
  if (kOptionsOffset + length > kHeaderChecksumOffset) {
    throw FormatError(path + ": stream options overrun the header");
  }
  std::map<std::string, std::string, std::less<>> fields;
  const std::string text(reinterpret_cast<const char*>(header.data() + kOptionsOffset), length);
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = text.find('\n', at);
    const std::size_t equals = text.find('=', at);
    if (end == std::string::npos || equals == std::string::npos || equals > end) {
      throw FormatError(path + ": stream options are malformed");
    }
    fields[text.substr(at, equals - at)] = text.substr(equals + 1, end - equals - 1);
    at = end + 1;
  }
  return Header{StreamShape::parse(fields, path), get<std::uint64_t>(header.data() + 16)};
}

std::uint64_t published(int fd, const std::string& path) {
  std::uint64_t sequence = 0;
  if (posix::read_at(fd, &sequence, sizeof sequence, kSequenceOffset, path) != sizeof sequence) {
    throw FormatError(path + ": stream control file is truncated");
  }
  return sequence;
}

bool read(int fd, const std::string& path, std::uint64_t sequence, Manifest& out) {
  std::vector<std::uint8_t> slot(kSlotBytes);
  if (posix::read_at(fd, slot.data(), slot.size(), slot_offset(sequence), path) != slot.size()) {
    throw FormatError(path + ": stream control file is truncated");
  }
  const auto count = get<std::uint32_t>(slot.data() + 8);
  const bool sound = get<std::uint64_t>(slot.data()) == sequence && count <= kMaxEntries &&
                     get<std::uint64_t>(slot.data() + kSlotHeadBytes + count * kEntryBytes) ==
                         XXH3_64bits(slot.data(), kSlotHeadBytes + count * kEntryBytes);
  if (!sound) {
    if (published(fd, path) != sequence) return false;
    throw FormatError(path + ": stream manifest " + std::to_string(sequence) +
                      " is damaged (bad checksum)");
  }
  out.sequence = sequence;
  out.entries.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint8_t* at = slot.data() + kSlotHeadBytes + i * kEntryBytes;
    out.entries[i] = Entry{get<std::int64_t>(at), get<std::uint32_t>(at + 8),
                           get<std::uint64_t>(at + 16), get<std::uint64_t>(at + 24)};
  }
  return true;
}

void publish(int fd, const std::string& path, Manifest& manifest) {
  if (manifest.entries.size() > kMaxEntries) {
    throw InvalidArgument(path + ": a stream filter holds at most " + std::to_string(kMaxEntries) +
                          " links at once");
  }
  const std::uint64_t next = manifest.sequence + 1;
  const std::size_t used = kSlotHeadBytes + manifest.entries.size() * kEntryBytes;
  std::vector<std::uint8_t> slot(used + 8, 0);
  put<std::uint64_t>(slot.data(), next);
  put<std::uint32_t>(slot.data() + 8, static_cast<std::uint32_t>(manifest.entries.size()));
  for (std::size_t i = 0; i < manifest.entries.size(); ++i) {
    const Entry& e = manifest.entries[i];
    std::uint8_t* at = slot.data() + kSlotHeadBytes + i * kEntryBytes;
    put<std::int64_t>(at, e.slice);
    put<std::uint32_t>(at + 8, e.link);
    put<std::uint64_t>(at + 16, e.created_unix_ns);
    put<std::uint64_t>(at + 24, e.items);
  }
  put<std::uint64_t>(slot.data() + used, XXH3_64bits(slot.data(), used));
  posix::write_at(fd, slot.data(), slot.size(), slot_offset(next), path);
  posix::write_at(fd, &next, sizeof next, kSequenceOffset, path);
  manifest.sequence = next;
}

std::string link_path(const std::string& path, std::int64_t slice, std::uint32_t link) {
  return path + ".s" + std::to_string(slice) + "." + std::to_string(link);
}

bool parse_link_name(std::string_view name, std::string_view base, std::int64_t& slice,
                     std::uint32_t& link) {
  const std::string prefix = std::string(base) + ".s";
  if (!name.starts_with(prefix)) return false;
  const char* const end = name.data() + name.size();
  std::int64_t s = 0;
  std::uint32_t l = 0;
  // from_chars takes no sign, space or base prefix for these, but accepts '-' for the slice.
  const auto [slice_end, slice_error] = std::from_chars(name.data() + prefix.size(), end, s);
  if (slice_error != std::errc{} || s < 0 || slice_end == end || *slice_end != '.') return false;
  const auto [link_end, link_error] = std::from_chars(slice_end + 1, end, l);
  if (link_error != std::errc{} || link_end != end) return false;
  // Exactly the name link_path gives: no leading zeros, nothing around the numbers.
  if (name.substr(base.size()) != link_path("", s, l)) return false;
  slice = s;
  link = l;
  return true;
}

}  // namespace redbloom::stream_manifest
