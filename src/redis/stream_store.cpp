// A stream filter's data paths in Redis: each call hashes its items, queues them by partition
// and sends each partition's queue through the script (stream_script.hpp) in waves: one unit a
// partition a wave, so a partition's items are handled in batch order (the second of two equal
// items is not new) while all partitions, servers and masters work at the same time. Between
// waves the client answers what the script asked for: offsets for more links, or keys around
// another slice. RB.STREAM (where every master has the module) takes the items instead of
// offsets (or, from module version 6, RB.STREAMH takes their hashes) and answers the same way,
// but never asks for links.
#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <optional>

#include "core/bitmap_kernels.hpp"
#include "core/filter_shape.hpp"
#include "core/layout.hpp"
#include "core/module_protocol.hpp"
#include "core/packed_items.hpp"
#include "core/redis_format.hpp"
#include "object.hpp"
#include "partition_ops.hpp"
#include "redbloom/error.hpp"
#include "run_each.hpp"
#include "stream_state.hpp"

namespace redbloom {
namespace {

using redis::CommandBuffer;
using redis::OnLostNode;
using redis::Replies;
using redis::UnitRoute;
namespace stream = redis::stream;

// Items per script call: bounds how long one call blocks its server (two commands an item).
// RB.STREAM handles an item in a fraction of that time, so its units are larger.
constexpr std::size_t kUnitItems = 512;
constexpr std::size_t kModuleUnitItems = 4096;
// Replies in a row that move a partition no further (more links, another slice, NOSCRIPT)
// before a call gives up: each of them answers a finite question, so this is never reached
// by a sound server.
constexpr int kMaxDetours = 2 * static_cast<int>(kMaxStreamLinks) + 16;

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  return a / b - ((a % b != 0 && (a < 0) != (b < 0)) ? 1 : 0);
}

// The item's arguments for links from..links-1 (stream_script.hpp), appended to `out`.
void append_item(const RedisStreamStore::State& s, const ItemHash& h, std::uint32_t from,
                 std::uint32_t links, CommandBuffer& out) {
  stream::append_item_arguments(
      s.form, s.links, s.link_start, h, links, [&](std::uint64_t value) { out.arg(value); },
      [&](std::string_view text) { out.arg(text); }, from);
}

// A call's items queued by partition, in batch order.
struct Queues {
  std::span<const std::string_view> items;
  std::vector<ItemHash> hashes;
  std::vector<std::vector<std::uint32_t>> of;  // per partition: batch indices
  std::vector<std::size_t> next;               // per partition: first not yet handled
};

Queues queue_items(const RedisStreamStore::State& s, std::span<const std::string_view> items) {
  if (items.size() > UINT32_MAX) throw InvalidArgument("batch of more than 2^32 items");
  Queues q;
  q.items = items;
  const std::uint64_t partitions = s.shape.partitions();
  q.hashes.resize(items.size());
  q.of.resize(partitions);
  q.next.assign(partitions, 0);
  kernels::hash_items(items, q.hashes.data());
  for (std::size_t i = 0; i < items.size(); ++i) {
    q.of[layout::partition_of(q.hashes[i], partitions)].push_back(static_cast<std::uint32_t>(i));
  }
  return q;
}

// A unit's items as its command takes them: the script's item arguments (RESP-encoded, and
// how many), the items themselves for RB.STREAM (which hashes them), their hashes for
// RB.STREAMH.
struct UnitArgs {
  CommandBuffer item_args;
  std::size_t item_arg_count = 0;
  std::string packed;
  // The script's claims on older slices' copies, and the items' marks (stream_copies.hpp).
  std::vector<stream::Claim> claims;
  std::string marks;
  std::vector<ItemHash> hashes;
};

// Appends partition p's next `count` items for a unit that describes links from..links-1.
void append_unit(const RedisStreamStore::State& s, const Queues& q, std::uint64_t p,
                 std::size_t count, std::uint32_t from, std::uint32_t links, UnitArgs& out) {
  if (s.hashed) {
    const std::size_t at = out.packed.size();
    out.packed.resize(at + count * packed::kHashedItemBytes);
    for (std::size_t j = 0; j < count; ++j) {
      packed::write_hash(out.packed.data() + at + j * packed::kHashedItemBytes,
                         q.hashes[q.of[p][q.next[p] + j]]);
    }
    return;
  }
  for (std::size_t j = 0; j < count; ++j) {
    const std::uint32_t i = q.of[p][q.next[p] + j];
    if (s.module) {
      packed::append(out.packed, q.items[i]);
    } else {
      append_item(s, q.hashes[i], from, links, out.item_args);
    }
  }
  if (s.module) return;
  std::size_t per_item = 0;
  for (std::uint32_t l = from; l < links; ++l) {
    per_item += stream::item_arguments(s.form, s.links[l]);
  }
  out.item_arg_count += count * per_item;
}

// The command's name in messages: "EVALSHA (adding to a stream filter)".
std::string operation_of(const RedisStreamStore::State& s, std::string_view what) {
  const char* name = s.hashed ? "RB.STREAMH" : s.module ? "RB.STREAM" : "EVALSHA";
  return std::string(name) + " (" + std::string(what) + ")";
}

// The first item (batch index) that some partition has not handled: everything before it is.
std::size_t handled_prefix(const Queues& q, std::size_t items) {
  std::size_t first = items;
  for (std::size_t p = 0; p < q.of.size(); ++p) {
    if (q.next[p] < q.of[p].size()) first = std::min<std::size_t>(first, q.of[p][q.next[p]]);
  }
  return first;
}

// Copies the frozen links of the partitions with items that the copies lack (where the script
// runs: RB.STREAM reads the slices on the server): once a link, when it is frozen.
void copy_frozen_links(RedisStreamStore::State& s, const Queues& q) {
  if (s.module || !s.copies) return;
  std::vector<std::vector<std::pair<std::uint64_t, stream::OlderCopies::Read>>> wanted(
      s.routers.size());
  bool any = false;
  const std::uint32_t older = s.shape.windowed() ? s.shape.slices() : 0;
  for (std::uint64_t p = 0; p < q.of.size(); ++p) {
    if (q.of[p].empty() || s.newest_slice[p] == INT64_MIN) continue;
    const auto reads =
        s.copies->wanted(p, s.newest_slice[p], older, s.known_links[p], q.of[p].size());
    for (const auto& read : reads) {
      wanted[s.router_of[p]].emplace_back(p, read);
      any = true;
    }
  }
  if (!any) return;
  for (std::size_t r = 0; r < s.routers.size(); ++r) {
    const auto& mine = wanted[r];
    redis::for_each_part(
        *s.routers[r], mine.size(),
        [&](std::uint64_t i) { return s.slice_key(mine[i].first, mine[i].second.slice); },
        "GET (copying a stream filter's frozen links)", redis::Work::read,
        [&](std::uint64_t i, const std::string& key, CommandBuffer& buffer) {
          const std::vector<std::string> command = s.copies->read_command(mine[i].second, key);
          std::vector<std::string_view> args(command.begin(), command.end());
          buffer.command(args);
        },
        [&](std::uint64_t i, const redisReply& reply) {
          s.copies->keep_reply(mine[i].first, mine[i].second, reply);
        });
  }
}

// A reply never answers for more items than the partition has left (a server that did would
// not be running this script).
// Sets up partition p's next call: `items` items from its queue, each with the bit offsets of
// every link the store knows the partition to have from link `from` on (before it: the claims').
void prepare_call(const RedisStreamStore::State& s, const Queues& q, std::uint64_t p,
                  stream::Mode mode, std::size_t items, stream::Call& call, UnitArgs& unit,
                  std::uint32_t from = 0) {
  call.mode = mode;
  call.items = items;
  call.with_offsets =
      std::min<std::uint32_t>(s.known_links[p], static_cast<std::uint32_t>(s.links.size()));
  call.first_with_offsets = std::min(from, call.with_offsets);
  append_unit(s, q, p, call.items, call.first_with_offsets, call.with_offsets, unit);
}

// The claims of partition p's next `items` items on the writer's copies, and their marks, for
// `call`; `claimed` gets the claims' slices.
void claim_copies(const RedisStreamStore::State& s, const Queues& q, std::uint64_t p,
                  std::size_t items, stream::Call& call, UnitArgs& unit,
                  std::vector<std::int64_t>& claimed) {
  unit.hashes.clear();
  for (std::size_t j = 0; j < items; ++j) unit.hashes.push_back(q.hashes[q.of[p][q.next[p] + j]]);
  const std::int64_t last = call.first + static_cast<std::int64_t>(call.keys.size()) - 2;
  s.copies->claim(p, call.first, last, unit.hashes, unit.claims, unit.marks);
  for (const stream::Claim& c : unit.claims) claimed.push_back(c.slice);
  call.claims = unit.claims;
  call.marks = unit.marks;
}

void check_done(const RedisStreamStore::State& s, const Queues& q, std::uint64_t p,
                const stream::Reply& reply) {
  if (q.next[p] + reply.done > q.of[p].size()) {
    s.routers[s.router_of[p]]->fail(operation_of(s, "stream"), "the stream command answered for " +
                                                                   std::to_string(reply.done) +
                                                                   " items, more than were sent");
  }
}

using Units = std::function<std::size_t(std::uint64_t)>;
using Fill = std::function<void(std::uint64_t, stream::Call&, UnitArgs&)>;
using Handled = std::function<void(std::uint64_t, const stream::Reply&)>;

// Runs the script (or RB.STREAM) in waves (see the top of the file). units(p) says how many items
// partition p sends this wave (0: nothing), fill(p, call, unit) sets the call's mode and items,
// and handled(p, reply) sees the replies that moved it (ok, links, full). The keys, the time,
// more links, another slice and NOSCRIPT are dealt with here, one step a member.
class Waves {
 public:
  Waves(RedisStreamStore::State& s, std::string_view what, bool writes, const Units& units,
        const Fill& fill, const Handled& handled)
      : s_(s),
        operation_(operation_of(s, what)),
        writes_(writes),
        units_(units),
        fill_(fill),
        handled_(handled),
        partitions_(s.shape.partitions()),
        now_(s.now_ms()),
        center_(partitions_),
        detours_(partitions_, 0),
        by_text_(s.routers.size(), 0) {
    const std::int64_t guess = s.guess_slice();
    for (std::uint64_t p = 0; p < partitions_; ++p) {
      center_[p] = std::max(guess, s.newest_slice[p]);
    }
  }

  void run() {
    while (true) {
      const std::vector<std::vector<std::uint64_t>> work = schedule();
      if (work.empty()) return;
      redis::run_each(s_.routers.size(), [&](std::size_t r) { send(r, work[r]); });
    }
  }

 private:
  // Per router, the partitions with items left this wave; empty when none has any.
  [[nodiscard]] std::vector<std::vector<std::uint64_t>> schedule() const {
    std::vector<std::vector<std::uint64_t>> work(s_.routers.size());
    bool any = false;
    for (std::uint64_t p = 0; p < partitions_; ++p) {
      if (units_(p) == 0) continue;
      work[s_.router_of[p]].push_back(p);
      any = true;
    }
    if (!any) work.clear();
    return work;
  }

  // The keys a unit of partition p declares: its roster, the live slices around its center, one
  // before (the server's clock may be behind the guess) and two after (the script then knows
  // whether a newer slice exists); the one slice of a growing filter. Returns the first one's
  // slice.
  std::int64_t declare(std::uint64_t p, std::vector<std::string>& keys) const {
    const std::int64_t older = s_.shape.windowed() ? s_.shape.slices() : 0;
    const std::int64_t first = s_.shape.windowed() ? center_[p] - older - 1 : 0;
    const std::int64_t last = s_.shape.windowed() ? center_[p] + 2 : 0;
    keys.clear();
    keys.push_back(s_.roster_key(p));
    for (std::int64_t g = first; g <= last; ++g) keys.push_back(s_.slice_key(p, g));
    return first;
  }

  // One wave on router r: a unit of each of `mine`'s partitions, pipelined.
  void send(std::size_t r, const std::vector<std::uint64_t>& mine) {
    std::vector<std::string> keys;
    UnitArgs unit;
    s_.routers[r]->pipeline(
        mine.size(), operation_,
        [&](std::size_t u) {
          return UnitRoute{s_.slots[mine[u]], u, writes_, {}};
        },
        [&](std::size_t u, CommandBuffer& buffer) {
          std::lock_guard lock(mutex_);
          return encode(r, mine[u], keys, unit, buffer);
        },
        [&](std::size_t u, Replies replies) {
          std::lock_guard lock(mutex_);
          take(r, mine[u], *replies[0]);
        },
        writes_ ? OnLostNode::fail : OnLostNode::retry);
  }

  // Partition p's unit as router r's command: the call's common part, then fill_'s items.
  std::size_t encode(std::size_t r, std::uint64_t p, std::vector<std::string>& keys, UnitArgs& unit,
                     CommandBuffer& buffer) const {
    stream::Call call;
    call.now_ms = now_;
    call.slice_ms = s_.shape.slice_ns() / 1'000'000;
    call.older = s_.shape.windowed() ? s_.shape.slices() : 0;
    call.first = declare(p, keys);
    call.keys = keys;
    call.budget = s_.budget;
    call.guarded = s_.guarded;
    call.links = s_.link_args;
    call.link_params = s_.links;
    call.partitions = partitions_;
    call.partition = p;
    unit.item_args.clear();
    unit.item_arg_count = 0;
    unit.packed.clear();
    fill_(p, call, unit);
    call.form = s_.form;
    call.item_args = unit.item_args.text();
    call.item_arg_count = unit.item_arg_count;
    call.packed = unit.packed;
    call.hashed = s_.hashed;
    if (s_.module) return stream::encode_module(buffer, call);
    call.read_only_script = !writes_ && s_.read_only_scripts[r] != 0;
    return stream::encode(buffer, call, by_text_[r] != 0 ? std::string_view{} : s_.sha);
  }

  // Router r's reply for partition p: NOSCRIPT switches r to EVAL; anything else is decoded and
  // applied. A reply that moved nothing counts as a detour.
  void take(std::size_t r, std::uint64_t p, const redisReply& reply) {
    if (redis::is_error(reply) && redis::text_of(reply).starts_with("NOSCRIPT")) {
      by_text_[r] = 1;
    } else if (!writes_ && redis::refuses_read_only_scripts(reply)) {
      s_.read_only_scripts[r] = 0;  // every unit of this wave sent by EVALSHA_RO comes back so
    } else if (apply(p, decode(r, p, reply))) {
      detours_[p] = 0;
      return;
    }
    if (++detours_[p] > kMaxDetours) {
      s_.routers[r]->fail(operation_, "the stream script for slice key '" +
                                          s_.slice_key(p, center_[p]) +
                                          "' kept asking for more links or another slice");
    }
  }

  [[nodiscard]] stream::Reply decode(std::size_t r, std::uint64_t p,
                                     const redisReply& reply) const {
    std::vector<std::string> declared;
    declare(p, declared);
    try {
      return stream::decode(reply, declared);
    } catch (const redis::ReplyProblem& problem) {
      if (problem.lost()) throw FormatError(s_.routers[r]->message(operation_, problem.what()));
      s_.routers[r]->fail(operation_, problem.what());
    }
  }

  // What a decoded reply tells about partition p; true when it moved the partition on.
  bool apply(std::uint64_t p, const stream::Reply& decoded) {
    switch (decoded.status) {
      case stream::Reply::Status::time:
        center_[p] = decoded.slice;
        break;
      case stream::Reply::Status::links:
        s_.known_links[p] = std::max(s_.known_links[p], decoded.links);
        handled_(p, decoded);
        break;
      case stream::Reply::Status::offsets:
        handled_(p, decoded);
        break;
      case stream::Reply::Status::ok:
        // Exact: the live slices' most links (fewer once big slices retire).
        s_.known_links[p] = std::max<std::uint32_t>(1, decoded.links);
        s_.newest_slice[p] = std::max(s_.newest_slice[p], decoded.slice);
        handled_(p, decoded);
        break;
      case stream::Reply::Status::full:
        handled_(p, decoded);
        break;
    }
    return decoded.status == stream::Reply::Status::ok || decoded.done > 0;
  }

  RedisStreamStore::State& s_;
  const std::string operation_;
  const bool writes_;
  const Units& units_;
  const Fill& fill_;
  const Handled& handled_;
  const std::uint64_t partitions_;
  const std::int64_t now_;
  std::vector<std::int64_t> center_;
  std::vector<int> detours_;
  std::vector<std::uint8_t> by_text_;  // NOSCRIPT seen: EVAL there
  std::mutex mutex_;  // encode and take of a cluster's masters run on their own threads
};

void waves(RedisStreamStore::State& s, std::string_view what, bool writes, const Units& units,
           const Fill& fill, const Handled& handled) {
  Waves(s, what, writes, units, fill, handled).run();
}

}  // namespace

// --- State -------------------------------------------------------------------------------------

void RedisStreamStore::State::prepare() {
  first = shape.link_params(0);
  const std::uint64_t partitions = shape.partitions();
  links.clear();
  link_args.clear();
  link_start.assign(1, stream::kHeaderBytes);
  for (std::uint32_t l = 0;; ++l) {
    if (l >= kMaxStreamLinks) {
      no_more_links = "a slice has at most " + std::to_string(kMaxStreamLinks) + " links";
      break;
    }
    FilterParams params;
    try {
      params = shape.link_params(l);
    } catch (const InvalidArgument& e) {
      no_more_links = e.what();
      break;
    }
    // A slice key holds all its links: it may not pass Redis's 512 MiB string.
    if (link_start[l] + params.partition_bytes() > kRedisMaxStringBits / 8) {
      no_more_links =
          "link " + std::to_string(l) + " would take a slice key past Redis's 512 MiB string limit";
      break;
    }
    links.push_back(params);
    const std::uint64_t capacity = (shape.link_capacity(l) + partitions - 1) / partitions;
    link_args.push_back({params.partition_bytes(), capacity, params.hashes});
    link_start.push_back(link_start[l] + params.partition_bytes());
  }
  form = stream::item_form(links);
  budget = shape.options().max_bytes / partitions;
  read_only_scripts.assign(routers.size(), 1);
  known_links.assign(partitions, 1);
  newest_slice.assign(partitions, INT64_MIN);
  copies = std::make_unique<stream::OlderCopies>(links, link_start, partitions);
  slots.clear();
  for (std::uint64_t p = 0; p < partitions; ++p) slots.push_back(redis::slot_of(slice_key(p, 0)));
}

void RedisStreamStore::State::load_commands() {
  long long lowest = module_protocol::kVersion;
  for (const auto& router : routers) lowest = std::min(lowest, redis::module_version(*router));
  const stream::Engine engine = stream::engine_for(lowest);
  module = engine != stream::Engine::script;
  hashed = engine == stream::Engine::module_hashes;
  sha = stream::script_sha1();
}

std::string RedisStreamStore::State::slice_key(std::uint64_t partition, std::int64_t slice) const {
  return redis::partition_key(name, partition, salts[partition], redis::slice_part(slice));
}

std::string RedisStreamStore::State::roster_key(std::uint64_t partition) const {
  return redis::partition_key(name, partition, salts[partition], "slices");
}

std::string RedisStreamStore::State::make_rosters(bool overwrite) {
  const std::uint64_t fields = std::uint64_t{shape.windowed() ? shape.slices() : 0u} + 1;
  // Each field INT64_MIN: no slice g has g + 1 there.
  std::string ring(8 * fields, '\0');
  for (std::uint64_t f = 0; f < fields; ++f) ring[8 * f] = '\x80';
  std::string taken;
  std::vector<std::vector<std::string>> made(routers.size());
  for (std::size_t r = 0; r < routers.size(); ++r) {
    std::vector<std::uint64_t> mine;
    for (std::uint64_t p = 0; p < router_of.size(); ++p) {
      if (router_of[p] == r) mine.push_back(p);
    }
    redis::Router& router = *routers[r];
    redis::for_each_part(
        router, mine.size(), [&](std::uint64_t i) { return roster_key(mine[i]); },
        "SET (making the slice rosters)", redis::Work::idempotent_write,
        [&](std::uint64_t, const std::string& key, CommandBuffer& buffer) {
          if (overwrite) {
            buffer.command({"SET", key, ring});
          } else {
            buffer.command({"SET", key, ring, "NX"});
          }
        },
        [&](std::uint64_t i, const redisReply& reply) {
          if (reply.type == REDIS_REPLY_NIL) {
            if (taken.empty()) taken = roster_key(mine[i]);
            return;
          }
          router.expect(reply, REDIS_REPLY_STATUS, "SET");
          made[r].push_back(roster_key(mine[i]));
        });
  }
  if (taken.empty()) return taken;
  // Another filter's roster: what this call made goes again.
  for (std::size_t r = 0; r < routers.size(); ++r) {
    redis::for_each_part(
        *routers[r], made[r].size(), [&](std::uint64_t i) { return made[r][i]; }, "UNLINK",
        redis::Work::idempotent_write,
        [](std::uint64_t, const std::string& key, CommandBuffer& buffer) {
          buffer.command({"UNLINK", key});
        },
        [&](std::uint64_t, const redisReply& reply) {
          routers[r]->expect(reply, REDIS_REPLY_INTEGER, "UNLINK");
        });
  }
  return taken;
}

std::int64_t RedisStreamStore::State::now_ms() const {
  if (!clock) return -1;
  return static_cast<std::int64_t>(clock() / 1'000'000);
}

std::int64_t RedisStreamStore::State::guess_slice() const {
  if (!shape.windowed()) return 0;
  const std::int64_t now =
      clock ? static_cast<std::int64_t>(clock() / 1'000'000)
            : static_cast<std::int64_t>(system_now_ns() / 1'000'000) + server_offset_ms;
  return floor_div(now, static_cast<std::int64_t>(shape.slice_ns() / 1'000'000));
}

std::string RedisStreamStore::State::describe_servers() const {
  std::string text;
  for (const auto& router : routers) {
    if (!text.empty()) text += ", ";
    text += router->endpoint().describe();
  }
  return text;
}

// --- the store ---------------------------------------------------------------------------------

RedisStreamStore::RedisStreamStore(std::unique_ptr<State> state) : state_(std::move(state)) {}
RedisStreamStore::~RedisStreamStore() = default;

FilterShape RedisStreamStore::shape() const {
  return shape_of(state_->shape);
}
const StreamShape& RedisStreamStore::stream_shape() const noexcept {
  return state_->shape;
}
std::uint64_t RedisStreamStore::created_unix_ns() const {
  return state_->created_unix_ns;
}
std::string RedisStreamStore::slice_key(std::uint64_t partition, std::int64_t slice) const {
  if (partition >= state_->shape.partitions()) {
    throw InvalidArgument("partition " + std::to_string(partition) + " of " + location() +
                          " does not exist");
  }
  return state_->slice_key(partition, slice);
}
std::vector<std::string> RedisStreamStore::engines() const {
  std::vector<std::string> all;
  for (const auto& router : state_->routers) {
    all.push_back("redis " + router->endpoint().describe() + ": " +
                  (state_->hashed   ? "module redbloom (commands version 6 or later), hashing on "
                                      "the client: RB.STREAMH"
                   : state_->module ? "module redbloom (commands version 3 or later), hashing on "
                                      "the server: RB.STREAM"
                                    : "Lua script (EVALSHA), BITFIELD inside it"));
  }
  return all;
}

std::string RedisStreamStore::roster_key(std::uint64_t partition) const {
  if (partition >= state_->shape.partitions()) {
    throw InvalidArgument("partition " + std::to_string(partition) + " of " + location() +
                          " does not exist");
  }
  return state_->roster_key(partition);
}

std::string RedisStreamStore::location() const {
  return "redis " + state_->describe_servers() + " filter " + state_->name +
         (state_->shape.windowed() ? " (windowed)" : " (growing)");
}

void RedisStreamStore::add(std::span<const std::string_view> items,
                           std::span<std::uint8_t> newly_added) {
  if (newly_added.size() < items.size()) throw InvalidArgument("add: flag span too small");
  State& s = *state_;
  const std::size_t unit_items = s.module ? kModuleUnitItems : kUnitItems;
  Queues q = queue_items(s, items);
  copy_frozen_links(s, q);
  // Per partition, the slices its last unit claimed, and whether the script asked for every
  // link's arguments.
  std::vector<std::vector<std::int64_t>> claimed(q.of.size());
  std::vector<std::uint8_t> every_link(q.of.size(), 0);
  // Once a partition cannot grow, no partition goes past the item that needed it.
  std::size_t stop = items.size();
  std::string full;
  const auto unit_of = [&](std::uint64_t p) {
    const auto& of = q.of[p];
    std::size_t end = q.next[p];
    while (end < of.size() && end - q.next[p] < unit_items && of[end] < stop) ++end;
    return end - q.next[p];
  };
  try {
    waves(
        s, "adding to a stream filter", true, unit_of,
        [&](std::uint64_t p, stream::Call& call, UnitArgs& unit) {
          const std::size_t items = unit_of(p);
          claimed[p].clear();
          if (s.module || !s.copies) {
            prepare_call(s, q, p, stream::Mode::add, items, call, unit);
            return;
          }
          claim_copies(s, q, p, items, call, unit, claimed[p]);
          // The items' arguments for the links the claims cover are left out, unless the
          // script last asked for them.
          const std::uint32_t from =
              every_link[p] != 0 ? 0
                                 : stream::links_claimed(unit.claims, s.newest_slice[p],
                                                         s.shape.windowed() ? s.shape.slices() : 0);
          prepare_call(s, q, p, stream::Mode::add, items, call, unit, from);
        },
        [&](std::uint64_t p, const stream::Reply& reply) {
          check_done(s, q, p, reply);
          every_link[p] = reply.status == stream::Reply::Status::offsets ? 1 : 0;
          if (!reply.verdict.empty()) s.copies->forget_stale(p, claimed[p], reply.verdict);
          for (std::size_t j = 0; j < reply.done; ++j) {
            newly_added[q.of[p][q.next[p] + j]] = reply.flags[j] == '1' ? 1 : 0;
          }
          q.next[p] += reply.done;
          if (reply.status != stream::Reply::Status::full || q.next[p] == q.of[p].size()) return;
          const std::size_t at = q.of[p][q.next[p]];
          if (at >= stop) return;
          stop = at;
          const bool exists = reply.links < s.links.size();
          full = "partition " + std::to_string(p) + " of slice " + std::to_string(reply.slice) +
                 " holds its links' capacity and needs link " + std::to_string(reply.links) +
                 ", which " +
                 (exists ? "would take its live links past the limit of " +
                               format_bytes(double(s.shape.options().max_bytes)) + " (" +
                               format_bytes(double(s.budget)) + " a partition)"
                         : "cannot exist: " + s.no_more_links);
        });
  } catch (const StorageError& e) {
    throw IncompleteWrite(
        std::string(e.what()) + "; later items may be partly written (adding them again is safe)",
        handled_prefix(q, items.size()));
  }
  if (!full.empty()) {
    const std::size_t committed = std::min(stop, handled_prefix(q, items.size()));
    throw CapacityExceeded(location() + ": " + full + ": the first " + std::to_string(committed) +
                               " items of the call were added; the rest were not (a few of "
                               "other partitions may have been)",
                           committed);
  }
}

void RedisStreamStore::load(std::span<const std::string_view> items) {
  std::vector<std::uint8_t> ignored(items.size());
  add(items, ignored);
}

void RedisStreamStore::contains(std::span<const std::string_view> items,
                                std::span<std::uint8_t> present) const {
  if (present.size() < items.size()) throw InvalidArgument("contains: flag span too small");
  State& s = *state_;
  const std::size_t unit_items = s.module ? kModuleUnitItems : kUnitItems;
  Queues q = queue_items(s, items);
  // Copies answer for the links they hold, as for adds: the script reads only the others.
  copy_frozen_links(s, q);
  std::vector<std::vector<std::int64_t>> claimed(q.of.size());
  const auto unit_of = [&](std::uint64_t p) {
    return std::min(unit_items, q.of[p].size() - q.next[p]);
  };
  waves(
      s, "looking up in a stream filter", false, unit_of,
      [&](std::uint64_t p, stream::Call& call, UnitArgs& unit) {
        prepare_call(s, q, p, stream::Mode::lookup, unit_of(p), call, unit);
        claimed[p].clear();
        if (!s.module && s.copies) claim_copies(s, q, p, call.items, call, unit, claimed[p]);
      },
      [&](std::uint64_t p, const stream::Reply& reply) {
        check_done(s, q, p, reply);
        if (!reply.verdict.empty()) s.copies->forget_stale(p, claimed[p], reply.verdict);
        for (std::size_t j = 0; j < reply.done; ++j) {
          present[q.of[p][q.next[p] + j]] = reply.flags[j] == '1' ? 1 : 0;
        }
        q.next[p] += reply.done;
      });
}

LiveSlices read_live_slices(RedisStreamStore::State& s) {
  const std::uint64_t partitions = s.shape.partitions();
  LiveSlices live;
  live.of.resize(partitions);
  std::vector<std::uint8_t> done(partitions, 0);
  waves(
      s, "reading a stream filter", false,
      [&](std::uint64_t p) { return std::size_t{done[p] == 0 ? 1u : 0u}; },
      [&](std::uint64_t, stream::Call& call, UnitArgs&) {
        call.mode = stream::Mode::info;
        call.with_offsets = 0;
        call.items = 0;
      },
      [&](std::uint64_t p, const stream::Reply& reply) {
        if (reply.status != stream::Reply::Status::ok) return;
        for (const stream::SliceState& slice : reply.slices) {
          if (slice.links > s.links.size() || slice.length != s.link_start[slice.links]) {
            throw FormatError(s.routers[s.router_of[p]]->message(
                operation_of(s, "reading a stream filter"),
                "slice key '" + s.slice_key(p, slice.slice) + "' is " +
                    std::to_string(slice.length) +
                    " bytes long, which its header does not explain (damaged?)"));
          }
        }
        live.of[p] = reply.slices;
        live.now_ms = std::max(live.now_ms, reply.now_ms);
        done[p] = 1;
      });
  return live;
}

std::uint64_t RedisStreamStore::count_set_bits() const {
  const LiveSlices live = read_live_slices(*state_);
  std::uint64_t ones = 0;
  for (const auto& slices : live.of) {
    for (const stream::SliceState& slice : slices) ones += slice.set_bits;
  }
  return ones;
}

std::uint64_t RedisStreamStore::storage_bytes() const {
  State& s = *state_;
  const LiveSlices live = read_live_slices(s);
  std::uint64_t total = 0;
  std::mutex mutex;
  redis::run_each(s.routers.size(), [&](std::size_t r) {
    std::vector<std::string> keys{s.name};
    std::vector<std::uint16_t> slots{redis::slot_of(s.name)};
    for (std::uint64_t p = 0; p < live.of.size(); ++p) {
      if (s.router_of[p] != r) continue;
      for (const stream::SliceState& slice : live.of[p]) {
        keys.push_back(s.slice_key(p, slice.slice));
        slots.push_back(s.slots[p]);
      }
    }
    s.routers[r]->pipeline(
        keys.size(), "MEMORY USAGE",
        [&](std::size_t i) {
          return UnitRoute{slots[i], i, false, {}};
        },
        [&](std::size_t i, CommandBuffer& buffer) {
          buffer.command({"MEMORY", "USAGE", keys[i]});
          return std::size_t{1};
        },
        [&](std::size_t, Replies replies) {
          const redisReply& reply = *replies[0];
          if (redis::is_error(reply)) s.routers[r]->fail("MEMORY USAGE", redis::text_of(reply));
          std::lock_guard lock(mutex);
          // A slice that expired since it was listed answers nil: it holds nothing now.
          if (reply.type == REDIS_REPLY_INTEGER) total += static_cast<std::uint64_t>(reply.integer);
        },
        OnLostNode::retry);
  });
  return total;
}

std::optional<StreamInfo> RedisStreamStore::stream_info() const {
  State& s = *state_;
  const LiveSlices live = read_live_slices(s);
  const std::uint64_t partitions = s.shape.partitions();
  struct Merged {
    std::uint64_t items = 0;
    std::uint64_t created_ms = UINT64_MAX;
    std::uint64_t partitions = 0;
  };
  std::map<std::pair<std::int64_t, std::uint32_t>, Merged> merged;
  for (const auto& slices : live.of) {
    for (const stream::SliceState& slice : slices) {
      for (std::uint32_t l = 0; l < slice.links; ++l) {
        Merged& m = merged[{slice.slice, l}];
        m.items += slice.items[l];
        m.created_ms = std::min(m.created_ms, slice.created_ms[l]);
        ++m.partitions;
      }
    }
  }
  StreamInfo info;
  info.options = s.shape.options();
  info.now_unix_ns = s.clock ? s.clock() : static_cast<std::uint64_t>(live.now_ms) * 1'000'000;
  double log_pass = 0;  // log of the chance that every live link answers "absent"
  for (const auto& [at, m] : merged) {
    const auto [slice, link] = at;
    StreamSegment segment;
    segment.slice = slice;
    segment.link = link;
    segment.created_unix_ns = m.created_ms * 1'000'000;
    segment.expires_unix_ns = s.shape.retire_ns(slice);
    segment.items = m.items;
    segment.capacity = s.shape.link_capacity(link);
    segment.bytes = s.links[link].partition_bytes() * m.partitions;
    segment.partitions = m.partitions;
    // Made by some partitions only: a lookup meets it with that share, and those partitions
    // hold all of its items (as a whole link would hold items x partitions / having).
    const double share = double(m.partitions) / double(partitions);
    const std::pair<std::uint32_t, std::uint64_t> as_whole{
        link, static_cast<std::uint64_t>(std::llround(double(m.items) / share))};
    segment.error_rate_now = share * s.shape.compound_rate({&as_whole, 1});
    log_pass += std::log1p(-std::min(segment.error_rate_now, 1.0 - 1e-300));
    info.bytes += segment.bytes;
    info.segments.push_back(segment);
  }
  info.error_rate_now = 0.0 - std::expm1(log_pass);  // +0, not -0, with no live link
  return info;
}

}  // namespace redbloom
