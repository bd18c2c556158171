// The Lua script behind a cuckoo filter in Redis, and the pure encoding of its calls and
// decoding of its replies (no I/O; cuckoo_redis_store.cpp sends them). The script repeats
// cuckoo_chain and cuckoo_table::Table step for step on the link strings (slot i of a link is
// BITFIELD's `u<f> #i`), so a Redis filter's tables hold the same bytes as a file's given the
// same adds and removes, and one call is one atomic step on its server: of several clients
// adding one item exactly one sees it new, kicks and growth included.
//
// Keys. Link l of partition p is partition_key(NAME, p, salt, "c<l>") (core/redis_format.hpp),
// and its roster partition_key(NAME, p, salt, "clinks") one byte, the links it holds minus one;
// every key of a partition shares its hash tag, so its slot. Link 0 and the roster are made
// with the filter; the script grows link l (a zeroed string of its bytes, SETRANGE) and raises
// the roster when every link refuses an item and l < the links declared.
//
// Protocol. One EVALSHA per unit of items and server (per partition on a cluster):
//   KEYS  for each partition of the unit, its roster, then its L link keys, links 0 .. L-1
//   ARGV  mode ('a' add, 'i' insert, 'c' contains, 'r' remove, 'k' remove_known, 'n' count),
//         L, L x (buckets, fingerprint bits), then per item: the index of its partition among
//         the unit's, the top 32 bits of its hash's lo and of its hi (the script computes
//         buckets and fingerprints)
//   Reply {status, r1, r2, ...}: status 0 every item handled, r_i its answer (add: 1 new, 0
//         present; insert 1; contains, remove and remove_known: 1 or 0; count: the copies);
//         status 1: the add (or insert) of the item after the last answer found every link
//         full and no link left to grow, and it and the items after it were not handled.
//   Where every master has redbloom's module at RB.VERSION 4 or later, RB.CUCKOO numkeys KEYS
//   ARGV does the same on the same keys, run by the library's table code.
//   A partition whose roster is gone, or one of whose links the roster counts is gone or of
//   another length, is an error reply "REDBLOOMCUCKOO lost <key>": every partition of the
//   call is checked first, so then nothing was written and nothing is answered.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "connection.hpp"
#include "core/cuckoo_table.hpp"

namespace redbloom::redis::cuckoo {

[[nodiscard]] std::string_view script_text() noexcept;
// Its SHA1 in hex (EVALSHA's name for it; a server that lacks it answers NOSCRIPT and the call
// goes again as EVAL).
[[nodiscard]] const std::string& script_sha1();

// insert: one more copy of the item whatever the links hold (cuckoo_chain::insert);
// remove_known: clears the item's copy only where one link alone holds its fingerprint
// (cuckoo_chain::remove_known), for items an exact set holds.
enum class Mode : char {
  add = 'a',
  insert = 'i',
  contains = 'c',
  remove = 'r',
  remove_known = 'k',
  count = 'n'
};

// One item as the script takes it.
struct ItemArgs {
  std::uint32_t partition_index = 0;  // among the call's partitions
  std::uint32_t lo_top = 0;
  std::uint32_t hi_top = 0;
};

// How a call goes: the script by EVALSHA (by its SHA1) or EVAL, their read-only forms for
// lookups and counts (a user who may only read the keys may run them), or redbloom's module
// command RB.CUCKOO (module/cuckoo_partition_commands.hpp), which takes the same keys and
// arguments and answers the same way.
enum class Command : std::uint8_t { evalsha, eval, evalsha_ro, eval_ro, module };

// Writes the call.
void encode(CommandBuffer& buffer, Command command, Mode mode, std::span<const std::string> keys,
            std::span<const cuckoo_table::Shape> links, std::span<const ItemArgs> items);

struct Reply {
  bool full = false;
  std::vector<std::uint32_t> answers;
};
// Throws ReplyProblem (lost() for a lost partition) for an error reply or a malformed one.
[[nodiscard]] Reply decode(const redisReply& reply, std::size_t items);

}  // namespace redbloom::redis::cuckoo
