#include "stream_script.hpp"

#include <charconv>
#include <string>

#include "core/module_protocol.hpp"
#include "partition_ops.hpp"
#include "script_digest.hpp"

namespace redbloom::redis::stream {
namespace {

// line_functions(): the test and the set of a blocked item's line, in Lua. Its bits are (byte in
// the line, mask) pairs: the line, read whole, holds the item when every pair's bits are set,
// and gets them by one write.
constexpr std::string_view kLineFunctions = R"lua(
local band, bor, byte, char = bit.band, bit.bor, string.byte, string.char
local function holds(line, pairs)
  for q = 1, #pairs, 2 do
    local b, mask = byte(pairs, q, q + 1)
    if band(byte(line, b + 1), mask) ~= mask then return false end
  end
  return true
end
local function with(line, pairs)
  local bytes = {byte(line, 1, 64)}
  for q = 1, #pairs, 2 do
    local b, mask = byte(pairs, q, q + 1)
    bytes[b + 1] = bor(bytes[b + 1], mask)
  end
  return char(unpack(bytes))
end
)lua";

// The protocol is in stream_script.hpp. Reads go through BITFIELD_RO and GETRANGE, so that
// lookups run on a read-only replica. Lua 5.1 unpacks at most ~8000 values onto its stack, so
// bulk reads go in calls of at most ~2000 probes. Numbers written back into keys (times,
// expiries) are formatted with %.0f: Lua's own conversion switches to exponents past 14 digits.
constexpr std::string_view kScript = R"lua(
local mode = ARGV[1]
-- Upper case: the roster was made with the filter, so its absence is an error.
local guarded = mode ~= string.lower(mode)
mode = string.lower(mode)
local now = tonumber(ARGV[2])
if now < 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local slice_ms = tonumber(ARGV[3])
local older = tonumber(ARGV[4])
local first = tonumber(ARGV[5])
local H = tonumber(ARGV[6])
local M = tonumber(ARGV[7])
local budget = tonumber(ARGV[8])
local K = tonumber(ARGV[9])
local lines = ARGV[10] == 'l'
-- Items come with arguments for links F .. K - 1: the claims answer for the links before F.
local F = tonumber(ARGV[11])
local size, cap, hashes, start, koff = {}, {}, {}, {}, {}
local at, stride = H, 0
for l = 0, M - 1 do
  size[l] = tonumber(ARGV[12 + 3 * l])
  cap[l] = tonumber(ARGV[13 + 3 * l])
  hashes[l] = tonumber(ARGV[14 + 3 * l])
  start[l] = at
  at = at + size[l]
  if l >= F and l < K then
    koff[l] = stride
    stride = stride + (lines and 3 or hashes[l])
  end
end
start[M] = at
local n = tonumber(ARGV[12 + 3 * M])
local base = 13 + 3 * M
-- Claims, after the items (adds and lookups): C, then per claim a slice g, how many of its links
-- the client copied and their header fields as copied, then one byte per item: 0 if the item is
-- in none of the claimed copies, else g - first + 1 for the newest claimed slice holding it.
local cpos = base + n * stride
local C = tonumber(ARGV[cpos] or '0')
local claims, marks = {}, nil
for c = 1, C do
  local at = cpos + 3 * c - 2
  claims[c] = {tonumber(ARGV[at]), tonumber(ARGV[at + 1]), ARGV[at + 2]}
end
if C > 0 then marks = ARGV[cpos + 3 * C + 1] end
local roster = KEYS[1]
local last = first + #KEYS - 2
local function int(x) return string.format('%.0f', x) end

local G = 0
if slice_ms > 0 then G = math.floor(now / slice_ms) end
if G > last then return {'time', 0, '', 0, G, now} end
local newest = G
for g = math.max(G + 1, first), last do
  if redis.call('EXISTS', KEYS[g - first + 2]) == 1 then newest = g end
end
if newest == last and last > G then return {'time', 0, '', 0, last, now} end
G = newest
if G - older < first then return {'time', 0, '', 0, G, now} end

-- The roster: per live slice position g mod R, g + 1 once slice g's key was made. A live slice
-- that was made and is gone was evicted or deleted: its items are lost, which is an error,
-- never a silent "absent" or "new". A guarded roster is made with the filter: gone, it can no
-- longer tell a lost slice from one not made yet, which is an error too.
local R = older + 1
local ring = redis.call('GET', roster)
if not ring and guarded then return redis.error_reply('REDBLOOMSTREAM gone 1 0') end
if ring and #ring ~= 8 * R then return redis.error_reply('REDBLOOMSTREAM roster 1 ' .. #ring) end
local function made(g)
  if not ring then return false end
  local pos, v = 8 * (g % R), 0
  for b = 1, 8 do v = v * 256 + string.byte(ring, pos + b) end
  if v >= 2 ^ 63 then v = v - 2 ^ 64 end
  return v == g + 1
end

local L, used, need, most = {}, 0, 0, 0
for g = G - older, G do
  local index = g - first + 2
  local key = KEYS[index]
  local kind = redis.call('TYPE', key)['ok']
  L[g] = 0
  if kind == 'none' and made(g) then
    return redis.error_reply('REDBLOOMSTREAM lost ' .. index .. ' 0')
  end
  if kind ~= 'none' then
    if kind ~= 'string' then
      return redis.error_reply('REDBLOOMSTREAM wrongtype ' .. index .. ' ' .. kind)
    end
    local len = redis.call('STRLEN', key)
    local links = -1
    if len >= H then links = redis.call('BITFIELD_RO', key, 'GET', 'i64', 0)[1] end
    if links < 1 or links > M or len ~= start[links] then
      return redis.error_reply('REDBLOOMSTREAM damaged ' .. index .. ' ' .. len)
    end
    if links > K then need = math.max(need, links) end
    used = used + start[links] - H
    L[g] = links
    most = math.max(most, links)
  end
end

if mode == 'i' then
  local out = {'ok', 0, '', most, G, now}
  for g = G - older, G do
    if L[g] > 0 then
      local key = KEYS[g - first + 2]
      out[#out + 1] = {g, redis.call('GETRANGE', key, 0, H - 1), redis.call('STRLEN', key),
                       redis.call('BITCOUNT', key, H, -1)}
    end
  end
  return out
end
if need > 0 then return {'links', 0, '', need, G, now} end

-- valid[g]: the client's copy of live older slice g is the slice as it is now; frozen: the links
-- of the current slice its copy covers (all before the newest, which no writer changes again).
-- Every write that changes a link's bits raises its item count in the header, so equal fields
-- mean equal bits. A current slice's claim also names link nl's creation time: a key that went
-- back to an older state and was filled again to the same counts made that link again, later.
-- verdict: '1' / '0' per claim, for the client to read again.
local valid, verdict, frozen = {}, {}, 0
for c = 1, C do
  local g, nl, fields = claims[c][1], claims[c][2], claims[c][3]
  local ok = false
  if g >= G - older and g < G and nl == L[g] or g == G and nl > 0 and nl < L[g] then
    if nl == 0 then
      ok = true
    elseif #fields == 16 * nl then
      ok = redis.call('GETRANGE', KEYS[g - first + 2], 8, 16 * nl + 7) == fields
    else
      local have = redis.call('GETRANGE', KEYS[g - first + 2], 8, 16 * nl + 23)
      ok = string.sub(have, 1, 16 * nl) == string.sub(fields, 1, 16 * nl) and
           string.sub(have, 16 * nl + 9) == string.sub(fields, 16 * nl + 1)
    end
  end
  if ok and g < G then valid[g] = true end
  if ok and g == G then frozen = nl end
  verdict[c] = ok and '1' or '0'
end
local function answer(t)
  if C > 0 then t[7] = table.concat(verdict) end
  return t
end
-- Without the links before F, only valid copies may answer for them: of every live older slice
-- with a key, and of the current slice up to F, with its newest link at F or after.
if F > 0 then
  local covered = mode == 'a' and frozen >= F and L[G] > F
  for g = G - older, G - 1 do
    if L[g] > 0 and not valid[g] then covered = false end
  end
  if not covered then return answer({'offsets', 0, '', K, G, now}) end
end
-- What the claims settle of item i in the live older slices: true (in one), false (in none of
-- the valid ones; the others are read), nil (nothing: all are read).
local function claimed(i)
  if not marks then return nil end
  local d = string.byte(marks, i) or 0
  -- In the current slice's copy: not asked about the older ones.
  if first + d - 1 >= G then return nil end
  if d > 0 and first + d - 1 >= G - older then
    if valid[first + d - 1] then return true end
    return nil
  end
  return false
end

-- found[i] = true for the items whose bits are all set in link l of `key`. The bits are read in
-- rounds (one bit a round up to the sixth, then the rest), each for the items whose bits so far
-- were all set: in a link about half full, an item absent from it is ruled out by two bits on
-- average, against 2.75 with rounds of 1, 1 and the rest.
local rounds = {1, 2, 3, 4, 5, 6}
-- Read by lines: whether item i's line in link l of `key` holds it.
local function line_holds(key, l, i)
  local o = base + (i - 1) * stride + koff[l]
  return holds(redis.call('GETRANGE', key, ARGV[o], ARGV[o + 1]), ARGV[o + 2])
end
local function probe(key, l, found)
  if lines then
    for i = 1, n do
      if not found[i] then found[i] = line_holds(key, l, i) end
    end
    return
  end
  local h = hashes[l]
  local cand, nc = {}, 0
  for i = 1, n do
    if not found[i] then
      nc = nc + 1
      cand[nc] = i
    end
  end
  local from = 0
  for r = 1, #rounds + 1 do
    local upto = math.min(rounds[r] or h, h)
    if from < upto and nc > 0 then
      local width = upto - from
      local per = math.max(1, math.floor(2000 / width))
      local kept, c = 0, 1
      while c <= nc do
        local args, na, c0 = {'BITFIELD_RO', key}, 2, c
        while c <= nc and c - c0 < per do
          local o = base + (cand[c] - 1) * stride + koff[l] + from
          for j = o, o + width - 1 do
            args[na + 1] = 'GET'
            args[na + 2] = 'u1'
            args[na + 3] = ARGV[j]
            na = na + 3
          end
          c = c + 1
        end
        local bits = redis.call(unpack(args, 1, na))
        -- Survivors move to the front of cand; kept never passes the item being read.
        for w = 0, c - c0 - 1 do
          local all = true
          for j = w * width + 1, (w + 1) * width do
            if bits[j] == 0 then
              all = false
              break
            end
          end
          if all then
            kept = kept + 1
            cand[kept] = cand[c0 + w]
          end
        end
      end
      nc = kept
      from = upto
    end
  end
  for c = 1, nc do found[cand[c]] = true end
end

local found = {}
for i = 1, n do found[i] = false end
if mode == 'l' then
  -- What the claims settle: an item in a valid copy is found; one the valid copies place in
  -- none of theirs is read only in the other slices (unsettled: the claims say nothing of it).
  local unsettled = {}
  for i = 1, n do
    local known = claimed(i)
    if known or frozen > 0 and first + (string.byte(marks, i) or 0) - 1 == G then
      found[i] = true
    end
    unsettled[i] = known == nil
  end
  -- Newest first: most items asked about were added lately, and found items are not probed on.
  for g = G, G - older, -1 do
    local key = KEYS[g - first + 2]
    if g < G and valid[g] then
      local skip = {}
      for i = 1, n do skip[i] = found[i] or not unsettled[i] end
      for l = L[g] - 1, 0, -1 do probe(key, l, skip) end
      for i = 1, n do
        if unsettled[i] and skip[i] then found[i] = true end
      end
    else
      for l = L[g] - 1, g == G and frozen or 0, -1 do probe(key, l, found) end
    end
  end
  local flags = {}
  for i = 1, n do flags[i] = found[i] and '1' or '0' end
  return answer({'ok', n, table.concat(flags), most, G, now})
end

local key = KEYS[G - first + 2]
local links = L[G]
local count = 0
if links > 0 then
  count = redis.call('BITFIELD_RO', key, 'GET', 'i64', 64 * (2 * links - 1))[1]
end
-- inG: in a link of G before the newest. The newest one is not probed: its test-and-set below
-- answers the same (all bits set: not new, nothing counted), and a full newest link is probed
-- before it is frozen.
local inG = {}
for i = 1, n do inG[i] = false end
-- Links the claims cover hold exactly the items whose copy holds them.
if frozen > 0 then
  for i = 1, n do inG[i] = first + (string.byte(marks, i) or 0) - 1 == G end
end
for l = frozen, links - 2 do probe(key, l, inG) end
-- found: in G or an older slice. An item only in an older slice is not new, but the add still
-- sets it in G, restarting its window. Read by lines, an item's older slices are looked up only
-- once its line in G lacks it: a key repeated within a slice (a redelivery) costs one read.
for i = 1, n do found[i] = inG[i] end
-- Whether every live older slice with a key has a valid copy: then an item the claims put in
-- none of them is in none.
local all_valid = true
for g = G - older, G - 1 do
  if L[g] > 0 and not valid[g] then all_valid = false end
end
local function in_older(i)
  local known = claimed(i)
  if known then return true end
  if known == false and all_valid then return false end
  for g = G - 1, G - older, -1 do
    if not (known == false and valid[g]) then
      for l = L[g] - 1, 0, -1 do
        if line_holds(KEYS[g - first + 2], l, i) then return true end
      end
    end
  end
  return false
end
if not lines then
  -- unsettled[i]: the claims settle nothing of item i, so it is read in every older slice.
  local unsettled = {}
  for i = 1, n do
    if not found[i] then
      local known = claimed(i)
      if known then found[i] = true elseif known == nil then unsettled[i] = true end
    end
  end
  for g = G - 1, G - older, -1 do
    if valid[g] then
      local skip = {}
      for i = 1, n do skip[i] = found[i] or not unsettled[i] end
      for l = L[g] - 1, 0, -1 do probe(KEYS[g - first + 2], l, skip) end
      for i = 1, n do
        if unsettled[i] and skip[i] then found[i] = true end
      end
    else
      for l = L[g] - 1, 0, -1 do probe(KEYS[g - first + 2], l, found) end
    end
  end
end
local counted = count
local function save_count()
  if links > 0 and count ~= counted then
    redis.call('BITFIELD', key, 'SET', 'i64', 64 * (2 * links - 1), int(count))
  end
end
local flags = {}
-- Test-and-set in the newest link, queued: one BITFIELD for many items. BITFIELD applies its
-- SETs in order, so each item's old bits still tell whether an earlier item of this unit
-- already set them all (then nothing changed and the item is not new). The queue is flushed
-- before anything reads the link's count, which it raises by at most one an item.
local queued, nq = {}, 0
local sets, ns = {'BITFIELD', key}, 2
local function flush()
  if nq == 0 then return end
  local h = hashes[links - 1]
  local old = redis.call(unpack(sets, 1, ns))
  for w = 1, nq do
    local all = true
    for j = (w - 1) * h + 1, w * h do
      if old[j] == 0 then
        all = false
        break
      end
    end
    local i = queued[w]
    if all then
      flags[i] = '0'
    else
      count = count + 1
      flags[i] = found[i] and '0' or '1'
    end
  end
  nq, ns = 0, 2
end
for i = 1, n do
  if not inG[i] and links > 0 and count + nq >= cap[links - 1] then flush() end
  if not inG[i] and links > 0 and count >= cap[links - 1] then
    -- The newest link is full and about to be frozen: what this unit wrote into it counts.
    probe(key, links - 1, inG)
  end
  if inG[i] then
    flags[i] = '0'
  else
    if links == 0 or count >= cap[links - 1] then
      local make = links
      if make >= M or (budget > 0 and used + size[make] > budget) then
        save_count()
        return answer({'full', i - 1, table.concat(flags), make, G, now})
      end
      if make >= K then
        save_count()
        return answer({'links', i - 1, table.concat(flags), make + 1, G, now})
      end
      save_count()
      redis.call('SETRANGE', key, int(start[make + 1] - 1), '\0')
      redis.call('BITFIELD', key, 'SET', 'i64', 0, make + 1, 'SET', 'i64', 64 * (2 + 2 * make),
                 int(now))
      if make == 0 then
        if slice_ms > 0 then redis.call('PEXPIREAT', key, int((G + 1 + older) * slice_ms)) end
        if not ring then redis.call('SETRANGE', roster, 8 * R - 1, '\0') end
        redis.call('BITFIELD', roster, 'SET', 'i64', 64 * (G % R), int(G + 1))
        ring = true
      end
      links = make + 1
      used = used + size[make]
      count = 0
      counted = 0
    end
    local o = base + (i - 1) * stride + koff[links - 1]
    if lines then
      local line = redis.call('GETRANGE', key, ARGV[o], ARGV[o + 1])
      if holds(line, ARGV[o + 2]) then
        flags[i] = '0'
      else
        redis.call('SETRANGE', key, ARGV[o], with(line, ARGV[o + 2]))
        count = count + 1
        flags[i] = (found[i] or in_older(i)) and '0' or '1'
      end
    else
      local h = hashes[links - 1]
      for j = o, o + h - 1 do
        sets[ns + 1] = 'SET'
        sets[ns + 2] = 'u1'
        sets[ns + 3] = ARGV[j]
        sets[ns + 4] = '1'
        ns = ns + 4
      end
      nq = nq + 1
      queued[nq] = i
      -- Lua 5.1 unpacks at most ~8000 values.
      if ns + 4 * h > 7000 then flush() end
    end
  end
end
flush()
save_count()
return answer({'ok', n, table.concat(flags), math.max(most, links), G, now})
)lua";

std::int64_t integer_of(const redisReply& reply, const char* what) {
  if (reply.type != REDIS_REPLY_INTEGER) {
    throw ReplyProblem(std::string("stream script: ") + what + " is not an integer", false);
  }
  return reply.integer;
}

}  // namespace

const std::string& script_sha1() {
  static const std::string sha = script_sha1_of(script_text());
  return sha;
}

std::string_view script_text() noexcept {
  static const std::string text = std::string(kLineFunctions) + std::string(kScript);
  return text;
}

std::string_view line_functions() noexcept {
  return kLineFunctions;
}

namespace {

// What the script and RB.STREAM both take first: numkeys, the keys, then mode, now, slice
// length, older slices, the first declared slice, the header size, the link count, the budget.
void encode_common(CommandBuffer& out, const Call& call) {
  out.arg(std::uint64_t{call.keys.size()});
  for (const std::string& key : call.keys) out.arg(key);
  char mode = static_cast<char>(call.mode);
  if (call.guarded) mode = static_cast<char>(mode - 'a' + 'A');
  out.arg(std::string_view(&mode, 1));
  out.arg(call.now_ms < 0 ? std::string_view("-1") : std::to_string(call.now_ms));
  out.arg(call.slice_ms);
  out.arg(std::uint64_t{call.older});
  out.arg(std::to_string(call.first));
  out.arg(kHeaderBytes);
  out.arg(std::uint64_t{call.links.size()});
  out.arg(call.budget);
}

}  // namespace

std::size_t encode(CommandBuffer& out, const Call& call, std::string_view sha) {
  const std::size_t fixed = 12 + 3 * call.links.size();
  const std::size_t claimed = call.claims.empty() ? 0 : 2 + 3 * call.claims.size();
  out.begin(3 + call.keys.size() + fixed + call.item_arg_count + claimed);
  static constexpr std::string_view kNames[2][2] = {{"EVAL", "EVALSHA"}, {"EVAL_RO", "EVALSHA_RO"}};
  out.arg(kNames[call.read_only_script ? 1 : 0][sha.empty() ? 0 : 1]);
  out.arg(sha.empty() ? script_text() : sha);
  encode_common(out, call);
  out.arg(std::uint64_t{call.with_offsets});
  const char form = static_cast<char>(call.form);
  out.arg(std::string_view(&form, 1));
  out.arg(std::uint64_t{call.first_with_offsets});
  for (const LinkArgs& link : call.links) {
    out.arg(link.bytes);
    out.arg(link.capacity);
    out.arg(std::uint64_t{link.hashes});
  }
  out.arg(std::uint64_t{call.items});
  out.append_raw(call.item_args, 0);
  if (claimed == 0) return 1;
  out.arg(std::uint64_t{call.claims.size()});
  for (const Claim& claim : call.claims) {
    out.arg(std::to_string(claim.slice));
    out.arg(std::uint64_t{claim.links});
    out.arg(claim.fields);
  }
  out.arg(call.marks);
  return 1;
}

ItemForm item_form(std::span<const FilterParams> links) noexcept {
  for (const FilterParams& link : links) {
    if (link.layout != Layout::blocked) return ItemForm::bits;
  }
  return ItemForm::lines;
}

std::uint64_t item_arguments(ItemForm form, const FilterParams& link) noexcept {
  return form == ItemForm::lines ? 3 : link.hashes;
}

Engine engine_for(long long lowest_module_version) noexcept {
  if (lowest_module_version >= module_protocol::kHashedStream) return Engine::module_hashes;
  if (lowest_module_version >= module_protocol::kGuardedStream) return Engine::module_items;
  return Engine::script;
}

std::size_t encode_module(CommandBuffer& out, const Call& call) {
  out.begin(13 + call.keys.size() + 4 * call.links.size());
  // Lookups and info through the read-only command, which a read-only replica serves.
  static constexpr std::string_view kNames[2][2] = {{"RB.STREAM_RO", "RB.STREAM"},
                                                    {"RB.STREAMH_RO", "RB.STREAMH"}};
  out.arg(kNames[call.hashed ? 1 : 0][call.mode == Mode::add ? 1 : 0]);
  encode_common(out, call);
  out.arg(call.partitions);
  out.arg(call.partition);
  for (std::size_t l = 0; l < call.links.size(); ++l) {
    const FilterParams& params = call.link_params[l];
    out.arg(to_string(params.layout));
    out.arg(std::uint64_t{params.hashes});
    out.arg(params.partition_bits);
    out.arg(call.links[l].capacity);
  }
  out.arg(call.packed);
  return 1;
}

std::uint64_t header_field(std::string_view header, std::uint64_t field) {
  std::uint64_t value = 0;
  for (std::size_t b = 0; b < 8; ++b) {
    value = (value << 8) | static_cast<unsigned char>(header[8 * field + b]);
  }
  return value;
}

namespace {

// A script error ("REDBLOOMSTREAM kind index detail") as the ReplyProblem that names its key.
[[noreturn]] void throw_script_error(const redisReply& reply, std::span<const std::string> keys) {
  const std::string_view text = text_of(reply);
  for (const std::string_view kind : {"wrongtype", "damaged", "lost", "roster", "gone"}) {
    const std::string prefix = "REDBLOOMSTREAM " + std::string(kind) + " ";
    if (!text.starts_with(prefix)) continue;
    const std::string_view rest = text.substr(prefix.size());
    std::size_t index = 0;
    std::from_chars(rest.data(), rest.data() + rest.size(), index);
    const std::string key = index >= 1 && index <= keys.size() ? keys[index - 1] : "?";
    const std::string_view detail = rest.substr(std::min(rest.size(), rest.find(' ') + 1));
    if (kind == "lost") {
      throw ReplyProblem("slice key '" + key +
                             "' is gone though it was made and its slice is still live "
                             "(evicted or deleted?): the items added in that slice are lost "
                             "(keep the filter's keys from eviction: maxmemory-policy "
                             "noeviction)",
                         true);
    }
    if (kind == "gone") {
      throw ReplyProblem("roster key '" + key +
                             "' is gone (evicted or deleted?): it records which slices were "
                             "made, so a missing slice can no longer be told from one not made "
                             "yet and items may be lost (keep the filter's keys from eviction: "
                             "maxmemory-policy noeviction)",
                         true);
    }
    if (kind == "roster") {
      throw ReplyProblem("roster key '" + key + "' is " + std::string(detail) +
                             " bytes long, not the filter's slice roster (damaged?)",
                         true);
    }
    if (kind == "wrongtype") {
      throw ReplyProblem("slice key '" + key + "' holds a " + std::string(detail) +
                             ", not a slice of a redbloom stream filter",
                         true);
    }
    throw ReplyProblem("slice key '" + key + "' is " + std::string(detail) +
                           " bytes long, which its header does not explain (damaged, or "
                           "written outside redbloom?)",
                       true);
  }
  throw ReplyProblem(std::string(text), false);
}

// One slice of an info reply: [slice, header, length, set bits].
SliceState decode_slice(const redisReply& entry) {
  if (entry.type != REDIS_REPLY_ARRAY || entry.elements != 4 ||
      entry.element[1]->type != REDIS_REPLY_STRING ||
      entry.element[1]->len != static_cast<std::size_t>(kHeaderBytes)) {
    throw ReplyProblem("stream script: a malformed slice in an info reply", false);
  }
  SliceState slice;
  slice.slice = integer_of(*entry.element[0], "slice");
  const std::string_view header = text_of(*entry.element[1]);
  slice.links = static_cast<std::uint32_t>(header_field(header, 0));
  if (slice.links < 1 || slice.links > kMaxStreamLinks) {
    throw ReplyProblem(
        "stream script: a slice header with " + std::to_string(slice.links) + " links", true);
  }
  for (std::uint32_t l = 0; l < slice.links; ++l) {
    slice.items.push_back(header_field(header, 1 + 2 * std::uint64_t{l}));
    slice.created_ms.push_back(header_field(header, 2 + 2 * std::uint64_t{l}));
  }
  slice.length = static_cast<std::uint64_t>(integer_of(*entry.element[2], "length"));
  slice.set_bits = static_cast<std::uint64_t>(integer_of(*entry.element[3], "set bits"));
  return slice;
}

}  // namespace

Reply decode(const redisReply& reply, std::span<const std::string> keys) {
  if (is_error(reply)) throw_script_error(reply, keys);
  if (reply.type != REDIS_REPLY_ARRAY || reply.elements < 6 ||
      reply.element[0]->type != REDIS_REPLY_STRING ||
      reply.element[2]->type != REDIS_REPLY_STRING) {
    throw ReplyProblem("stream script: not a reply of this redbloom's script", false);
  }
  Reply out;
  const std::string_view status = text_of(*reply.element[0]);
  if (status == "ok") {
    out.status = Reply::Status::ok;
  } else if (status == "links") {
    out.status = Reply::Status::links;
  } else if (status == "offsets") {
    out.status = Reply::Status::offsets;
  } else if (status == "full") {
    out.status = Reply::Status::full;
  } else if (status == "time") {
    out.status = Reply::Status::time;
  } else {
    throw ReplyProblem("stream script: unknown status '" + std::string(status) + "'", false);
  }
  out.done = static_cast<std::size_t>(integer_of(*reply.element[1], "done"));
  out.flags = text_of(*reply.element[2]);
  out.links = static_cast<std::uint32_t>(integer_of(*reply.element[3], "links"));
  out.slice = integer_of(*reply.element[4], "slice");
  out.now_ms = integer_of(*reply.element[5], "now");
  std::size_t first_slice = 6;
  if (reply.elements > 6 && reply.element[6]->type == REDIS_REPLY_STRING) {
    out.verdict = text_of(*reply.element[6]);
    first_slice = 7;
  }
  if (out.flags.size() != out.done) {
    throw ReplyProblem("stream script: " + std::to_string(out.flags.size()) + " answers for " +
                           std::to_string(out.done) + " items",
                       false);
  }
  for (std::size_t e = first_slice; e < reply.elements; ++e) {
    out.slices.push_back(decode_slice(*reply.element[e]));
  }
  return out;
}

}  // namespace redbloom::redis::stream
