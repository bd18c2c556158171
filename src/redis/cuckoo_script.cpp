#include "redis/cuckoo_script.hpp"

#include "partition_ops.hpp"
#include "script_digest.hpp"

namespace redbloom::redis::cuckoo {
namespace {

// Every step is 32-bit arithmetic done in Lua's doubles: products split into 16-bit halves so
// that no intermediate passes 2^53 (cuckoo_table.hpp's mix32, fastrange32, alternate_bucket
// and victim_slot, the same numbers).
constexpr std::string_view kScript = R"lua(
local mode = ARGV[1]
local L = tonumber(ARGV[2])
local TWO32 = 4294967296
local buckets, types, shifts, sizes = {}, {}, {}, {}
local a = 3
for l = 1, L do
  local n, f = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
  buckets[l] = n
  types[l] = 'u' .. f
  shifts[l] = 2 ^ (32 - f)
  sizes[l] = math.ceil(n * 4 * f / 8) + 16
  a = a + 2
end

local function xor(x, y) return bit.bxor(x, y) % TWO32 end
local function shr(x, n) return bit.rshift(x, n) % TWO32 end
local function mul32(x, y)
  local xh, xl = math.floor(x / 65536), x % 65536
  return (xl * y + ((xh * y) % 65536) * 65536) % TWO32
end
local function mix32(x)
  x = mul32(xor(x, shr(x, 16)), 0x85ebca6b)
  x = mul32(xor(x, shr(x, 13)), 0xc2b2ae35)
  return xor(x, shr(x, 16))
end
local function range32(x, n)
  local xh, xl = math.floor(x / 65536), x % 65536
  return math.floor((xh * n + math.floor(xl * n / 65536)) / 65536)
end
local function alternate(b, fp, n)
  local h = range32(mul32(fp, 0x5bd1e995), n)
  if h >= b then return h - b end
  return h + n - b
end

local function place(l, lo, hi)
  local fp = math.floor(hi / shifts[l])
  if fp == 0 then fp = 1 end
  local b1 = range32(lo, buckets[l])
  return b1, alternate(b1, fp, buckets[l]), fp
end
local function bucket_of(key, t, b)
  local x = b * 4
  return redis.call('BITFIELD_RO', key, 'GET', t, '#' .. x, 'GET', t, '#' .. (x + 1),
                    'GET', t, '#' .. (x + 2), 'GET', t, '#' .. (x + 3))
end
local function two_buckets(key, t, b1, b2)
  local x, y = b1 * 4, b2 * 4
  return redis.call('BITFIELD_RO', key, 'GET', t, '#' .. x, 'GET', t, '#' .. (x + 1),
                    'GET', t, '#' .. (x + 2), 'GET', t, '#' .. (x + 3), 'GET', t, '#' .. y,
                    'GET', t, '#' .. (y + 1), 'GET', t, '#' .. (y + 2), 'GET', t, '#' .. (y + 3))
end
local function set_slot(key, t, index, value)
  redis.call('BITFIELD', key, 'SET', t, '#' .. index, value)
end
-- The first empty slot of bucket b takes fp.
local function put_in_empty(key, t, b, fp)
  local s = bucket_of(key, t, b)
  for j = 1, 4 do
    if s[j] == 0 then
      set_slot(key, t, b * 4 + j - 1, fp)
      return true
    end
  end
  return false
end

-- Whether either bucket holds the item's fingerprint, and the 8 slots read (an add then looks
-- for an empty one among them instead of reading them again).
local function holds(key, l, lo, hi)
  local b1, b2, fp = place(l, lo, hi)
  local s = two_buckets(key, types[l], b1, b2)
  for j = 1, 8 do
    if s[j] == fp then return true, s end
  end
  return false, s
end
local function copies(key, l, lo, hi)
  local b1, b2, fp = place(l, lo, hi)
  local s = two_buckets(key, types[l], b1, b2)
  local c = 0
  for j = 1, 4 do
    if s[j] == fp then c = c + 1 end
    if b2 ~= b1 and s[j + 4] == fp then c = c + 1 end
  end
  return c
end
local function clear_one(key, l, lo, hi)
  local b1, b2, fp = place(l, lo, hi)
  local t = types[l]
  for _, b in ipairs({b1, b2}) do
    local s = bucket_of(key, t, b)
    for j = 1, 4 do
      if s[j] == fp then
        set_slot(key, t, b * 4 + j - 1, 0)
        return true
      end
    end
  end
  return false
end
-- Table::insert_absent: an empty slot of either bucket, else a kick walk planned by reads and
-- written from its end back, or false with nothing changed.
-- `seen`: the two buckets' slots as holds read them, if nothing was written since.
local function insert_absent(key, l, lo, hi, seen)
  local b1, b2, fp = place(l, lo, hi)
  local t, n = types[l], buckets[l]
  if seen then
    for j = 1, 4 do
      if seen[j] == 0 then
        set_slot(key, t, b1 * 4 + j - 1, fp)
        return true
      end
    end
    for j = 5, 8 do
      if seen[j] == 0 then
        set_slot(key, t, b2 * 4 + j - 5, fp)
        return true
      end
    end
  elseif put_in_empty(key, t, b1, fp) or put_in_empty(key, t, b2, fp) then
    return true
  end
  local bucket = b1
  if fp % 2 == 1 then bucket = b2 end
  local carried = fp
  local path_slot, path_value = {}, {}
  for kick = 0, 499 do
    local choice = shr(mix32(xor(carried, mul32(kick, 0x9E3779B9))), 30)
    local index, free = 0, false
    for j = 0, 3 do
      index = bucket * 4 + (choice + j) % 4
      free = true
      for k = 1, kick do
        if path_slot[k] == index then
          free = false
          break
        end
      end
      if free then break end
    end
    if not free then return false end
    path_slot[kick + 1] = index
    path_value[kick + 1] = carried
    carried = redis.call('BITFIELD_RO', key, 'GET', t, '#' .. index)[1]
    bucket = alternate(bucket, carried, n)
    if put_in_empty(key, t, bucket, carried) then
      for k = kick + 1, 1, -1 do set_slot(key, t, path_slot[k], path_value[k]) end
      return true
    end
  end
  return false
end

-- Links each partition holds, as its roster says (a link gone, evicted or deleted, is then
-- told from one never grown), each checked once per call.
local held = {}
local function links_of(p)
  local n = held[p]
  if n then return n end
  local base = p * (L + 1)
  if redis.call('STRLEN', KEYS[base + 1]) ~= 1 then
    return redis.error_reply('REDBLOOMCUCKOO lost ' .. KEYS[base + 1])
  end
  n = redis.call('BITFIELD_RO', KEYS[base + 1], 'GET', 'u8', 0)[1] + 1
  if n > L then return redis.error_reply('REDBLOOMCUCKOO lost ' .. KEYS[base + 1]) end
  for l = 1, n do
    if redis.call('STRLEN', KEYS[base + 1 + l]) ~= sizes[l] then
      return redis.error_reply('REDBLOOMCUCKOO lost ' .. KEYS[base + 1 + l])
    end
  end
  held[p] = n
  return n
end

-- Every partition of the call is checked before anything is written.
local i = a
while i + 2 <= #ARGV do
  local n = links_of(tonumber(ARGV[i]))
  if type(n) == 'table' then return n end
  i = i + 3
end

local out = {0}
i = a
while i + 2 <= #ARGV do
  local p, lo, hi = tonumber(ARGV[i]), tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  local n = links_of(p)
  local base = p * (L + 1) + 1
  local answer = 0
  if mode == 'c' then
    for l = 1, n do
      if holds(KEYS[base + l], l, lo, hi) then
        answer = 1
        break
      end
    end
  elseif mode == 'n' then
    for l = 1, n do answer = answer + copies(KEYS[base + l], l, lo, hi) end
  elseif mode == 'r' then
    for l = n, 1, -1 do
      if clear_one(KEYS[base + l], l, lo, hi) then
        answer = 1
        break
      end
    end
  elseif mode == 'k' then
    -- cuckoo_chain::remove_known: only when one link alone holds the fingerprint.
    local holder = 0
    for l = 1, n do
      if holds(KEYS[base + l], l, lo, hi) then
        if holder > 0 then
          holder = -1
          break
        end
        holder = l
      end
    end
    if holder > 0 and clear_one(KEYS[base + holder], holder, lo, hi) then answer = 1 end
  else
    -- 'a' tests every link first (cuckoo_chain::add); 'i' stores one more copy whatever the
    -- links hold (cuckoo_chain::insert).
    local present, seen = false, {}
    if mode == 'a' then
      for l = 1, n do
        local found, slots = holds(KEYS[base + l], l, lo, hi)
        if found then
          present = true
          break
        end
        seen[l] = slots
      end
    end
    if not present then
      answer = -1
      while answer < 0 do
        for l = n, 1, -1 do
          if insert_absent(KEYS[base + l], l, lo, hi, seen[l]) then
            answer = 1
            break
          end
        end
        if answer < 0 then
          if n >= L then
            out[1] = 1
            return out
          end
          n = n + 1
          redis.call('SETRANGE', KEYS[base + n], sizes[n] - 1, '\0')
          redis.call('BITFIELD', KEYS[base], 'SET', 'u8', 0, n - 1)
          held[p] = n
        end
      end
    end
  end
  out[#out + 1] = answer
  i = i + 3
end
return out
)lua";

}  // namespace

std::string_view script_text() noexcept {
  return kScript;
}

const std::string& script_sha1() {
  static const std::string sha = script_sha1_of(script_text());
  return sha;
}

void encode(CommandBuffer& buffer, Command command, Mode mode, std::span<const std::string> keys,
            std::span<const cuckoo_table::Shape> links, std::span<const ItemArgs> items) {
  const bool module = command == Command::module;
  buffer.begin((module ? 2 : 3) + keys.size() + 2 + 2 * links.size() + 3 * items.size());
  if (module) {
    buffer.arg(std::string_view("RB.CUCKOO"));
  } else if (command == Command::eval || command == Command::eval_ro) {
    buffer.arg(std::string_view(command == Command::eval ? "EVAL" : "EVAL_RO"));
    buffer.arg(script_text());
  } else {
    buffer.arg(std::string_view(command == Command::evalsha ? "EVALSHA" : "EVALSHA_RO"));
    buffer.arg(script_sha1());
  }
  buffer.arg(std::uint64_t{keys.size()});
  for (const std::string& key : keys) buffer.arg(key);
  const char mode_text = static_cast<char>(mode);
  buffer.arg(std::string_view(&mode_text, 1));
  buffer.arg(std::uint64_t{links.size()});
  for (const cuckoo_table::Shape& link : links) {
    buffer.arg(link.buckets);
    buffer.arg(std::uint64_t{link.fingerprint_bits});
  }
  for (const ItemArgs& item : items) {
    buffer.arg(std::uint64_t{item.partition_index});
    buffer.arg(std::uint64_t{item.lo_top});
    buffer.arg(std::uint64_t{item.hi_top});
  }
}

Reply decode(const redisReply& reply, std::size_t items) {
  if (is_error(reply)) {
    const std::string_view text = text_of(reply);
    constexpr std::string_view kLost = "REDBLOOMCUCKOO lost ";
    const std::size_t at = text.find(kLost);
    if (at != std::string_view::npos) {
      throw ReplyProblem("cuckoo filter key '" + std::string(text.substr(at + kLost.size())) +
                             "' is gone or damaged (evicted or deleted?): the filter has lost "
                             "items; drop it and create it again",
                         true);
    }
    throw ReplyProblem(std::string(text), false);
  }
  if (reply.type != REDIS_REPLY_ARRAY || reply.elements == 0 || reply.elements > items + 1) {
    throw ReplyProblem("cuckoo script: not a reply of the script", false);
  }
  Reply out;
  for (std::size_t i = 0; i < reply.elements; ++i) {
    const redisReply& e = *reply.element[i];
    if (e.type != REDIS_REPLY_INTEGER || e.integer < 0 || e.integer > UINT32_MAX) {
      throw ReplyProblem("cuckoo script: not a reply of the script", false);
    }
    if (i == 0) {
      out.full = e.integer == 1;
    } else {
      out.answers.push_back(static_cast<std::uint32_t>(e.integer));
    }
  }
  if (!out.full && out.answers.size() != items) {
    throw ReplyProblem("cuckoo script: answered for " + std::to_string(out.answers.size()) +
                           " of " + std::to_string(items) + " items",
                       false);
  }
  return out;
}

}  // namespace redbloom::redis::cuckoo
