-- Two ways for a server script to look items up in one link of a blocked filter, timed on the
-- same items: ARGV = items, way ('rounds' or 'line'), hashes, the random generator's start. KEYS[1] is the link's bitmap.
-- rounds: as the stream store's script: BITFIELD_RO GET u1 for the first bit of every item, then
-- the next bit of those still possible, one bit a round up to the sixth, then the rest, up to
-- ~2000 probes a call.
-- line: one GETRANGE of the item's 64-byte line, its bits tested in Lua.
-- text-line: as the stream store's script does now: the line's first and last byte as text and
-- its (byte, mask) pairs, made before the clock as the client sends them.
-- Returns {items found, microseconds}: both ways must find the same items.
local n, way, k = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local key = KEYS[1]
local lines = math.floor(redis.call('STRLEN', key) / 64)
math.randomseed(tonumber(ARGV[4]))
local offsets = {}
for i = 1, n do
  local line = math.random(0, lines - 1)
  local o = {}
  for j = 1, k do o[j] = tostring(line * 512 + math.random(0, 511)) end
  offsets[i] = o
end
local texts = {}
if way == 'text-line' then
  for i = 1, n do
    local first = math.floor(tonumber(offsets[i][1]) / 512) * 64
    local masks = {}
    for j = 1, k do
      local b = tonumber(offsets[i][j]) - first * 8
      local at = math.floor(b / 8)
      masks[at] = bit.bor(masks[at] or 0, bit.rshift(128, b % 8))
    end
    local pairs = {}
    for at = 0, 63 do
      if masks[at] then pairs[#pairs + 1] = string.char(at, masks[at]) end
    end
    texts[i] = {tostring(first), tostring(first + 63), table.concat(pairs)}
  end
end
local t0 = redis.call('TIME')
local found = 0
if way == 'rounds' then
  local cand, nc = {}, n
  for i = 1, n do cand[i] = i end
  local from = 0
  for r = 1, 7 do
    local upto = math.min(r < 7 and r or k, k)
    local width = upto - from
    local per = math.max(1, math.floor(2000 / math.max(width, 1)))
    local kept, c = 0, 1
    if width == 0 then kept, c = nc, nc + 1 end
    while c <= nc do
      local args, na, c0 = {'BITFIELD_RO', key}, 2, c
      while c <= nc and c - c0 < per do
        local o = offsets[cand[c]]
        for j = from + 1, upto do
          args[na + 1], args[na + 2], args[na + 3] = 'GET', 'u1', o[j]
          na = na + 3
        end
        c = c + 1
      end
      local bits = redis.call(unpack(args, 1, na))
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
    nc, from = kept, upto
  end
  found = nc
elseif way == 'text-line' then
  local band, byte = bit.band, string.byte
  for i = 1, n do
    local t = texts[i]
    local s, pairs = redis.call('GETRANGE', key, t[1], t[2]), t[3]
    local all = true
    for q = 1, #pairs, 2 do
      local b, mask = byte(pairs, q, q + 1)
      if band(byte(s, b + 1), mask) ~= mask then
        all = false
        break
      end
    end
    if all then found = found + 1 end
  end
else
  for i = 1, n do
    local o = offsets[i]
    local first = math.floor(tonumber(o[1]) / 512) * 64
    local s = redis.call('GETRANGE', key, first, first + 63)
    local all = true
    for j = 1, k do
      local b = tonumber(o[j]) - first * 8
      if bit.band(string.byte(s, math.floor(b / 8) + 1), bit.rshift(128, b % 8)) == 0 then
        all = false
        break
      end
    end
    if all then found = found + 1 end
  end
end
local t1 = redis.call('TIME')
return {found, (t1[1] - t0[1]) * 1000000 + (t1[2] - t0[2])}
