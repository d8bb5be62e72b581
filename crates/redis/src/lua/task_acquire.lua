-- The first half of an update: locks the task and reads it.
-- KEYS[1]: the task hash. ARGV: lock token, lock lease ms.
-- Returns the record (JSON) when locked for this token; nil when there is
-- no such task; an integer (ms until the other lock's lease ends) while
-- another update holds it. The clock is Redis's own (TIME).
if redis.replicate_commands then redis.replicate_commands() end
local h = redis.call('HMGET', KEYS[1], 'record', 'lock', 'lock_until')
if not h[1] then
  return false
end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local locked_until = tonumber(h[3] or 0)
if h[2] and locked_until > now then
  return math.max(1, locked_until - now)
end
local lease_end = string.format('%.0f', now + tonumber(ARGV[2]))
redis.call('HSET', KEYS[1], 'lock', ARGV[1], 'lock_until', lease_end)
return h[1]
