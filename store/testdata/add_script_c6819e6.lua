-- The add script of commit c6819e6 (store/redis.go), before the fourth
-- session's changes: TestRedisMixedBuilds runs it beside the current one.
local tag = string.sub(KEYS[1], 1, -6)
local seqKey, docsKey, recPrefix = tag .. ':seq', tag .. ':docs', tag .. ':r:'
local check = ARGV[1] == 'c'
local n = tonumber(ARGV[2])
local last = tonumber(redis.call('GET', seqKey) or '0')
local runStart = last + 1
local out, added, held = {}, {}, false
local a = 3
for d = 1, n do
  local snap, id, ik, rec, dup, np = tonumber(ARGV[a]), ARGV[a+1], ARGV[a+2], ARGV[a+3], ARGV[a+4] == '1', tonumber(ARGV[a+5])
  for p = a + 6, a + 5 + np do
    if added[tonumber(ARGV[p])] then dup = true end
  end
  a = a + 6 + np
  local nk = tonumber(ARGV[a])
  local ka = a + 1
  a = ka + 2 * nk
  -- the postings as they are now, read once for the check and the add
  local cur, newer = {}, {}
  if check then
    for k = 0, nk - 1 do
      local v = redis.call('HGET', ARGV[ka+2*k], ARGV[ka+2*k+1])
      cur[k] = v
      if v then
        for j = 1, #v, 8 do
          local s = struct.unpack('>I8', v, j)
          if s > snap and s < runStart then newer[#newer+1] = s end
        end
      end
    end
    held = held or #newer > 0
  end
  if held then
    out[d] = newer
  elseif dup then
    out[d] = 'dup'
  elseif redis.call('HEXISTS', ik, id) == 1 then
    out[d] = 'dupid'
  else
    if not check then
      for k = 0, nk - 1 do cur[k] = redis.call('HGET', ARGV[ka+2*k], ARGV[ka+2*k+1]) end
    end
    last = last + 1
    local s8 = struct.pack('>I8', last)
    redis.call('HSET', ik, id, s8)
    redis.call('HSET', recPrefix .. math.floor(last / 128), s8, rec)
    for k = 0, nk - 1 do
      redis.call('HSET', ARGV[ka+2*k], ARGV[ka+2*k+1], (cur[k] or '') .. s8)
    end
    added[d] = true
    out[d] = last
  end
end
if last >= runStart then
  redis.call('SET', seqKey, last)
  redis.call('INCRBY', docsKey, last - runStart + 1)
end
return {out, runStart - 1, last}
