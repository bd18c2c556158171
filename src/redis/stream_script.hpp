// The one Lua script behind a windowed or growing filter in Redis, and the pure encoding of its
// arguments and decoding of its replies (no I/O; stream_store.cpp sends them).
//
// Keys. Slice g of partition p is one string, partition_key(NAME, p, salt, "s<g>"):
//   header   kHeaderBytes: big-endian i64 fields (BITFIELD i64), field 0 the link count L,
//            then per link l: field 1 + 2l its item count, field 2 + 2l its creation (Unix ms)
//   links    link 0's partition bytes, link 1's, ... (link l sized by StreamShape::link_params)
// so its length is kHeaderBytes + the bytes of links 0..L-1, always. The script makes it at the
// first add into the slice, with PEXPIREAT at the slice's retirement (none without a window),
// and appends a link with SETRANGE when the newest one holds its capacity.
//
// The roster, partition_key(NAME, p, salt, "slices"), no expiry: 8 x (slices + 1) bytes, i64
// field g mod (slices + 1) = g + 1 once slice g's key was made. A live slice that was made and
// is gone (evicted: slice keys have a TTL, so volatile-* policies take them) is then an error.
// Filters of metadata version 2 and later make every partition's roster with the filter (each
// field INT64_MIN, which no g + 1 equals) and call in the guarded modes (upper case): a roster
// that is gone is then an error too, since a slice evicted with it would look never made.
// Version 1 filters made it at the first add (lower-case modes: a missing roster is empty).
//
// Protocol. One EVALSHA per partition and unit of items, declaring KEYS = the roster, then the
// slice keys of slices first .. first + #KEYS - 2 (all share the partition's hash tag, so its
// slot):
//   ARGV  mode ('a' add, 'l' lookup, 'i' info; 'A', 'L', 'I' guarded), now_ms (-1: the server's
//   TIME), slice_ms (0: no
//         window), older (live slices before the current one), first, kHeaderBytes, M (links
//         described), budget (bytes the partition's live links may hold; 0: no limit), K (links
//         with offsets), the item form ('b' bits, 'l' lines: ItemForm), F (the first link with
//         offsets: adds whose claims cover the links before it), M x (bytes, capacity per
//         partition, hashes), n (items), then per item and per link F <= l < K its arguments:
//         bits, its k_l absolute bit offsets in the key; lines (blocked links), its line's first
//         and last absolute byte offsets in the key and the line's (byte, mask) pairs (the
//         client hashes: Lua's numbers are doubles); adds and lookups may go on with claims:
//         C, then C x (a slice g, c links copied, their header fields as copied: bytes
//         8 .. 16c + 7 of the key, for the current slice then link c's creation time, bytes
//         16c + 16 .. 16c + 23), then one byte per item, 0 or g - first + 1 for the newest
//         claimed slice whose copy holds it
//   The current slice G is the one of now, or the newest declared slice that exists (time never
//   goes back for a partition, whatever the writers' clocks say); live are G - older .. G.
//   A claim is valid when its fields are the key's now and it covers every link of an older
//   live slice (c = 0: a slice with no key), or links before the newest of the current one (no
//   writer changes those again): every write that changes a link's bits raises that link's
//   count, so the copy's bits are the slice's. Link c's creation time tells a current slice
//   that went back to an older state (a restart from an older snapshot) and was filled again. The
//   script then trusts the client's answer for those links and reads only the others. Reply
//   {status, done, flags, links, G, now_ms[, verdict][, info...]}, verdict ('1' / '0' per claim:
//   valid or not) when claims were sent:
//     ok     every item handled; flags: one '0'/'1' per item (new / present)
//     links  a live slice has more links than K, or the add must grow past K: items [0, done)
//            were handled, the rest not; send offsets for `links` links and go on
//     offsets F > 0, and a link before F must be read (a claim that did not hold, a slice the
//            claims do not cover, a lookup): nothing ran; send offsets from link 0 and go on
//     full   the add needs link `links`, which cannot exist (M) or would exceed the budget:
//            items [0, done) were handled, the rest not
//     time   the declared slices do not cover G - older .. G (or the newest declared one
//            exists, so there may be newer): nothing ran; declare around slice G and go on
//   info mode adds, per live slice that exists: {g, header bytes, key length, set bits}.
//   A key of another type, of a length its header does not explain, or gone while the roster
//   says it was made and it is live, is an error reply "REDBLOOMSTREAM <wrongtype|damaged|lost|
//   roster|gone> <key index> <detail>" and nothing is written ("gone 1 0": a guarded roster is
//   missing). Lookups and info read with BITFIELD_RO and GETRANGE only, so they run on a replica.
//
// Where every master has redbloom's module (core/module_protocol.hpp), RB.STREAM does the same
// on the same keys and bytes (module/stream_commands.cpp), hashing on the server:
//   RB.STREAM #KEYS KEYS... mode now_ms slice_ms older first kHeaderBytes M budget partitions
//             index M x (layout hashes partition-bits capacity) packed-items
// Same reply and errors; it knows every link, so it never answers `links`. RB.STREAM_RO takes
// the same arguments in the lookup and info modes only and is flagged read-only, so that
// replicas serve it (RB.VERSION 3 and later, as the guarded modes).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "connection.hpp"
#include "core/layout.hpp"
#include "redbloom/params.hpp"
#include "redbloom/stream.hpp"

namespace redbloom::redis::stream {

inline constexpr std::uint64_t kHeaderFields = 1 + 2 * std::uint64_t{kMaxStreamLinks};
inline constexpr std::uint64_t kHeaderBytes = 8 * kHeaderFields;

[[nodiscard]] std::string_view script_text() noexcept;
// The Lua functions holds(line, pairs) and with(line, pairs) that test and set a blocked item's
// line (ItemForm::lines), as locals: the script's first part, and the Redis Streams stage's.
[[nodiscard]] std::string_view line_functions() noexcept;
// Its SHA1 in hex, the name EVALSHA calls it by: computed here, so opening a filter needs no
// SCRIPT LOAD round trip (a server that does not have it yet answers NOSCRIPT, and the call is
// sent again as EVAL, which also caches it there).
[[nodiscard]] const std::string& script_sha1();

enum class Mode : char { add = 'a', lookup = 'l', info = 'i' };

// How a call sends an item's bits in a link. Lines (every link blocked): the script reads the
// item's 64-byte line whole (GETRANGE), tests it, and writes it back (SETRANGE) only for a new
// item, instead of one bit operation per hash; the offsets go as text, since converting a Lua
// number into a command's argument costs the script more than the test.
enum class ItemForm : char { bits = 'b', lines = 'l' };
[[nodiscard]] ItemForm item_form(std::span<const FilterParams> links) noexcept;
// The arguments of one item in one link.
[[nodiscard]] std::uint64_t item_arguments(ItemForm form, const FilterParams& link) noexcept;

// Calls number(value) or text(bytes) for each argument of an item in links from..count-1, whose
// bytes start at link_start[l] in a slice key.
template <class Number, class Text>
void append_item_arguments(ItemForm form, std::span<const FilterParams> links,
                           std::span<const std::uint64_t> link_start, const ItemHash& h,
                           std::uint32_t count, Number&& number, Text&& text,
                           std::uint32_t from = 0) {
  for (std::uint32_t l = from; l < count; ++l) {
    const FilterParams& p = links[l];
    if (form == ItemForm::lines) {
      const layout::BlockedLine line =
          layout::blocked_line(h, p.partition_bits, p.hashes, link_start[l]);
      number(line.first);
      number(line.last());
      text(line.pairs());
      continue;
    }
    const std::uint64_t base = 8 * link_start[l];
    const auto visit = [&](std::uint64_t bit) { number(base + bit); };
    if (p.layout == Layout::blocked) {
      layout::blocked_probes(h, p.partition_bits, p.hashes, visit);
    } else {
      layout::classic_probes(h, p.partition_bits, p.hashes, visit);
    }
  }
}

// A slice whose first `links` links the client holds a copy of (stream_copies.hpp), and those
// links' header fields as copied (item count and creation time each; none: the slice had no key),
// for the current slice followed by the next link's creation time.
struct Claim {
  std::int64_t slice = 0;
  std::uint32_t links = 0;
  std::string_view fields;
};

// One link as the script needs it.
struct LinkArgs {
  std::uint64_t bytes = 0;     // of one partition
  std::uint64_t capacity = 0;  // items per partition before the next link is made
  std::uint32_t hashes = 0;
};

struct Call {
  Mode mode = Mode::lookup;
  // EVALSHA_RO (EVAL_RO): lookups and info, which write nothing.
  bool read_only_script = false;
  bool guarded = false;  // the roster was made with the filter (metadata version 2)
  std::int64_t now_ms = -1;
  std::uint64_t slice_ms = 0;
  std::uint32_t older = 0;
  std::int64_t first = 0;
  std::span<const std::string> keys;  // the roster, then slices first, first + 1, ...
  std::uint64_t budget = 0;
  std::span<const LinkArgs> links;       // every link that can exist
  std::uint32_t with_offsets = 0;        // K
  std::uint32_t first_with_offsets = 0;  // F: the claims cover links 0..F-1 (adds only)
  std::size_t items = 0;
  ItemForm form = ItemForm::bits;
  // The items' arguments (append_item_arguments), item by item, link by link, RESP-encoded as
  // CommandBuffer::arg writes them: item_arg_count of them.
  std::string_view item_args;
  std::size_t item_arg_count = 0;
  // The script's adds and lookups only: the slices whose copies the items were tested in, and
  // per item 0 (in none) or g - first + 1 for the newest claimed slice g holding it.
  std::span<const Claim> claims;
  std::string_view marks;
  // RB.STREAM instead: the items packed (core/packed_items.hpp), every link's parameters (as
  // many as `links`), and the partition. `hashed`: RB.STREAMH, `packed` holds the items'
  // 16-byte hashes instead.
  std::string_view packed;
  bool hashed = false;
  std::span<const FilterParams> link_params;
  std::uint64_t partitions = 0;
  std::uint64_t partition = 0;
};

// What runs a unit, given the lowest RB.VERSION among the masters (0 where one lacks the
// module): the script; RB.STREAM with the items (an older module); RB.STREAMH with their hashes.
enum class Engine { script, module_items, module_hashes };
[[nodiscard]] Engine engine_for(long long lowest_module_version) noexcept;

// EVALSHA sha ... (or EVAL with the script's text when `sha` is empty). Returns 1 (commands).
std::size_t encode(CommandBuffer& out, const Call& call, std::string_view sha);
// RB.STREAM[H] ... (the item arguments, form and with_offsets unused). Returns 1 (commands).
std::size_t encode_module(CommandBuffer& out, const Call& call);

// A slice as info mode reports it.
struct SliceState {
  std::int64_t slice = 0;
  std::uint32_t links = 0;
  std::vector<std::uint64_t> items;       // per link
  std::vector<std::uint64_t> created_ms;  // per link
  std::uint64_t length = 0;
  std::uint64_t set_bits = 0;
};

struct Reply {
  enum class Status { ok, links, offsets, full, time } status = Status::ok;
  std::size_t done = 0;
  std::string flags;  // '0' / '1' per handled item
  std::uint32_t links = 0;
  std::int64_t slice = 0;
  std::int64_t now_ms = 0;
  std::string verdict;             // per claim, '1' if the copy was the slice as it is
  std::vector<SliceState> slices;  // info mode
};

// Throws ReplyProblem (partition_ops.hpp) naming the key for the script's own errors (lost =
// true: a damaged or foreign key) and for anything that is not a reply of this protocol.
[[nodiscard]] Reply decode(const redisReply& reply, std::span<const std::string> keys);

// The header's fields as the bytes of a key hold them (big-endian i64).
[[nodiscard]] std::uint64_t header_field(std::string_view header, std::uint64_t field);

}  // namespace redbloom::redis::stream
