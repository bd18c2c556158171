// Copies of a windowed filter's older slices on a server without redbloom's module: a writer
// reads each older slice key whole once (GET), looks its items up in the copies itself, and
// sends the script its answers as claims (stream_script.hpp), so that the script reads an
// item's line in the current slice only, where it read one in every live slice.
//
// A copy needs no trust: the script takes a claim only while the slice's header is still the
// copy's, and every write that changes a link's bits changes its header. A copy that went
// stale (a writer with a lagging clock wrote into an older slice) costs the script its reads
// and is read again; it never changes an answer. Pure: the store sends the GETs.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "redbloom/hash.hpp"
#include "redbloom/params.hpp"
#include "stream_script.hpp"

namespace redbloom::redis::stream {

class OlderCopies {
 public:
  // The most bytes of copies a store holds by default: past it, slices go without (the script
  // reads them).
  static constexpr std::uint64_t kMaxBytes = std::uint64_t{256} << 20;
  // The largest slice key copied: one GET of a key blocks its server while the key is sent.
  static constexpr std::uint64_t kMaxKeyBytes = std::uint64_t{64} << 20;

  // Where an item's bits are in a slice key: every link that can exist, and where each starts.
  OlderCopies(std::span<const FilterParams> links, std::span<const std::uint64_t> link_start,
              std::uint64_t partitions, std::uint64_t max_bytes = kMaxBytes);

  // The older slices of partition p once `newest` is its current slice (newest - older ..
  // newest - 1) that it has no copy of. Drops its copies of slices that left the window.
  [[nodiscard]] std::vector<std::int64_t> wanted(std::uint64_t p, std::int64_t newest,
                                                 std::uint32_t older);
  // Keeps the key's bytes as GET answered (nullopt: no key); past max_bytes, only that the slice
  // goes without a copy.
  void keep(std::uint64_t p, std::int64_t slice, std::optional<std::string> bytes);
  // Forgets the copies whose claims `verdict` says were stale ('0'), of `claimed` (the claims'
  // slices, as sent).
  void forget_stale(std::uint64_t p, std::span<const std::int64_t> claimed,
                    std::string_view verdict);

  // The claims of a unit of partition p that declares slices first .. last (the copies in that
  // range), and each item's mark: 0, or g - first + 1 for the newest claimed slice g whose copy
  // holds it. The claims' headers point into the copies: valid until the next keep or forget.
  void claim(std::uint64_t p, std::int64_t first, std::int64_t last,
             std::span<const ItemHash> hashes, std::vector<Claim>& claims,
             std::string& marks) const;

 private:
  struct Copy {
    std::int64_t slice = 0;
    bool exists = false;
    bool declined = false;  // past max_bytes: not copied, not asked for again
    std::string bytes;      // the key's: header, then its links
  };

  // Adds `copy` to partition p's, newest slice first, unless that slice has one.
  void insert(std::uint64_t p, Copy copy);

  std::vector<FilterParams> links_;
  std::vector<std::uint64_t> link_start_;
  std::vector<std::vector<Copy>> of_;  // per partition, newest slice first
  std::uint64_t max_bytes_;
  std::uint64_t bytes_ = 0;
};

}  // namespace redbloom::redis::stream
