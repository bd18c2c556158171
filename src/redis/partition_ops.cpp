#include "partition_ops.hpp"

#include <array>

#include "core/layout.hpp"
#include "core/packed_items.hpp"
#include "redbloom/sizing.hpp"

namespace redbloom::redis {
namespace {

// Most items in one BITFIELD / BITFIELD_RO: 1024 items at k = 7 is 28,674 arguments, ~300 KB,
// a few milliseconds of server time, which bounds how long one command blocks other clients.
constexpr std::size_t kCommandItems = 1024;
// Blocked lookups: GETRANGE commands per unit.
constexpr std::size_t kRangeItems = 256;
// Most items in one module command sent as hashes: 2048 hashes are a 32 KiB argument, which
// Redis reads straight into its own buffer (a big argument) instead of through its query buffer.
constexpr std::size_t kHashedCommandItems = 2048;
constexpr std::uint64_t kBlockBytes = kBlockBits / 8;

// MERGE PARTITION DELTA LENGTH: see encode_delta_merge.
constexpr std::string_view kMergeDelta = R"lua(
local n = tonumber(ARGV[1])
local have = redis.call('STRLEN', KEYS[1])
if have ~= n then return redis.error_reply('REDBLOOM partition ' .. have) end
local delta = redis.call('STRLEN', KEYS[2])
if delta ~= n then return redis.error_reply('REDBLOOM delta ' .. delta) end
redis.call('BITOP', 'OR', KEYS[1], KEYS[1], KEYS[2])
redis.call('UNLINK', KEYS[2])
return 1
)lua";

[[noreturn]] void lost(const PartitionKey& partition, long long length) {
  throw ReplyProblem("partition key '" + std::string(partition.key) + "' holds " +
                         std::to_string(length) + " bytes, expected " +
                         std::to_string(partition.sealed_length) +
                         ": it vanished or changed while the filter was in use (evicted under "
                         "maxmemory? flushed? deleted?) and the items in it are lost",
                     true);
}

// An error reply is the server's refusal (OOM, a script error): a StorageError, said as is.
void refuse_errors(const redisReply& reply) {
  if (is_error(reply)) throw ReplyProblem(std::string(text_of(reply)), false);
}

void expect_type(const redisReply& reply, int type, std::string_view what) {
  refuse_errors(reply);
  if (reply.type != type) {
    throw ReplyProblem(
        "unexpected reply type " + std::to_string(reply.type) + " to " + std::string(what), false);
  }
}

// The length check's reply: the sealed length, or the partition is lost.
void check_length(const redisReply& reply, const PartitionKey& partition) {
  expect_type(reply, REDIS_REPLY_INTEGER, "STRLEN");
  if (static_cast<std::uint64_t>(reply.integer) != partition.sealed_length) {
    lost(partition, reply.integer);
  }
}

void length_check(CommandBuffer& out, const PartitionKey& partition) {
  out.begin(2);
  out.arg(std::string_view{"STRLEN"});
  out.arg(partition.key);
}

// Replies of a bracketed unit: the first and last are the length checks; returns the middle.
Replies bracketed(Replies replies, const PartitionKey& partition) {
  if (replies.size() < 2) throw ReplyProblem("missing replies", false);
  // The second check decides: a partition lost between the two was read as zeros or recreated.
  check_length(*replies.back(), partition);
  check_length(*replies.front(), partition);
  return replies.subspan(1, replies.size() - 2);
}

class StockCommands final : public PartitionCommands {
 public:
  explicit StockCommands(const FilterParams& params) : params_(params) {}

  [[nodiscard]] std::string_view operation(bool lookup) const override {
    if (!lookup) return "BITFIELD";
    return params_.layout == Layout::blocked ? "GETRANGE" : "BITFIELD_RO";
  }

  [[nodiscard]] std::size_t unit_items(bool lookup) const override {
    return lookup && params_.layout == Layout::blocked ? kRangeItems : kCommandItems;
  }

  std::size_t encode_test_and_set(CommandBuffer& out, const PartitionKey& partition,
                                  const UnitItems& unit) const override {
    length_check(out, partition);
    bitfield(out, /*write=*/true, partition, unit);
    length_check(out, partition);
    return 3;
  }

  void decode_test_and_set(Replies replies, const PartitionKey& partition, const UnitItems& unit,
                           std::uint8_t* newly) const override {
    const redisReply& bits = bitfield_reply(bracketed(replies, partition), unit, "BITFIELD");
    const std::size_t k = params_.hashes;
    for (std::size_t j = 0; j < unit.order.size(); ++j) {
      std::uint8_t fresh = 0;
      for (std::size_t i = 0; i < k; ++i) fresh |= bits.element[j * k + i]->integer == 0 ? 1 : 0;
      newly[j] = fresh;
    }
  }

  std::size_t encode_lookup(CommandBuffer& out, const PartitionKey& partition,
                            const UnitItems& unit) const override {
    length_check(out, partition);
    if (params_.layout != Layout::blocked) {
      bitfield(out, /*write=*/false, partition, unit);
      length_check(out, partition);
      return 3;
    }
    // A blocked item's bits are in one 64-byte block: one GETRANGE instead of k bit reads.
    for (const std::uint32_t i : unit.order) {
      const std::uint64_t block = layout::blocked_block_of(unit.hashes[i], params_.partition_bits);
      out.begin(4);
      out.arg(std::string_view{"GETRANGE"});
      out.arg(partition.key);
      out.arg(block * kBlockBytes);
      out.arg(block * kBlockBytes + kBlockBytes - 1);
    }
    length_check(out, partition);
    return 2 + unit.order.size();
  }

  void decode_lookup(Replies replies, const PartitionKey& partition, const UnitItems& unit,
                     std::uint8_t* present) const override {
    const Replies answers = bracketed(replies, partition);
    if (params_.layout != Layout::blocked) {
      const redisReply& bits = bitfield_reply(answers, unit, "BITFIELD_RO");
      const std::size_t k = params_.hashes;
      for (std::size_t j = 0; j < unit.order.size(); ++j) {
        bool all = true;
        for (std::size_t i = 0; i < k; ++i) all &= bits.element[j * k + i]->integer == 1;
        present[j] = all ? 1 : 0;
      }
      return;
    }
    if (answers.size() != unit.order.size()) throw ReplyProblem("missing GETRANGE replies", false);
    for (std::size_t j = 0; j < unit.order.size(); ++j) {
      const auto block = decode_read(*answers[j], partition, kBlockBytes);
      bool all = true;
      layout::blocked_probes_in_block(
          unit.hashes[unit.order[j]], params_.hashes,
          [&](std::uint64_t bit) { all &= (block[bit / 8] & (0x80u >> (bit % 8))) != 0; });
      present[j] = all ? 1 : 0;
    }
  }

  void append_script_item(std::vector<std::string>& out, const ItemHash& hash,
                          std::string_view) const override {
    if (params_.layout != Layout::blocked) {
      probes(hash, [&](std::uint64_t bit) { out.push_back(std::to_string(bit)); });
      return;
    }
    // The line's first and last byte offsets (as text: Lua's number-to-text conversion of
    // a call's arguments costs the script more than the line's test), then its (byte, mask)
    // pairs.
    const layout::BlockedLine line =
        layout::blocked_line(hash, params_.partition_bits, params_.hashes, 0);
    out.push_back(std::to_string(line.first));
    out.push_back(std::to_string(line.last()));
    out.emplace_back(line.pairs());
  }

 private:
  template <class Visit>
  void probes(const ItemHash& h, Visit&& visit) const {
    if (params_.layout == Layout::blocked) {
      layout::blocked_probes(h, params_.partition_bits, params_.hashes, visit);
    } else {
      layout::classic_probes(h, params_.partition_bits, params_.hashes, visit);
    }
  }

  // BITFIELD key SET u1 <bit> 1 ... | BITFIELD_RO key GET u1 <bit> ...
  void bitfield(CommandBuffer& out, bool write, const PartitionKey& partition,
                const UnitItems& unit) const {
    const std::size_t args_per_bit = write ? 4 : 3;
    out.begin(2 + args_per_bit * params_.hashes * unit.order.size());
    out.arg(write ? std::string_view{"BITFIELD"} : std::string_view{"BITFIELD_RO"});
    out.arg(partition.key);
    for (const std::uint32_t i : unit.order) {
      probes(unit.hashes[i], [&](std::uint64_t bit) {
        out.arg(write ? std::string_view{"SET"} : std::string_view{"GET"});
        out.arg(std::string_view{"u1"});
        out.arg(bit);
        if (write) out.arg(std::string_view{"1"});
      });
    }
  }

  // The BITFIELD reply: an array of k integers per item.
  const redisReply& bitfield_reply(Replies answers, const UnitItems& unit,
                                   std::string_view command) const {
    if (answers.size() != 1) throw ReplyProblem("missing replies", false);
    const redisReply& bits = *answers[0];
    expect_type(bits, REDIS_REPLY_ARRAY, command);
    if (bits.elements != unit.order.size() * params_.hashes) {
      throw ReplyProblem(std::string(command) + " reply has " + std::to_string(bits.elements) +
                             " values for " + std::to_string(unit.order.size() * params_.hashes) +
                             " bits",
                         false);
    }
    return bits;
  }

  FilterParams params_;
};

// redbloom's module (module/partition_commands.cpp): one command per unit, the items packed in
// one argument, which checks the partition's length itself, in the same command, so no STRLEN
// brackets are needed. From version 5 the unit goes as the items' hashes (RB.PARTADDH /
// RB.PARTEXISTSH): the client hashed them already to route them, and 16 bytes an item are
// fewer than most items' bytes and their length prefixes to send, encrypt and parse.
class ModuleCommands final : public PartitionCommands {
 public:
  ModuleCommands(const FilterParams& params, bool hashed) : params_(params), hashed_(hashed) {}

  [[nodiscard]] std::string_view operation(bool lookup) const override {
    if (hashed_) return lookup ? "RB.PARTEXISTSH" : "RB.PARTADDH";
    return lookup ? "RB.PARTEXISTS" : "RB.PARTADD";
  }

  [[nodiscard]] std::size_t unit_items(bool) const override {
    return hashed_ ? kHashedCommandItems : kCommandItems;
  }

  std::size_t encode_test_and_set(CommandBuffer& out, const PartitionKey& partition,
                                  const UnitItems& unit) const override {
    encode(out, operation(false), partition, unit);
    return 1;
  }
  void decode_test_and_set(Replies replies, const PartitionKey& partition, const UnitItems& unit,
                           std::uint8_t* newly) const override {
    decode(replies, partition, unit, newly);
  }
  std::size_t encode_lookup(CommandBuffer& out, const PartitionKey& partition,
                            const UnitItems& unit) const override {
    encode(out, operation(true), partition, unit);
    return 1;
  }
  void decode_lookup(Replies replies, const PartitionKey& partition, const UnitItems& unit,
                     std::uint8_t* present) const override {
    decode(replies, partition, unit, present);
  }
  void append_script_item(std::vector<std::string>& out, const ItemHash&,
                          std::string_view item) const override {
    std::string packed;
    packed::append(packed, item);
    out.push_back(std::move(packed));
  }

 private:
  // NAME key sealed-length layout hashes partition-bits partitions index packed-items
  void encode(CommandBuffer& out, std::string_view name, const PartitionKey& partition,
              const UnitItems& unit) const {
    // Built per unit: a cluster encodes the units of its masters on several threads.
    std::string packed;
    if (hashed_) {
      packed.reserve(unit.order.size() * packed::kHashedItemBytes);
      for (const std::uint32_t i : unit.order) packed::append_hash(packed, unit.hashes[i]);
    } else {
      for (const std::uint32_t i : unit.order) packed::append(packed, unit.items[i]);
    }
    // A unit's items share one partition (they were grouped by it).
    const std::uint64_t index =
        unit.order.empty() ? 0
                           : layout::partition_of(unit.hashes[unit.order[0]], params_.partitions);
    out.begin(9);
    out.arg(name);
    out.arg(partition.key);
    out.arg(partition.sealed_length);
    out.arg(to_string(params_.layout));
    out.arg(std::uint64_t{params_.hashes});
    out.arg(params_.partition_bits);
    out.arg(params_.partitions);
    out.arg(index);
    out.arg(std::string_view{packed});
  }

  // One string, a byte per item; an error that starts with REDBLOOMLOST is a lost partition.
  static void decode(Replies replies, const PartitionKey& partition, const UnitItems& unit,
                     std::uint8_t* answers) {
    if (replies.size() != 1) throw ReplyProblem("missing replies", false);
    const redisReply& reply = *replies[0];
    if (is_error(reply) && text_of(reply).starts_with("REDBLOOMLOST")) {
      throw ReplyProblem("partition key '" + std::string(partition.key) +
                             "': " + std::string(text_of(reply).substr(13)) +
                             ": it vanished or changed while the filter was in use (evicted "
                             "under maxmemory? flushed? deleted?) and the items in it are lost",
                         true);
    }
    expect_type(reply, REDIS_REPLY_STRING, "redbloom module command");
    if (reply.len != unit.order.size()) {
      throw ReplyProblem("module reply has " + std::to_string(reply.len) + " answers for " +
                             std::to_string(unit.order.size()) + " items",
                         false);
    }
    for (std::size_t j = 0; j < reply.len; ++j) answers[j] = reply.str[j] != 0 ? 1 : 0;
  }

  FilterParams params_;
  bool hashed_;
};

}  // namespace

std::unique_ptr<PartitionCommands> stock_partition_commands(const FilterParams& params) {
  return std::make_unique<StockCommands>(params);
}

std::unique_ptr<PartitionCommands> module_partition_commands(const FilterParams& params,
                                                             bool hashed) {
  return std::make_unique<ModuleCommands>(params, hashed);
}

std::size_t encode_length_check(CommandBuffer& out, const PartitionKey& partition) {
  length_check(out, partition);
  return 1;
}

void decode_length_check(const redisReply& reply, const PartitionKey& partition) {
  check_length(reply, partition);
}

std::size_t encode_read(CommandBuffer& out, const PartitionKey& partition, std::uint64_t from,
                        std::uint64_t length) {
  out.begin(4);
  out.arg(std::string_view{"GETRANGE"});
  out.arg(partition.key);
  out.arg(from);
  out.arg(from + length - 1);
  return 1;
}

std::span<const std::uint8_t> decode_read(const redisReply& reply, const PartitionKey& partition,
                                          std::uint64_t length) {
  expect_type(reply, REDIS_REPLY_STRING, "GETRANGE");
  if (reply.len != length) {
    throw ReplyProblem("partition key '" + std::string(partition.key) +
                           "' is shorter than the filter says (lost, or modified outside "
                           "redbloom?)",
                       true);
  }
  return {reinterpret_cast<const std::uint8_t*>(reply.str), reply.len};
}

std::size_t encode_write(CommandBuffer& out, const PartitionKey& partition, std::uint64_t at,
                         std::span<const std::uint8_t> bytes) {
  out.begin(4);
  out.arg(std::string_view{"SETRANGE"});
  out.arg(partition.key);
  out.arg(at);
  out.arg(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  return 1;
}

void decode_write(const redisReply& reply) {
  expect_type(reply, REDIS_REPLY_INTEGER, "SETRANGE");
}

std::size_t encode_count(CommandBuffer& out, const PartitionKey& partition) {
  length_check(out, partition);
  out.command({"BITCOUNT", partition.key});
  length_check(out, partition);
  return 3;
}

std::uint64_t decode_count(Replies replies, const PartitionKey& partition) {
  const Replies count = bracketed(replies, partition);
  if (count.size() != 1) throw ReplyProblem("missing replies", false);
  expect_type(*count[0], REDIS_REPLY_INTEGER, "BITCOUNT");
  return static_cast<std::uint64_t>(count[0]->integer);
}

std::size_t encode_delta_start(CommandBuffer& out, const PartitionKey& partition,
                               std::string_view temp, std::chrono::milliseconds ttl) {
  length_check(out, partition);
  out.begin(4);
  out.arg(std::string_view{"SETRANGE"});
  out.arg(temp);
  out.arg(partition.sealed_length - 1);
  out.arg(std::string_view("\0", 1));
  out.begin(3);
  out.arg(std::string_view{"PEXPIRE"});
  out.arg(temp);
  out.arg(static_cast<std::uint64_t>(ttl.count()));
  return 3;
}

void decode_delta_start(Replies replies, const PartitionKey& partition) {
  if (replies.size() != 3) throw ReplyProblem("missing replies", false);
  check_length(*replies[0], partition);
  expect_type(*replies[1], REDIS_REPLY_INTEGER, "SETRANGE");
  expect_type(*replies[2], REDIS_REPLY_INTEGER, "PEXPIRE");
}

std::size_t encode_delta_chunk(CommandBuffer& out, std::string_view temp, std::uint64_t at,
                               std::span<const std::uint8_t> bytes) {
  out.begin(4);
  out.arg(std::string_view{"SETRANGE"});
  out.arg(temp);
  out.arg(at);
  out.arg(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  return 1;
}

void decode_delta_chunk(Replies replies) {
  if (replies.size() != 1) throw ReplyProblem("missing replies", false);
  expect_type(*replies[0], REDIS_REPLY_INTEGER, "SETRANGE");
}

std::size_t encode_delta_merge(CommandBuffer& out, const PartitionKey& partition,
                               std::string_view temp) {
  out.begin(6);
  out.arg(std::string_view{"EVAL"});
  out.arg(kMergeDelta);
  out.arg(std::string_view{"2"});
  out.arg(partition.key);
  out.arg(temp);
  out.arg(partition.sealed_length);
  return 1;
}

void decode_delta_merge(Replies replies, const PartitionKey& partition, std::string_view temp) {
  if (replies.size() != 1) throw ReplyProblem("missing replies", false);
  const redisReply& reply = *replies[0];
  if (is_error(reply)) {
    const std::string_view text = text_of(reply);
    if (text.starts_with("REDBLOOM partition ")) {
      lost(partition, std::stoll(std::string(text.substr(19))));
    }
    if (text.starts_with("REDBLOOM delta ")) {
      throw ReplyProblem("the delta for partition key '" + std::string(partition.key) +
                             "' in temp key '" + std::string(temp) +
                             "' was lost part way (evicted under a volatile-* maxmemory-policy, "
                             "or expired) and was not merged; load the same items again",
                         false);
    }
  }
  expect_type(reply, REDIS_REPLY_INTEGER, "EVAL (merging a delta)");
}

}  // namespace redbloom::redis
