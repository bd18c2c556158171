// Copies of a windowed or growing filter's frozen links on a server without redbloom's module: a
// writer reads each older slice key whole once (GET), and the current slice's links before its
// newest (GETRANGE: no writer changes them again), looks its items up in the copies itself, and
// sends the script its answers as claims (stream_script.hpp), so that the script reads an item's
// line in the current slice's newest link only, where it read one in every live link.
//
// A copy needs no trust: the script takes a claim only while the header fields of the links it
// covers are still the copy's, and every write that changes a link's bits changes its count. A
// copy of the current slice's first links also names the creation time of the link after them:
// a key that went back to an older state (a restart from an older snapshot, a failover to a
// lagging replica) and had those links filled again has equal counts and creation times, but
// makes that next link again, later. A copy that went stale (a writer with a lagging clock wrote
// into an older slice) costs the script its reads and is read again; it never changes an answer.
// Pure: the store sends the reads.
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

// The links a unit's items may go without arguments for (the script's F): those the claim on the
// current slice covers, when every live older slice (current - older .. current - 1) has a claim
// too; else 0.
[[nodiscard]] std::uint32_t links_claimed(std::span<const Claim> claims, std::int64_t current,
                                          std::uint32_t older) noexcept;

class OlderCopies {
 public:
  // The most bytes of copies a store holds by default: past it, slices go without (the script
  // reads them).
  static constexpr std::uint64_t kMaxBytes = std::uint64_t{256} << 20;
  // The largest slice key copied: one GET of a key blocks its server while the key is sent.
  static constexpr std::uint64_t kMaxKeyBytes = std::uint64_t{64} << 20;
  // A partition's links are copied once the writer has sent it an item for every this many
  // bytes to read: a writer of a few items reads the links in the script, as before.
  static constexpr std::uint64_t kBytesPerItem = 1024;

  // Where an item's bits are in a slice key: every link that can exist, and where each starts.
  OlderCopies(std::span<const FilterParams> links, std::span<const std::uint64_t> link_start,
              std::uint64_t partitions, std::uint64_t max_bytes = kMaxBytes);

  // A read to make: the whole key of an older slice (links 0: GET), or the header and first
  // `links` links of the current one (GETRANGE 0 .. end_byte()).
  struct Read {
    std::int64_t slice = 0;
    std::uint32_t links = 0;
    bool operator==(const Read&) const = default;
  };
  // The command that makes `read` of the slice's key: GET, or GETRANGE key 0 <last byte>.
  [[nodiscard]] std::vector<std::string> read_command(const Read& read,
                                                      const std::string& key) const;

  // What partition p lacks once `newest` is its current slice: the older slices (newest - older
  // .. newest - 1), and for a filter without a window, whose one slice has `newest_links` links,
  // the links before its newest. Drops the copies that left the window or no longer apply.
  // `items`: the items about to be sent to the partition.
  [[nodiscard]] std::vector<Read> wanted(std::uint64_t p, std::int64_t newest, std::uint32_t older,
                                         std::uint32_t newest_links, std::uint64_t items);
  // Keeps what the read answered (nullopt: no key); past max_bytes, only that the slice goes
  // without a copy.
  void keep(std::uint64_t p, const Read& read, std::optional<std::string> bytes);
  // The same with the read's reply: a string, or nil for no key. Anything else (a key of another
  // type, a user who may not read it) leaves the slice without a copy, not asked for again: the
  // script reads it, and reports a damaged key.
  void keep_reply(std::uint64_t p, const Read& read, const redisReply& reply);
  // Forgets the copies whose claims `verdict` says were stale ('0'), of `claimed` (the claims'
  // slices, as sent).
  void forget_stale(std::uint64_t p, std::span<const std::int64_t> claimed,
                    std::string_view verdict);

  // The claims of a unit of partition p that declares slices first .. last (the copies in that
  // range), and each item's mark: 0, or g - first + 1 for the newest claimed slice g whose copy
  // holds it. The claims' fields point into the copies: valid until the next keep or forget.
  void claim(std::uint64_t p, std::int64_t first, std::int64_t last,
             std::span<const ItemHash> hashes, std::vector<Claim>& claims,
             std::string& marks) const;

 private:
  struct Copy {
    std::int64_t slice = 0;
    std::uint32_t links = 0;  // links copied (0: no key)
    bool whole = true;        // the key as it was; else the current slice's first links
    bool declined = false;    // past the limits: not copied, not asked for again
    std::string bytes;        // the key's: header, then links 0 .. links - 1
    std::string fields;       // what its claim sends (stream_script.hpp)
  };
  // Adds `copy` to partition p's, newest slice first, unless that slice has one.
  void insert(std::uint64_t p, Copy copy);
  // Records that `read` goes without a copy.
  void decline(std::uint64_t p, const Read& read);

  std::vector<FilterParams> links_;
  std::vector<std::uint64_t> link_start_;
  std::vector<std::vector<Copy>> of_;  // per partition, newest slice first
  std::vector<std::uint64_t> sent_;    // per partition, the items wanted() was told of
  std::uint64_t max_bytes_;
  std::uint64_t bytes_ = 0;
};

}  // namespace redbloom::redis::stream
