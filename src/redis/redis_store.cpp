// A filter's data paths in Redis: each call groups its items by partition, plans pipeline
// units, and lets the partition commands (partition_ops.hpp) say and read them. The lifecycle
// (create, open, drop) is in redis_admin.cpp.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/bitmap_buffer.hpp"
#include "core/bitmap_kernels.hpp"
#include "core/layout.hpp"
#include "core/module_protocol.hpp"
#include "core/sharding.hpp"
#include "redbloom/error.hpp"
#include "run_each.hpp"
#include "store_state.hpp"

namespace redbloom {
namespace {

using redis::CommandBuffer;
using redis::OnLostNode;
using redis::Replies;
using redis::UnitRoute;

// Items per pipelined round of test_and_set. Rounds are the unit of "committed": when a
// connection fails, every round whose replies all arrived is known to be in the filter.
constexpr std::size_t kRoundItems = 2048;
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

// Units of per-item work: consecutive items of one partition, at most `step` of them.
std::vector<RedisStore::State::Group> units_of(const std::vector<RedisStore::State::Group>& groups,
                                               std::size_t step) {
  std::vector<RedisStore::State::Group> units;
  for (const RedisStore::State::Group& g : groups) {
    for (std::size_t b = g.begin; b < g.end; b += step) {
      units.push_back({g.partition, b, std::min(g.end, b + step)});
    }
  }
  return units;
}

// Pipelined GETRANGE of `size` bytes of a partition from `offset`, bracketed by length checks
// (the first unit's STRLEN, the last's); each chunk goes to sink(offset within the range,
// bytes) straight from the reply, with no staging copy.
template <class Sink>
void download(RedisStore::State& s, std::uint64_t partition, std::uint64_t offset,
              std::uint64_t size, Sink&& sink) {
  const std::size_t chunks = (size + kTransferChunk - 1) / kTransferChunk;
  const redis::PartitionKey key = s.partition(partition);
  const auto length_of = [&](std::size_t c) {
    return std::min<std::uint64_t>(kTransferChunk, size - c * kTransferChunk);
  };
  s.router->pipeline(
      chunks, "GETRANGE",
      [&](std::size_t c) {
        return UnitRoute{s.slots[partition], c, false, {}};
      },
      [&](std::size_t c, CommandBuffer& buffer) {
        std::size_t n = c == 0 ? redis::encode_length_check(buffer, key) : 0;
        n += redis::encode_read(buffer, key, offset + c * kTransferChunk, length_of(c));
        if (c + 1 == chunks) n += redis::encode_length_check(buffer, key);
        return n;
      },
      [&](std::size_t c, Replies replies) {
        s.decoded("GETRANGE", [&] {
          if (c + 1 == chunks) redis::decode_length_check(*replies.back(), key);
          if (c == 0) redis::decode_length_check(*replies.front(), key);
          sink(c * kTransferChunk, redis::decode_read(*replies[c == 0 ? 1 : 0], key, length_of(c)));
        });
      },
      OnLostNode::retry);
}

struct Delta {
  std::uint64_t partition;
  std::span<const std::uint8_t> bits;
};

// ORs deltas (the partition's bits of some items) into their partitions, each through a temp
// key in its partition's slot (partition_ops.hpp: start, non-zero chunks, merge). Each
// delta's sequence is one group, so on a cluster the masters take theirs at the same time, and
// a moved slot runs its sequence again whole.
void or_into(RedisStore::State& s, std::span<const Delta> deltas) {
  struct Unit {
    std::size_t delta;
    enum Kind { start, upload, merge } kind;
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
    const std::uint64_t p = deltas[d].partition;
    temps.push_back(redis::temp_key(s.name, p, s.salts[p]));
  }
  s.router->pipeline(
      units.size(), "bulk OR",
      [&](std::size_t u) {
        const std::uint64_t p = deltas[units[u].delta].partition;
        return UnitRoute{s.slots[p], units[u].group, units[u].kind == Unit::merge, s.keys[p]};
      },
      [&](std::size_t u, CommandBuffer& buffer) {
        const Unit& unit = units[u];
        const redis::PartitionKey key = s.partition(deltas[unit.delta].partition);
        const std::string& temp = temps[unit.delta];
        switch (unit.kind) {
          case Unit::start:
            return redis::encode_delta_start(buffer, key, temp, kTempKeyTtl);
          case Unit::upload: {
            const auto bits = deltas[unit.delta].bits;
            const std::size_t at = unit.chunk * kTransferChunk;
            return redis::encode_delta_chunk(
                buffer, temp, at, bits.subspan(at, std::min(kTransferChunk, bits.size() - at)));
          }
          case Unit::merge:
            break;
        }
        return redis::encode_delta_merge(buffer, key, temp);
      },
      [&](std::size_t u, Replies replies) {
        const Unit& unit = units[u];
        const redis::PartitionKey key = s.partition(deltas[unit.delta].partition);
        s.decoded("bulk OR", [&] {
          switch (unit.kind) {
            case Unit::start:
              return redis::decode_delta_start(replies, key);
            case Unit::upload:
              return redis::decode_delta_chunk(replies);
            case Unit::merge:
              return redis::decode_delta_merge(replies, key, temps[unit.delta]);
          }
        });
      },
      OnLostNode::retry);
}

// test_and_set on a cluster: every item hashed first, since the router needs each unit's slot
// before it sends any (each master's units go on their own thread). `committed` follows the
// rounds whose replies, and those of every earlier round, are all in.
void add_planned(RedisStore::State& s, std::span<const std::string_view> items,
                 std::span<std::uint8_t> newly_added, std::size_t& committed) {
  s.hash_items(items);
  s.order.clear();
  struct Command {
    RedisStore::State::Group group;
    std::size_t round_end;  // items before this are committed once this round's replies are in
    bool last_of_round;
  };
  std::vector<Command> commands;
  const std::size_t step = s.commands->unit_items(/*lookup=*/false);
  for (std::size_t first = 0; first < items.size(); first += kRoundItems) {
    const std::size_t last = std::min(items.size(), first + kRoundItems);
    for (const RedisStore::State::Group& g : units_of(s.group(first, last), step)) {
      commands.push_back({g, last, false});
    }
    commands.back().last_of_round = true;
  }
  // Replies of different cluster nodes arrive in any order: a round is committed once all of
  // its commands, and those of every earlier round, have answered.
  std::vector<std::uint8_t> answered(commands.size(), 0);
  std::size_t answered_prefix = 0;
  std::vector<std::uint8_t> flags;
  s.router->pipeline(
      commands.size(), s.commands->operation(/*lookup=*/false),
      [&](std::size_t c) {
        return UnitRoute{s.slots[commands[c].group.partition], c, true, {}};
      },
      [&](std::size_t c, CommandBuffer& buffer) {
        const RedisStore::State::Group& g = commands[c].group;
        return s.commands->encode_test_and_set(buffer, s.partition(g.partition), s.unit(g, items));
      },
      [&](std::size_t c, Replies replies) {
        const RedisStore::State::Group& g = commands[c].group;
        flags.resize(g.end - g.begin);
        s.decoded(s.commands->operation(/*lookup=*/false), [&] {
          s.commands->decode_test_and_set(replies, s.partition(g.partition), s.unit(g, items),
                                          flags.data());
        });
        for (std::size_t i = g.begin; i < g.end; ++i) newly_added[s.order[i]] = flags[i - g.begin];
        answered[c] = 1;
        for (; answered_prefix < commands.size() && answered[answered_prefix] != 0;
             ++answered_prefix) {
          if (commands[answered_prefix].last_of_round) {
            committed = commands[answered_prefix].round_end;
          }
        }
      });
}

// test_and_set on one server: a pipeline unit is a round of items, hashed, grouped and encoded
// only when it is sent, so the client prepares the next rounds while the server works on the
// ones in flight (at most kPipelineWindow rounds). Replies come in order, so the rounds before
// the one being read are committed.
void add_in_rounds(RedisStore::State& s, std::span<const std::string_view> items,
                   std::span<std::uint8_t> newly_added, std::size_t& committed) {
  s.hashes.resize(items.size());
  s.partition_of.resize(items.size());
  s.order.clear();
  s.order.reserve(items.size());
  struct Command {
    RedisStore::State::Group group;
    std::size_t replies;
  };
  const std::size_t rounds = (items.size() + kRoundItems - 1) / kRoundItems;
  std::vector<std::vector<Command>> planned(rounds);
  const std::size_t step = s.commands->unit_items(/*lookup=*/false);
  const std::string_view operation = s.commands->operation(/*lookup=*/false);
  std::vector<std::uint8_t> flags;
  s.router->pipeline(
      rounds, operation,
      [](std::size_t r) {
        return UnitRoute{0, r, true, {}};
      },
      [&](std::size_t r, CommandBuffer& buffer) {
        const std::size_t first = r * kRoundItems;
        const std::size_t last = std::min(items.size(), first + kRoundItems);
        s.hash_range(items, first, last);
        std::size_t written = 0;
        for (const RedisStore::State::Group& g : units_of(s.group(first, last), step)) {
          const std::size_t n =
              s.commands->encode_test_and_set(buffer, s.partition(g.partition), s.unit(g, items));
          planned[r].push_back({g, n});
          written += n;
        }
        return written;
      },
      [&](std::size_t r, Replies replies) {
        for (const Command& command : planned[r]) {
          const RedisStore::State::Group& g = command.group;
          flags.resize(g.end - g.begin);
          s.decoded(operation, [&] {
            s.commands->decode_test_and_set(replies.first(command.replies),
                                            s.partition(g.partition), s.unit(g, items),
                                            flags.data());
          });
          for (std::size_t i = g.begin; i < g.end; ++i) {
            newly_added[s.order[i]] = flags[i - g.begin];
          }
          replies = replies.subspan(command.replies);
        }
        committed = std::min(items.size(), (r + 1) * kRoundItems);
      });
}

}  // namespace

void RedisStore::State::set_partitions(const FilterParams& p, const ShardSpec& spec,
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
    slots.push_back(redis::slot_of(keys.back()));
    if (sharding::shard_of_partition(i, spec.count) == spec.index) owned.push_back(i);
  }
  // The module's commands only where every master has them (a cluster sends each partition's
  // commands to whichever master serves it).
  module_version = redis::module_version(*router);
  commands = module_version >= module_protocol::kPartitionCommands
                 ? redis::module_partition_commands(params,
                                                    module_version >= module_protocol::kHashedItems)
                 : redis::stock_partition_commands(params);
}

redis::PartSet RedisStore::State::owned_parts() const {
  return {owned.size(), [this](std::uint64_t i) { return keys[owned[i]]; }, key_bytes()};
}

void RedisStore::State::hash_items(std::span<const std::string_view> items) {
  if (items.size() > UINT32_MAX) throw InvalidArgument("batch of more than 2^32 items");
  hashes.resize(items.size());
  partition_of.resize(items.size());
  hash_range(items, 0, items.size());
}

void RedisStore::State::hash_range(std::span<const std::string_view> items, std::size_t first,
                                   std::size_t last) {
  kernels::hash_items(items.subspan(first, last - first), hashes.data() + first);
  for (std::size_t i = first; i < last; ++i) {
    partition_of[i] =
        static_cast<std::uint32_t>(layout::partition_of(hashes[i], params.partitions));
  }
}

std::vector<RedisStore::State::Group> RedisStore::State::group(std::size_t first,
                                                               std::size_t last) {
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

redis::Router::Route RedisStore::State::route_owned(bool writes) const {
  return [this, writes](std::size_t i) { return UnitRoute{slots[owned[i]], i, writes, {}}; };
}

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
std::optional<RedisKeys> RedisStore::redis_keys() const {
  if (shard().count > 1) return std::nullopt;
  return RedisKeys{endpoint(), name()};
}

std::string RedisStore::location() const {
  return "redis " + endpoint().describe() + " filter " + state_->name;
}
std::vector<std::string> RedisStore::engines() const {
  const State& s = *state_;
  const std::string used =
      std::string(s.commands->operation(false)) + " / " + std::string(s.commands->operation(true));
  const std::string where = "redis " + endpoint().describe() + ": ";
  if (s.module_version >= module_protocol::kPartitionCommands) {
    return {where + "module redbloom (commands version " + std::to_string(s.module_version) +
            (s.module_version >= module_protocol::kHashedItems
                 ? "), hashing on the client, bits on the server: "
                 : "), hashing on the server: ") +
            used};
  }
  return {where + "stock Redis commands: " + used};
}
RedisRedirectCounts RedisStore::redirections() const noexcept {
  return state_->router->redirections();
}
std::uint64_t RedisStore::partition_slot(std::uint64_t partition) const {
  check_byte_range(state_->params, partition, 0, 0);
  return state_->slots[partition];
}

void RedisStore::add(std::span<const std::string_view> items, std::span<std::uint8_t> newly_added) {
  if (newly_added.size() < items.size()) throw InvalidArgument("test_and_set: flag span too small");
  if (items.size() > UINT32_MAX) throw InvalidArgument("batch of more than 2^32 items");
  State& s = *state_;
  std::size_t committed = 0;
  try {
    if (s.router->is_cluster()) {
      add_planned(s, items, newly_added, committed);
    } else {
      add_in_rounds(s, items, newly_added, committed);
    }
  } catch (const StorageError& e) {
    // The count is committed(): callers that split batches (Filter) rebase it.
    throw IncompleteWrite(
        std::string(e.what()) + "; later items may be partly written (adding them again is safe)",
        committed);
  }
}

void RedisStore::load(std::span<const std::string_view> items) {
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
      (bulk_is_cheaper(s.mode, bytes, n * s.params.hashes * kSetBitBytes) ? bulk : per_item)
          .push_back(g);
    }
    // Deltas in waves of one per master: a cluster's masters take theirs at the same time,
    // and the client holds at most `masters` partition-sized deltas.
    const std::size_t wave = std::max<std::size_t>(1, s.router->masters());
    for (std::size_t first = 0; first < bulk.size(); first += wave) {
      const std::size_t count = std::min(wave, bulk.size() - first);
      std::vector<std::unique_ptr<BitmapBuffer>> built(count);
      redis::run_each(count, [&](std::size_t j) {
        const State::Group& g = bulk[first + j];
        built[j] = std::make_unique<BitmapBuffer>(single_partition(s.params));
        std::vector<std::string_view> members;
        members.reserve(g.end - g.begin);
        for (std::size_t i = g.begin; i < g.end; ++i) members.push_back(items[s.order[i]]);
        built[j]->set(members);
      });
      std::vector<Delta> deltas;
      for (std::size_t j = 0; j < count; ++j) {
        deltas.push_back({bulk[first + j].partition, built[j]->bytes()});
      }
      or_into(s, deltas);
      partitions_done += count;
    }
    // The rest item by item: test-and-set with its answers ignored (a bulk load has none).
    const std::vector<State::Group> units =
        units_of(per_item, s.commands->unit_items(/*lookup=*/false));
    std::vector<std::uint8_t> ignored;
    s.router->pipeline(
        units.size(), s.commands->operation(/*lookup=*/false),
        [&](std::size_t c) {
          return UnitRoute{s.slots[units[c].partition], c, true, {}};
        },
        [&](std::size_t c, CommandBuffer& buffer) {
          return s.commands->encode_test_and_set(buffer, s.partition(units[c].partition),
                                                 s.unit(units[c], items));
        },
        [&](std::size_t c, Replies replies) {
          ignored.resize(units[c].end - units[c].begin);
          s.decoded(s.commands->operation(/*lookup=*/false), [&] {
            s.commands->decode_test_and_set(replies, s.partition(units[c].partition),
                                            s.unit(units[c], items), ignored.data());
          });
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

void RedisStore::contains(std::span<const std::string_view> items,
                          std::span<std::uint8_t> present) const {
  if (present.size() < items.size()) throw InvalidArgument("test: flag span too small");
  State& s = *state_;
  s.hash_items(items);
  s.order.clear();
  const std::vector<State::Group> groups = s.group(0, items.size());
  const double bytes = static_cast<double>(s.params.partition_bytes());
  const bool blocked = s.params.layout == Layout::blocked;
  std::vector<State::Group> per_item;
  for (const State::Group& g : groups) {
    const double n = static_cast<double>(g.end - g.begin);
    const double item_bytes =
        blocked ? n * (kRangeBytes + static_cast<double>(s.keys[g.partition].size()))
                : n * s.params.hashes * kGetBitBytes;
    if (!bulk_is_cheaper(s.mode, bytes, item_bytes)) {
      per_item.push_back(g);
      continue;
    }
    // Cheaper to read the whole partition once and answer here.
    BitmapBuffer copy(single_partition(s.params));
    download(s, g.partition, 0, s.params.partition_bytes(),
             [&](std::uint64_t at, std::span<const std::uint8_t> piece) {
               std::memcpy(copy.bytes().data() + at, piece.data(), piece.size());
             });
    std::vector<std::string_view> members;
    std::vector<std::uint8_t> answers(g.end - g.begin);
    for (std::size_t i = g.begin; i < g.end; ++i) members.push_back(items[s.order[i]]);
    copy.test(members, answers.data());
    for (std::size_t i = g.begin; i < g.end; ++i) present[s.order[i]] = answers[i - g.begin];
  }
  const std::vector<State::Group> units =
      units_of(per_item, s.commands->unit_items(/*lookup=*/true));
  std::vector<std::uint8_t> answers;
  s.router->pipeline(
      units.size(), s.commands->operation(/*lookup=*/true),
      [&](std::size_t u) {
        return UnitRoute{s.slots[units[u].partition], u, false, {}};
      },
      [&](std::size_t u, CommandBuffer& buffer) {
        return s.commands->encode_lookup(buffer, s.partition(units[u].partition),
                                         s.unit(units[u], items));
      },
      [&](std::size_t u, Replies replies) {
        const State::Group& g = units[u];
        answers.resize(g.end - g.begin);
        s.decoded(s.commands->operation(/*lookup=*/true), [&] {
          s.commands->decode_lookup(replies, s.partition(g.partition), s.unit(g, items),
                                    answers.data());
        });
        for (std::size_t i = g.begin; i < g.end; ++i) present[s.order[i]] = answers[i - g.begin];
      },
      OnLostNode::retry);
}

std::uint64_t RedisStore::count_set_bits() const {
  State& s = *state_;
  std::uint64_t ones = 0;
  s.router->pipeline(
      s.owned.size(), "BITCOUNT", s.route_owned(),
      [&](std::size_t i, CommandBuffer& buffer) {
        return redis::encode_count(buffer, s.partition(s.owned[i]));
      },
      [&](std::size_t i, Replies replies) {
        s.decoded("BITCOUNT",
                  [&] { ones += redis::decode_count(replies, s.partition(s.owned[i])); });
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
        return UnitRoute{
            i < s.owned.size() ? s.slots[s.owned[i]] : redis::slot_of(s.name), i, false, {}};
      },
      [&](std::size_t i, CommandBuffer& buffer) {
        buffer.command({"MEMORY", "USAGE", i < s.owned.size() ? s.keys[s.owned[i]] : s.name});
        return std::size_t{1};
      },
      [&](std::size_t, Replies replies) {
        const redisReply& reply = *replies[0];
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
  download(*state_, partition, offset, out.size(),
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
  const redis::PartitionKey key = s.partition(partition);
  // The last unit checks the length too: a partition lost during the copy was recreated by
  // the SETRANGEs, shorter than sealed.
  s.router->pipeline(
      chunks, "SETRANGE",
      [&](std::size_t c) {
        return UnitRoute{s.slots[partition], c, true, {}};
      },
      [&](std::size_t c, CommandBuffer& buffer) {
        const auto piece = bytes.subspan(
            c * kTransferChunk, std::min(kTransferChunk, bytes.size() - c * kTransferChunk));
        std::size_t n = redis::encode_write(buffer, key, offset + c * kTransferChunk, piece);
        if (c + 1 == chunks) n += redis::encode_length_check(buffer, key);
        return n;
      },
      [&](std::size_t c, Replies replies) {
        s.decoded("SETRANGE", [&] {
          redis::decode_write(*replies[0]);
          if (c + 1 == chunks) redis::decode_length_check(*replies[1], key);
        });
      },
      OnLostNode::retry);
}

}  // namespace redbloom
