-- The first half of a modify: locks the handle and reads it.
-- ARGV: owner, id, lock token, lock lease ms.
-- Returns the value (JSON) when locked for this token; nil when the handle
-- is missing, expired or another owner's; an integer (ms until the other
-- lock's lease ends) while another modify holds it.
local h = redis.call('HMGET', KEYS[1], 'owner', 'value', 'idle', 'lock', 'lock_until')
if h[1] ~= ARGV[1] then
  return false
end
local now = now_ms()
local locked_until = tonumber(h[5] or 0)
if h[4] and locked_until > now then
  return locked_until - now
end
local lease_end = string.format('%.0f', now + tonumber(ARGV[4]))
redis.call('HSET', KEYS[1], 'lock', ARGV[3], 'lock_until', lease_end)
touch(ARGV[2], tonumber(h[3]), now)
return h[2]
