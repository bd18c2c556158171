// A cuckoo filter's data paths in Redis: each call hashes its items, groups them by server (by
// partition on a cluster, whose partitions live in slots of their own) and sends each group's
// items through the script (cuckoo_script.hpp) in waves of one unit a group, so a partition's
// items are handled in batch order (the second of two equal items is not new) while every
// server and master works at the same time.
#include <algorithm>
#include <functional>
#include <map>
#include <mutex>

#include "core/cuckoo_chain.hpp"
#include "core/module_protocol.hpp"
#include "core/sharding.hpp"
#include "object.hpp"
#include "partition_ops.hpp"
#include "redbloom/error.hpp"
#include "redbloom/hash.hpp"
#include "redbloom/sizing.hpp"
#include "redis/cuckoo_redis_state.hpp"
#include "redis/cuckoo_script.hpp"
#include "run_each.hpp"

namespace redbloom {
namespace {

using redis::CommandBuffer;
using redis::OnLostNode;
using redis::Replies;
using redis::UnitRoute;
namespace script = redis::cuckoo;

// Items per script call: bounds how long one call blocks its server (a few BITFIELDs an item,
// more for kicks).
constexpr std::size_t kUnitItems = 512;
// NOSCRIPT replies in a row for one group before a call gives up (each switches to EVAL).
constexpr int kMaxNoScript = 3;
// What the script costs an item in a lookup, in bytes a GET could move meanwhile: a partition
// whose link 0 takes fewer bytes than its items in the batch x this is read whole instead.
constexpr double kScriptItemBytes = 2048;

// A call's items by the script call they go in: one per server, or per partition on a cluster.
struct Group {
  std::uint32_t router = 0;
  std::vector<std::uint32_t> items;  // batch indices, in order
  std::size_t next = 0;              // first not yet handled
  std::size_t sent = 0;              // items in the unit in flight
  int no_script = 0;
};

struct Batch {
  std::vector<script::ItemArgs> args;  // per item (partition_index holds the partition)
  std::vector<ItemHash> hashes;        // per item
  std::vector<Group> groups;
};

Batch group_items(const RedisCuckooStore::State& s, std::span<const std::string_view> items) {
  if (items.size() > UINT32_MAX) throw InvalidArgument("batch of more than 2^32 items");
  Batch b;
  b.args.resize(items.size());
  b.hashes.resize(items.size());
  std::vector<std::uint32_t> group_of_router(s.routers.size(), UINT32_MAX);
  std::map<std::uint32_t, std::uint32_t> group_of_partition;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const ItemHash h = hash_item(items[i]);
    b.hashes[i] = h;
    const std::uint32_t p = s.shape.partition_of(h);
    b.args[i] = {p, static_cast<std::uint32_t>(h.lo >> 32), static_cast<std::uint32_t>(h.hi >> 32)};
    const std::uint32_t r = s.router_of[p];
    std::uint32_t& g = s.routers[r]->is_cluster()
                           ? group_of_partition.try_emplace(p, UINT32_MAX).first->second
                           : group_of_router[r];
    if (g == UINT32_MAX) {
      g = static_cast<std::uint32_t>(b.groups.size());
      b.groups.push_back({r, {}, 0, 0, 0});
    }
    b.groups[g].items.push_back(static_cast<std::uint32_t>(i));
  }
  return b;
}

// The first item (batch index) some group has not handled: everything before it is.
std::size_t handled_prefix(const Batch& b, std::size_t items) {
  std::size_t first = items;
  for (const Group& g : b.groups) {
    if (g.next < g.items.size()) first = std::min<std::size_t>(first, g.items[g.next]);
  }
  return first;
}

using Answer = std::function<void(std::size_t item, std::uint32_t value)>;

// Runs the script in `mode` over the items in waves (see the top of the file), answer(i, v) for
// each item handled. An add that finds a partition full stops every group before that item:
// returns the batch index of the first item refused (items.size() when none was).
class Waves {
 public:
  Waves(RedisCuckooStore::State& s, script::Mode mode, std::string operation, Batch& batch,
        const Answer& answer)
      : s_(s), mode_(mode), operation_(std::move(operation)), b_(batch), answer_(answer) {}

  std::size_t run(std::size_t items) {
    stop_ = items;
    while (true) {
      std::vector<std::vector<std::uint32_t>> work(s_.routers.size());
      bool any = false;
      for (std::uint32_t g = 0; g < b_.groups.size(); ++g) {
        if (unit_of(b_.groups[g]) == 0) continue;
        work[b_.groups[g].router].push_back(g);
        any = true;
      }
      if (!any) return stop_;
      redis::run_each(s_.routers.size(), [&](std::size_t r) { send(r, work[r]); });
    }
  }

 private:
  [[nodiscard]] std::size_t unit_of(const Group& g) const {
    std::size_t end = g.next;
    while (end < g.items.size() && end - g.next < kUnitItems && g.items[end] < stop_) ++end;
    return end - g.next;
  }

  [[nodiscard]] bool writes() const noexcept {
    return mode_ != script::Mode::contains && mode_ != script::Mode::count;
  }

  void send(std::size_t r, const std::vector<std::uint32_t>& mine) {
    if (mine.empty()) return;
    redis::Router& router = *s_.routers[r];
    const bool writes = this->writes();
    router.pipeline(
        mine.size(), operation_,
        [&](std::size_t u) {
          const Group& g = b_.groups[mine[u]];
          return UnitRoute{s_.slots[b_.args[g.items[g.next]].partition_index], u, writes, {}};
        },
        [&](std::size_t u, CommandBuffer& buffer) {
          std::lock_guard lock(mutex_);
          encode(r, b_.groups[mine[u]], buffer);
          return std::size_t{1};
        },
        [&](std::size_t u, Replies replies) {
          std::lock_guard lock(mutex_);
          take(router, b_.groups[mine[u]], *replies[0]);
        },
        writes ? OnLostNode::fail : OnLostNode::retry);
  }

  // The group's next unit: its partitions' link keys, and each item's partition among them.
  void encode(std::size_t r, Group& g, CommandBuffer& buffer) const {
    g.sent = unit_of(g);
    std::vector<std::string> keys;
    std::vector<script::ItemArgs> args(g.sent);
    std::map<std::uint32_t, std::uint32_t> index_of;
    const auto links = static_cast<std::uint32_t>(s_.links.size());
    for (std::size_t j = 0; j < g.sent; ++j) {
      args[j] = b_.args[g.items[g.next + j]];
      const std::uint32_t p = args[j].partition_index;
      const auto [at, added] = index_of.try_emplace(p, static_cast<std::uint32_t>(index_of.size()));
      if (added) {
        keys.push_back(s_.roster_key(p));
        for (std::uint32_t l = 0; l < links; ++l) keys.push_back(s_.link_key(p, l));
      }
      args[j].partition_index = at->second;
    }
    const bool read_only = !writes() && s_.read_only_scripts[r] != 0;
    const script::Command command =
        s_.module            ? script::Command::module
        : s_.by_text[r] != 0 ? (read_only ? script::Command::eval_ro : script::Command::eval)
                             : (read_only ? script::Command::evalsha_ro : script::Command::evalsha);
    script::encode(buffer, command, mode_, keys, s_.links, args);
  }

  void take(redis::Router& router, Group& g, const redisReply& reply) {
    if (redis::is_error(reply) && redis::text_of(reply).starts_with("NOSCRIPT")) {
      s_.by_text[g.router] = 1;
      if (++g.no_script > kMaxNoScript) router.fail(operation_, "the script cannot be loaded");
      return;
    }
    if (!writes() && redis::refuses_read_only_scripts(reply)) {
      s_.read_only_scripts[g.router] = 0;
      if (++g.no_script > kMaxNoScript) router.fail(operation_, "the script cannot be run");
      return;
    }
    script::Reply decoded;
    try {
      decoded = script::decode(reply, g.sent);
    } catch (const redis::ReplyProblem& problem) {
      if (problem.lost()) throw FormatError(router.message(operation_, problem.what()));
      router.fail(operation_, problem.what());
    }
    g.no_script = 0;
    for (std::size_t j = 0; j < decoded.answers.size(); ++j) {
      answer_(g.items[g.next + j], decoded.answers[j]);
    }
    g.next += decoded.answers.size();
    if (decoded.full && g.next < g.items.size())
      stop_ = std::min<std::size_t>(stop_, g.items[g.next]);
  }

  RedisCuckooStore::State& s_;
  const script::Mode mode_;
  const std::string operation_;
  Batch& b_;
  const Answer& answer_;
  std::size_t stop_ = 0;
  std::mutex mutex_;  // encode and take of a cluster's masters run on their own threads
};

// The partitions whose items of the batch are answered from their tables read whole; the
// batch's other items are left to the script (`rest`, their batch indices).
std::vector<std::uint32_t> partitions_to_read(const RedisCuckooStore::State& s, const Batch& b,
                                              std::vector<std::uint32_t>& rest) {
  std::vector<std::uint64_t> per_partition(s.shape.partitions(), 0);
  for (const script::ItemArgs& item : b.args) ++per_partition[item.partition_index];
  std::vector<std::uint32_t> read;
  std::vector<std::uint8_t> whole(s.shape.partitions(), 0);
  for (std::uint32_t p = 0; p < per_partition.size(); ++p) {
    if (per_partition[p] == 0 || s.lookup_mode == RedisCuckooStore::LookupMode::script) continue;
    const bool cheaper = static_cast<double>(s.links[0].bytes()) <
                         static_cast<double>(per_partition[p]) * kScriptItemBytes;
    if (s.lookup_mode == RedisCuckooStore::LookupMode::tables || cheaper) {
      read.push_back(p);
      whole[p] = 1;
    }
  }
  for (std::uint32_t i = 0; i < b.args.size(); ++i) {
    if (whole[b.args[i].partition_index] == 0) rest.push_back(i);
  }
  return read;
}

// The tables of `partitions` read whole, each with one GET, checked against the roster read
// with them: per partition its links' bytes, oldest first.
std::vector<std::vector<std::vector<std::uint8_t>>> read_tables(
    const RedisCuckooStore::State& s, const std::vector<std::uint32_t>& partitions) {
  const auto links = static_cast<std::uint32_t>(s.links.size());
  const std::uint32_t keys = links + 1;  // the roster, then the links
  // Per partition: the roster's byte (-1: missing or damaged), then each link's bytes, and
  // whether the link was there.
  std::vector<int> roster(partitions.size(), -1);
  std::vector<std::vector<std::vector<std::uint8_t>>> tables(
      partitions.size(), std::vector<std::vector<std::uint8_t>>(links));
  std::vector<std::vector<std::uint8_t>> found(partitions.size(),
                                               std::vector<std::uint8_t>(links, 0));
  const auto key_of = [&](std::uint32_t i, std::uint32_t key) {
    return key == 0 ? s.roster_key(partitions[i]) : s.link_key(partitions[i], key - 1);
  };
  redis::run_each(s.routers.size(), [&](std::size_t r) {
    std::vector<std::uint32_t> mine;  // indices into `partitions`
    for (std::uint32_t i = 0; i < partitions.size(); ++i) {
      if (s.router_of[partitions[i]] == r) mine.push_back(i);
    }
    redis::Router& router = *s.routers[r];
    redis::for_each_part(
        router, mine.size() * keys,
        [&](std::uint64_t k) {
          return key_of(mine[k / keys], static_cast<std::uint32_t>(k % keys));
        },
        "GET (a cuckoo filter's tables)", redis::Work::read,
        [](std::uint64_t, const std::string& key, CommandBuffer& buffer) {
          buffer.command({"GET", key});
        },
        [&](std::uint64_t k, const redisReply& reply) {
          const std::uint32_t i = mine[k / keys];
          const auto key = static_cast<std::uint32_t>(k % keys);
          if (reply.type != REDIS_REPLY_STRING) return;
          if (key == 0) {
            if (reply.len == 1) roster[i] = static_cast<std::uint8_t>(reply.str[0]);
            return;
          }
          const auto* at = reinterpret_cast<const std::uint8_t*>(reply.str);
          tables[i][key - 1].assign(at, at + reply.len);
          found[i][key - 1] = 1;
        },
        keys);
  });
  for (std::uint32_t i = 0; i < partitions.size(); ++i) {
    redis::Router& router = *s.routers[s.router_of[partitions[i]]];
    std::string gone;
    if (roster[i] < 0 || static_cast<std::uint32_t>(roster[i]) >= links) gone = key_of(i, 0);
    const std::uint32_t held = gone.empty() ? static_cast<std::uint32_t>(roster[i]) + 1 : 0;
    for (std::uint32_t l = 0; l < held && gone.empty(); ++l) {
      if (found[i][l] == 0 || tables[i][l].size() != s.links[l].bytes()) gone = key_of(i, l + 1);
    }
    if (!gone.empty()) {
      throw FormatError(router.message(
          "GET", "cuckoo filter key '" + gone +
                     "' is gone or damaged (evicted or deleted?): the filter has lost items; "
                     "drop it and create it again"));
    }
    tables[i].resize(held);  // links grown after the roster was read are left out
  }
  return tables;
}

// Answers the items of `read` partitions from their tables: answer(i, value) with value from
// `ask(links, hash)`.
void answer_from_tables(
    const RedisCuckooStore::State& s, std::span<const std::string_view> items, const Batch& b,
    const std::vector<std::uint32_t>& read,
    const std::function<std::uint32_t(std::span<const cuckoo_table::Table>, const ItemHash&)>& ask,
    const Answer& answer) {
  if (read.empty()) return;
  auto bytes = read_tables(s, read);
  std::vector<std::vector<cuckoo_table::Table>> tables(s.shape.partitions());
  for (std::uint32_t i = 0; i < read.size(); ++i) {
    for (std::uint32_t l = 0; l < bytes[i].size(); ++l) {
      tables[read[i]].emplace_back(s.links[l], bytes[i][l]);
    }
  }
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::uint32_t p = b.args[i].partition_index;
    if (tables[p].empty()) continue;
    answer(i, ask(tables[p], b.hashes[i]));
  }
}

// The batch of the items at `rest` only (their groups), for the script.
void keep_only(Batch& b, const std::vector<std::uint32_t>& rest) {
  std::vector<std::uint8_t> kept(b.args.size(), 0);
  for (const std::uint32_t i : rest) kept[i] = 1;
  for (Group& g : b.groups) {
    std::erase_if(g.items, [&](std::uint32_t i) { return kept[i] == 0; });
  }
}

// The command's name in messages: "EVALSHA (adding to a cuckoo filter)".
std::string operation_of(const RedisCuckooStore::State& s, std::string_view what) {
  return std::string(s.module ? "RB.CUCKOO" : "EVALSHA") + " (" + std::string(what) + ")";
}

void check_flags(std::size_t items, std::size_t flags) {
  if (flags < items) {
    throw InvalidArgument("flag span holds " + std::to_string(flags) + " entries for " +
                          std::to_string(items) + " items");
  }
}

}  // namespace

// --- State -------------------------------------------------------------------------------------

std::vector<std::uint32_t> cuckoo_servers_of_partitions(std::uint64_t partitions,
                                                        std::size_t servers) {
  std::vector<std::uint32_t> of(partitions, 0);
  if (servers == 1) return of;
  for (std::uint64_t p = 0; p < partitions; ++p) {
    of[p] = sharding::shard_of_partition(p, static_cast<std::uint32_t>(servers));
  }
  return of;
}

void RedisCuckooStore::State::prepare() {
  const std::uint64_t partitions = shape.partitions();
  slots.resize(partitions);
  for (std::uint64_t p = 0; p < partitions; ++p) slots[p] = redis::slot_of(link_key(p, 0));
  links.clear();
  for (std::uint32_t l = 0; l < shape.max_links(); ++l) {
    if (shape.link(l).bytes() * 8 > kRedisMaxStringBits) break;
    links.push_back(shape.link(l));
  }
  if (links.empty()) {
    throw InvalidArgument("a cuckoo filter's tables of " + std::to_string(shape.link(0).bytes()) +
                          " bytes are more than a Redis string holds: give it more partitions");
  }
  by_text.assign(routers.size(), 0);
  read_only_scripts.assign(routers.size(), 1);
  module = true;
  for (const auto& router : routers) {
    if (redis::module_version(*router) < module_protocol::kCuckooCommand) module = false;
  }
}

std::string RedisCuckooStore::State::link_key(std::uint64_t partition, std::uint32_t link) const {
  return redis::partition_key(name, partition, salts[partition], redis::cuckoo_link_part(link));
}

std::string RedisCuckooStore::State::roster_key(std::uint64_t partition) const {
  return redis::partition_key(name, partition, salts[partition], redis::kCuckooRosterPart);
}

std::string RedisCuckooStore::State::describe_servers() const {
  std::string text;
  for (const auto& router : routers) {
    if (!text.empty()) text += ", ";
    text += router->endpoint().describe();
  }
  return text;
}

// --- the store ---------------------------------------------------------------------------------

RedisCuckooStore::RedisCuckooStore(std::unique_ptr<State> state) : state_(std::move(state)) {}
RedisCuckooStore::~RedisCuckooStore() = default;

FilterShape RedisCuckooStore::shape() const {
  FilterShape out;
  const CuckooOptions& options = state_->shape.options();
  out.cuckoo = options;
  out.params.capacity = options.capacity;
  out.params.error_rate = options.error_rate;
  out.params.partitions = options.partitions;
  return out;
}

void RedisCuckooStore::add(std::span<const std::string_view> items,
                           std::span<std::uint8_t> newly_added) {
  check_flags(items.size(), newly_added.size());
  write_items(static_cast<char>(script::Mode::add), items, newly_added);
}

void RedisCuckooStore::insert(std::span<const std::string_view> items) {
  std::vector<std::uint8_t> scratch(items.size());
  write_items(static_cast<char>(script::Mode::insert), items, scratch);
}

void RedisCuckooStore::write_items(char mode, std::span<const std::string_view> items,
                                   std::span<std::uint8_t> flags) {
  Batch batch = group_items(*state_, items);
  std::size_t stop = items.size();
  const bool adding = mode == static_cast<char>(script::Mode::add);
  try {
    stop = Waves(*state_, static_cast<script::Mode>(mode),
                 operation_of(*state_, adding ? "adding to a cuckoo filter"
                                              : "inserting into a cuckoo filter"),
                 batch, [&](std::size_t i, std::uint32_t v) { flags[i] = v != 0 ? 1 : 0; })
               .run(items.size());
  } catch (const StorageError& e) {
    throw IncompleteWrite(std::string(e.what()) + "; later items may be partly written" +
                              (adding ? " (adding them again is safe)" : ""),
                          handled_prefix(batch, items.size()));
  }
  if (stop < items.size()) {
    const std::size_t committed = std::min(stop, handled_prefix(batch, items.size()));
    throw CapacityExceeded(location() + " is full: the partition of item " + std::to_string(stop) +
                               " of the call has no room in its " +
                               std::to_string(state_->links.size()) + " links and may not grow (" +
                               state_->shape.describe() + "); the first " +
                               std::to_string(committed) +
                               " items were added, the rest were not (a few of other partitions "
                               "may have been); create it with growth or a larger capacity or "
                               "max_bytes",
                           committed);
  }
}

void RedisCuckooStore::load(std::span<const std::string_view> items) {
  std::vector<std::uint8_t> scratch(items.size());
  add(items, scratch);
}

void RedisCuckooStore::contains(std::span<const std::string_view> items,
                                std::span<std::uint8_t> present) const {
  check_flags(items.size(), present.size());
  Batch batch = group_items(*state_, items);
  const Answer answer = [&](std::size_t i, std::uint32_t v) { present[i] = v != 0 ? 1 : 0; };
  std::vector<std::uint32_t> rest;
  const std::vector<std::uint32_t> read = partitions_to_read(*state_, batch, rest);
  answer_from_tables(
      *state_, items, batch, read,
      [](std::span<const cuckoo_table::Table> links, const ItemHash& h) -> std::uint32_t {
        return cuckoo_chain::contains(links, h) ? 1 : 0;
      },
      answer);
  keep_only(batch, rest);
  Waves(*state_, script::Mode::contains, operation_of(*state_, "looking up in a cuckoo filter"),
        batch, answer)
      .run(items.size());
}

void RedisCuckooStore::remove(std::span<const std::string_view> items,
                              std::span<std::uint8_t> removed) {
  clear_items(static_cast<char>(script::Mode::remove), items, removed);
}

void RedisCuckooStore::remove_known(std::span<const std::string_view> items,
                                    std::span<std::uint8_t> removed) {
  clear_items(static_cast<char>(script::Mode::remove_known), items, removed);
}

void RedisCuckooStore::clear_items(char mode, std::span<const std::string_view> items,
                                   std::span<std::uint8_t> removed) {
  check_flags(items.size(), removed.size());
  Batch batch = group_items(*state_, items);
  try {
    Waves(*state_, static_cast<script::Mode>(mode),
          operation_of(*state_, "removing from a cuckoo filter"), batch,
          [&](std::size_t i, std::uint32_t v) { removed[i] = v != 0 ? 1 : 0; })
        .run(items.size());
  } catch (const StorageError& e) {
    throw IncompleteWrite(std::string(e.what()) +
                              "; later items may be partly removed (removing an item twice "
                              "may remove another item's fingerprint)",
                          handled_prefix(batch, items.size()));
  }
}

void RedisCuckooStore::count(std::span<const std::string_view> items,
                             std::span<std::uint32_t> counts) const {
  check_flags(items.size(), counts.size());
  Batch batch = group_items(*state_, items);
  const Answer answer = [&](std::size_t i, std::uint32_t v) { counts[i] = v; };
  std::vector<std::uint32_t> rest;
  const std::vector<std::uint32_t> read = partitions_to_read(*state_, batch, rest);
  answer_from_tables(*state_, items, batch, read, cuckoo_chain::count, answer);
  keep_only(batch, rest);
  Waves(*state_, script::Mode::count, operation_of(*state_, "counting in a cuckoo filter"), batch,
        answer)
      .run(items.size());
}

void RedisCuckooStore::set_lookup_mode(LookupMode mode) noexcept {
  state_->lookup_mode = mode;
}

std::optional<CuckooInfo> RedisCuckooStore::cuckoo_info() const {
  const State& s = *state_;
  const std::vector<std::uint32_t> held = link_counts();
  CuckooInfo info;
  info.options = s.shape.options();
  for (std::uint32_t link = 0; link < s.links.size(); ++link) {
    CuckooLinkInfo row;
    row.link = link;
    row.fingerprint_bits = s.links[link].fingerprint_bits;
    row.capacity = s.shape.link_capacity(link);
    for (std::uint32_t p = 0; p < held.size(); ++p) {
      if (link >= held[p]) continue;
      std::vector<std::uint8_t> bytes = read_table(p, link);
      row.items += cuckoo_table::Table(s.links[link], bytes).stored();
      row.bytes += s.links[link].bytes();
      row.partitions += 1;
    }
    if (row.partitions == 0) break;
    row.error_rate_now = s.shape.link_rate_now(link, row.items);
    info.items += row.items;
    info.bytes += row.bytes;
    info.error_rate_now += row.error_rate_now;
    info.links.push_back(row);
  }
  return info;
}

std::uint64_t RedisCuckooStore::count_set_bits() const {
  return cuckoo_info()->items;
}

std::uint64_t RedisCuckooStore::created_unix_ns() const {
  return state_->created_unix_ns;
}

std::uint64_t RedisCuckooStore::storage_bytes() const {
  std::uint64_t bytes = 0;
  for (const std::uint32_t links : link_counts()) {
    for (std::uint32_t l = 0; l < links; ++l) bytes += state_->links[l].bytes();
  }
  return bytes;
}

std::string RedisCuckooStore::location() const {
  return "redis " + state_->describe_servers() + " filter " + state_->name + " (cuckoo)";
}

std::vector<std::string> RedisCuckooStore::engines() const {
  std::vector<std::string> all;
  for (const auto& router : state_->routers) {
    all.push_back("redis " + router->endpoint().describe() + ": " +
                  (state_->module ? "module redbloom (commands version 4 or later): RB.CUCKOO"
                                  : "Lua script (EVALSHA), BITFIELD inside it"));
  }
  return all;
}

std::string RedisCuckooStore::link_key(std::uint32_t partition, std::uint32_t link) const {
  if (partition >= state_->shape.partitions()) {
    throw InvalidArgument("cuckoo filter " + state_->name + " has no partition " +
                          std::to_string(partition));
  }
  return state_->link_key(partition, link);
}

std::vector<std::uint32_t> RedisCuckooStore::link_counts() const {
  const State& s = *state_;
  std::vector<std::uint32_t> counts(s.shape.partitions(), 0);
  redis::run_each(s.routers.size(), [&](std::size_t r) {
    std::vector<std::uint32_t> mine;
    for (std::uint32_t p = 0; p < s.router_of.size(); ++p) {
      if (s.router_of[p] == r) mine.push_back(p);
    }
    redis::Router& router = *s.routers[r];
    redis::for_each_part(
        router, mine.size(), [&](std::uint64_t i) { return s.roster_key(mine[i]); },
        "GET (a cuckoo filter's rosters)", redis::Work::read,
        [](std::uint64_t, const std::string& key, CommandBuffer& buffer) {
          buffer.command({"GET", key});
        },
        [&](std::uint64_t i, const redisReply& reply) {
          if (reply.type != REDIS_REPLY_STRING || reply.len != 1 ||
              static_cast<std::uint8_t>(reply.str[0]) >= s.links.size()) {
            throw FormatError(router.message(
                "GET", "the roster '" + s.roster_key(mine[i]) +
                           "' of a cuckoo filter is gone or damaged (evicted or deleted?): the "
                           "filter has lost items; drop it and create it again"));
          }
          counts[mine[i]] = static_cast<std::uint8_t>(reply.str[0]) + 1u;
        });
  });
  return counts;
}

std::vector<std::uint8_t> RedisCuckooStore::read_table(std::uint32_t partition,
                                                       std::uint32_t link) const {
  const State& s = *state_;
  const std::string key = link_key(partition, link);
  redis::Router& router = *s.routers[s.router_of[partition]];
  const redis::Reply reply = router.run(s.slots[partition], {"GET", key}, OnLostNode::retry);
  if (reply->type == REDIS_REPLY_NIL || link >= s.links.size()) {
    throw InvalidArgument("cuckoo filter " + location() + " has no link " + std::to_string(link) +
                          " in partition " + std::to_string(partition));
  }
  router.expect(*reply, REDIS_REPLY_STRING, "GET");
  if (reply->len != s.links[link].bytes()) {
    throw FormatError(redis::describe_key(router, key) + " holds " + std::to_string(reply->len) +
                      " bytes, not the " + std::to_string(s.links[link].bytes()) +
                      " of its table: it was damaged or replaced");
  }
  const auto* at = reinterpret_cast<const std::uint8_t*>(reply->str);
  return {at, at + reply->len};
}

void RedisCuckooStore::write_table(std::uint32_t partition, std::uint32_t link,
                                   std::span<const std::uint8_t> bytes) {
  const State& s = *state_;
  if (partition >= s.shape.partitions() || link >= s.links.size() ||
      bytes.size() != s.links[link].bytes()) {
    throw InvalidArgument("cuckoo filter " + location() + ": no link " + std::to_string(link) +
                          " of " + std::to_string(bytes.size()) + " bytes in partition " +
                          std::to_string(partition));
  }
  redis::Router& router = *s.routers[s.router_of[partition]];
  // The links below it first (zeroed where missing): a link above a missing one is a loss.
  for (std::uint32_t l = 0; l < link; ++l) {
    const std::string zeros(s.links[l].bytes(), '\0');
    router.run(s.slots[partition], {"SET", s.link_key(partition, l), zeros, "NX"});
  }
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  router.run(s.slots[partition], {"SET", s.link_key(partition, link), text});
  // The roster counts the link (never fewer links than it counted before).
  static constexpr std::string_view kRaise =
      "if redis.call('BITFIELD', KEYS[1], 'GET', 'u8', 0)[1] < tonumber(ARGV[1]) then "
      "redis.call('BITFIELD', KEYS[1], 'SET', 'u8', 0, ARGV[1]) end return 1";
  router.run(s.slots[partition],
             {"EVAL", kRaise, "1", s.roster_key(partition), std::to_string(link)});
}

}  // namespace redbloom
