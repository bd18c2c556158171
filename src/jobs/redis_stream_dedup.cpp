#include "redbloom/redis_stream_dedup.hpp"

#include <algorithm>
#include <charconv>
#include <deque>
#include <future>
#include <string_view>

#include "core/layout.hpp"
#include "core/module_protocol.hpp"
#include "core/redis_format.hpp"
#include "redbloom/error.hpp"
#include "redbloom/filter.hpp"
#include "redbloom/hash.hpp"
#include "redis/object.hpp"
#include "redis/partition_ops.hpp"
#include "redis/redis_store.hpp"
#include "redis/router.hpp"

namespace redbloom {
namespace {

using redis::OnLostNode;
using redis::Reply;
using redis::text_of;

// One batch. KEYS: input, output, then the partition keys the batch touches.
// ARGV: group, sealed length, maxlen (0: none), engine ('b' BITFIELD, 'm' RB.PARTADD), hashes,
// layout, partition bits, partitions, m (= #KEYS - 2), consumer, the batch's lowest and highest
// ids, m partition indexes, n (entries), then
// per entry: id, kind ('k' keyed, 'p' passed unfiltered, 's' skipped, 'd' deleted), and
//   'k': j (its partition key is KEYS[2 + j]), then k bit offsets ('b') or the packed item ('m')
//   'k', 'p': the count of field and value strings, then them.
// Reads and checks everything first; the first write is the test-and-set, whose deny-oom
// refusal (a full server) then comes before anything was written. Redis keeps a script's
// writes when a later call raises, so every way a later call can refuse is checked before it
// (types, the user's rights, the room left in the output's ids), and the calls after the first
// write go through pcall: an unforeseen refusal is reported with what was done, never hidden.
// Reply {unique, duplicates, skipped, passed, deleted, done before}, or an error
// "REDBLOOMDEDUP <what> ..." (nothing written), or "REDBLOOMDEDUP partial ..." (see below).
constexpr std::string_view kScript = R"lua(
local input, output = KEYS[1], KEYS[2]
local argv = ARGV
local group, sealed, maxlen = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local engine, k, layout = ARGV[4], tonumber(ARGV[5]), ARGV[6]
local pbits, parts, m = ARGV[7], ARGV[8], tonumber(ARGV[9])
local consumer, minid, maxid = ARGV[10], ARGV[11], ARGV[12]
local t = redis.call('TYPE', input).ok
if t ~= 'stream' then return redis.error_reply('REDBLOOMDEDUP input ' .. t) end
t = redis.call('TYPE', output).ok
if t ~= 'stream' and t ~= 'none' then return redis.error_reply('REDBLOOMDEDUP output ' .. t) end
local last_id = nil
if t == 'stream' then
  local info = redis.call('XINFO', 'STREAM', output)
  for i = 1, #info - 1, 2 do
    if info[i] == 'last-generated-id' then last_id = info[i + 1] end
  end
end
if redis.acl_check_cmd then
  local denied = nil
  if not redis.acl_check_cmd('XACK', input, group, '0-1') then denied = 'XACK ' .. input end
  if not redis.acl_check_cmd('XADD', output, '*', 'f', 'v') then denied = 'XADD ' .. output end
  for j = 1, m do
    local key = KEYS[2 + j]
    if engine == 'm' then
      if not redis.acl_check_cmd('RB.PARTADD', key, sealed, layout, k, pbits, parts,
                                 ARGV[12 + j], '') then
        denied = 'RB.PARTADD ' .. key
      end
    elseif not redis.acl_check_cmd('BITFIELD', key, 'SET', 'u1', '0', '1') then
      denied = 'BITFIELD ' .. key
    end
  end
  if denied then return redis.error_reply('REDBLOOMDEDUP denied ' .. denied) end
end
for j = 1, m do
  local len = redis.pcall('STRLEN', KEYS[2 + j])
  if type(len) ~= 'number' then len = -1 end
  if len ~= sealed then
    return redis.error_reply('REDBLOOMDEDUP partition ' .. j .. ' ' .. len)
  end
end
local pos = 13 + m
local n = tonumber(ARGV[pos])
pos = pos + 1
-- Only an entry still pending for this consumer is handled: a batch run again, or an entry
-- another consumer took over (and finishes, or finished), is left as it is. One range query
-- answers for the whole batch (what it returns besides the batch's entries is this consumer's
-- other pending entries in that range, which a running stage does not have).
local mine = redis.call('XPENDING', input, group, minid, maxid, 1000000000, consumer)
local pending = {}
for i = 1, #mine do pending[mine[i][1]] = true end
local acks = {}
local entries, by_part = {}, {}
for j = 1, m do by_part[j] = {} end
local done_before, copies = 0, 0
for e = 1, n do
  local ent = {id = argv[pos], kind = argv[pos + 1]}
  pos = pos + 2
  if ent.kind == 'k' then
    ent.j = tonumber(argv[pos])
    ent.item = pos + 1
    pos = pos + 1 + (engine == 'm' and 1 or k)
  end
  if ent.kind == 'k' or ent.kind == 'p' then
    ent.nf = tonumber(argv[pos])
    ent.fields = pos + 1
    pos = pos + 1 + ent.nf
    if ent.nf < 2 or ent.nf % 2 ~= 0 then
      return redis.error_reply('REDBLOOMDEDUP fields ' .. ent.id)
    end
  end
  ent.live = pending[ent.id] == true
  if ent.live then
    acks[#acks + 1] = ent.id
    if ent.kind == 'k' then table.insert(by_part[ent.j], ent) end
    if ent.kind == 'k' or ent.kind == 'p' then copies = copies + 1 end
  else
    done_before = done_before + 1
  end
  entries[e] = ent
end
-- XADD * raises once the output's last id is the last possible one; below the largest
-- millisecond it never runs out. Lua's numbers are doubles, so near the end the test errs on
-- the side of refusing.
if last_id and copies > 0 then
  local dash = string.find(last_id, '-', 1, true)
  if string.sub(last_id, 1, dash - 1) == '18446744073709551615' and
     tonumber(string.sub(last_id, dash + 1)) + copies + 8192 >= 18446744073709551615 then
    return redis.error_reply('REDBLOOMDEDUP exhausted ' .. last_id)
  end
end
for j = 1, m do
  local list, key = by_part[j], KEYS[2 + j]
  if engine == 'm' then
    for from = 1, #list, 1024 do
      local last = math.min(#list, from + 1023)
      local packed = {}
      for i = from, last do packed[i - from + 1] = argv[list[i].item] end
      local flags = redis.call('RB.PARTADD', key, sealed, layout, k, pbits, parts,
                               ARGV[12 + j], table.concat(packed))
      for i = from, last do list[i].new = string.byte(flags, i - from + 1) ~= 0 end
    end
  else
    -- One argument table for every call, filled by a counter: the per-bit work is most of
    -- the script's time on stock Redis.
    local per, bf = math.max(1, math.floor(6000 / (4 * k))), {}
    for from = 1, #list, per do
      local last = math.min(#list, from + per - 1)
      local na = 0
      for i = from, last do
        local at = list[i].item
        for b = 0, k - 1 do
          bf[na + 1] = 'SET'
          bf[na + 2] = 'u1'
          bf[na + 3] = argv[at + b]
          bf[na + 4] = '1'
          na = na + 4
        end
      end
      local old = redis.call('BITFIELD', key, unpack(bf, 1, na))
      for i = from, last do
        local fresh = false
        local base = (i - from) * k
        for b = 1, k do
          if old[base + b] == 0 then fresh = true end
        end
        list[i].new = fresh
      end
    end
  end
end
-- From here on the batch is written in part: a call that raises must not end the script
-- unreported. Nothing below is expected to fail (the checks above cover what can); if a call
-- does, the reply says what was done.
local unacked = nil
for from = 1, #acks, 5000 do
  local r = redis.pcall('XACK', input, group, unpack(acks, from, math.min(#acks, from + 4999)))
  if type(r) == 'table' and r.err then unacked = r.err; break end
end
local failed, uncopied, first_uncopied, last_uncopied = nil, 0, '', ''
-- XADD's arguments: one table, its head (MAXLEN, '*') set once, the fields written over.
local xa = {'*'}
if maxlen > 0 then xa = {'MAXLEN', '~', ARGV[3], '*'} end
local head = #xa
local unique, dups, skipped, passed, deleted = 0, 0, 0, 0, 0
for e = 1, n do
  local ent = entries[e]
  if ent.live then
    local copy = false
    if ent.kind == 'k' then
      if ent.new then unique = unique + 1; copy = true else dups = dups + 1 end
    elseif ent.kind == 'p' then
      passed = passed + 1; copy = true
    elseif ent.kind == 's' then
      skipped = skipped + 1
    else
      deleted = deleted + 1
    end
    if copy and not failed then
      local at = ent.fields
      for f = 0, ent.nf - 1 do xa[head + 1 + f] = argv[at + f] end
      local r = redis.pcall('XADD', output, unpack(xa, 1, head + ent.nf))
      if type(r) == 'table' and r.err then failed = r.err end
    end
    if copy and failed then
      uncopied = uncopied + 1
      if first_uncopied == '' then first_uncopied = ent.id end
      last_uncopied = ent.id
    end
  end
end
if failed or unacked then
  -- "partial <copied> <uncopied> <first> <last> <acked 1|0> <message>"
  return redis.error_reply('REDBLOOMDEDUP partial ' .. (unique + passed - uncopied) .. ' ' ..
                           uncopied .. ' ' .. (first_uncopied ~= '' and first_uncopied or '-') ..
                           ' ' .. (last_uncopied ~= '' and last_uncopied or '-') .. ' ' ..
                           (unacked and '0' or '1') .. ' ' .. (failed or unacked))
end
return {unique, dups, skipped, passed, deleted, done_before}
)lua";

// Lua's unpack() takes at most about 8000 values: an entry's fields are copied in one call.
constexpr std::size_t kMaxFieldStrings = 7000;

struct Entry {
  std::string id;
  std::vector<std::string> fields;  // field, value, field, value, ...
  bool deleted = false;
  bool recovered = false;
};

// A stream entry id "<ms>-<seq>" as a pair that orders as the stream does.
std::pair<std::uint64_t, std::uint64_t> stream_id(std::string_view id) {
  std::uint64_t ms = 0;
  std::uint64_t seq = 0;
  const std::size_t dash = id.find('-');
  const std::string_view head = id.substr(0, dash);
  std::from_chars(head.data(), head.data() + head.size(), ms);
  if (dash != std::string_view::npos) {
    std::from_chars(id.data() + dash + 1, id.data() + id.size(), seq);
  }
  return {ms, seq};
}

// "{f:0:3}" of "f:bits:{f:0:3}": the part of a key that decides its Cluster slot, braces
// included; empty when the key has no hash tag.
std::string hash_tag(std::string_view key) {
  const std::size_t open = key.find('{');
  if (open == std::string_view::npos) return {};
  const std::size_t close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return {};
  return std::string(key.substr(open, close - open + 1));
}

}  // namespace

struct RedisStreamDedup::State {
  std::unique_ptr<redis::Router> router;
  RedisStreamDedupOptions options;
  std::string filter_name;
  FilterParams params;
  std::uint64_t sealed_length = 0;
  std::vector<std::string> partition_keys;
  std::uint16_t slot = 0;
  bool module = false;
  std::unique_ptr<redis::PartitionCommands> commands;  // encodes each item's script arguments
  std::string sha;

  enum class Phase { own_pending, claiming, fresh } phase = Phase::own_pending;
  std::string history_cursor = "0";
  std::string claim_cursor = "0-0";
  std::chrono::steady_clock::time_point last_claim{};
  std::vector<Entry> batch;
  // Read ahead (options.read_ahead): while a batch's script runs, the next new entries are read
  // on a connection of their own into `incoming`.
  std::unique_ptr<redis::Router> reader;
  std::future<std::size_t> ahead;
  std::vector<Entry> incoming;
  std::size_t count = 1;
  std::chrono::milliseconds block{0};

  Reply call(std::span<const std::string_view> args) { return router->call(slot, args); }
  Reply call(std::initializer_list<std::string_view> args) {
    return call(std::span<const std::string_view>(args.begin(), args.size()));
  }
  [[nodiscard]] std::string input_text() const {
    return "stream '" + options.input + "' on redis " + router->endpoint().describe();
  }
  // XREADGROUP's and XAUTOCLAIM's entries: [id, [field, value, ...] or nil].
  void take_entries(const redisReply& list, bool recovered, std::string_view operation) {
    take_entries(*router, list, recovered, operation, batch);
  }
  static void take_entries(const redis::Router& router, const redisReply& list, bool recovered,
                           std::string_view operation, std::vector<Entry>& into) {
    router.expect(list, REDIS_REPLY_ARRAY, operation);
    for (std::size_t i = 0; i < list.elements; ++i) {
      const redisReply& item = *list.element[i];
      router.expect(item, REDIS_REPLY_ARRAY, operation);
      if (item.elements != 2 || item.element[0]->type != REDIS_REPLY_STRING) {
        router.fail(operation, "an entry that is not [id, fields]");
      }
      Entry entry;
      entry.id = std::string(text_of(*item.element[0]));
      entry.recovered = recovered;
      const redisReply& fields = *item.element[1];
      if (fields.type == REDIS_REPLY_NIL) {
        entry.deleted = true;
      } else {
        router.expect(fields, REDIS_REPLY_ARRAY, operation);
        for (std::size_t f = 0; f < fields.elements; ++f) {
          entry.fields.emplace_back(text_of(*fields.element[f]));
        }
      }
      into.push_back(std::move(entry));
    }
  }
  // The script's "partial <copied> <uncopied> <first> <last> <acked 1|0> <error>": a call
  // after its first write refused, which its checks should have made impossible.
  [[nodiscard]] std::string partial_batch_text(std::string_view reply, std::size_t end) const {
    std::vector<std::string> words;
    std::size_t at = 0;
    while (words.size() < 6 && at < reply.size()) {
      const std::size_t space = std::min(reply.find(' ', at), reply.size());
      words.emplace_back(reply.substr(at, space - at));
      at = space + 1;
    }
    if (words.size() < 6) return "the batch's script was cut short: " + std::string(reply);
    const std::string error(reply.substr(std::min(at, reply.size())));
    std::string text = "the batch of " + std::to_string(end) + " entries (" + batch.front().id +
                       " to " + batch[end - 1].id +
                       ") was done only in part: the server refused (" + error +
                       ") after its keys were set in the filter";
    if (words[1] != "0") {
      text += "; " + words[1] + " entries whose keys were new, " + words[2] + " to " + words[3] +
              ", were NOT copied to '" + options.output +
              "', and no run of the stage will copy them (the filter now holds their keys): "
              "copy them yourself (XRANGE " +
              options.input + " " + words[2] + " " + words[3] + ", then XADD each to " +
              options.output + ")";
    }
    text += "; " + words[0] + " entries were copied";
    text += words[4] == "1" ? "; every entry of the batch was acknowledged"
                            : "; the batch's entries may not all be acknowledged: the next run "
                              "takes those as duplicates (an entry without the key that was "
                              "copied may be copied again)";
    return text;
  }
  // New entries (XREADGROUP '>') on `on` into `into`, waiting up to `wait`: how many came.
  std::size_t read_fresh(redis::Router& on, std::vector<Entry>& into, std::size_t n,
                         std::chrono::milliseconds wait) const {
    const std::string count_text = std::to_string(std::max<std::size_t>(n, 1));
    const std::string wait_text = std::to_string(wait.count());
    const std::string_view args[] = {
        "XREADGROUP", "GROUP",   options.group, options.consumer, "COUNT", count_text,
        "BLOCK",      wait_text, "STREAMS",     options.input,    ">"};
    Reply reply = on.call(slot, args);
    if (redis::is_error(*reply)) missing_group(on, "XREADGROUP", *reply);
    if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 1 &&
        reply->element[0]->elements == 2) {
      take_entries(on, *reply->element[0]->element[1], false, "XREADGROUP", into);
    }
    return into.size();
  }
  // Whether the next read is of new entries, so that it can go ahead while a batch commits: a
  // round of taking over others' entries could take this batch's own (min_idle 0).
  [[nodiscard]] bool next_read_is_fresh() const {
    return phase == Phase::fresh &&
           std::chrono::steady_clock::now() - last_claim <
               std::max<std::chrono::milliseconds>(options.min_idle, std::chrono::seconds(1));
  }
  void missing_group(std::string_view operation, const redisReply& reply) const {
    missing_group(*router, operation, reply);
  }
  // `on`: the connection that read (the read ahead has its own).
  void missing_group(const redis::Router& on, std::string_view operation,
                     const redisReply& reply) const {
    if (text_of(reply).starts_with("NOGROUP")) {
      throw InvalidArgument("no consumer group '" + options.group + "' on " + input_text() +
                            " (or no such stream): create it with --create-group, or with "
                            "XGROUP CREATE " +
                            options.input + " " + options.group + " 0 MKSTREAM");
    }
    on.fail(operation, text_of(reply));
  }
};

bool same_keyspace(const RedisEndpoint& a, const RedisEndpoint& b) {
  return RedisStore::keyspace_id(a) == RedisStore::keyspace_id(b);
}

namespace {

// The filter's keys, when one script on their server can write them.
RedisKeys script_reach(const Filter& filter) {
  const Store* store = filter.backend().bitmap();
  std::optional<RedisKeys> keys = store != nullptr ? store->redis_keys() : std::nullopt;
  if (!keys) {
    throw InvalidArgument(
        "dedup of a Redis stream works with a plain redbloom filter on one server or a Cluster; " +
        filter.backend().location() +
        " is not one (windowed or growing, sharded over several servers, or made by "
        "BF.RESERVE), so its writes cannot be part of the batch's one script");
  }
  return std::move(*keys);
}

}  // namespace

RedisStreamDedup::RedisStreamDedup(const Filter& filter, const RedisEndpoint& endpoint,
                                   RedisStreamDedupOptions options)
    : state_(std::make_unique<State>()) {
  const RedisKeys keys = script_reach(filter);
  State& s = *state_;
  s.options = std::move(options);
  s.router = redis::make_router(keys.endpoint);
  if (RedisStore::keyspace_id(endpoint) != s.router->keyspace_id()) {
    throw InvalidArgument("the streams (redis " + endpoint.describe() + ") and the filter (redis " +
                          keys.endpoint.describe() +
                          ") must be on one server or one Cluster: one script on the server "
                          "handles each batch");
  }
  s.filter_name = keys.name;
  // The salts and format version decide the keys and their sealed length (format.hpp).
  const auto fields = redis::read_ready(*s.router, s.filter_name, redis::kFilterFormat, "filter",
                                        redis::kFilterVersion, std::chrono::seconds(30));
  if (!fields) throw NotFound("no filter '" + s.filter_name + "'");
  const redis::FilterMetadata metadata = redis::parse_filter_metadata(*fields);
  s.params = filter.params();
  s.sealed_length = s.params.partition_bytes() + redis::seal_bytes(metadata.version);
  for (std::uint64_t p = 0; p < s.params.partitions; ++p) {
    const std::uint32_t salt = p < metadata.tag_salts.size() ? metadata.tag_salts[p] : 0;
    s.partition_keys.push_back(redis::partition_key(s.filter_name, p, salt));
  }
  s.slot = redis::slot_of(s.options.input);
  if (s.router->is_cluster()) {
    std::string mismatch;
    const auto where = [](const std::string& key) {
      return "'" + key + "' in slot " + std::to_string(redis::slot_of(key));
    };
    bool same = redis::slot_of(s.options.output) == s.slot;
    for (const std::string& key : s.partition_keys) same &= redis::slot_of(key) == s.slot;
    if (!same) {
      std::string message =
          "on a Redis Cluster one script handles each batch, so the input stream, the output "
          "stream and the filter's keys must be in one slot; input " +
          where(s.options.input) + ", output " + where(s.options.output) + ", filter '" +
          s.filter_name + "' partition key " + where(s.partition_keys.front());
      if (s.partition_keys.size() > 1) {
        message += " and " + std::to_string(s.partition_keys.size() - 1) +
                   " more partitions: a filter of several partitions is in several slots; "
                   "create it with one partition (--partition-size above its size, at most "
                   "512MiB)";
      } else {
        const std::string tag = hash_tag(s.partition_keys.front());
        message += ": name the streams with the filter's hash tag " + tag + ", e.g. '" +
                   s.options.input + tag + "' and '" + s.options.output + tag + "'";
      }
      throw InvalidArgument(message);
    }
  }
  s.module = redis::module_version(*s.router) >= module_protocol::kPartitionCommands;
  s.commands = s.module ? redis::module_partition_commands(s.params)
                        : redis::stock_partition_commands(s.params);
  if (s.options.read_ahead) s.reader = redis::make_router(keys.endpoint);
  Reply sha = s.router->run(s.slot, {"SCRIPT", "LOAD", kScript});
  s.sha = std::string(text_of(*sha));
}

RedisStreamDedup::~RedisStreamDedup() {
  // The read ahead uses the state: it ends first (its entries stay pending for the next run).
  if (state_->ahead.valid()) state_->ahead.wait();
}

RedisStreamDedupBatch RedisStreamDedup::finish() {
  State& s = *state_;
  if (!s.ahead.valid()) return {};
  s.batch.clear();
  const std::size_t n = s.ahead.get();
  s.batch = std::move(s.incoming);
  s.incoming.clear();
  std::unique_ptr<redis::Router> reader = std::move(s.reader);  // nothing more is read
  RedisStreamDedupBatch result = n == 0 ? RedisStreamDedupBatch{} : commit();
  s.reader = std::move(reader);
  return result;
}

bool RedisStreamDedup::create_group(bool make_stream) {
  State& s = *state_;
  std::vector<std::string_view> args{"XGROUP", "CREATE", s.options.input, s.options.group, "0"};
  if (make_stream) args.emplace_back("MKSTREAM");
  Reply reply = s.call(args);
  if (redis::is_error(*reply)) {
    if (text_of(*reply).starts_with("BUSYGROUP")) return false;
    s.router->fail("XGROUP CREATE", std::string(text_of(*reply)) +
                                        (make_stream ? ""
                                                     : " (--create-group makes the stream "
                                                       "too when it is missing)"));
  }
  return true;
}

std::size_t RedisStreamDedup::read(std::size_t count, std::chrono::milliseconds block) {
  State& s = *state_;
  s.batch.clear();
  s.count = count;
  s.block = block;
  if (s.ahead.valid()) {
    // Read while the last batch committed (an error reading it is thrown here).
    const std::size_t n = s.ahead.get();
    s.batch = std::move(s.incoming);
    s.incoming.clear();
    return n;
  }
  const std::string n = std::to_string(std::max<std::size_t>(count, 1));
  if (s.phase == State::Phase::own_pending) {
    // This consumer's own pending entries (a restart under the same --consumer name).
    Reply reply = s.call({"XREADGROUP", "GROUP", s.options.group, s.options.consumer, "COUNT", n,
                          "STREAMS", s.options.input, s.history_cursor});
    if (redis::is_error(*reply)) s.missing_group("XREADGROUP", *reply);
    if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 1 &&
        reply->element[0]->elements == 2) {
      s.take_entries(*reply->element[0]->element[1], true, "XREADGROUP");
    }
    if (!s.batch.empty()) {
      s.history_cursor = s.batch.back().id;
      return s.batch.size();
    }
    s.phase = State::Phase::claiming;
    s.claim_cursor = "0-0";
  }
  const auto now = std::chrono::steady_clock::now();
  if (s.phase == State::Phase::fresh &&
      now - s.last_claim >=
          std::max<std::chrono::milliseconds>(s.options.min_idle, std::chrono::seconds(1))) {
    s.phase = State::Phase::claiming;
    s.claim_cursor = "0-0";
  }
  if (s.phase == State::Phase::claiming) {
    // Entries delivered to consumers that went away (a stage killed under another name).
    if (s.claim_cursor == "0-0") s.last_claim = now;
    const std::string idle = std::to_string(s.options.min_idle.count());
    Reply reply = s.call({"XAUTOCLAIM", s.options.input, s.options.group, s.options.consumer, idle,
                          s.claim_cursor, "COUNT", n});
    if (redis::is_error(*reply)) s.missing_group("XAUTOCLAIM", *reply);
    s.router->expect(*reply, REDIS_REPLY_ARRAY, "XAUTOCLAIM");
    if (reply->elements < 2) s.router->fail("XAUTOCLAIM", "a reply without entries");
    s.claim_cursor = std::string(text_of(*reply->element[0]));
    s.take_entries(*reply->element[1], true, "XAUTOCLAIM");
    if (s.claim_cursor == "0-0") s.phase = State::Phase::fresh;
    if (!s.batch.empty()) return s.batch.size();
    if (s.phase == State::Phase::claiming) return 0;  // more to scan: come back at once
  }
  return s.read_fresh(*s.router, s.batch, count, block);
}

namespace {

// A batch as the script takes it: what each entry is, and a keyed entry's partition and item
// arguments. Entries from `end` on wait for a later batch.
struct ClassifiedBatch {
  std::size_t end = 0;
  std::string stopped_at;                   // OnMissingKey::error: the entry without a key
  std::vector<char> kind;                   // 'k' keyed, 'p' passed, 's' skipped, 'd' deleted
  std::vector<std::uint64_t> partition_of;  // of a keyed entry
  std::vector<std::vector<std::string>> item_arguments;  // of a keyed entry
  std::vector<std::uint64_t> touched;                    // partitions, in first-use order
};

const std::string* key_of(const Entry& entry, const std::string& field) {
  for (std::size_t f = 0; f + 1 < entry.fields.size(); f += 2) {
    if (entry.fields[f] == field) return &entry.fields[f + 1];
  }
  return nullptr;
}

// Decides each entry's kind and encodes a keyed entry's item with the store's own encoder
// (partition_ops.hpp): the bits a plain `add` sets, or the module's packed item.
ClassifiedBatch classify(const RedisStreamDedup::State& s) {
  ClassifiedBatch c;
  const std::size_t n = s.batch.size();
  c.end = n;
  c.kind.assign(n, 'd');
  c.partition_of.assign(n, 0);
  c.item_arguments.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Entry& entry = s.batch[i];
    if (entry.deleted) continue;
    const std::string* key = key_of(entry, s.options.key_field);
    if (key == nullptr) {
      if (s.options.on_missing == OnMissingKey::error) {
        c.stopped_at = entry.id;
        c.end = i;
        break;
      }
      c.kind[i] = s.options.on_missing == OnMissingKey::skip ? 's' : 'p';
    } else {
      c.kind[i] = 'k';
      const ItemHash h = hash_item(*key);
      c.partition_of[i] = layout::partition_of(h, s.params.partitions);
      if (std::find(c.touched.begin(), c.touched.end(), c.partition_of[i]) == c.touched.end()) {
        c.touched.push_back(c.partition_of[i]);
      }
      s.commands->append_script_item(c.item_arguments[i], h, *key);
    }
    if (c.kind[i] != 's' && entry.fields.size() > kMaxFieldStrings) {
      throw InvalidArgument("entry " + entry.id + " of " + s.input_text() + " has " +
                            std::to_string(entry.fields.size() / 2) + " fields; at most " +
                            std::to_string(kMaxFieldStrings / 2) +
                            " can be copied; it stays pending, as do the entries after it");
    }
  }
  return c;
}

// EVALSHA's arguments (kScript's KEYS and ARGV). `numbers` backs the numbers' text.
std::vector<std::string_view> script_arguments(const RedisStreamDedup::State& s,
                                               const ClassifiedBatch& c,
                                               std::deque<std::string>& numbers) {
  const FilterParams& p = s.params;
  auto number = [&](std::uint64_t value) -> std::string_view {
    numbers.push_back(std::to_string(value));
    return numbers.back();
  };
  std::vector<std::string_view> args{"EVALSHA", s.sha};
  args.push_back(number(2 + c.touched.size()));
  args.push_back(s.options.input);
  args.push_back(s.options.output);
  for (const std::uint64_t t : c.touched) args.push_back(s.partition_keys[t]);
  args.push_back(s.options.group);
  args.push_back(number(s.sealed_length));
  args.push_back(number(s.options.maxlen));
  args.push_back(s.module ? "m" : "b");
  args.push_back(number(p.hashes));
  args.push_back(to_string(p.layout));
  args.push_back(number(p.partition_bits));
  args.push_back(number(p.partitions));
  args.push_back(number(c.touched.size()));
  args.push_back(s.options.consumer);
  const auto [lowest, highest] = std::minmax_element(
      s.batch.begin(), s.batch.begin() + static_cast<std::ptrdiff_t>(c.end),
      [](const Entry& a, const Entry& b) { return stream_id(a.id) < stream_id(b.id); });
  args.push_back(lowest->id);
  args.push_back(highest->id);
  for (const std::uint64_t t : c.touched) args.push_back(number(t));
  args.push_back(number(c.end));
  for (std::size_t i = 0; i < c.end; ++i) {
    const Entry& entry = s.batch[i];
    args.push_back(entry.id);
    args.push_back(std::string_view(&c.kind[i], 1));
    if (c.kind[i] == 'k') {
      const auto at =
          std::find(c.touched.begin(), c.touched.end(), c.partition_of[i]) - c.touched.begin();
      args.push_back(number(static_cast<std::uint64_t>(at) + 1));
      for (const std::string& v : c.item_arguments[i]) args.push_back(v);
    }
    if (c.kind[i] == 'k' || c.kind[i] == 'p') {
      args.push_back(number(entry.fields.size()));
      for (const std::string& f : entry.fields) args.push_back(f);
    }
  }
  return args;
}

// Runs the script (its text when the server lost it); a lost connection says what is known.
Reply run_script(RedisStreamDedup::State& s, std::vector<std::string_view>& args, std::size_t end) {
  try {
    Reply reply = s.call(args);
    if (redis::is_error(*reply) && text_of(*reply).starts_with("NOSCRIPT")) {
      // The server lost its scripts (a restart, SCRIPT FLUSH): nothing ran; send the text.
      args[0] = "EVAL";
      args[1] = kScript;
      reply = s.call(args);
    }
    return reply;
  } catch (const StorageError& e) {
    throw StorageError(std::string(e.what()) + "; the batch of " + std::to_string(end) +
                       " entries (" + s.batch.front().id + " to " + s.batch[end - 1].id +
                       ") ran whole or not at all: what was not done stays pending in group '" +
                       s.options.group + "' and the next run of the stage handles it");
  }
}

// The script's refusal as the user reads it; always throws.
[[noreturn]] void refused(const RedisStreamDedup::State& s, const ClassifiedBatch& c,
                          std::string_view text) {
  const std::size_t end = c.end;
  const std::string pending_note =
      "; nothing of this batch of " + std::to_string(end) + " entries (" + s.batch.front().id +
      " to " + s.batch[end - 1].id + ") was done: they stay pending in group '" + s.options.group +
      "' and the next run of the stage handles them";
  std::string what(text);
  if (text.starts_with("REDBLOOMDEDUP input ")) {
    what = "'" + s.options.input + "' holds a " + std::string(text.substr(20)) + ", not a stream";
  } else if (text.starts_with("REDBLOOMDEDUP output ")) {
    what = "output key '" + s.options.output + "' holds a " + std::string(text.substr(21)) +
           ", not a stream";
  } else if (text.starts_with("REDBLOOMDEDUP exhausted ")) {
    what = "output stream '" + s.options.output + "' has reached the last possible entry id (" +
           std::string(text.substr(24)) +
           "), so XADD cannot add to it: name another --to stream, or delete this one";
  } else if (text.starts_with("REDBLOOMDEDUP denied ")) {
    what = "the server's user may not run " + std::string(text.substr(21)) +
           ", which the batch needs (its ACL): grant it, or run the stage as a user who may";
  } else if (text.starts_with("REDBLOOMDEDUP fields ")) {
    what = "entry " + std::string(text.substr(21)) + " has no field/value pairs to copy";
  } else if (text.starts_with("REDBLOOMDEDUP partial ")) {
    throw StorageError(
        s.router->message("EVALSHA (stream dedup)", s.partial_batch_text(text.substr(22), end)));
  } else if (text.starts_with("REDBLOOMDEDUP partition ")) {
    const std::string rest(text.substr(24));
    const std::size_t space = rest.find(' ');
    const std::size_t j = std::stoull(rest.substr(0, space));
    what = "partition key '" + s.partition_keys[c.touched.at(j - 1)] + "' holds " +
           rest.substr(space + 1) + " bytes (-1: not a string), expected " +
           std::to_string(s.sealed_length) +
           ": it vanished or changed (evicted under maxmemory? flushed? deleted?) and the "
           "items in it are lost";
    throw FormatError(s.router->message("EVALSHA (stream dedup)", what + pending_note));
  }
  s.router->fail("EVALSHA (stream dedup)", what + pending_note);
}

// The script's counts {unique, duplicates, skipped, passed, deleted, done before}.
void decode_counts(const RedisStreamDedup::State& s, const redisReply& reply,
                   RedisStreamDedupBatch& result) {
  s.router->expect(reply, REDIS_REPLY_ARRAY, "EVALSHA (stream dedup)");
  if (reply.elements != 6) s.router->fail("EVALSHA (stream dedup)", "a reply of another shape");
  std::uint64_t counts[6];
  for (std::size_t i = 0; i < 6; ++i) {
    s.router->expect(*reply.element[i], REDIS_REPLY_INTEGER, "EVALSHA (stream dedup)");
    counts[i] = static_cast<std::uint64_t>(reply.element[i]->integer);
  }
  result.unique = counts[0];
  result.duplicates = counts[1];
  result.skipped = counts[2];
  result.passed = counts[3];
  result.deleted = counts[4];
  result.done_before = counts[5];
}

}  // namespace

RedisStreamDedupBatch RedisStreamDedup::commit() {
  State& s = *state_;
  RedisStreamDedupBatch result;
  if (s.batch.empty()) return result;
  const ClassifiedBatch c = classify(s);
  result.stopped_at = c.stopped_at;
  result.entries = c.end;
  for (std::size_t i = 0; i < c.end; ++i) result.recovered += s.batch[i].recovered ? 1 : 0;
  if (c.end == 0) return result;
  std::deque<std::string> numbers;
  std::vector<std::string_view> args = script_arguments(s, c, numbers);
  if (s.reader && c.stopped_at.empty() && s.next_read_is_fresh()) {
    s.incoming.clear();
    s.ahead = std::async(std::launch::async,
                         [&s] { return s.read_fresh(*s.reader, s.incoming, s.count, s.block); });
  }
  const Reply reply = run_script(s, args, c.end);
  if (redis::is_error(*reply)) refused(s, c, text_of(*reply));
  decode_counts(s, *reply, result);
  s.batch.clear();
  return result;
}

std::optional<RedisStreamBacklog> RedisStreamDedup::backlog() {
  State& s = *state_;
  Reply reply = s.call({"XINFO", "GROUPS", s.options.input});
  if (redis::is_error(*reply)) return std::nullopt;  // the stream is gone
  s.router->expect(*reply, REDIS_REPLY_ARRAY, "XINFO GROUPS");
  for (std::size_t g = 0; g < reply->elements; ++g) {
    const redisReply& group = *reply->element[g];
    if (group.type != REDIS_REPLY_ARRAY) continue;
    RedisStreamBacklog backlog;
    bool ours = false;
    for (std::size_t f = 0; f + 1 < group.elements; f += 2) {
      const std::string_view field = text_of(*group.element[f]);
      const redisReply& value = *group.element[f + 1];
      if (field == "name") ours = text_of(value) == s.options.group;
      if (field == "pending" && value.type == REDIS_REPLY_INTEGER) {
        backlog.pending = static_cast<std::uint64_t>(value.integer);
      }
      if (field == "lag" && value.type == REDIS_REPLY_INTEGER) {
        backlog.lag = static_cast<std::uint64_t>(value.integer);
      }
    }
    if (ours) return backlog;
  }
  return std::nullopt;
}

std::string RedisStreamDedup::engine() const {
  return state_->module ? "module redbloom (RB.PARTADD in the batch's script)"
                        : "stock Redis (BITFIELD in the batch's script, hashing in the client)";
}

std::uint16_t RedisStreamDedup::slot() const noexcept {
  return state_->slot;
}

}  // namespace redbloom
