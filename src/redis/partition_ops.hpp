// The commands on one partition key, as pure encode/decode pairs (no I/O): encode writes the
// commands of one pipeline unit, decode reads that unit's replies. Unit-tested against RESP
// byte strings, without a server.
//
// Redis runs other clients' commands and its own evictions between a client's pipelined
// commands (and counts the client's query buffer as memory in use, so a large command can
// itself cause the eviction of the key it is about to touch). A partition that vanished reads
// as zeros, and a write recreates it. So every operation that reads or writes bits brackets
// its commands with `STRLEN key` before and after: the answers count only if both lengths are
// the sealed length (core/redis_format.hpp). A partition lost in between, or recreated by the
// command itself, shows in the second length, and the unit is refused: an error, never an answer.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "connection.hpp"
#include "redbloom/hash.hpp"
#include "redbloom/params.hpp"

namespace redbloom::redis {

struct PartitionKey {
  std::string_view key;
  std::uint64_t sealed_length;  // the partition's bytes and its seal
};

// The items of one unit: their indices in the batch, and the batch's hashes and items.
struct UnitItems {
  std::span<const std::uint32_t> order;
  const ItemHash* hashes;
  const std::string_view* items;
};

// What a decoder found wrong, without naming the server (the caller adds it). `lost`: the
// partition vanished or changed (a FormatError for the caller), else an error reply.
class ReplyProblem : public std::runtime_error {
 public:
  ReplyProblem(const std::string& what, bool lost) : std::runtime_error(what), lost_(lost) {}
  [[nodiscard]] bool lost() const noexcept { return lost_; }

 private:
  bool lost_;
};

// How per-item work on a partition is said to a server: stock Redis (BITFIELD, GETRANGE),
// or, where a server has redbloom's module, its own commands.
class PartitionCommands {
 public:
  virtual ~PartitionCommands() = default;
  // The command a test-and-set or a lookup unit sends, for messages ("BITFIELD").
  [[nodiscard]] virtual std::string_view operation(bool lookup) const = 0;
  // Items per unit: bounds one command's size (and how long it blocks other clients).
  [[nodiscard]] virtual std::size_t unit_items(bool lookup) const = 0;
  // Test-and-set: newly[j] = 1 iff some bit of the unit's j-th item was 0 before. Returns the
  // number of commands written.
  virtual std::size_t encode_test_and_set(CommandBuffer& out, const PartitionKey& partition,
                                          const UnitItems& unit) const = 0;
  virtual void decode_test_and_set(Replies replies, const PartitionKey& partition,
                                   const UnitItems& unit, std::uint8_t* newly) const = 0;
  // Lookup: present[j] = 1 iff every bit of the unit's j-th item is set.
  virtual std::size_t encode_lookup(CommandBuffer& out, const PartitionKey& partition,
                                    const UnitItems& unit) const = 0;
  virtual void decode_lookup(Replies replies, const PartitionKey& partition, const UnitItems& unit,
                             std::uint8_t* present) const = 0;
  // One item's arguments for a server-side script that runs the test-and-set command itself
  // (the Redis Streams stage, redis_stream_dedup.cpp): stock, the item's bit offsets in its
  // partition (BITFIELD SET u1 <bit> 1 each), or for a blocked layout its line's byte offset
  // and a string of (byte in the line, mask) pairs (GETRANGE, then SETRANGE if new); module,
  // the item packed (RB.PARTADD's items argument).
  virtual void append_script_item(std::vector<std::string>& out, const ItemHash& hash,
                                  std::string_view item) const = 0;
};

// Stock Redis (any server >= 6.2):
//   test-and-set  STRLEN key | BITFIELD key SET u1 <bit> 1 ... (k per item) | STRLEN key
//                 the old bits come back, so each item's "new" is known; one command, so of
//                 two clients adding one item exactly one sees it as new
//   lookup        classic: STRLEN key | BITFIELD_RO key GET u1 <bit> ... | STRLEN key
//                 blocked: STRLEN key | GETRANGE key <block> <block+63> per item | STRLEN key
[[nodiscard]] std::unique_ptr<PartitionCommands> stock_partition_commands(
    const FilterParams& params);

// Where the server has redbloom's module (module/partition_commands.cpp):
//   test-and-set  RB.PARTADD key sealed-length layout hashes partition-bits partitions index items
//   lookup        RB.PARTEXISTS key (the same arguments)
// one command per unit, the items packed in one argument (core/packed_items.hpp) and hashed
// on the server, which checks the sealed length inside the command; same bits as stock Redis.
// `hashed` (module version kHashedItems): RB.PARTADDH / RB.PARTEXISTSH with the items' hashes
// instead, 16 bytes each; the same bits.
[[nodiscard]] std::unique_ptr<PartitionCommands> module_partition_commands(
    const FilterParams& params, bool hashed = false);

// STRLEN key: the length check alone (the first of a multi-unit transfer).
std::size_t encode_length_check(CommandBuffer& out, const PartitionKey& partition);
void decode_length_check(const redisReply& reply, const PartitionKey& partition);

// GETRANGE key <from> <from+length-1>: the bytes, which must be `length` long.
std::size_t encode_read(CommandBuffer& out, const PartitionKey& partition, std::uint64_t from,
                        std::uint64_t length);
[[nodiscard]] std::span<const std::uint8_t> decode_read(const redisReply& reply,
                                                        const PartitionKey& partition,
                                                        std::uint64_t length);

// SETRANGE key <at> <bytes> (copying whole filters).
std::size_t encode_write(CommandBuffer& out, const PartitionKey& partition, std::uint64_t at,
                         std::span<const std::uint8_t> bytes);
void decode_write(const redisReply& reply);

// STRLEN key | BITCOUNT key | STRLEN key: the partition's 1 bits.
std::size_t encode_count(CommandBuffer& out, const PartitionKey& partition);
[[nodiscard]] std::uint64_t decode_count(Replies replies, const PartitionKey& partition);

// A bulk OR of a delta (the partition's bits of many items, built by the client) through a
// temp key in the partition's slot, in three steps that form one group:
//   start   STRLEN key | SETRANGE temp <sealed_length-1> \0 | PEXPIRE temp <ttl>
//           the temp key at the partition's full length from its first command
//   chunk   SETRANGE temp <at> <bytes>                       (the delta's non-zero chunks)
//   merge   EVAL: both keys at the sealed length, then BITOP OR key key temp, UNLINK temp
// A temp key evicted or expired part way (under a volatile-* policy it is the one key with a
// TTL) is recreated by the next chunk shorter than the sealed length, or is gone at the merge:
// the merge refuses it, so a partial delta is never ORed in.
std::size_t encode_delta_start(CommandBuffer& out, const PartitionKey& partition,
                               std::string_view temp, std::chrono::milliseconds ttl);
void decode_delta_start(Replies replies, const PartitionKey& partition);
std::size_t encode_delta_chunk(CommandBuffer& out, std::string_view temp, std::uint64_t at,
                               std::span<const std::uint8_t> bytes);
void decode_delta_chunk(Replies replies);
std::size_t encode_delta_merge(CommandBuffer& out, const PartitionKey& partition,
                               std::string_view temp);
void decode_delta_merge(Replies replies, const PartitionKey& partition, std::string_view temp);

}  // namespace redbloom::redis
