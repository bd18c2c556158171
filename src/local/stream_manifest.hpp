// The control file of a windowed or growing filter file: its options, and which links exist.
// Each link is a plain filter file beside it, PATH.s<slice>.<link> (file_format.hpp).
//
//   0      header, 4096 bytes: magic "RBSTREAM", version 1, creation time, the options as
//          "key=value" lines (StreamShape::encode), an XXH3-64 of all that; never rewritten
//   4096   the published sequence number s (u64): the manifest is slot s mod 2
//   8192   slot 0, then slot 1, kSlotBytes each: s, the entry count, per link (slice, link,
//          creation time, items), an XXH3-64 of the slot
//
// A writer (under the writers' lock) writes the next manifest into the other slot and only
// then publishes its number: a writer killed part-way leaves the published slot whole.
// Readers take no lock: they read the number, the slot, and the number again, and retry
// when the slot's own number or checksum disagree (a writer overwrote it meanwhile).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/stream_shape.hpp"

namespace redbloom::stream_manifest {

struct Entry {
  std::int64_t slice = 0;
  std::uint32_t link = 0;
  std::uint64_t created_unix_ns = 0;
  std::uint64_t items = 0;
  friend bool operator==(const Entry&, const Entry&) = default;
};

struct Manifest {
  std::uint64_t sequence = 0;
  std::vector<Entry> entries;  // oldest slice first, links in order
};

inline constexpr std::uint64_t kHeaderBytes = 4096;
inline constexpr std::uint64_t kSequenceOffset = 4096;
inline constexpr std::uint64_t kSlotOffset = 8192;
inline constexpr std::uint64_t kSlotBytes = 65536;
inline constexpr std::uint64_t kFileBytes = kSlotOffset + 2 * kSlotBytes;
// (kSlotBytes - 24) / 32: entries a slot holds.
inline constexpr std::size_t kMaxEntries = 2047;

// Whether `fd` starts with the control file's magic.
[[nodiscard]] bool has_magic(int fd, const std::string& path);
// Whether a file's first bytes, already read, are that magic.
[[nodiscard]] bool has_magic(std::span<const std::uint8_t> first_bytes);

// Writes a new control file's content: header, sequence 0, an empty slot 0.
void write_new(int fd, const std::string& path, const StreamShape& shape,
               std::uint64_t created_unix_ns);
// The shape and creation time; FormatError naming what is wrong.
struct Header {
  StreamShape shape;
  std::uint64_t created_unix_ns;
};
[[nodiscard]] Header read_header(int fd, const std::string& path);

// The published sequence number (one 8-byte read).
[[nodiscard]] std::uint64_t published(int fd, const std::string& path);
// The manifest published as `sequence`; false if a writer overwrote its slot meanwhile (read
// published() again). FormatError if the slot is damaged while still published.
[[nodiscard]] bool read(int fd, const std::string& path, std::uint64_t sequence, Manifest& out);
// Writes `manifest` as sequence + 1 and publishes it; sets manifest.sequence.
void publish(int fd, const std::string& path, Manifest& manifest);

// PATH.s<slice>.<link>.
[[nodiscard]] std::string link_path(const std::string& path, std::int64_t slice,
                                    std::uint32_t link);
// (slice, link) of a file name that is exactly what link_path(base, slice, link) makes (decimal
// digits, no sign, space or leading zero); false for any other name.
[[nodiscard]] bool parse_link_name(std::string_view name, std::string_view base,
                                   std::int64_t& slice, std::uint32_t& link);

}  // namespace redbloom::stream_manifest
