#include "redbloom/redis_stream_dedup.hpp"

#include <algorithm>
#include <charconv>
#include <deque>
#include <future>
#include <string_view>

#include "core/layout.hpp"
#include "core/module_protocol.hpp"
#include "core/packed_items.hpp"
#include "core/redis_format.hpp"
#include "redbloom/error.hpp"
#include "redbloom/exact_set.hpp"
#include "redbloom/filter.hpp"
#include "redbloom/hash.hpp"
#include "redis/object.hpp"
#include "redis/partition_ops.hpp"
#include "redis/redis_store.hpp"
#include "redis/router.hpp"
#include "redis/stream_copies.hpp"
#include "redis/stream_script.hpp"
#include "redis/stream_state.hpp"
#include "redis/stream_store.hpp"

namespace redbloom {
namespace {

using redis::OnLostNode;
using redis::Reply;
using redis::text_of;

// What both batch scripts share, as local functions: the streams' checks, reading the
// entries, the room left in the output's ids, and the tail that acknowledges and copies.
constexpr std::string_view kBatchParts = R"lua(
-- The streams' types, and the output's last id (nil: no output yet); or an error reply.
local function check_streams(input, output)
  local t = redis.call('TYPE', input).ok
  if t ~= 'stream' then return nil, redis.error_reply('REDBLOOMDEDUP input ' .. t) end
  t = redis.call('TYPE', output).ok
  if t ~= 'stream' and t ~= 'none' then
    return nil, redis.error_reply('REDBLOOMDEDUP output ' .. t)
  end
  local last_id = nil
  if t == 'stream' then
    local info = redis.call('XINFO', 'STREAM', output)
    for i = 1, #info - 1, 2 do
      if info[i] == 'last-generated-id' then last_id = info[i + 1] end
    end
  end
  return last_id, nil
end

-- The n entries from ARGV[pos] on, as one array per attribute indexed by entry (a table per
-- entry costs more than the rest of its reading): id, kind, j (partition), item (its first
-- item argument), nf and fields (its field strings' count and first), live; `new` and `left`
-- are for the adds to fill. width(j) is a keyed entry's count of item arguments in partition
-- j. Returns the entries, how many were done before and how many live ones are to be copied
-- if new, or an error reply.
-- Only an entry still pending for this consumer is handled: a batch run again, or an entry
-- another consumer took over (and finishes, or finished), is left as it is. One range query
-- answers for the whole batch (what it returns besides the batch's entries is this consumer's
-- other pending entries in that range, which a running stage does not have).
local function read_entries(input, group, consumer, minid, maxid, pos, n, width)
  local argv = ARGV
  local mine = redis.call('XPENDING', input, group, minid, maxid, 1000000000, consumer)
  local pending = {}
  for i = 1, #mine do pending[mine[i][1]] = true end
  local E = {n = n, id = {}, kind = {}, j = {}, item = {}, nf = {}, fields = {}, live = {},
             new = {}, left = {}}
  local id, kind, js, item, nf, fields, live = E.id, E.kind, E.j, E.item, E.nf, E.fields, E.live
  local done_before, copies = 0, 0
  for e = 1, n do
    local this, what = argv[pos], argv[pos + 1]
    id[e], kind[e] = this, what
    pos = pos + 2
    if what == 'k' then
      local j = tonumber(argv[pos])
      js[e], item[e] = j, pos + 1
      pos = pos + 1 + width(j)
    end
    local copied = what == 'k' or what == 'p'
    if copied then
      local count = tonumber(argv[pos])
      nf[e], fields[e] = count, pos + 1
      pos = pos + 1 + count
      if count < 2 or count % 2 ~= 0 then
        return nil, 0, 0, redis.error_reply('REDBLOOMDEDUP fields ' .. this)
      end
    end
    if pending[this] then
      live[e] = true
      if copied then copies = copies + 1 end
    else
      live[e] = false
      done_before = done_before + 1
    end
  end
  return E, done_before, copies, nil
end

-- XADD * raises once the output's last id is the last possible one; below the largest
-- millisecond it never runs out. Lua's numbers are doubles, so near the end the test errs on
-- the side of refusing. Returns an error reply, or nil.
local function check_room(last_id, copies)
  if last_id and copies > 0 then
    local dash = string.find(last_id, '-', 1, true)
    if string.sub(last_id, 1, dash - 1) == '18446744073709551615' and
       tonumber(string.sub(last_id, dash + 1)) + copies + 8192 >= 18446744073709551615 then
      return redis.error_reply('REDBLOOMDEDUP exhausted ' .. last_id)
    end
  end
  return nil
end

-- After the first write: acknowledges `acks` and copies the live entries not left for a
-- later round (a keyed one if its key was new). The batch is written in part, so a call that
-- raises must not end the script unreported: nothing here is expected to fail (the checks
-- before the first write cover what can), and if a call does, the reply says what was done.
-- Returns {unique, duplicates, skipped, passed, deleted}, or the error reply
-- "REDBLOOMDEDUP partial <copied> <uncopied> <first> <last> <acked 1|0> <message>".
local function ack_and_copy(input, output, group, maxlen, E, acks)
  local argv = ARGV
  local unacked = nil
  for from = 1, #acks, 5000 do
    local r = redis.pcall('XACK', input, group, unpack(acks, from, math.min(#acks, from + 4999)))
    if type(r) == 'table' and r.err then unacked = r.err; break end
  end
  local failed, uncopied, first_uncopied, last_uncopied = nil, 0, '', ''
  -- XADD's arguments: one table, its head (MAXLEN, '*') set once, the fields written over.
  local xa = {'*'}
  if tonumber(maxlen) > 0 then xa = {'MAXLEN', '~', maxlen, '*'} end
  local head = #xa
  local unique, dups, skipped, passed, deleted = 0, 0, 0, 0, 0
  local id, kind, nf, fields, live = E.id, E.kind, E.nf, E.fields, E.live
  local new, left = E.new, E.left
  for e = 1, E.n do
    if live[e] and not left[e] then
      local copy, what = false, kind[e]
      if what == 'k' then
        if new[e] then unique = unique + 1; copy = true else dups = dups + 1 end
      elseif what == 'p' then
        passed = passed + 1; copy = true
      elseif what == 's' then
        skipped = skipped + 1
      else
        deleted = deleted + 1
      end
      if copy and not failed then
        local at, count = fields[e], nf[e]
        for f = 0, count - 1 do xa[head + 1 + f] = argv[at + f] end
        local r = redis.pcall('XADD', output, unpack(xa, 1, head + count))
        if type(r) == 'table' and r.err then failed = r.err end
      end
      if copy and failed then
        uncopied = uncopied + 1
        if first_uncopied == '' then first_uncopied = id[e] end
        last_uncopied = id[e]
      end
    end
  end
  if failed or unacked then
    return redis.error_reply('REDBLOOMDEDUP partial ' .. (unique + passed - uncopied) .. ' ' ..
                             uncopied .. ' ' .. (first_uncopied ~= '' and first_uncopied or '-') ..
                             ' ' .. (last_uncopied ~= '' and last_uncopied or '-') .. ' ' ..
                             (unacked and '0' or '1') .. ' ' .. (failed or unacked))
  end
  return {unique, dups, skipped, passed, deleted}
end
)lua";

// One batch. KEYS: input, output, then the partition keys the batch touches.
// ARGV: group, sealed length, maxlen (0: none), engine ('b' BITFIELD, 'l' GETRANGE and SETRANGE
// of a blocked item's line, 'm' RB.PARTADD), hashes,
// layout, partition bits, partitions, m (= #KEYS - 2), consumer, the batch's lowest and highest
// ids, m partition indexes, n (entries), then
// per entry: id, kind ('k' keyed, 'p' passed unfiltered, 's' skipped, 'd' deleted), and
//   'k': j (its partition key is KEYS[2 + j]), then k bit offsets ('b'), the line's first and
//   last byte offsets and its (byte, mask) pairs ('l') or the packed item ('m')
//   'k', 'p': the count of field and value strings, then them.
// Reads and checks everything first; the first write is the test-and-set, whose deny-oom
// refusal (a full server) then comes before anything was written. Redis keeps a script's
// writes when a later call raises, so every way a later call can refuse is checked before it
// (types, the user's rights, the room left in the output's ids), and the calls after the first
// write go through pcall: an unforeseen refusal is reported with what was done, never hidden.
// Runs after kBatchParts and line_functions(). Reply {unique, duplicates, skipped, passed, deleted,
// done before}, or an error "REDBLOOMDEDUP <what> ..." (nothing written), or "REDBLOOMDEDUP partial
// ..." (ack_and_copy).
constexpr std::string_view kScript = R"lua(
local input, output = KEYS[1], KEYS[2]
local argv = ARGV
local group, sealed, maxlen = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local engine, k, layout = ARGV[4], tonumber(ARGV[5]), ARGV[6]
local pbits, parts, m = ARGV[7], ARGV[8], tonumber(ARGV[9])
local consumer, minid, maxid = ARGV[10], ARGV[11], ARGV[12]
local last_id, err = check_streams(input, output)
if err then return err end
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
    elseif engine == 'l' then
      if not redis.acl_check_cmd('GETRANGE', key, '0', '63') then
        denied = 'GETRANGE ' .. key
      elseif not redis.acl_check_cmd('SETRANGE', key, '0', 'x') then
        denied = 'SETRANGE ' .. key
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
local width = engine == 'm' and 1 or (engine == 'l' and 3 or k)
local E, done_before, copies
E, done_before, copies, err = read_entries(input, group, consumer, minid, maxid, pos + 1, n,
                                           function() return width end)
if err then return err end
err = check_room(last_id, copies)
if err then return err end
local acks, by_part = {}, {}
local ids, kinds, js, items, new = E.id, E.kind, E.j, E.item, E.new
for j = 1, m do by_part[j] = {} end
for e = 1, n do
  if E.live[e] then
    acks[#acks + 1] = ids[e]
    if kinds[e] == 'k' then
      local list = by_part[js[e]]
      list[#list + 1] = e
    end
  end
end
for j = 1, m do
  local list, key = by_part[j], KEYS[2 + j]
  if engine == 'm' then
    for from = 1, #list, 1024 do
      local last = math.min(#list, from + 1023)
      local packed = {}
      for i = from, last do packed[i - from + 1] = argv[items[list[i]]] end
      local flags = redis.call('RB.PARTADD', key, sealed, layout, k, pbits, parts,
                               ARGV[12 + j], table.concat(packed))
      for i = from, last do new[list[i]] = string.byte(flags, i - from + 1) ~= 0 end
    end
  elseif engine == 'l' then
    -- A blocked item's bits are in one 64-byte line: read whole, tested and set here, and
    -- written back only for a new item; two calls an item instead of k bit operations.
    -- Arguments: the line's first and last byte offsets, then (byte in the line, mask) pairs
    -- (holds and with: the stream script's line functions).
    for i = 1, #list do
      local e = list[i]
      local at = argv[items[e]]
      local bits = argv[items[e] + 2]
      local line = redis.call('GETRANGE', key, at, argv[items[e] + 1])
      local fresh = not holds(line, bits)
      if fresh then redis.call('SETRANGE', key, at, with(line, bits)) end
      new[e] = fresh
    end
  else
    -- One argument table for every call, filled by a counter: the per-bit work is most of
    -- the script's time on stock Redis.
    local per, bf = math.max(1, math.floor(6000 / (4 * k))), {}
    for from = 1, #list, per do
      local last = math.min(#list, from + per - 1)
      local na = 0
      for i = from, last do
        local at = items[list[i]]
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
        new[list[i]] = fresh
      end
    end
  end
end
local c = ack_and_copy(input, output, group, maxlen, E, acks)
if c.err then return c end
return {c[1], c[2], c[3], c[4], c[5], done_before}
)lua";

// One batch through a windowed or growing filter: kWindowBatch after the filter's own add
// (stream_script.hpp) as the local function stream_add(KEYS, ARGV) and kBatchParts, or RB.STREAM
// where the module is there. KEYS: input, output, then per partition the batch touches its keys as
// the add declares them (roster, slices). ARGV: group, maxlen (0: none), engine ('s' the add
// function, 'm' RB.STREAM), consumer, the batch's lowest and highest ids, now in ms (-1: the
// server's TIME), m (partitions), then per partition: its key count, the count h of its add's head
// arguments, the item arguments per entry, then the h head arguments (RB.STREAM's or the add's, up
// to the item count), the count c of its claim arguments and them (the add's claims on the older
// slices the client copied, stream_script.hpp, the last one a mark for every keyed entry of the
// partition in batch order; c = 0: none); then n (entries) and the entries as kScript takes them.
// Checks as kScript's come first; then each partition's add. The add can stop before the end of its
// items (a slice to declare, more links to describe, a filter that is full, a damaged key: statuses
// of stream_script.hpp); the entries it handled are acknowledged and copied with the rest of the
// batch, and those it did not are left pending for the client to send again once it has acted.
// Reply {unique, duplicates, skipped, passed, deleted, done before, {per partition: status, links,
// slice, verdict on its claims}, {ids left}}, or the errors of kScript.
constexpr std::string_view kWindowBatch = R"lua(
local input, output = KEYS[1], KEYS[2]
local argv = ARGV
local group, maxlen, engine = ARGV[1], ARGV[2], ARGV[3]
local consumer, minid, maxid = ARGV[4], ARGV[5], ARGV[6]
local now = tonumber(ARGV[7])
if now < 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local m = tonumber(ARGV[8])
local last_id, err = check_streams(input, output)
if err then return err end
local parts = {}
local pos, kpos = 9, 3
for j = 1, m do
  local nk, nh = tonumber(argv[pos]), tonumber(argv[pos + 1])
  local p = {keys = {}, head = {}, stride = tonumber(argv[pos + 2]), list = {}, claims = {},
             seen = 0, marks = {}}
  for i = 1, nk do p.keys[i] = KEYS[kpos + i - 1] end
  for i = 1, nh do p.head[i] = argv[pos + 2 + i] end
  p.head[2] = string.format('%.0f', now)
  -- The add's claims on older slices the client copied, the last one the marks of every keyed
  -- entry of the partition, in batch order (p.marks: each live one's place in them).
  local nc = tonumber(argv[pos + 3 + nh])
  for i = 1, nc do p.claims[i] = argv[pos + 3 + nh + i] end
  kpos = kpos + nk
  pos = pos + 4 + nh + nc
  parts[j] = p
end
if redis.acl_check_cmd then
  local denied = nil
  if not redis.acl_check_cmd('XACK', input, group, '0-1') then denied = 'XACK ' .. input end
  if not redis.acl_check_cmd('XADD', output, '*', 'f', 'v') then denied = 'XADD ' .. output end
  for j = 1, m do
    local p = parts[j]
    if engine == 'm' then
      local call = {'RB.STREAM', #p.keys}
      for i = 1, #p.keys do call[#call + 1] = p.keys[i] end
      for i = 1, #p.head do call[#call + 1] = p.head[i] end
      call[#call + 1] = ''
      if not redis.acl_check_cmd(unpack(call)) then denied = 'RB.STREAM ' .. p.keys[1] end
    else
      for i = 1, #p.keys do
        local key = p.keys[i]
        if not redis.acl_check_cmd('BITFIELD', key, 'SET', 'u1', '0', '1') then
          denied = 'BITFIELD ' .. key
        elseif p.head[10] == 'l' and not redis.acl_check_cmd('GETRANGE', key, '0', '63') then
          denied = 'GETRANGE ' .. key
        elseif not redis.acl_check_cmd('SETRANGE', key, '0', 'x') then
          denied = 'SETRANGE ' .. key
        elseif not redis.acl_check_cmd('PEXPIREAT', key, '1') then
          denied = 'PEXPIREAT ' .. key
        end
      end
    end
  end
  if denied then return redis.error_reply('REDBLOOMDEDUP denied ' .. denied) end
end
local n = tonumber(argv[pos])
local E, done_before, copies
E, done_before, copies, err = read_entries(input, group, consumer, minid, maxid, pos + 1, n,
                                           function(j) return parts[j].stride end)
if err then return err end
err = check_room(last_id, copies)
if err then return err end
local ids, items, live = E.id, E.item, E.live
for e = 1, n do
  if E.kind[e] == 'k' then
    local p = parts[E.j[e]]
    p.seen = p.seen + 1
    if live[e] then
      local list = p.list
      list[#list + 1] = e
      if #p.claims > 0 then p.marks[#list] = p.seen end
    end
  end
end
-- The adds. An add's own refusals (a damaged or lost key) come before it writes, as a reply:
-- that partition's entries are then left pending, the others go on.
local results = {}
for j = 1, m do
  local p = parts[j]
  local list = p.list
  local status, done, flags, links, slice, verdict = 'ok', #list, '', -1, 0, ''
  if #list > 0 then
    local r
    if engine == 'm' then
      local call, packed = {'RB.STREAM', #p.keys}, {}
      for i = 1, #p.keys do call[#call + 1] = p.keys[i] end
      for i = 1, #p.head do call[#call + 1] = p.head[i] end
      for i = 1, #list do packed[i] = argv[items[list[i]]] end
      call[#call + 1] = table.concat(packed)
      r = redis.pcall(unpack(call))
    else
      local a, stride = {}, p.stride
      for i = 1, #p.head do a[i] = p.head[i] end
      local na = #a + 1
      a[na] = tostring(#list)
      for i = 1, #list do
        local at = items[list[i]]
        for b = 0, stride - 1 do a[na + 1 + b] = argv[at + b] end
        na = na + stride
      end
      if #p.claims > 0 then
        for i = 1, #p.claims - 1 do a[na + i] = p.claims[i] end
        -- The marks of the live entries: all of the partition's keyed entries, as a rule.
        local all = p.claims[#p.claims]
        if #list == p.seen then
          a[na + #p.claims] = all
        else
          local sub, marks = string.sub, {}
          for i = 1, #list do marks[i] = sub(all, p.marks[i], p.marks[i]) end
          a[na + #p.claims] = table.concat(marks)
        end
      end
      r = stream_add(p.keys, a)
    end
    if r.err then
      status, done = '!' .. r.err, 0
    else
      status, done, flags, links, slice, verdict = r[1], r[2], r[3], r[4], r[5], r[7] or ''
    end
  end
  for i = 1, #list do
    local e = list[i]
    if i <= done then E.new[e] = string.byte(flags, i) == 49 else E.left[e] = true end
  end
  results[#results + 1] = status
  results[#results + 1] = links
  results[#results + 1] = slice
  results[#results + 1] = verdict
end
local acks, left = {}, {}
for e = 1, n do
  if live[e] then
    if E.left[e] then left[#left + 1] = ids[e] else acks[#acks + 1] = ids[e] end
  end
end
local c = ack_and_copy(input, output, group, maxlen, E, acks)
if c.err then return c end
return {c[1], c[2], c[3], c[4], c[5], done_before, results, left}
)lua";

// The plain batch script: the shared parts, then kScript.
std::string_view plain_script() {
  static const std::string text = std::string(kBatchParts) +
                                  std::string(redis::stream::line_functions()) +
                                  std::string(kScript);
  return text;
}

// The windowed batch script: the filter's own add as a local function, the shared parts, then
// kWindowBatch.
std::string_view window_script() {
  static const std::string text = "local function stream_add(KEYS, ARGV)\n" +
                                  std::string(redis::stream::script_text()) + "\nend\n" +
                                  std::string(kBatchParts) + std::string(kWindowBatch);
  return text;
}

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
  std::string_view script = plain_script();  // the text `sha` names
  // A windowed or growing filter: its store's state, and what the batches learnt of each
  // partition (as the store's own adds do: the links a live slice has, the newest slice, the
  // slice the next batch declares its keys around).
  const RedisStreamStore::State* window = nullptr;
  // The filter's frozen links as this stage copied them, for the script's adds (stock servers).
  std::unique_ptr<redis::stream::OlderCopies> copies;
  std::vector<std::uint32_t> known_links;
  std::vector<std::int64_t> newest_slice;
  std::vector<std::int64_t> center;

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

// The filter's keys, when one script on their server can write them: a plain filter's.
RedisKeys script_reach(const Filter& filter) {
  const Store* store = filter.backend().bitmap();
  std::optional<RedisKeys> keys = store != nullptr ? store->redis_keys() : std::nullopt;
  if (!keys) {
    throw InvalidArgument(
        "dedup of a Redis stream works with a redbloom filter (plain, windowed or growing) on "
        "one server or a Cluster; " +
        filter.backend().location() +
        " is not one (sharded over several servers, or made by BF.RESERVE), so its writes "
        "cannot be part of the batch's one script");
  }
  return std::move(*keys);
}

// A windowed or growing filter's store state; nullptr for another kind of filter.
const RedisStreamStore::State* window_reach(const Filter& filter) {
  const RedisStreamStore* store = filter.backend().redis_stream_store();
  if (store == nullptr) return nullptr;
  if (store->state().routers.size() != 1) {
    throw InvalidArgument(
        "dedup of a Redis stream works with a filter on one server or a "
        "Cluster; " +
        store->location() +
        " is sharded over several servers, so its writes cannot be part of "
        "the batch's one script");
  }
  return &store->state();
}

// On a Cluster: the input, the output and every key of the filter in one slot, or a refusal
// that names the slots and the fix. `keys`: one key per partition (a partition's keys share
// its hash tag), `what` says which ("partition key").
void check_one_slot(const RedisStreamDedup::State& s, const std::vector<std::string>& keys,
                    std::string_view what) {
  const auto where = [](const std::string& key) {
    return "'" + key + "' in slot " + std::to_string(redis::slot_of(key));
  };
  bool same = redis::slot_of(s.options.output) == s.slot;
  for (const std::string& key : keys) same &= redis::slot_of(key) == s.slot;
  if (same) return;
  std::string message =
      "on a Redis Cluster one script handles each batch, so the input stream, the output "
      "stream and the filter's keys must be in one slot; input " +
      where(s.options.input) + ", output " + where(s.options.output) + ", filter '" +
      s.filter_name + "' " + std::string(what) + " " + where(keys.front());
  if (keys.size() > 1) {
    message += " and " + std::to_string(keys.size() - 1) +
               " more partitions: a filter of several partitions is in several slots; "
               "create it with one partition (--partition-size above its size, at most "
               "512MiB)";
  } else {
    const std::string tag = hash_tag(keys.front());
    message += ": name the streams with the filter's hash tag " + tag + ", e.g. '" +
               s.options.input + tag + "' and '" + s.options.output + tag + "'";
  }
  throw InvalidArgument(message);
}

// Sets up a plain filter's keys and engine.
void open_plain(RedisStreamDedup::State& s, const Filter& filter, const RedisKeys& keys) {
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
  if (s.router->is_cluster()) check_one_slot(s, s.partition_keys, "partition key");
  s.module = redis::module_version(*s.router) >= module_protocol::kPartitionCommands;
  s.commands = s.module ? redis::module_partition_commands(s.params)
                        : redis::stock_partition_commands(s.params);
}

// Sets up a windowed or growing filter's: its store knows the keys, the links and the engine.
void open_window(RedisStreamDedup::State& s, const RedisStreamStore::State& w) {
  s.window = &w;
  s.filter_name = w.name;
  s.params = w.first;
  const std::uint64_t partitions = w.shape.partitions();
  if (s.router->is_cluster()) {
    std::vector<std::string> keys;
    for (std::uint64_t p = 0; p < partitions; ++p) keys.push_back(w.slice_key(p, 0));
    check_one_slot(s, keys, "slice key");
  }
  s.module = w.module;
  if (!w.module) {
    s.copies = std::make_unique<redis::stream::OlderCopies>(w.links, w.link_start, partitions);
  }
  s.known_links.assign(partitions, 1);
  s.newest_slice.assign(partitions, INT64_MIN);
  s.center.assign(partitions, 0);
  s.script = window_script();
}

}  // namespace

RedisStreamDedup::RedisStreamDedup(const Filter& filter, const RedisEndpoint& endpoint,
                                   RedisStreamDedupOptions options)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.options = std::move(options);
  const RedisStreamStore::State* window = window_reach(filter);
  const RedisEndpoint where =
      window != nullptr ? window->routers.front()->endpoint() : script_reach(filter).endpoint;
  s.router = redis::make_router(where);
  if (RedisStore::keyspace_id(endpoint) != s.router->keyspace_id()) {
    throw InvalidArgument("the streams (redis " + endpoint.describe() + ") and the filter (redis " +
                          where.describe() +
                          ") must be on one server or one Cluster: one script on the server "
                          "handles each batch");
  }
  s.slot = redis::slot_of(s.options.input);
  if (window != nullptr) {
    open_window(s, *window);
  } else {
    open_plain(s, filter, script_reach(filter));
  }
  if (s.options.read_ahead) s.reader = redis::make_router(where);
  Reply sha = s.router->run(s.slot, {"SCRIPT", "LOAD", s.script});
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
  std::vector<ItemHash> hashes;                          // of a keyed entry
  std::vector<std::uint64_t> touched;                    // partitions, in first-use order
};

const std::string* key_of(const Entry& entry, const std::string& field) {
  for (std::size_t f = 0; f + 1 < entry.fields.size(); f += 2) {
    if (entry.fields[f] == field) return &entry.fields[f + 1];
  }
  return nullptr;
}

// The links whose item arguments a windowed batch sends for partition p's items.
std::uint32_t described_links(const RedisStreamDedup::State& s, std::uint64_t p) {
  return std::min<std::uint32_t>(s.known_links[p],
                                 static_cast<std::uint32_t>(s.window->links.size()));
}

// A keyed entry's item for a windowed or growing filter: its arguments for each described link
// (the store's own encoding, stream_script.hpp), or the packed item for RB.STREAM.
void append_window_item(const RedisStreamDedup::State& s, std::uint64_t p, const ItemHash& h,
                        std::string_view key, std::vector<std::string>& out) {
  if (s.module) {
    std::string packed;
    packed::append(packed, key);
    out.push_back(std::move(packed));
    return;
  }
  const RedisStreamStore::State& w = *s.window;
  redis::stream::append_item_arguments(
      w.form, w.links, w.link_start, h, described_links(s, p),
      [&](std::uint64_t value) { out.push_back(std::to_string(value)); },
      [&](std::string_view text) { out.emplace_back(text); });
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
  c.hashes.resize(n);
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
      c.hashes[i] = h;
      c.partition_of[i] = layout::partition_of(h, s.params.partitions);
      if (std::find(c.touched.begin(), c.touched.end(), c.partition_of[i]) == c.touched.end()) {
        c.touched.push_back(c.partition_of[i]);
      }
      if (s.window != nullptr) {
        append_window_item(s, c.partition_of[i], h, *key, c.item_arguments[i]);
      } else {
        s.commands->append_script_item(c.item_arguments[i], h, *key);
      }
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

// The lowest and highest ids of the batch's entries, for the scripts' one XPENDING range.
void append_id_range(const RedisStreamDedup::State& s, const ClassifiedBatch& c,
                     std::vector<std::string_view>& args) {
  const auto [lowest, highest] = std::minmax_element(
      s.batch.begin(), s.batch.begin() + static_cast<std::ptrdiff_t>(c.end),
      [](const Entry& a, const Entry& b) { return stream_id(a.id) < stream_id(b.id); });
  args.push_back(lowest->id);
  args.push_back(highest->id);
}

// The batch's entries as both scripts take them: n, then per entry its id, kind, a keyed
// entry's partition (its place among the touched ones, from 1) and item arguments, and a
// copied entry's fields. `text` backs the numbers' text.
void append_entries(const RedisStreamDedup::State& s, const ClassifiedBatch& c,
                    std::deque<std::string>& text, std::vector<std::string_view>& args) {
  auto number = [&](std::uint64_t value) -> std::string_view {
    text.push_back(std::to_string(value));
    return text.back();
  };
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
  args.push_back(s.module ? "m" : p.layout == Layout::blocked ? "l" : "b");
  args.push_back(number(p.hashes));
  args.push_back(to_string(p.layout));
  args.push_back(number(p.partition_bits));
  args.push_back(number(p.partitions));
  args.push_back(number(c.touched.size()));
  args.push_back(s.options.consumer);
  append_id_range(s, c, args);
  for (const std::uint64_t t : c.touched) args.push_back(number(t));
  append_entries(s, c, numbers, args);
  return args;
}

// Runs the script (its text when the server lost it); a lost connection says what is known.
Reply run_script(RedisStreamDedup::State& s, std::vector<std::string_view>& args, std::size_t end) {
  try {
    Reply reply = s.call(args);
    if (redis::is_error(*reply) && text_of(*reply).starts_with("NOSCRIPT")) {
      // The server lost its scripts (a restart, SCRIPT FLUSH): nothing ran; send the text.
      args[0] = "EVAL";
      args[1] = s.script;
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
  if (reply.elements != (s.window != nullptr ? 8u : 6u)) {
    s.router->fail("EVALSHA (stream dedup)", "a reply of another shape");
  }
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

// The keys partition p's add declares: its roster, then the slices from one before the live
// ones around `center` to two after it (as the store's own adds: the script then knows whether
// a newer slice exists); the one slice of a growing filter. Returns the first one's slice.
std::int64_t declare(const RedisStreamDedup::State& s, std::uint64_t p,
                     std::vector<std::string>& keys) {
  const RedisStreamStore::State& w = *s.window;
  const std::int64_t older = w.shape.windowed() ? w.shape.slices() : 0;
  const std::int64_t first = w.shape.windowed() ? s.center[p] - older - 1 : 0;
  const std::int64_t last = w.shape.windowed() ? s.center[p] + 2 : 0;
  keys.clear();
  keys.push_back(w.roster_key(p));
  for (std::int64_t g = first; g <= last; ++g) keys.push_back(w.slice_key(p, g));
  return first;
}

// Partition p's add arguments before its item count (stream_script.hpp): the script's, with
// the item arguments of described_links per item, or RB.STREAM's. The time is the batch's.
std::vector<std::string> add_head(const RedisStreamDedup::State& s, std::uint64_t p,
                                  std::int64_t first) {
  const RedisStreamStore::State& w = *s.window;
  std::vector<std::string> head;
  head.emplace_back(1, w.guarded ? 'A' : 'a');
  head.emplace_back("-1");
  head.push_back(std::to_string(w.shape.slice_ns() / 1'000'000));
  head.push_back(std::to_string(w.shape.windowed() ? w.shape.slices() : 0));
  head.push_back(std::to_string(first));
  head.push_back(std::to_string(redis::stream::kHeaderBytes));
  head.push_back(std::to_string(w.links.size()));
  head.push_back(std::to_string(w.budget));
  if (s.module) {
    head.push_back(std::to_string(w.shape.partitions()));
    head.push_back(std::to_string(p));
    for (std::size_t l = 0; l < w.links.size(); ++l) {
      head.emplace_back(to_string(w.links[l].layout));
      head.push_back(std::to_string(w.links[l].hashes));
      head.push_back(std::to_string(w.links[l].partition_bits));
      head.push_back(std::to_string(w.link_args[l].capacity));
    }
    return head;
  }
  head.push_back(std::to_string(described_links(s, p)));
  head.emplace_back(1, static_cast<char>(w.form));
  head.emplace_back("0");  // offsets from link 0 (the stage's claims leave out none)
  for (const redis::stream::LinkArgs& link : w.link_args) {
    head.push_back(std::to_string(link.bytes));
    head.push_back(std::to_string(link.capacity));
    head.push_back(std::to_string(link.hashes));
  }
  return head;
}

// Copies the frozen links of the batch's partitions that the stage has no copy of (a stock
// server's windowed or growing filter): once a link, when it is frozen.
void copy_frozen_links(RedisStreamDedup::State& s, const ClassifiedBatch& c) {
  if (!s.copies) return;
  const std::uint32_t older = s.window->shape.windowed() ? s.window->shape.slices() : 0;
  for (const std::uint64_t p : c.touched) {
    if (s.newest_slice[p] == INT64_MIN) continue;
    std::uint64_t items = 0;
    for (std::size_t i = 0; i < c.end; ++i) items += c.kind[i] == 'k' && c.partition_of[i] == p;
    for (const auto& read :
         s.copies->wanted(p, s.newest_slice[p], older, s.known_links[p], items)) {
      const std::vector<std::string> command =
          s.copies->read_command(read, s.window->slice_key(p, read.slice));
      const std::vector<std::string_view> args(command.begin(), command.end());
      s.copies->keep_reply(p, read, *s.call(args));
    }
  }
}

// Partition p's claim arguments for kWindowBatch (none without copies): the claims, then the
// marks of its keyed entries in batch order; `claimed` gets the claims' slices.
void append_claims(const RedisStreamDedup::State& s, const ClassifiedBatch& c, std::uint64_t p,
                   std::int64_t first, std::int64_t last, std::deque<std::string>& text,
                   std::vector<std::string_view>& args, std::vector<std::int64_t>& claimed) {
  std::vector<redis::stream::Claim> claims;
  std::string marks;
  if (s.copies) {
    std::vector<ItemHash> hashes;
    for (std::size_t i = 0; i < c.end; ++i) {
      if (c.kind[i] == 'k' && c.partition_of[i] == p) hashes.push_back(c.hashes[i]);
    }
    s.copies->claim(p, first, last, hashes, claims, marks);
  }
  if (claims.empty()) {
    args.push_back("0");
    return;
  }
  text.push_back(std::to_string(2 + 3 * claims.size()));
  args.push_back(text.back());
  text.push_back(std::to_string(claims.size()));
  args.push_back(text.back());
  for (const redis::stream::Claim& claim : claims) {
    text.push_back(std::to_string(claim.slice));
    args.push_back(text.back());
    text.push_back(std::to_string(claim.links));
    args.push_back(text.back());
    args.push_back(claim.fields);  // points into the copies, unchanged until the reply
    claimed.push_back(claim.slice);
  }
  text.push_back(std::move(marks));
  args.push_back(text.back());
}

// EVALSHA's arguments for kWindowBatch; `declared` gets each touched partition's keys, and
// `claimed` the slices of its claims.
std::vector<std::string_view> window_arguments(const RedisStreamDedup::State& s,
                                               const ClassifiedBatch& c,
                                               std::deque<std::string>& text,
                                               std::vector<std::vector<std::string>>& declared,
                                               std::vector<std::vector<std::int64_t>>& claimed) {
  const RedisStreamStore::State& w = *s.window;
  auto keep = [&](std::string value) -> std::string_view {
    text.push_back(std::move(value));
    return text.back();
  };
  declared.assign(c.touched.size(), {});
  claimed.assign(c.touched.size(), {});
  std::vector<std::vector<std::string>> heads;
  std::vector<std::int64_t> firsts;
  std::size_t key_count = 2;
  for (std::size_t j = 0; j < c.touched.size(); ++j) {
    firsts.push_back(declare(s, c.touched[j], declared[j]));
    heads.push_back(add_head(s, c.touched[j], firsts.back()));
    key_count += declared[j].size();
  }
  std::vector<std::string_view> args{"EVALSHA", s.sha, keep(std::to_string(key_count)),
                                     s.options.input, s.options.output};
  for (const auto& keys : declared) args.insert(args.end(), keys.begin(), keys.end());
  args.push_back(s.options.group);
  args.push_back(keep(std::to_string(s.options.maxlen)));
  args.push_back(s.module ? "m" : "s");
  args.push_back(s.options.consumer);
  append_id_range(s, c, args);
  args.push_back(keep(std::to_string(w.now_ms())));
  args.push_back(keep(std::to_string(c.touched.size())));
  for (std::size_t j = 0; j < c.touched.size(); ++j) {
    args.push_back(keep(std::to_string(declared[j].size())));
    args.push_back(keep(std::to_string(heads[j].size())));
    std::uint64_t stride = 1;
    if (!s.module) {
      stride = 0;
      for (std::uint32_t l = 0; l < described_links(s, c.touched[j]); ++l) {
        stride += redis::stream::item_arguments(w.form, w.links[l]);
      }
    }
    args.push_back(keep(std::to_string(stride)));
    for (std::string& h : heads[j]) args.push_back(keep(std::move(h)));
    const auto last = firsts[j] + static_cast<std::int64_t>(declared[j].size()) - 2;
    append_claims(s, c, c.touched[j], firsts[j], last, text, args, claimed[j]);
  }
  append_entries(s, c, text, args);
  return args;
}

// Replies in a row that leave entries for another round (a slice to declare, links to
// describe) before the stage gives up: each answers a finite question, as in the store.
constexpr int kMaxWindowRounds = 2 * static_cast<int>(kMaxStreamLinks) + 16;

// What one round's adds answered, per touched partition: {status, links, slice, verdict}. Learns
// the links and slices, and forgets the copies whose claims were stale; a full filter or a
// damaged key is returned as the message to throw.
std::string learn(RedisStreamDedup::State& s, const ClassifiedBatch& c, const redisReply& results,
                  const std::vector<std::vector<std::string>>& declared,
                  const std::vector<std::vector<std::int64_t>>& claimed) {
  const std::string operation = "EVALSHA (stream dedup)";
  s.router->expect(results, REDIS_REPLY_ARRAY, operation);
  if (results.elements != 4 * c.touched.size())
    s.router->fail(operation, "a reply of another shape");
  const RedisStreamStore::State& w = *s.window;
  std::string problem;
  for (std::size_t j = 0; j < c.touched.size(); ++j) {
    const std::uint64_t p = c.touched[j];
    const std::string status(text_of(*results.element[4 * j]));
    const long long links = results.element[4 * j + 1]->integer;
    const std::int64_t slice = results.element[4 * j + 2]->integer;
    const std::string_view verdict = text_of(*results.element[4 * j + 3]);
    if (s.copies && !verdict.empty()) s.copies->forget_stale(p, claimed[j], verdict);
    if (status == "ok") {
      if (links >= 0)
        s.known_links[p] = std::max<std::uint32_t>(1, static_cast<std::uint32_t>(links));
      if (links >= 0) s.newest_slice[p] = std::max(s.newest_slice[p], slice);
    } else if (status == "time") {
      s.center[p] = slice;
    } else if (status == "links") {
      s.known_links[p] = std::max(s.known_links[p], static_cast<std::uint32_t>(links));
    } else if (status == "full" && problem.empty()) {
      const bool exists = static_cast<std::size_t>(links) < w.links.size();
      problem = "filter '" + s.filter_name + "' is full: partition " + std::to_string(p) +
                " of slice " + std::to_string(slice) +
                " holds its links' capacity and needs link " + std::to_string(links) + ", which " +
                (exists ? "would take its live links past the filter's byte limit"
                        : "cannot exist: " + w.no_more_links) +
                " (a slice holds the items of its span of the window: give the filter a larger "
                "capacity, or --growth)";
    } else if (status.starts_with("!") && problem.empty()) {
      redisReply error{};
      error.type = REDIS_REPLY_ERROR;
      error.str = const_cast<char*>(status.data() + 1);
      error.len = status.size() - 1;
      try {
        (void)redis::stream::decode(error, declared[j]);
        problem = status.substr(1);
      } catch (const redis::ReplyProblem& e) {
        problem = e.what();
      }
    }
  }
  return problem;
}

// Commits a batch through a windowed or growing filter: rounds of kWindowBatch, each acting on
// what the adds asked for, with the entries the last round left. Every entry is handled once:
// a round acknowledges exactly the entries whose keys it set.
void commit_window(RedisStreamDedup::State& s, ClassifiedBatch c, RedisStreamDedupBatch& result) {
  const std::int64_t guess = s.window->guess_slice();
  for (const std::uint64_t p : c.touched) s.center[p] = std::max(guess, s.newest_slice[p]);
  for (int round = 0;; ++round) {
    std::deque<std::string> text;
    std::vector<std::vector<std::string>> declared;
    std::vector<std::vector<std::int64_t>> claimed;
    copy_frozen_links(s, c);
    std::vector<std::string_view> args = window_arguments(s, c, text, declared, claimed);
    const Reply reply = run_script(s, args, c.end);
    if (redis::is_error(*reply)) refused(s, c, text_of(*reply));
    RedisStreamDedupBatch counts;
    decode_counts(s, *reply, counts);
    result.unique += counts.unique;
    result.duplicates += counts.duplicates;
    result.skipped += counts.skipped;
    result.passed += counts.passed;
    result.deleted += counts.deleted;
    result.done_before += counts.done_before;
    const std::string problem = learn(s, c, *reply->element[6], declared, claimed);
    const redisReply& left = *reply->element[7];
    s.router->expect(left, REDIS_REPLY_ARRAY, "EVALSHA (stream dedup)");
    if (left.elements == 0) return;
    const std::string pending_note =
        ": " + std::to_string(left.elements) + " entries of the batch (" +
        std::string(text_of(*left.element[0])) + " to " +
        std::string(text_of(*left.element[left.elements - 1])) + ") stay pending in group '" +
        s.options.group +
        "' and the next run of the stage handles them; the batch's other "
        "entries are done";
    if (!problem.empty())
      throw StorageError(s.router->message("EVALSHA (stream dedup)", problem + pending_note));
    if (round >= kMaxWindowRounds) {
      s.router->fail("EVALSHA (stream dedup)",
                     "the filter's add kept asking for more links or another slice" + pending_note);
    }
    // The next round: the entries left, in their order.
    std::vector<Entry> again;
    std::size_t next = 0;
    for (Entry& entry : s.batch) {
      if (next < left.elements && entry.id == text_of(*left.element[next])) {
        again.push_back(std::move(entry));
        ++next;
      }
    }
    s.batch = std::move(again);
    c = classify(s);
  }
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
  if (s.reader && c.stopped_at.empty() && s.next_read_is_fresh()) {
    s.incoming.clear();
    s.ahead = std::async(std::launch::async,
                         [&s] { return s.read_fresh(*s.reader, s.incoming, s.count, s.block); });
  }
  if (s.options.exact_set != nullptr) {
    // Adding a key twice changes nothing: the batch's keys, new or not, before its script.
    std::vector<std::string_view> keys;
    for (std::size_t i = 0; i < c.end; ++i) {
      if (c.kind[i] == 'k') keys.emplace_back(*key_of(s.batch[i], s.options.key_field));
    }
    (void)s.options.exact_set->add(keys);
  }
  if (s.window != nullptr) {
    commit_window(s, c, result);
    s.batch.clear();
    return result;
  }
  std::deque<std::string> numbers;
  std::vector<std::string_view> args = script_arguments(s, c, numbers);
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
  if (state_->window != nullptr) {
    return state_->module ? "module redbloom (RB.STREAM in the batch's script)"
                          : "stock Redis (the windowed filter's add in the batch's script, "
                            "hashing in the client)";
  }
  return state_->module ? "module redbloom (RB.PARTADD in the batch's script)"
                        : "stock Redis (BITFIELD in the batch's script, hashing in the client)";
}

std::uint16_t RedisStreamDedup::slot() const noexcept {
  return state_->slot;
}

}  // namespace redbloom
