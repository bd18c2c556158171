#include "redbloom/redis_store.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <optional>
#include <thread>
#include <vector>

#include "item_hash_inline.hpp"
#include "redbloom/error.hpp"
#include "redbloom/layout.hpp"
#include "redbloom/memory_store.hpp"
#include "redbloom/sharding.hpp"
#include "format.hpp"
#include "router.hpp"

namespace redbloom {
namespace {

using redis::CommandBuffer;
using redis::OnLostNode;
using redis::Reply;
using redis::Router;
using redis::slot_of;
using redis::UnitRoute;

// Items per pipelined round of test_and_set. Rounds are the unit of "committed": when a
// connection fails, every round whose replies all arrived is known to be in the filter.
constexpr std::size_t kRoundItems = 2048;
// Most items in one BITFIELD / BITFIELD_RO: 1024 items at k = 7 is 28,674 arguments, ~300 KB,
// a few milliseconds of server time, which bounds how long one command blocks other clients.
constexpr std::size_t kCommandItems = 1024;
// Blocked lookups: GETRANGE commands per pipeline unit.
constexpr std::size_t kRangeItems = 256;
// Bytes per GETRANGE / SETRANGE when moving whole partitions.
constexpr std::size_t kTransferChunk = std::size_t{1} << 20;
// Cost model (bytes on the wire, see redis_store.hpp). One `SET u1 <offset> 1` is
// "$3\r\nSET\r\n$2\r\nu1\r\n$9\r\n123456789\r\n$1\r\n1\r\n" (39 bytes) plus ":0\r\n" back;
// a GET u1 drops the 7-byte value. A GETRANGE request is ~45 bytes plus the key, and its
// reply 64 + 7.
constexpr double kSetBitBytes = 43;
constexpr double kGetBitBytes = 36;
constexpr double kRangeBytes = 116;
// A delta's temp key outlives any sane load step, and vanishes if the client dies.
constexpr std::chrono::milliseconds kTempKeyTtl{10 * 60 * 1000};

std::string where(const Router& router, std::string_view name) {
  return "filter '" + std::string(name) + "' on redis " + router.endpoint().describe();
}

// HGETALL the metadata. nullopt if the key does not exist.
std::optional<redis::Metadata> read_metadata(Router& router, const std::string& name) {
  const std::uint16_t slot = slot_of(name);
  Reply reply = router.call(slot, {"HGETALL", name}, OnLostNode::retry);
  if (redis::is_error(*reply)) {
    if (redis::text_of(*reply).starts_with("WRONGTYPE")) {
      throw FormatError(
          "key '" + name + "' on redis " + router.endpoint().describe() + " holds a " +
          std::string(redis::text_of(*router.run(slot, {"TYPE", name}, OnLostNode::retry))) +
          ", not a redbloom filter");
    }
    router.fail("HGETALL", redis::text_of(*reply));
  }
  router.expect(*reply, REDIS_REPLY_ARRAY, "HGETALL");
  if (reply->elements == 0) return std::nullopt;
  std::vector<std::pair<std::string, std::string>> fields;
  for (std::size_t i = 0; i + 1 < reply->elements; i += 2) {
    fields.emplace_back(redis::text_of(*reply->element[i]), redis::text_of(*reply->element[i + 1]));
  }
  return redis::parse_metadata(fields,
                               "key '" + name + "' on redis " + router.endpoint().describe());
}

// Claims NAME for a filter being created (redis::claim_hash): the "creating" metadata, with
// the salts, so that drop() finds the partitions of a creation that died. False if the name
// is taken (by anything).
bool claim_name(Router& router, const std::string& name, std::uint64_t partitions,
                const std::vector<std::uint32_t>& salts) {
  const std::string version = std::to_string(redis::kFormatVersion);
  const std::string count = std::to_string(partitions);
  const std::string salt_list = redis::encode_salts(salts);
  return redis::claim_hash(router, name,
                           {"format", redis::kFormatName, "version", version, "state", "creating",
                            "partitions", count, "tag_salts", salt_list});
}

// Hash-tag salts that put partition p on master p mod M of a cluster's M masters, so a
// filter's memory and load spread evenly over them (a tag's slot is the CRC16 of its text, so
// a few tries find one; 0, the plain tag, on one server or if none is found).
std::vector<std::uint32_t> spread_tags(const Router& router, const std::string& name,
                                       std::uint64_t partitions) {
  constexpr std::uint32_t kTries = 1u << 16;
  std::vector<std::uint32_t> salts(partitions, 0);
  const std::size_t masters = router.masters();
  if (masters <= 1) return salts;
  for (std::uint64_t p = 0; p < partitions; ++p) {
    for (std::uint32_t salt = 0; salt < kTries; ++salt) {
      if (router.master_of(slot_of(redis::partition_key(name, p, salt))) == p % masters) {
        salts[p] = salt;
        break;
      }
    }
  }
  return salts;
}

// The parameters of one partition on its own: offsets inside a partition do not depend on the
// partition count (layout.hpp), so a one-partition bitmap holds exactly a partition's bits.
FilterParams single_partition(FilterParams params) {
  params.partitions = 1;
  return params;
}

// Is a bulk transfer of `partition_bytes` cheaper than `per_item_bytes` of commands?
bool bulk_is_cheaper(RedisStore::BulkMode mode, double partition_bytes, double per_item_bytes) {
  switch (mode) {
    case RedisStore::BulkMode::per_item:
      return false;
    case RedisStore::BulkMode::bulk:
      return true;
    case RedisStore::BulkMode::automatic:
      break;
  }
  return partition_bytes < per_item_bytes;
}

}  // namespace

struct RedisStore::State {
  State(const RedisEndpoint& endpoint, std::string filter_name)
      : router(redis::make_router(endpoint)), name(std::move(filter_name)) {}

  std::unique_ptr<Router> router;
  std::string name;
  FilterParams params;
  std::uint32_t version = redis::kFormatVersion;  // of the Redis format (redis_keys.hpp)
  std::uint64_t created_unix_ns = 0;
  std::vector<std::string> keys;     // partition keys, indexed by partition
  std::vector<std::uint16_t> slots;  // their cluster slots
  std::vector<std::uint32_t> salts;  // their hash tags' salts (redis_keys.hpp)
  std::vector<std::uint64_t> owned;  // the partitions this store holds (all, unless sharded)
  ShardSpec shard;
  BulkMode mode = BulkMode::automatic;

  // Scratch, reused between calls.
  std::vector<ItemHash> hashes;
  std::vector<std::uint32_t> partition_of;
  std::vector<std::uint32_t> order;  // item indices grouped by partition

  void set_partitions(const FilterParams& p, const ShardSpec& spec,
                      std::vector<std::uint32_t> tag_salts) {
    params = p;
    shard = spec;
    salts = std::move(tag_salts);
    salts.resize(p.partitions, 0);
    keys.clear();
    slots.clear();
    owned.clear();
    for (std::uint64_t i = 0; i < p.partitions; ++i) {
      keys.push_back(redis::partition_key(name, i, salts[i]));
      slots.push_back(slot_of(keys.back()));
      if (sharding::shard_of_partition(i, spec.count) == spec.index) owned.push_back(i);
    }
  }

  // A partition key's length: its bits, then the seal (redis_keys.hpp).
  [[nodiscard]] std::uint64_t key_bytes() const noexcept {
    return params.partition_bytes() + redis::seal_bytes(version);
  }

  void hash_items(std::span<const std::string_view> items) {
    if (items.size() > UINT32_MAX) throw InvalidArgument("batch of more than 2^32 items");
    hashes.resize(items.size());
    partition_of.resize(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
      hashes[i] = detail::hash_inline(items[i]);
      partition_of[i] =
          static_cast<std::uint32_t>(layout::partition_of(hashes[i], params.partitions));
    }
  }

  struct Group {
    std::uint64_t partition;
    std::size_t begin, end;  // range of `order`
  };

  // Groups items [first, last) by partition into `order` (appending) and returns the groups,
  // each in item order.
  std::vector<Group> group(std::size_t first, std::size_t last) {
    // A counting sort (stable): a batch of 10^8 items over a few partitions is one pass.
    std::vector<std::size_t> start(params.partitions + 1, 0);
    for (std::size_t i = first; i < last; ++i) ++start[partition_of[i] + 1];
    for (std::uint64_t p = 0; p < params.partitions; ++p) start[p + 1] += start[p];
    const std::size_t base = order.size();
    order.resize(base + (last - first));
    std::vector<std::size_t> next(start.begin(), start.end() - 1);
    for (std::size_t i = first; i < last; ++i) {
      order[base + next[partition_of[i]]++] = static_cast<std::uint32_t>(i);
    }
    std::vector<Group> groups;
    for (std::uint64_t p = 0; p < params.partitions; ++p) {
      if (start[p + 1] > start[p]) groups.push_back({p, base + start[p], base + start[p + 1]});
    }
    return groups;
  }

  // Routes unit i to owned partition i.
  [[nodiscard]] Router::Route route_owned(bool writes = false) const {
    return [this, writes](std::size_t i) { return UnitRoute{slots[owned[i]], i, writes, {}}; };
  }

  template <class Visit>
  void probes(const ItemHash& h, Visit&& visit) const {
    if (params.layout == Layout::blocked) {
      layout::blocked_probes(h, params.partition_bits, params.hashes, visit);
    } else {
      layout::classic_probes(h, params.partition_bits, params.hashes, visit);
    }
  }

  // One BITFIELD (SET) or BITFIELD_RO (GET) over items order[begin, end) of one partition.
  void bitfield(CommandBuffer& out, bool write, std::uint64_t partition, std::size_t begin,
                std::size_t end) const {
    const std::size_t args_per_bit = write ? 4 : 3;  // SET u1 <offset> 1 | GET u1 <offset>
    out.begin(2 + args_per_bit * params.hashes * (end - begin));
    out.arg(write ? std::string_view{"BITFIELD"} : std::string_view{"BITFIELD_RO"});
    out.arg(keys[partition]);
    for (std::size_t i = begin; i < end; ++i) {
      probes(hashes[order[i]], [&](std::uint64_t bit) {
        out.arg(write ? std::string_view{"SET"} : std::string_view{"GET"});
        out.arg(std::string_view{"u1"});
        out.arg(bit);
        if (write) out.arg(std::string_view{"1"});
      });
    }
  }

  // Every command on a partition is preceded by `STRLEN key` in the same pipeline: a partition
  // that vanished after open (evicted under maxmemory, flushed, deleted) would otherwise be
  // read as zeros, or recreated by the writes, and its items silently become absent. The
  // writes behind a failed guard still run and recreate the key, but without the seal
  // (redis_keys.hpp), so this guard keeps failing on it.
  void guard(CommandBuffer& out, std::uint64_t partition) const {
    out.begin(2);
    out.arg(std::string_view{"STRLEN"});
    out.arg(keys[partition]);
  }
  void check_guard(const redisReply& reply, std::uint64_t partition) const {
    router->expect(reply, REDIS_REPLY_INTEGER, "STRLEN");
    if (static_cast<std::uint64_t>(reply.integer) != key_bytes()) {
      throw FormatError(router->message(
          "STRLEN", "partition key '" + keys[partition] + "' holds " +
                        std::to_string(reply.integer) + " bytes, expected " +
                        std::to_string(key_bytes()) +
                        ": it vanished or changed since the filter was opened (evicted under "
                        "maxmemory? flushed? deleted?) and the items in it are lost"));
    }
  }

  // Checks a BITFIELD reply over `items` items: an array of k integers per item.
  void check_bitfield_reply(const redisReply& reply, std::size_t items,
                            std::string_view operation) const {
    router->expect(reply, REDIS_REPLY_ARRAY, operation);
    if (reply.elements != items * params.hashes) {
      router->fail(operation, "reply has " + std::to_string(reply.elements) + " values for " +
                                  std::to_string(items * params.hashes) + " bits");
    }
  }

  // Pipelined GETRANGE of `size` bytes of a partition from `offset`, after its guard; each
  // chunk goes to sink(offset within the range, bytes) straight from the reply, with no
  // staging copy. (A length check of the replies alone would pass a recreated key.)
  template <class Sink>
  void download(std::uint64_t partition, std::uint64_t offset, std::uint64_t size, Sink&& sink) {
    const std::size_t chunks = (size + kTransferChunk - 1) / kTransferChunk;
    const std::string& key = keys[partition];
    router->pipeline(
        chunks, "GETRANGE",
        [&](std::size_t c) {
          return UnitRoute{slots[partition], c, false, {}};
        },
        [&](std::size_t c, CommandBuffer& buffer) {
          const std::uint64_t from = offset + c * kTransferChunk;
          const std::uint64_t length =
              std::min<std::uint64_t>(kTransferChunk, size - c * kTransferChunk);
          if (c == 0) guard(buffer, partition);
          buffer.begin(4);
          buffer.arg(std::string_view{"GETRANGE"});
          buffer.arg(key);
          buffer.arg(from);
          buffer.arg(from + length - 1);
          return std::size_t{c == 0 ? 2u : 1u};
        },
        [&](std::size_t c, std::size_t r, const redisReply& reply) {
          if (c == 0 && r == 0) return check_guard(reply, partition);
          router->expect(reply, REDIS_REPLY_STRING, "GETRANGE");
          const std::uint64_t length =
              std::min<std::uint64_t>(kTransferChunk, size - c * kTransferChunk);
          if (reply.len != length) {
            throw FormatError(router->message(
                "GETRANGE", "partition key '" + key + "' is shorter than the filter says (" +
                                "modified outside redbloom?)"));
          }
          sink(c * kTransferChunk, std::span<const std::uint8_t>(
                                       reinterpret_cast<const std::uint8_t*>(reply.str), length));
        },
        OnLostNode::retry);
  }

  struct Delta {
    std::uint64_t partition;
    std::span<const std::uint8_t> bits;
  };

  // ORs deltas (the partition's bits of some items) into their partitions, each through a
  // temp key in its partition's slot: SET PX, SETRANGE of each non-zero chunk, BITOP OR,
  // UNLINK. Each delta's sequence is one group, so on a cluster the masters take theirs at
  // the same time, and a moved slot runs its sequence again whole.
  void or_into(std::span<const Delta> deltas) {
    struct Unit {
      std::size_t delta;
      enum Kind { start, upload, merge, unlink } kind;
      std::size_t chunk;
      std::size_t group;
    };
    std::vector<Unit> units;
    std::vector<std::string> temps;
    for (std::size_t d = 0; d < deltas.size(); ++d) {
      const auto bits = deltas[d].bits;
      const std::size_t group = units.size();
      units.push_back({d, Unit::start, 0, group});
      for (std::size_t c = 0; c * kTransferChunk < bits.size(); ++c) {
        const auto piece = bits.subspan(c * kTransferChunk,
                                        std::min(kTransferChunk, bits.size() - c * kTransferChunk));
        // Only the non-zero chunks: a sparse delta uploads less.
        if (std::any_of(piece.begin(), piece.end(), [](std::uint8_t b) { return b != 0; })) {
          units.push_back({d, Unit::upload, c, group});
        }
      }
      if (units.size() == group + 1) {
        units.pop_back();  // nothing to OR
        temps.emplace_back();
        continue;
      }
      units.push_back({d, Unit::merge, 0, group});
      units.push_back({d, Unit::unlink, 0, group});
      const std::uint64_t p = deltas[d].partition;
      temps.push_back(redis::temp_key(name, p, salts[p]));
    }
    const std::string ttl = std::to_string(kTempKeyTtl.count());
    router->pipeline(
        units.size(), "bulk OR",
        [&](std::size_t u) {
          const std::uint64_t p = deltas[units[u].delta].partition;
          return UnitRoute{slots[p], units[u].group, units[u].kind == Unit::merge, keys[p]};
        },
        [&](std::size_t u, CommandBuffer& buffer) {
          const Unit& unit = units[u];
          const std::uint64_t p = deltas[unit.delta].partition;
          const std::string& temp = temps[unit.delta];
          switch (unit.kind) {
            case Unit::start:
              guard(buffer, p);
              buffer.command({"SET", temp, "", "PX", ttl});
              return std::size_t{2};
            case Unit::upload: {
              const auto bits = deltas[unit.delta].bits;
              const std::size_t at = unit.chunk * kTransferChunk;
              const auto piece = bits.subspan(at, std::min(kTransferChunk, bits.size() - at));
              buffer.begin(4);
              buffer.arg(std::string_view{"SETRANGE"});
              buffer.arg(temp);
              buffer.arg(std::uint64_t{at});
              buffer.arg(
                  std::string_view(reinterpret_cast<const char*>(piece.data()), piece.size()));
              break;
            }
            case Unit::merge:
              buffer.command({"BITOP", "OR", keys[p], keys[p], temp});
              break;
            case Unit::unlink:
              buffer.command({"UNLINK", temp});
              break;
          }
          return std::size_t{1};
        },
        [&](std::size_t u, std::size_t r, const redisReply& reply) {
          const Unit& unit = units[u];
          const std::uint64_t p = deltas[unit.delta].partition;
          if (unit.kind == Unit::start && r == 0) return check_guard(reply, p);
          if (redis::is_error(reply)) router->fail("bulk OR", redis::text_of(reply));
          if (unit.kind == Unit::merge &&
              (reply.type != REDIS_REPLY_INTEGER ||
               static_cast<std::uint64_t>(reply.integer) != key_bytes())) {
            router->fail("BITOP",
                         "partition key '" + keys[p] + "' has an unexpected length after the OR");
          }
          // UNLINK answers 0 if the temp key had expired: then the OR may have used nothing.
          if (unit.kind == Unit::unlink &&
              (reply.type != REDIS_REPLY_INTEGER || reply.integer != 1)) {
            router->fail("bulk OR", "temp key '" + temps[unit.delta] +
                                        "' expired before it was applied; load again");
          }
        },
        OnLostNode::retry);
  }
};

RedisStore::RedisStore(std::unique_ptr<State> state) : state_(std::move(state)) {}
RedisStore::~RedisStore() = default;

const FilterParams& RedisStore::params() const noexcept {
  return state_->params;
}
const std::string& RedisStore::name() const noexcept {
  return state_->name;
}
const RedisEndpoint& RedisStore::endpoint() const noexcept {
  return state_->router->endpoint();
}
void RedisStore::set_bulk_mode(BulkMode mode) noexcept {
  state_->mode = mode;
}
void RedisStore::require_held(std::uint64_t partition) const {
  if (!holds(partition)) {
    throw InvalidArgument("partition " + std::to_string(partition) + " of " + location() +
                          " is held by another shard");
  }
}
const RedisStore::ShardSpec& RedisStore::shard() const noexcept {
  return state_->shard;
}
bool RedisStore::holds(std::uint64_t partition) const noexcept {
  return partition < state_->params.partitions &&
         sharding::shard_of_partition(partition, state_->shard.count) == state_->shard.index;
}
std::uint64_t RedisStore::created_unix_ns() const {
  return state_->created_unix_ns;
}
std::string RedisStore::location() const {
  return "redis " + endpoint().describe() + " filter " + state_->name;
}
RedisRedirectCounts RedisStore::redirections() const noexcept {
  return state_->router->redirections();
}
std::uint64_t RedisStore::partition_slot(std::uint64_t partition) const {
  check_byte_range(state_->params, partition, 0, 0);
  return state_->slots[partition];
}

bool RedisStore::exists(const RedisEndpoint& endpoint, const std::string& name) {
  redis::validate_filter_name(name);
  const auto router = redis::make_router(endpoint);
  return router->run(slot_of(name), {"EXISTS", name}, OnLostNode::retry)->integer != 0;
}

std::string RedisStore::keyspace_id(const RedisEndpoint& endpoint) {
  return redis::make_router(endpoint)->keyspace_id();
}

std::unique_ptr<RedisStore> RedisStore::open(const RedisEndpoint& endpoint, std::string name,
                                             const ShardSpec& expected) {
  redis::validate_filter_name(name);
  auto state = std::make_unique<State>(endpoint, std::move(name));
  Router& router = *state->router;
  const auto metadata = read_metadata(router, state->name);
  if (!metadata) throw NotFound("no " + where(router, state->name));
  if (!metadata->ready) {
    throw IncompleteFilter(
        where(router, state->name) +
        " is incomplete: its creation did not finish (drop it and create it again)");
  }
  // Opened as another shard, or one server of a sharded filter alone, every answer would be
  // wrong for the items of the partitions it does not hold.
  if (metadata->shards != expected.count || metadata->shard != expected.index ||
      (!expected.set_id.empty() && metadata->shard_set != expected.set_id)) {
    const auto as_text = [](std::uint32_t index, std::uint32_t count) {
      return count == 1 ? std::string("an unsharded filter")
                        : "shard " + std::to_string(index + 1) + " of " + std::to_string(count);
    };
    throw FormatError(where(router, state->name) + " holds " +
                      as_text(metadata->shard, metadata->shards) + " but was opened as " +
                      as_text(expected.index, expected.count) +
                      (metadata->shards == expected.count && metadata->shard == expected.index
                           ? " of another set of servers"
                           : "") +
                      ": give the servers it was created on, in the same order");
  }
  state->set_partitions(metadata->params, {metadata->shard, metadata->shards, metadata->shard_set},
                        metadata->tag_salts);
  state->version = metadata->version;
  state->created_unix_ns = metadata->created_unix_ns;
  // Every partition must be a string of the full, sealed length: a missing, short or
  // recreated key (deleted, evicted under maxmemory, overwritten) would silently turn into
  // false negatives.
  const std::uint64_t expected_bytes = state->key_bytes();
  router.pipeline(
      state->owned.size(), "STRLEN", state->route_owned(),
      [&](std::size_t i, CommandBuffer& buffer) {
        buffer.command({"STRLEN", state->keys[state->owned[i]]});
        return std::size_t{1};
      },
      [&](std::size_t i, std::size_t, const redisReply& reply) {
        const std::string& key = state->keys[state->owned[i]];
        if (redis::is_error(reply)) {
          throw FormatError(where(router, state->name) + ": partition key '" + key +
                            "' is not a string (" + std::string(redis::text_of(reply)) + ")");
        }
        const auto length = static_cast<std::uint64_t>(reply.integer);
        if (length == 0) {
          throw FormatError(where(router, state->name) + ": partition key '" + key +
                            "' is missing (deleted, or evicted under maxmemory?)");
        }
        if (length != expected_bytes) {
          throw FormatError(where(router, state->name) + ": partition key '" + key + "' holds " +
                            std::to_string(length) + " bytes, expected " +
                            std::to_string(expected_bytes) + " (written outside redbloom?)");
        }
      },
      OnLostNode::retry);
  return std::unique_ptr<RedisStore>(new RedisStore(std::move(state)));
}

std::unique_ptr<RedisStore> RedisStore::create(const RedisEndpoint& endpoint, std::string name,
                                               const FilterParams& params, bool overwrite,
                                               const ShardSpec& shard) {
  validate(params);
  redis::validate_filter_name(name);
  if (shard.count == 0 || shard.index >= shard.count) {
    throw InvalidArgument("shard " + std::to_string(shard.index) + " of " +
                          std::to_string(shard.count) + " is not a shard");
  }
  if (overwrite && exists(endpoint, name)) drop(endpoint, name);
  auto state = std::make_unique<State>(endpoint, std::move(name));
  Router& router = *state->router;
  const std::string& meta = state->name;
  // The salts go into the claim, so that drop() finds the partitions of a creation that died.
  const std::vector<std::uint32_t> salts = spread_tags(router, meta, params.partitions);
  if (!claim_name(router, meta, params.partitions, salts)) {
    const auto existing = read_metadata(router, meta);  // throws for a foreign key
    if (!existing) router.fail("create", "the name changed while it was being claimed");
    throw FilterExists(
        where(router, meta) + " already exists" +
        (existing->ready ? " (use --force to replace it)" : " but is incomplete (drop it first)"));
  }
  bool allocating = false;
  try {
    state->set_partitions(params, shard, salts);
    router.pipeline(
        state->owned.size(), "EXISTS", state->route_owned(),
        [&](std::size_t i, CommandBuffer& buffer) {
          buffer.command({"EXISTS", state->keys[state->owned[i]]});
          return std::size_t{1};
        },
        [&](std::size_t i, std::size_t, const redisReply& reply) {
          router.expect(reply, REDIS_REPLY_INTEGER, "EXISTS");
          if (reply.integer != 0) {
            throw FilterExists("key '" + state->keys[state->owned[i]] + "' on redis " +
                               router.endpoint().describe() +
                               " already exists; not overwriting it to create " +
                               where(router, meta));
          }
        });
    // SETRANGE at the seal allocates the whole string, zeroed: the memory is taken now, and a
    // full server fails here rather than in the middle of a load.
    const std::string last = std::to_string(state->key_bytes() - 1);
    allocating = true;
    router.pipeline(
        state->owned.size(), "SETRANGE", state->route_owned(true),
        [&](std::size_t i, CommandBuffer& buffer) {
          const std::string& key = state->keys[state->owned[i]];
          buffer.command({"SETRANGE", key, last, std::string_view("\0", 1)});
          return std::size_t{1};
        },
        [&](std::size_t, std::size_t, const redisReply& reply) {
          router.expect(reply, REDIS_REPLY_INTEGER, "SETRANGE (allocating partitions)");
        });
    redis::Metadata metadata;
    metadata.params = params;
    metadata.ready = true;
    metadata.shards = shard.count;
    metadata.shard = shard.index;
    metadata.shard_set = shard.set_id;
    metadata.tag_salts = salts;
    metadata.created_unix_ns =
        static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                       std::chrono::system_clock::now().time_since_epoch())
                                       .count());
    const auto fields = redis::encode_metadata(metadata);
    router.pipeline(
        1, "HSET",
        [&](std::size_t) {
          return UnitRoute{slot_of(meta), 0, true, {}};
        },
        [&](std::size_t, CommandBuffer& hset) {
          hset.begin(2 + 2 * fields.size());
          hset.arg(std::string_view{"HSET"});
          hset.arg(meta);
          for (const auto& [field, value] : fields) {
            hset.arg(field);
            hset.arg(value);
          }
          return std::size_t{1};
        },
        [&](std::size_t, std::size_t, const redisReply& reply) {
          router.expect(reply, REDIS_REPLY_INTEGER, "HSET");
        });
    state->created_unix_ns = metadata.created_unix_ns;
  } catch (...) {
    // Undo what this call made (never a key it found: the EXISTS checks passed before any
    // allocation): best effort, the error is what matters.
    try {
      if (allocating) {
        for (std::uint64_t p : state->owned)
          router.run(state->slots[p], {"UNLINK", state->keys[p]});
      }
      router.run(slot_of(meta), {"UNLINK", meta});
    } catch (const Error&) {
    }
    throw;
  }
  return std::unique_ptr<RedisStore>(new RedisStore(std::move(state)));
}

std::vector<std::string> RedisStore::eviction_risks(const RedisEndpoint& endpoint) {
  const auto router = redis::make_router(endpoint);
  std::vector<std::string> risks;
  redis::for_each_master(*router, [&](std::uint16_t slot) {
    // "maxmemory*": one pattern, as servers before Redis 7 take only one.
    const Reply reply = router->call(slot, {"CONFIG", "GET", "maxmemory*"}, OnLostNode::retry);
    if (reply->type != REDIS_REPLY_ARRAY) return;  // CONFIG renamed away, or not allowed
    std::string limit = "0";
    std::string policy;
    for (std::size_t i = 0; i + 1 < reply->elements; i += 2) {
      const std::string_view field = redis::text_of(*reply->element[i]);
      if (field == "maxmemory") limit = redis::text_of(*reply->element[i + 1]);
      if (field == "maxmemory-policy") policy = redis::text_of(*reply->element[i + 1]);
    }
    if (limit == "0" || !policy.starts_with("allkeys-")) return;
    const std::string where =
        router->is_cluster() ? "the master serving slot " + std::to_string(slot) + " of " : "";
    risks.push_back("redis " + where + endpoint.describe() + " evicts keys when full (maxmemory " +
                    limit + " bytes, maxmemory-policy " + policy +
                    "): an evicted partition loses every item in it (redbloom reports the loss "
                    "as an error); use maxmemory-policy noeviction for filters");
  });
  return risks;
}

void RedisStore::drop(const RedisEndpoint& endpoint, const std::string& name) {
  // A creation that did not finish may have died before it checked that no key of another
  // program sits at a partition's name: of such a filter, only partitions that are still
  // blank (all zero; nothing can be added before the creation finishes) are unlinked.
  static constexpr std::string_view kUnlinkIfBlank =
      "if redis.call('TYPE', KEYS[1]).ok == 'string' and redis.call('BITCOUNT', KEYS[1]) == 0 "
      "then return redis.call('UNLINK', KEYS[1]) end return 0";
  redis::validate_filter_name(name);
  const auto router = redis::make_router(endpoint);
  const auto metadata = read_metadata(*router, name);
  if (!metadata) throw NotFound("no " + where(*router, name));
  const std::uint64_t partitions = metadata->params.partitions;
  std::vector<std::string> keys;
  for (std::uint64_t p = 0; p < partitions; ++p) {
    keys.push_back(
        redis::partition_key(name, p, p < metadata->tag_salts.size() ? metadata->tag_salts[p] : 0));
  }
  router->pipeline(
      partitions, "UNLINK",
      [&](std::size_t p) {
        return UnitRoute{slot_of(keys[p]), p, true, {}};
      },
      [&](std::size_t p, CommandBuffer& buffer) {
        if (metadata->ready) {
          buffer.command({"UNLINK", keys[p]});
        } else {
          buffer.command({"EVAL", kUnlinkIfBlank, "1", keys[p]});
        }
        return std::size_t{1};
      },
      [&](std::size_t, std::size_t, const redisReply& reply) {
        router->expect(reply, REDIS_REPLY_INTEGER, "UNLINK");
      },
      OnLostNode::retry);
  router->run(slot_of(name), {"UNLINK", name}, OnLostNode::retry);
}

void RedisStore::test_and_set(std::span<const std::string_view> items,
                              std::span<std::uint8_t> newly_added) {
  if (newly_added.size() < items.size()) throw InvalidArgument("test_and_set: flag span too small");
  State& s = *state_;
  s.hash_items(items);
  s.order.clear();
  struct Command {
    State::Group group;
    std::size_t round_end;  // items before this are committed once this round's replies are in
    bool last_of_round;
  };
  std::vector<Command> commands;
  for (std::size_t first = 0; first < items.size(); first += kRoundItems) {
    const std::size_t last = std::min(items.size(), first + kRoundItems);
    for (const State::Group& g : s.group(first, last)) {
      for (std::size_t b = g.begin; b < g.end; b += kCommandItems) {
        commands.push_back({{g.partition, b, std::min(g.end, b + kCommandItems)}, last, false});
      }
    }
    commands.back().last_of_round = true;
  }
  // Replies of different cluster nodes arrive in any order: a round is committed once all of
  // its commands, and those of every earlier round, have answered.
  std::vector<std::uint8_t> answered(commands.size(), 0);
  try {
    s.router->pipeline(
        commands.size(), "BITFIELD",
        [&](std::size_t c) {
          return UnitRoute{s.slots[commands[c].group.partition], c, true, {}};
        },
        [&](std::size_t c, CommandBuffer& buffer) {
          const State::Group& g = commands[c].group;
          s.guard(buffer, g.partition);
          s.bitfield(buffer, true, g.partition, g.begin, g.end);
          return std::size_t{2};
        },
        [&](std::size_t c, std::size_t r, const redisReply& reply) {
          const State::Group& g = commands[c].group;
          if (r == 0) return s.check_guard(reply, g.partition);
          s.check_bitfield_reply(reply, g.end - g.begin, "BITFIELD");
          const std::size_t k = s.params.hashes;
          for (std::size_t i = g.begin; i < g.end; ++i) {
            std::uint8_t fresh = 0;
            for (std::size_t j = 0; j < k; ++j) {
              fresh |= reply.element[(i - g.begin) * k + j]->integer == 0 ? 1 : 0;
            }
            newly_added[s.order[i]] = fresh;
          }
          answered[c] = 1;
        });
  } catch (const StorageError& e) {
    std::size_t committed = 0;
    for (std::size_t c = 0; c < commands.size() && answered[c] != 0; ++c) {
      if (commands[c].last_of_round) committed = commands[c].round_end;
    }
    // The count is committed(): callers that split batches (Filter) rebase it.
    throw IncompleteWrite(
        std::string(e.what()) + "; later items may be partly written (adding them again is safe)",
        committed);
  }
}

void RedisStore::set(std::span<const std::string_view> items) {
  State& s = *state_;
  s.hash_items(items);
  s.order.clear();
  const std::vector<State::Group> groups = s.group(0, items.size());
  const double bytes = static_cast<double>(s.params.partition_bytes());
  std::size_t partitions_done = 0;
  try {
    std::vector<State::Group> per_item;
    std::vector<State::Group> bulk;
    for (const State::Group& g : groups) {
      const double n = static_cast<double>(g.end - g.begin);
      if (bulk_is_cheaper(s.mode, bytes, n * s.params.hashes * kSetBitBytes)) {
        bulk.push_back(g);
        continue;
      }
      for (std::size_t b = g.begin; b < g.end; b += kCommandItems) {
        per_item.push_back({g.partition, b, std::min(g.end, b + kCommandItems)});
      }
    }
    // Deltas in waves of one per master: a cluster's masters take theirs at the same time,
    // and the client holds at most `masters` partition-sized deltas.
    const std::size_t wave = std::max<std::size_t>(1, s.router->masters());
    for (std::size_t first = 0; first < bulk.size(); first += wave) {
      const std::size_t count = std::min(wave, bulk.size() - first);
      std::vector<std::unique_ptr<MemoryStore>> built(count);
      std::vector<std::exception_ptr> failed(count);
      auto build = [&](std::size_t j) {
        try {
          const State::Group& g = bulk[first + j];
          built[j] = std::make_unique<MemoryStore>(single_partition(s.params));
          std::vector<std::string_view> members;
          members.reserve(g.end - g.begin);
          for (std::size_t i = g.begin; i < g.end; ++i) members.push_back(items[s.order[i]]);
          built[j]->set(members);
        } catch (...) {
          failed[j] = std::current_exception();
        }
      };
      std::vector<std::thread> builders;
      for (std::size_t j = 1; j < count; ++j) builders.emplace_back(build, j);
      build(0);
      for (std::thread& t : builders) t.join();
      for (const auto& e : failed) {
        if (e) std::rethrow_exception(e);
      }
      std::vector<State::Delta> deltas;
      for (std::size_t j = 0; j < count; ++j) {
        deltas.push_back({bulk[first + j].partition, built[j]->bytes()});
      }
      s.or_into(deltas);
      partitions_done += count;
    }
    s.router->pipeline(
        per_item.size(), "BITFIELD",
        [&](std::size_t c) {
          return UnitRoute{s.slots[per_item[c].partition], c, true, {}};
        },
        [&](std::size_t c, CommandBuffer& buffer) {
          s.guard(buffer, per_item[c].partition);
          s.bitfield(buffer, true, per_item[c].partition, per_item[c].begin, per_item[c].end);
          return std::size_t{2};
        },
        [&](std::size_t c, std::size_t r, const redisReply& reply) {
          if (r == 0) return s.check_guard(reply, per_item[c].partition);
          s.check_bitfield_reply(reply, per_item[c].end - per_item[c].begin, "BITFIELD");
        },
        OnLostNode::retry);
  } catch (const StorageError& e) {
    throw IncompleteWrite(std::string(e.what()) + "; " + std::to_string(partitions_done) +
                              " of the batch's " + std::to_string(groups.size()) +
                              " partition deltas were applied, the rest may be partly written "
                              "(loading the same items again is safe)",
                          0);
  }
}

void RedisStore::test(std::span<const std::string_view> items,
                      std::span<std::uint8_t> present) const {
  if (present.size() < items.size()) throw InvalidArgument("test: flag span too small");
  State& s = *state_;
  s.hash_items(items);
  s.order.clear();
  const std::vector<State::Group> groups = s.group(0, items.size());
  const double bytes = static_cast<double>(s.params.partition_bytes());
  const bool blocked = s.params.layout == Layout::blocked;
  // Units of per-item work: BITFIELD_RO commands (classic) or runs of GETRANGEs (blocked).
  std::vector<State::Group> units;
  for (const State::Group& g : groups) {
    const double n = static_cast<double>(g.end - g.begin);
    const double per_item =
        blocked ? n * (kRangeBytes + static_cast<double>(s.keys[g.partition].size()))
                : n * s.params.hashes * kGetBitBytes;
    if (bulk_is_cheaper(s.mode, bytes, per_item)) {
      MemoryStore copy(single_partition(s.params));
      s.download(g.partition, 0, s.params.partition_bytes(),
                 [&](std::uint64_t at, std::span<const std::uint8_t> piece) {
                   copy.write_bytes(0, at, piece);
                 });
      std::vector<std::string_view> members;
      std::vector<std::uint8_t> answers(g.end - g.begin);
      for (std::size_t i = g.begin; i < g.end; ++i) members.push_back(items[s.order[i]]);
      copy.test(members, answers);
      for (std::size_t i = g.begin; i < g.end; ++i) present[s.order[i]] = answers[i - g.begin];
      continue;
    }
    const std::size_t step = blocked ? kRangeItems : kCommandItems;
    for (std::size_t b = g.begin; b < g.end; b += step) {
      units.push_back({g.partition, b, std::min(g.end, b + step)});
    }
  }
  // Replies come one per command: the guard's, then one BITFIELD_RO (classic) or one GETRANGE
  // per item of the unit (blocked).
  s.router->pipeline(
      units.size(), blocked ? "GETRANGE" : "BITFIELD_RO",
      [&](std::size_t u) {
        return UnitRoute{s.slots[units[u].partition], u, false, {}};
      },
      [&](std::size_t u, CommandBuffer& buffer) {
        const State::Group& g = units[u];
        s.guard(buffer, g.partition);
        if (!blocked) {
          s.bitfield(buffer, false, g.partition, g.begin, g.end);
          return std::size_t{2};
        }
        for (std::size_t i = g.begin; i < g.end; ++i) {
          const std::uint64_t block =
              layout::blocked_block_of(s.hashes[s.order[i]], s.params.partition_bits);
          buffer.begin(4);
          buffer.arg(std::string_view{"GETRANGE"});
          buffer.arg(s.keys[g.partition]);
          buffer.arg(block * (kBlockBits / 8));
          buffer.arg(block * (kBlockBits / 8) + kBlockBits / 8 - 1);
        }
        return 1 + (g.end - g.begin);
      },
      [&](std::size_t u, std::size_t r, const redisReply& reply) {
        const State::Group& g = units[u];
        if (r == 0) return s.check_guard(reply, g.partition);
        if (!blocked) {
          s.check_bitfield_reply(reply, g.end - g.begin, "BITFIELD_RO");
          const std::size_t k = s.params.hashes;
          for (std::size_t i = g.begin; i < g.end; ++i) {
            bool all = true;
            for (std::size_t j = 0; j < k; ++j)
              all &= reply.element[(i - g.begin) * k + j]->integer == 1;
            present[s.order[i]] = all ? 1 : 0;
          }
          return;
        }
        const std::size_t item = s.order[g.begin + r - 1];
        s.router->expect(reply, REDIS_REPLY_STRING, "GETRANGE");
        if (reply.len != kBlockBits / 8) {
          throw FormatError(s.router->message(
              "GETRANGE", "partition key '" + s.keys[g.partition] + "' is shorter than expected"));
        }
        const auto* block = reinterpret_cast<const std::uint8_t*>(reply.str);
        bool all = true;
        layout::blocked_probes_in_block(s.hashes[item], s.params.hashes, [&](std::uint64_t bit) {
          all &= (block[bit / 8] & (0x80u >> (bit % 8))) != 0;
        });
        present[item] = all ? 1 : 0;
      },
      OnLostNode::retry);
}

std::uint64_t RedisStore::count_set_bits() const {
  State& s = *state_;
  std::uint64_t ones = 0;
  s.router->pipeline(
      s.owned.size(), "BITCOUNT", s.route_owned(),
      [&](std::size_t i, CommandBuffer& buffer) {
        buffer.command({"BITCOUNT", s.keys[s.owned[i]]});
        return std::size_t{1};
      },
      [&](std::size_t, std::size_t, const redisReply& reply) {
        s.router->expect(reply, REDIS_REPLY_INTEGER, "BITCOUNT");
        ones += static_cast<std::uint64_t>(reply.integer);
      },
      OnLostNode::retry);
  return ones;
}

std::uint64_t RedisStore::storage_bytes() const {
  State& s = *state_;
  std::uint64_t total = 0;
  s.router->pipeline(
      s.owned.size() + 1, "MEMORY USAGE",
      [&](std::size_t i) {
        return UnitRoute{i < s.owned.size() ? s.slots[s.owned[i]] : slot_of(s.name), i, false, {}};
      },
      [&](std::size_t i, CommandBuffer& buffer) {
        buffer.command({"MEMORY", "USAGE", i < s.owned.size() ? s.keys[s.owned[i]] : s.name});
        return std::size_t{1};
      },
      [&](std::size_t, std::size_t, const redisReply& reply) {
        if (redis::is_error(reply)) s.router->fail("MEMORY USAGE", redis::text_of(reply));
        if (reply.type == REDIS_REPLY_INTEGER) total += static_cast<std::uint64_t>(reply.integer);
      },
      OnLostNode::retry);
  return total;
}

void RedisStore::read_bytes(std::uint64_t partition, std::uint64_t offset,
                            std::span<std::uint8_t> out) const {
  check_byte_range(state_->params, partition, offset, out.size());
  require_held(partition);
  state_->download(partition, offset, out.size(),
                   [&](std::uint64_t at, std::span<const std::uint8_t> piece) {
                     std::memcpy(out.data() + at, piece.data(), piece.size());
                   });
}

void RedisStore::write_bytes(std::uint64_t partition, std::uint64_t offset,
                             std::span<const std::uint8_t> bytes) {
  State& s = *state_;
  check_byte_range(s.params, partition, offset, bytes.size());
  require_held(partition);
  const std::size_t chunks = (bytes.size() + kTransferChunk - 1) / kTransferChunk;
  s.router->pipeline(
      chunks, "SETRANGE",
      [&](std::size_t c) {
        return UnitRoute{s.slots[partition], c, true, {}};
      },
      [&](std::size_t c, CommandBuffer& buffer) {
        const auto piece = bytes.subspan(
            c * kTransferChunk, std::min(kTransferChunk, bytes.size() - c * kTransferChunk));
        buffer.begin(4);
        buffer.arg(std::string_view{"SETRANGE"});
        buffer.arg(s.keys[partition]);
        buffer.arg(offset + c * kTransferChunk);
        buffer.arg(std::string_view(reinterpret_cast<const char*>(piece.data()), piece.size()));
        return std::size_t{1};
      },
      [&](std::size_t, std::size_t, const redisReply& reply) {
        s.router->expect(reply, REDIS_REPLY_INTEGER, "SETRANGE");
      },
      OnLostNode::retry);
}

}  // namespace redbloom
